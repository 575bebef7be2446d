"""Loading general plugins: decide which to load, import them with attribution, run ``register()``, record it.

Written once for every namespace. Which plugins are loaded, skipped or refused is one pure function
(:func:`plan_entry_points`) that ``sglang-plugins list`` asks too. The public functions with SGLang's signatures
live in :mod:`sglang_plugin_runtime.plugins`.
"""

# No ``from __future__ import annotations`` here: typing.NamedTuple would compile a ForwardRef for every
# string annotation of its fields, a cost paid by every process at start-up.
import inspect
import logging
import os
import sys
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

from .._discovery import (
    DiscoveryResult,
    PluginEntryPoint,
    discover_entry_points,
    duplicate_reason,
    normalize_distribution_name,
)
from .._namespace import PluginNamespace, known_namespaces, state_of
from .._plugin_code import describe_failure, guarded, plugin_traceback
from ..errors import DuplicatePluginError, PluginLoadError

if TYPE_CHECKING:
    from .hook_registry import HookSource

logger = logging.getLogger(__name__)

# Statuses of a general plugin; part of the CLI's JSON schema, so values only ever get added.
LOADED = "loaded"
SKIPPED_ALLOWLIST = "skipped-allowlist"
SKIPPED_PLATFORM = "skipped-unselected-platform"
FAILED_IMPORT = "failed-import"
FAILED_REGISTER = "failed-register"
FAILED_DUPLICATE = "failed-duplicate"
NOT_INSTALLED = "not-installed"
TO_LOAD = "to-load"
"""A plan's verdict for a plugin that will be imported and run (never a record's status)."""


class PluginRecord(NamedTuple):
    """What happened to one general plugin."""

    plugin: str
    status: str
    reason: str = ""
    dist_name: str | None = None
    dist_version: str | None = None
    value: str | None = None
    seconds: float = 0.0
    traceback: str | None = None
    """For a plugin whose import or ``register()`` raised: the traceback, without the runtime's frames."""

    @property
    def ok(self) -> bool:
        return not self.status.startswith("failed") and self.status != NOT_INSTALLED

    def to_dict(self) -> dict[str, Any]:
        from .._json_names import as_json  # the one rule for JSON names (dist_name -> distribution, ...)

        return as_json(self)


class LoadReport:
    """Everything :func:`load_general_plugins` did in this process for one namespace."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.records: list[PluginRecord] = []
        self.completed = False

    @property
    def problems(self) -> list[PluginRecord]:
        return [r for r in self.records if not r.ok]

    def __repr__(self) -> str:
        plugins = ", ".join(f"{r.plugin}: {r.status}" for r in self.records) or "no plugins"
        return f"LoadReport({self.namespace}: {plugins}{'' if self.completed else ', incomplete'})"

    def to_dict(self) -> dict[str, Any]:
        plugins = [r.to_dict() for r in self.records]
        return {"namespace": self.namespace, "completed": self.completed, "plugins": plugins}


class PlannedPlugin(NamedTuple):
    """What loading will do with one entry point (or one allowlisted name that is not installed)."""

    name: str
    status: str
    """``TO_LOAD``, ``SKIPPED_ALLOWLIST``, ``SKIPPED_PLATFORM``, ``FAILED_DUPLICATE`` or ``NOT_INSTALLED``."""
    reason: str
    entry_point: PluginEntryPoint | None


def namespace_for_group(group: str, default: PluginNamespace) -> PluginNamespace:
    return next((ns for ns in known_namespaces() if group in (ns.plugin_group, ns.platform_group)), default)


def unselected_platform_dists(namespace: PluginNamespace, discovery: DiscoveryResult) -> set[str]:
    """Distributions offering only platforms other than the one ``SGLANG_PLATFORM`` selects.

    A distribution that offers the selected platform is never in the set, even when it offers others too.
    """
    selected = namespace.selected_platform()
    eps = discovery.group(namespace.platform_group) if selected else ()
    return {ep.dist_name for ep in eps} - {ep.dist_name for ep in eps if ep.name == selected}


def plan_entry_points(
    group: str,
    namespace: PluginNamespace,
    discovery: DiscoveryResult,
    *,
    excluded_dists: Iterable[str] = (),
    apply_allowlist: bool = True,
) -> list[PlannedPlugin]:
    """What loading ``group`` will do with each entry point, in load order; imports nothing."""
    allowed = namespace.allowed_plugins() if apply_allowlist else None
    excluded = {normalize_distribution_name(dist) for dist in excluded_dists}
    entries, duplicates = discovery.group(group), discovery.duplicates(group)
    env = namespace.plugins_env
    plan = [
        PlannedPlugin(name, NOT_INSTALLED, f"listed in {env} but not installed", None)
        for name in sorted((allowed or set()) - {ep.name for ep in entries})
    ]
    for ep in entries:
        if allowed is not None and ep.name not in allowed:
            status, reason = SKIPPED_ALLOWLIST, f"not in {env}"
        elif ep.dist_name in excluded:
            selected = namespace.selected_platform()
            status = SKIPPED_PLATFORM
            reason = f"its distribution offers only platforms other than {namespace.platform_env}={selected!r}"
        elif ep.name in duplicates:
            status, reason = FAILED_DUPLICATE, f"the name {ep.name!r} is {duplicate_reason(duplicates[ep.name])}"
        else:
            status, reason = TO_LOAD, ""
        plan.append(PlannedPlugin(ep.name, status, reason, ep))
    return plan


def plan_general_plugins(namespace: PluginNamespace, discovery: DiscoveryResult) -> list[PlannedPlugin]:
    """What :func:`load_general_plugins` will do with each of ``namespace``'s general plugins; imports nothing."""
    excluded = unselected_platform_dists(namespace, discovery)
    return plan_entry_points(namespace.plugin_group, namespace, discovery, excluded_dists=excluded)


def _record(ep: PluginEntryPoint, status: str, reason: str = "", **extra: Any) -> PluginRecord:
    return PluginRecord(ep.name, status, reason, ep.dist_name, ep.dist_version, ep.value, **extra)


def _source(ep: PluginEntryPoint) -> "HookSource":
    from .hook_registry import HookSource  # the registry is imported once a plugin runs, never before

    return HookSource(plugin_name=ep.name, dist_name=ep.dist_name)


def _run_plugin_code(
    ep: PluginEntryPoint, action: Callable[[], Any], failure: str, namespace: PluginNamespace, report: Any
) -> tuple[Any, float, str | None]:
    """Run ``action`` (plugin code) with ``ep`` as the hook source and the namespace's strictness for the hooks it
    registers. Returns its result, its time and what went wrong (``None``: nothing); a failure is recorded as
    ``failure`` (a status) and logged, or raised in strict mode, and the plugin's hooks are discarded."""
    start, what = time.perf_counter(), f"import of {ep.value!r}" if failure == FAILED_IMPORT else f"{ep.value}()"
    from .hook_registry import HookRegistry, _plugin_context

    result = None
    with _plugin_context(_source(ep), namespace.strict()), guarded(f"{what} of plugin {ep.name!r}") as call:
        result = action()
    error, reason = call.error, None
    if error is not None:
        reason = f"{what} {'failed:' if failure == FAILED_IMPORT else 'raised'} {describe_failure(error)}"
    elif failure == FAILED_IMPORT and not callable(result):
        reason = (
            f"the entry point {ep.value!r} names {type(result).__name__} {result!r}, not a function; it must "
            f"name the plugin's function (register() for a general plugin, activate() for a platform plugin)"
        )
    elif inspect.iscoroutine(result) or inspect.isgenerator(result) or inspect.isasyncgen(result):
        if inspect.iscoroutine(result):
            result.close()  # its body never ran; closed, Python does not warn "never awaited" about it later
        kind = "a generator" if inspect.isgenerator(result) else "an async"
        reason = (
            f"{ep.value} is {kind} function: calling it returned {type(result).__name__} and its body never "
            f"ran, so nothing was registered; make it a plain function (def register(): ...)"
        )
    seconds = time.perf_counter() - start
    if reason is not None:
        HookRegistry.discard_source(_source(ep))
        trace = plugin_traceback(error) if error is not None else None
        _fail(_record(ep, failure, reason, seconds=seconds, traceback=trace), namespace, report, error)
    return result, seconds, reason


def _fail(record: PluginRecord, namespace: PluginNamespace, report: LoadReport | None, error: Any = None) -> None:
    if report is not None:
        report.records.append(record)
    dist = f" (distribution {record.dist_name} {record.dist_version})" if record.dist_name else ""
    message = f"General plugin {record.plugin!r}{dist} failed: {record.reason}"
    if namespace.strict():
        raise PluginLoadError(
            f"{message} ({namespace.strict_env}=1 makes this an error)", plugin=record.plugin, dist=record.dist_name
        ) from error
    # SGLang logs a failing plugin at ERROR with its traceback; so do we, naming the distribution too.
    trace = f"\n{record.traceback.rstrip()}" if record.traceback else ""
    log = logger.error if record.status in (FAILED_IMPORT, FAILED_REGISTER) else logger.warning
    log("%s. It was skipped; the other plugins are unaffected.%s", message, trace)


def load_entry_points(
    group: str,
    namespace: PluginNamespace,
    *,
    excluded_dists: Iterable[str] | None = None,
    apply_allowlist: bool,
    report: LoadReport | None = None,
    discovery: DiscoveryResult | None = None,
    skip: Iterable[str] = (),
) -> dict[str, tuple[Callable[..., Any], PluginEntryPoint]]:
    """Import the entry points of ``group`` and return ``{name: (callable, entry point)}``, in load order.

    Imports run with the plugin as the current hook source. Failures are recorded in ``report`` and logged
    (strict mode raises); they never stop the other plugins. Entry points named in ``skip`` are left alone.
    """
    skip = frozenset(skip)
    plan = plan_entry_points(
        group,
        namespace,
        discovery or discover_entry_points(),
        excluded_dists=excluded_dists or (),
        apply_allowlist=apply_allowlist,
    )
    if apply_allowlist and namespace.allowed_plugins() == frozenset():
        env = namespace.plugins_env
        logger.warning(
            "%s=%r names no plugin, so no general plugin in group %r is loaded (as in SGLang). Unset %s to load "
            "them all, or list the ones to load: %s=name1,name2.",
            *(env, os.environ.get(env, ""), group, env, env),
        )
    loaded: dict[str, tuple[Callable[..., Any], PluginEntryPoint]] = {}
    for name, status, reason, ep in plan:
        if ep is not None and ep.name in skip:
            continue
        if status == TO_LOAD:
            assert ep is not None
            func, _seconds, failed = _run_plugin_code(ep, ep.load, FAILED_IMPORT, namespace, report)
            if failed is None:
                loaded[name] = (func, ep)
            continue
        record = _record(ep, status, reason) if ep is not None else PluginRecord(name, status, reason)
        if status == FAILED_DUPLICATE and namespace.strict():
            raise DuplicatePluginError(
                f"Plugin name {name!r} in group {group!r}: {reason}", plugin=name, dist=record.dist_name
            )
        if status == FAILED_DUPLICATE:
            _fail(record, namespace, report)
            continue
        advice = "check the spelling or install it" if status == NOT_INSTALLED else "skipped"
        (logger.warning if status == NOT_INSTALLED else logger.info)(
            "Plugin %r in group %r: %s (%s)", name, group, reason, advice
        )
        if report is not None:
            report.records.append(record)
    return loaded


_HOOK_REGISTRY = __name__.rpartition(".")[0] + ".hook_registry"


def reset_load_state(namespace: PluginNamespace | None = None) -> None:
    """Forget that plugins were loaded (tests); hooks are reset separately via ``HookRegistry.reset()``."""
    for ns in known_namespaces() if namespace is None else (namespace,):
        state = state_of(ns)
        with state.load_lock:
            state.report, state.in_flight = None, None
            state.done.clear()


def last_load_report(namespace: PluginNamespace) -> LoadReport | None:
    return state_of(namespace).report  # type: ignore[no-any-return]


def load_general_plugins(namespace: PluginNamespace) -> LoadReport:
    """Load ``namespace``'s general plugins once per process, then apply the registered hooks.

    Idempotent: later calls only re-apply hooks (cheap; picks up hooks registered since). A re-entrant call
    from inside a plugin's ``register()`` returns the report in progress. If discovery itself fails, nothing
    is marked as loaded, so the next call tries again. A plugin whose ``register()`` completed is never run again
    (a strict retry, a child forked while another thread was loading).
    """
    state = state_of(namespace)
    with state.load_lock:
        if state.loading:
            return state.report  # type: ignore[no-any-return]
        if state.report is None or not state.report.completed:
            if state.in_flight is not None:  # forked while this plugin's register() ran in another thread
                sys.modules[_HOOK_REGISTRY].HookRegistry.discard_source(state.in_flight)  # imported: a plugin ran
                state.in_flight = None
            state.loading, state.report = True, LoadReport(namespace.name)
            try:
                _load(namespace, state.report, state.done)
            except BaseException:
                state.report = None
                raise
            finally:
                state.loading = False
    if (registry := sys.modules.get(_HOOK_REGISTRY)) is not None:  # else no plugin (nor host) registered a hook
        registry.HookRegistry.apply_hooks(strict=namespace.strict())
    return state.report  # type: ignore[no-any-return]


def _load(namespace: PluginNamespace, report: LoadReport, done: dict[str, PluginRecord]) -> None:
    """Load the plugins not ``done`` into ``report``; each whose ``register()`` completes joins ``done``."""
    state, discovery = state_of(namespace), discover_entry_points()
    excluded = unselected_platform_dists(namespace, discovery)
    plugins = load_entry_points(
        namespace.plugin_group,
        namespace,
        excluded_dists=excluded,
        apply_allowlist=True,
        report=report,
        discovery=discovery,
        skip=done,
    )
    for name, (func, ep) in plugins.items():
        state.in_flight = _source(ep)
        _result, seconds, failed = _run_plugin_code(ep, func, FAILED_REGISTER, namespace, report)
        state.in_flight = None
        if failed is None:
            logger.info("Loaded general plugin %r (%s) in %.1f ms", ep.name, ep.dist_label, seconds * 1e3)
            report.records.append(done.setdefault(name, _record(ep, LOADED, "", seconds=seconds)))
    report.records.extend(record for name, record in done.items() if name not in plugins)
    report.completed = True
    done.clear()
