"""Loading plugins: the startup phase, then the general plugins, then the hooks they registered; and
each namespace's load, the state loading alone writes.

Which plugins are loaded, skipped or refused is one pure function (:func:`plan_entry_points`) that
``sglang-plugins list`` asks too. Each phase imports its plugins first, then runs their functions,
as SGLang does. A plugin that fails is logged and skipped, its hooks discarded; it stops start-up in
strict mode, and when it belongs to the selected platform's distribution (SGLang's diffusion
loader's rule). The public functions (``load_plugins()`` with SGLang's signature, ...) are
re-exported by
:mod:`sglang_plugin_runtime.plugins`.
"""

# No ``from __future__ import annotations`` here: typing.NamedTuple would compile a ForwardRef for
# every string annotation of its fields, a cost paid by every process at start-up.
import logging
import os
from collections.abc import Callable, Iterable
from typing import Any

from .._discovery import (
    DiscoveryResult,
    PluginEntryPoint,
    discover_entry_points,
    duplicate_reason,
    normalize_distribution_name,
)
from .._forking import after_fork_in_child
from .._lazy_exports import old_attribute
from .._namespace import SRT, PluginNamespace, get_namespace, known_namespaces
from .._plugin_code import (
    Gate,
    PlannedPlugin,
    PluginOutcome,
    Policy,
    Status,
    apply_hooks,
    discard_hooks,
    never_ran,
    planned,
    registry,
    run_plugin_code,
    safe_text,
)
from ..errors import DuplicatePluginError, PluginLoadError, ReentrantLoadError
from ..platforms._selection import platform_state

logger = logging.getLogger(__name__)

#: Why a failing startup plugin stops start-up (SGLang's open proposal for the phase: its load and
#: run errors propagate).
STARTUP_FAILURE = (
    "a startup plugin's failure stops start-up: what it prepares, the host's own imports rely on"
)


class LoadReport:
    """What one phase of loading (one entry-point group) did in this process for one namespace."""

    completed = False
    #: The selected platform's distribution when it loaded (``None``: not selected yet).
    required: str | None = None

    def __init__(self, namespace: str, group: str) -> None:
        self.namespace, self.group = namespace, group
        self.outcomes: list[PluginOutcome] = []

    @property
    def problems(self) -> list[PluginOutcome]:
        return [o for o in self.outcomes if not o.ok]

    def __repr__(self) -> str:
        plugins = ", ".join(f"{o.plugin}: {o.status}" for o in self.outcomes) or "no plugins"
        return (
            f"LoadReport({self.namespace} {self.group}: "
            f"{plugins}{'' if self.completed else ', incomplete'})"
        )

    def to_dict(self) -> dict[str, object]:
        outcomes = [o.to_dict() for o in self.outcomes]
        return {
            "namespace": self.namespace,
            "group": self.group,
            "completed": self.completed,
            "outcomes": outcomes,
        }


# old attribute names, deprecated
LoadReport.__getattr__ = old_attribute  # type: ignore[attr-defined]


class LoadState:
    """What this process remembers about one namespace's loads; loading alone writes it, under its
    gate."""

    # ran in another thread when this child forked
    interrupted: PluginEntryPoint | None = None

    def __init__(self) -> None:
        self.gate = Gate()
        # by group: complete, or in progress while it loads
        self.reports: dict[str, LoadReport] = {}
        #: Functions that completed in a load that did not (a strict retry; a child forked
        #: meanwhile).
        self.done: dict[tuple[str, str], PluginOutcome] = {}


_STATES: dict[str, LoadState] = {}


def load_state(namespace: PluginNamespace) -> LoadState:
    return _STATES.get(namespace.name) or _STATES.setdefault(namespace.name, LoadState())


@after_fork_in_child
def _after_fork() -> None:
    """A finished load stays; one that another thread ran is redone, without that plugin's hooks."""
    for state in _STATES.values():
        if state.gate.running:
            state.interrupted = state.gate.running.ep
        state.gate = Gate()
        state.reports = {group: r for group, r in state.reports.items() if r.completed}


def plan_entry_points(
    group: str,
    namespace: PluginNamespace,
    discovery: DiscoveryResult,
    excluded_dists: Iterable[str] = (),
    allowed: frozenset[str] | None = None,
    required: str | None = None,
) -> list[PlannedPlugin]:
    """What loading ``group`` will do with each entry point, in load order; imports nothing.
    ``allowed``: the allowlist that applies (``None``: all); ``required``: the selected platform's
    distribution."""
    excluded = {normalize_distribution_name(dist) for dist in excluded_dists}
    duplicates = discovery.duplicates(group)
    selected = namespace.selected_platform()
    unselected = (
        f"its distribution offers only platforms other than {namespace.platform_env}={selected!r}"
    )
    # It names no platform, plugin or built-in: the selection's error says so, once.
    if (
        selected
        and selected.lower() not in namespace.reserved_platform_names
        and all(p.name != selected for p in discovery.group(namespace.platform_group))
    ):
        unselected = "not loaded: the platform selection failed (see its error)"
    # A listed name is "not installed" (said once, with the general plugins) when no group it
    # filters has it.
    filtered = {namespace.startup_group, namespace.plugin_group}
    installed = [
        ep for g in (filtered if group in filtered else {group}) if g for ep in discovery.group(g)
    ]
    missing = set() if group == namespace.startup_group else set(allowed or ())
    plan = []
    for name in sorted(missing - {ep.name for ep in installed}):
        from ..platforms._unknown_name import not_installed_reason  # a misconfiguration only

        reason = not_installed_reason(namespace, discovery, installed, name)
        plan.append(PlannedPlugin(name, Status.NOT_INSTALLED, reason, None))
    for ep in discovery.group(group):
        status, reason = Status.TO_LOAD, ""
        if allowed is not None and ep.name not in allowed:
            env = namespace.plugins_env
            status, reason = Status.SKIPPED_ALLOWLIST, f"not in {env}"
            if group == namespace.startup_group and ep.distribution == required:
                value = f"{os.environ[env].strip(' ,')},{ep.name}"
                reason += (
                    f", so the selected platform's distribution {ep.label} runs without its "
                    f"startup plugin; add it ({env}={value!r}) or unset {env}"
                )
        elif ep.distribution in excluded:
            status, reason = Status.SKIPPED_PLATFORM, unselected
        elif ep.name in duplicates:
            reason = f"the name {ep.name!r} is {duplicate_reason(duplicates[ep.name])}"
            status = Status.FAILED_DUPLICATE
        plan.append(PlannedPlugin(ep.name, status, reason, ep))
    return plan


def plan_plugins(
    namespace: PluginNamespace, discovery: DiscoveryResult, group: str, required: str | None = None
) -> list[PlannedPlugin]:
    """What a load of ``group`` (the general or the startup group) will do with each plugin:
    distributions offering only platforms other than the one ``SGLANG_PLATFORM`` selects are
    skipped (one that offers the selected platform never is, even when it offers others too)."""
    selected = namespace.selected_platform()
    eps = discovery.group(namespace.platform_group) if selected else ()
    excluded = {ep.distribution for ep in eps} - {
        ep.distribution for ep in eps if ep.name == selected
    }
    return plan_entry_points(
        group, namespace, discovery, excluded, namespace.allowed_plugins(), required
    )


def _callable(value: object) -> str | None:
    if callable(value):
        return None
    return (
        f"the entry point names {type(value).__name__} {safe_text(value, repr)}, not a function; "
        "it must name the plugin's register() for a general plugin, activate() for a platform "
        "plugin"
    )


def import_plugins(
    plan: list[PlannedPlugin],
    policy: Policy,
    group: str,
    gate: Gate | None = None,
    skip: Iterable[str] = (),
    loud: str | None = None,
) -> tuple[list[tuple[PluginEntryPoint, Callable[[], object]]], list[PluginOutcome]]:
    """Import the plugins ``plan`` loads (but those in ``skip``): their functions, and the outcomes
    of the others (failed imports, skipped, duplicates). Failures never stop the others, unless
    ``policy`` says so. Skipped plugins are logged at INFO, those of distribution ``loud`` at
    WARNING."""
    imported = []
    outcomes = []
    for name, status, reason, ep in plan:
        if ep and name in skip:
            continue
        if ep and status is Status.TO_LOAD:
            function, outcome = run_plugin_code(
                ep, ep.load, step="import", policy=policy, gate=gate, check=_callable
            )
            if outcome.ok:
                imported.append((ep, function))
                continue
        elif status is Status.FAILED_DUPLICATE and policy.strict:
            raise DuplicatePluginError(
                f"Plugin name {name!r} in group {group!r}: {reason}", plugin=name
            )
        else:
            quiet = status in (Status.SKIPPED_ALLOWLIST, Status.SKIPPED_PLATFORM)
            quiet = quiet and getattr(ep, "distribution", None) != loud
            (logger.info if quiet else logger.warning)(
                "Plugin %r in group %r: %s (%s)", name, group, reason, status
            )
            outcome = planned(ep, status, reason) if ep else PluginOutcome(name, status, reason)
        outcomes.append(outcome)
    return imported, outcomes  # type: ignore[return-value]  # checked by _callable


def _required_distribution(namespace: PluginNamespace, discovery: DiscoveryResult) -> str | None:
    """The selected platform's distribution, whose plugins' failures stop start-up: known once the
    platform is selected (SGLang selects it before it loads plugins), or from ``SGLANG_PLATFORM``.
    """
    if selection := platform_state(namespace).selection:
        return selection.distribution
    selected = namespace.selected_platform()
    eps = discovery.group(namespace.platform_group)
    return next((ep.distribution for ep in eps if ep.name == selected), None)


def _refuse(namespace: PluginNamespace, gate: Gate) -> ReentrantLoadError:
    running = gate.running
    return ReentrantLoadError(
        f"{running.where if running else 'a plugin'} waits for a thread that called load_plugins() "
        f"({namespace.name}) while that load runs it: waiting would never end. Call load_plugins() "
        f"from the plugin's own thread (it returns at once), or do the work after start-up.",
        plugin=running.ep.name if running else None,
    )


def _load_phase(namespace: PluginNamespace, group: str, strict: bool) -> LoadReport:
    """Load ``group``'s plugins once per process. A re-entrant call (from a plugin's function)
    returns the report in progress; a load that raised is redone by the next call, without rerunning
    a function that completed."""
    state = load_state(namespace)
    if not state.gate.enter(lambda gate: _refuse(namespace, gate)):
        return state.reports.get(group) or LoadReport(namespace.name, group)
    try:
        required = _required_distribution(namespace, discover_entry_points())
        if (report := state.reports.get(group)) and report.completed:
            # A platform selected since: what of its distribution did not load is redone under the
            # policy that applies to it now, as SGLANG_PLATFORM would have applied it at once.
            if report.required == required or all(
                o.distribution != required for o in report.outcomes if o.status is not Status.LOADED
            ):
                return report
            loaded = {(group, o.plugin): o for o in report.outcomes if o.status is Status.LOADED}
            state.done.update(loaded)
        if state.interrupted:
            discard_hooks(state.interrupted)
            state.interrupted = None
        report = state.reports[group] = LoadReport(namespace.name, group)
        report.required = required
        try:
            _load(namespace, group, strict, state, report)
        except BaseException:  # a load that raised: the next call redoes it
            del state.reports[group]
            raise
        return report
    finally:
        state.gate.leave()


def _load(
    namespace: PluginNamespace, group: str, strict: bool, state: LoadState, report: LoadReport
) -> None:
    """Import and run the plugins of ``group`` into ``report``, skipping the functions a load
    that raised already completed."""
    discovery = discover_entry_points()
    policy = Policy(strict=strict, strict_env=namespace.strict_env, required=report.required)
    if group == namespace.startup_group:  # what it patches, the host's own imports then rely on
        policy = policy._replace(stops=True, why=STARTUP_FAILURE)
    if namespace.allowed_plugins() == frozenset() and discovery.group(group):
        env = namespace.plugins_env
        logger.warning(
            "%s=%r names no plugin, so no plugin in group %r is loaded (as in SGLang). Unset %s to "
            "load them all, or list the ones to load: %s=name1,name2.",
            *(env, os.environ.get(env, ""), group, env, env),
        )
    done = {name: outcome for (phase, name), outcome in state.done.items() if phase == group}
    plan = plan_plugins(namespace, discovery, group, report.required)
    # the selected platform's startup plugins are its own: skipping one is worth a WARNING
    loud = report.required if group == namespace.startup_group else None
    functions, report.outcomes = import_plugins(plan, policy, group, state.gate, done, loud)
    for ep, function in functions:
        _, outcome = run_plugin_code(
            ep, function, step=f"{ep.value}()", policy=policy, gate=state.gate, check=never_ran
        )
        if outcome.ok:
            milliseconds = outcome.seconds * 1e3
            logger.info("Loaded plugin %r (%s) in %.1f ms", ep.name, ep.label, milliseconds)
            state.done[group, ep.name] = outcome
        report.outcomes.append(outcome)
    report.outcomes += done.values()
    report.completed = True
    state.done = {key: outcome for key, outcome in state.done.items() if key[0] != group}


def load_plugins(
    namespace: str | PluginNamespace = SRT, *, strict: bool | None = None
) -> LoadReport:
    """Run the startup plugins, then the general plugins, once per process; then apply the hooks.

    Returns what happened to each general plugin (SGLang's version returns ``None``; callers that
    ignore it are unaffected). When ``SGLANG_PLATFORM`` is set, plugins of distributions that offer
    only other platforms are skipped without being imported. ``strict``: default,
    ``SGLANG_PLUGINS_STRICT``.
    """
    return _load_all(namespace, strict, startup_only=False)


def load_startup_plugins(
    namespace: str | PluginNamespace = SRT, *, strict: bool | None = None
) -> LoadReport:
    """Run the startup plugins once per process (the first phase of :func:`load_plugins`).

    SGLang's open proposal for the phase is followed: the group is filtered by ``SGLANG_PLUGINS``
    and ``SGLANG_PLATFORM``, a failure stops start-up (:class:`~.errors.PluginLoadError`), the next
    call retries what failed, and no hooks are applied: those a startup plugin registers are applied
    by :func:`load_plugins` with the general plugins' (to modules imported by then, and to the
    others at their import)."""
    return _load_all(namespace, strict, startup_only=True)


def _load_all(
    name: str | PluginNamespace, strict: bool | None, *, startup_only: bool
) -> LoadReport:
    namespace = get_namespace(name)
    strict = namespace.strict() if strict is None else strict
    report = LoadReport(namespace.name, namespace.plugin_group)
    for group in (namespace.startup_group, None if startup_only else namespace.plugin_group):
        if group:
            report = _load_phase(namespace, group, strict)
    if startup_only:  # the startup phase applies no hooks: load_plugins() applies them all at once
        return report
    apply_hooks(strict)
    # The selected platform's distribution cannot run without its hooks.
    discovery = discover_entry_points()
    required = _required_distribution(namespace, discovery)
    hooks = registry()
    failed = hooks.failed_targets(required) if required and hooks else []
    if namespace.host_distribution not in discovery.distributions:
        # Hooks on the host where it is not installed wait for it (the plugin's own tests).
        host = (namespace.host_base_class or ".").partition(".")[0]
        failed = [t for t in failed if t.partition(":")[0].split(".")[0] != host]
    if failed:
        raise PluginLoadError(
            f"Hooks of the selected platform's distribution {required} cannot be applied: "
            f"{', '.join(failed)}; the process cannot run without them.",
            distribution=required,
        )
    return report


def plugin_load_report(
    namespace: str | PluginNamespace = SRT, group: str | None = None
) -> LoadReport | None:
    """What this process's ``load_plugins()`` did to ``group`` (default: the general plugins)."""
    namespace = get_namespace(namespace)
    return load_state(namespace).reports.get(group or namespace.plugin_group)


def load_plugins_by_group(
    group: str, excluded_dists: set[str] | None = None
) -> dict[str, tuple[Callable[[], Any], str | None]]:
    """Import the plugins of ``group`` and return ``{name: (function, distribution name)}``
    (SGLang's API).

    Entry points of distributions in ``excluded_dists`` are never imported. ``SGLANG_PLUGINS``
    filters general-plugin groups only, never platform groups. A plugin that fails to import is
    logged and skipped (raised with ``SGLANG_PLUGINS_STRICT=1``). Distribution names are PEP 503
    normalised.
    """
    namespace = next(
        (
            known
            for known in known_namespaces()
            if group in (known.plugin_group, known.platform_group)
        ),
        SRT,
    )
    allowed = None if group == namespace.platform_group else namespace.allowed_plugins()
    plan = plan_entry_points(
        group, namespace, discover_entry_points(), excluded_dists or (), allowed
    )
    imported, _ = import_plugins(
        plan, Policy(strict=namespace.strict(), strict_env=namespace.strict_env), group
    )
    return {ep.name: (function, ep.distribution) for ep, function in imported}


def saved_load_state() -> Callable[[], None]:
    """Every namespace's load state now, and the function that brings it back: the testing kit's
    fixtures leave a session's loads as they found them (a test's load neither stays nor erases
    the session's)."""
    saved = {name: (dict(s.reports), dict(s.done), s.interrupted) for name, s in _STATES.items()}
    return lambda: _reset(_STATES, saved)


def reset_load_state(namespace: PluginNamespace | None = None) -> None:
    """Forget that plugins were loaded (tests); ``HookRegistry.reset()`` resets the hooks."""
    _reset(_STATES if namespace is None else {namespace.name: load_state(namespace)}, {})


def _reset(states: dict[str, LoadState], saved: dict[str, Any]) -> None:
    for name, state in states.items():
        reports, done, interrupted = saved.get(name, ({}, {}, None))
        with state.gate.lock:
            state.reports, state.done, state.interrupted = dict(reports), dict(done), interrupted
