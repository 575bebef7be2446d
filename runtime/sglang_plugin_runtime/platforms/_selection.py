"""Platform selection: SGLang's decision tree, every step recorded, every failure said out loud; and the state of
each namespace's current platform, which selection alone writes.

- ``SGLANG_PLATFORM`` set: only that entry point is imported and activated; unknown name, ``None`` and raising
  ``activate()`` are errors.
- unset: every platform plugin is imported and activated; 0 activated -> the namespace's fallback, 1 -> it,
  N -> error. A plugin that fails to import or activate is a WARNING (an error in strict mode), never silent.

What ``activate()`` returns is validated (a non-empty ``module.Class`` / ``module:Class`` string naming a subclass of
the namespace's base class, out-of-tree, with a device name and type) before anything is instantiated. Hooks that
a platform plugin's code registered stay only when it is the selected one. Each plugin's ``activate()`` runs once
per selection, also where the host (released SGLang) is imported on the way and runs its own selection.
"""

# No ``from __future__ import annotations`` here: typing.NamedTuple would compile a ForwardRef for every
# string annotation of its fields, a cost paid by every process at start-up.
import logging
import sys
from collections.abc import Callable
from functools import partial
from typing import NamedTuple, TypeVar

from .._discovery import DiscoveryResult, PluginEntryPoint, discover_entry_points, duplicate_reason
from .._forking import after_fork_in_child
from .._namespace import ClassRef, PluginNamespace, resolve_class_ref, resolve_qualified_name
from .._plugin_code import Gate, PlannedPlugin, PluginOutcome, Policy, Status, discard_hooks
from .._plugin_code import describe_failure, is_plugin_failure, run_plugin_code, safe_text
from ..errors import AmbiguousPlatformError, DuplicatePluginError, InvalidPlatformError, PlatformNotFoundError
from ..errors import PlatformUnavailableError, PluginError, ReentrantSelectionError

logger = logging.getLogger(__name__)
_E = TypeVar("_E", bound=PluginError)

#: How a platform was chosen; part of the CLI's JSON schema, so values only ever get added.
RULE_EXPLICIT = "explicit"  # SGLANG_PLATFORM named it
RULE_SINGLE = "single-activated"  # auto mode, exactly one plugin activated
RULE_FALLBACK = "fallback"  # auto mode, none activated
RULE_OVERRIDE = "override"  # set by code (tests, a host) through set_current_platform()

#: Failures that stop selection even in auto mode: the plugin says its hardware is here but hands over an unusable
#: class, or its activate() depends on the selection it is part of; falling back would run on the wrong device.
_FATAL = (InvalidPlatformError, ReentrantSelectionError)


class PlatformSelection(NamedTuple):
    """The chosen platform class and its provenance: which plugin, which distribution, which rule, and why."""

    namespace: str
    platform_class: type
    rule: str
    reason: str
    plugin: str | None = None
    distribution: str | None = None
    version: str | None = None
    activations: tuple[PluginOutcome, ...] = ()
    problems: tuple[str, ...] = ()
    """Plugins that failed and were skipped (auto mode only); empty means a clean selection."""

    @property
    def class_path(self) -> str:
        return f"{self.platform_class.__module__}.{self.platform_class.__qualname__}"

    def to_dict(self) -> dict[str, object]:
        activations = [a.to_dict() for a in self.activations]
        fields = {"platform_class": self.class_path, "activations": activations, "problems": list(self.problems)}
        return {**self._asdict(), **fields}


class PlatformState:
    """What this process knows about one namespace's platform. Selection alone writes it, under its gate; a
    forked child keeps a finished selection and redoes an interrupted one."""

    def __init__(self) -> None:
        self.gate = Gate()
        self.platform: object | None = None
        self.selection: PlatformSelection | None = None  # published together with ``platform``
        self.fallback: ClassRef | None = None  # the host's (set_fallback_platform)


_STATES: dict[str, PlatformState] = {}


def platform_state(namespace: PluginNamespace) -> PlatformState:
    """The platform state of ``namespace`` (a registered namespace: see ``get_namespace``)."""
    return _STATES.get(namespace.name) or _STATES.setdefault(namespace.name, PlatformState())


@after_fork_in_child
def _after_fork() -> None:
    for state in _STATES.values():
        state.gate = Gate()


def describe(ep: PluginEntryPoint) -> str:
    return f"platform plugin {ep.name!r} (distribution {ep.label}, entry point {ep.value!r})"


def _error(kind: type[_E], ep: PluginEntryPoint | None, message: str) -> _E:
    return kind(message, plugin=ep and ep.name, distribution=ep and ep.distribution)


def plan_platforms(
    namespace: PluginNamespace, discovery: DiscoveryResult
) -> tuple[list[PlannedPlugin], PluginError | None]:
    """What selection will do with each platform plugin, and the error that stops it before it imports anything
    (an unknown ``SGLANG_PLATFORM``, a duplicate name, a name the host keeps); imports nothing."""
    env, selected, group = namespace.platform_env, namespace.selected_platform(), namespace.platform_group
    installed, duplicates = discovery.group(group), discovery.duplicates(group)
    plan = []
    for ep in installed:
        if selected is not None and ep.name != selected:
            status, reason = Status.NOT_SELECTED, f"{env}={selected!r}: never imported"
        elif ep.name in duplicates:
            status, reason = Status.FAILED_DUPLICATE, f"the name {ep.name!r} is {duplicate_reason(duplicates[ep.name])}"
        elif selected is not None:
            status, reason = Status.SELECTED, f"{env}={selected!r}: the only platform plugin imported"
        else:
            status, reason = Status.TO_LOAD, f"{env} unset: imported and its activate() called"
        plan.append(PlannedPlugin(ep.name, status, reason, ep))
    duplicate = next((p.entry_point for p in plan if p.status is Status.FAILED_DUPLICATE), None)
    reserved = [p.entry_point for p in plan if p.name.lower() in namespace.reserved_platform_names]
    if selected is not None and all(p.status is Status.NOT_SELECTED for p in plan):
        from ._unknown_name import unknown_platform_message  # a misconfiguration: the only path needing it

        return plan, PlatformNotFoundError(unknown_platform_message(namespace, installed, selected), plugin=selected[:80])
    if duplicate is not None:
        message = f"Platform plugin name {duplicate.name!r} in group {group!r}: "
        return plan, _error(DuplicatePluginError, duplicate, message + duplicate_reason(duplicates[duplicate.name]))
    if reserved and (selected is None or reserved[0].name == selected):
        names = ", ".join(sorted(namespace.reserved_platform_names))
        offenders = ", ".join(f"{ep.name!r} ({ep.label})" for ep in reserved if ep is not None)
        message = f"Platform plugin names in group {group!r} cannot be names of the host's built-in platforms "
        message += f"({names}): {offenders}. Rename the entry point in the plugin's pyproject.toml."
        return plan, _error(PluginError, reserved[0], message)
    return plan, None


def out_of_tree_identity_problems(cls: type) -> list[str]:
    """What is missing for ``cls`` to identify itself as an out-of-tree platform."""
    from .device_mixin import PlatformEnum  # imported by then: ``cls`` is a platform class

    problems = []
    enum_value = getattr(cls, "_enum", None)
    # This runtime's PlatformEnum, or the host's own (a plugin built on released SGLang's classes).
    is_oot = enum_value is PlatformEnum.OOT or (
        type(enum_value).__name__ == "PlatformEnum" and getattr(enum_value, "name", None) == "OOT"
    )
    if not is_oot:
        problems.append(f"_enum is {enum_value!r}, it must be PlatformEnum.OOT")
    for attr in ("device_name", "device_type"):
        value = getattr(cls, attr, None)
        if not isinstance(value, str) or not value.strip():
            problems.append(f"{attr} is {value!r}, it must be a non-empty string")
    return problems


def _invalid(ep: PluginEntryPoint, message: str) -> InvalidPlatformError:
    return _error(InvalidPlatformError, ep, f"{describe(ep)}: {message}")


def _function(ep: PluginEntryPoint) -> Callable[[], object]:
    """The entry point's ``activate()`` (importing its module)."""
    activate = ep.load()
    if not callable(activate):
        kind = type(activate).__name__
        raise _invalid(
            ep,
            f"the entry point names {kind} {safe_text(activate, repr)}, not a function. A platform plugin's entry "
            f"point must name its activate() function, e.g. '{ep.module}:activate'.",
        )
    return activate


def _platform_class(ep: PluginEntryPoint, result: object, namespace: PluginNamespace) -> type:
    """The class ``activate()`` named; ``InvalidPlatformError`` for anything that is not a usable platform class."""
    returned = f"activate() returned {safe_text(result, repr)}"
    qualname = result.strip() if isinstance(result, str) else ""
    if "." not in qualname and ":" not in qualname:
        kind = "" if isinstance(result, str) else f" ({type(result).__name__})"
        raise _invalid(
            ep,
            f"{returned}{kind}; it must return a qualified class name such as 'my_plugin.platform:MyPlatform' "
            "('module.Class' or 'module:Class'), or None when the hardware is absent.",
        )
    try:
        cls = resolve_qualified_name(qualname)
        # A class built on the host's own base (released SGLang's) is one the host runs: accepted too.
        bases = [base for base in dict.fromkeys([namespace.resolve_base_class(), namespace.host_base()]) if base]
        if not isinstance(cls, type) or not issubclass(cls, tuple(bases)):
            names = " or ".join(f"{base.__module__}.{base.__qualname__}" for base in bases)
            raise _invalid(ep, f"{returned}, which is {safe_text(cls, repr)}, not a subclass of {names}.")
        problems = out_of_tree_identity_problems(cls)
    except BaseException as exc:  # its module failed to import (or exited), its metaclass or attributes raised
        if isinstance(exc, InvalidPlatformError) or not is_plugin_failure(exc):
            raise
        raise _invalid(ep, f"{returned}, which cannot be imported or checked: {describe_failure(exc)}") from exc
    if problems:
        raise _invalid(ep, f"class {qualname!r} is not a valid out-of-tree platform: " + "; ".join(problems))
    return cls


def _replay(recorded: object) -> object:
    """What an ``activate()`` already run in this selection (by the host's start-up) did, once more."""
    if isinstance(recorded, BaseException):
        raise recorded
    return recorded


def _activate(
    namespace: PluginNamespace, ep: PluginEntryPoint, gate: Gate, runs: dict[str, object], policy: Policy
) -> tuple[PluginOutcome, type | None]:
    """Import ``ep``, run its ``activate()`` (or replay what the host's start-up got from it), check the class it
    names. Failures follow ``policy``; ``runs`` records what ``activate()`` did, for the host's start-up."""
    activate, imported = run_plugin_code(ep, lambda: _function(ep), step="import", policy=policy, gate=gate)
    if not imported.ok:
        return imported, None
    if ep.name in runs:
        activate = partial(_replay, runs[ep.name])
    result, ran = run_plugin_code(ep, activate, step="activate()", policy=policy, gate=gate)  # type: ignore[arg-type]
    runs.setdefault(ep.name, result if ran.ok else RuntimeError(ran.reason))
    ran = ran._replace(seconds=imported.seconds + ran.seconds)
    if not ran.ok or result is None:
        return ran._replace(status=Status.UNAVAILABLE) if ran.ok else ran, None
    host = (namespace.host_base_class or "").split(":")[0]
    if host and host not in sys.modules and namespace.host_distribution in discover_entry_points().distributions:
        from ._host import import_host  # the class may be built on the host's classes: the host goes first

        import_host(namespace, host, runs, gate)
    # Its distribution says the hardware is here: whatever is wrong with its class stops selection.
    check = partial(_platform_class, ep, result, namespace)
    cls, _ = run_plugin_code(ep, check, step="its platform class", policy=policy._replace(required=ep.distribution))
    shown = result.strip() if isinstance(result, str) else safe_text(result, repr)
    return ran._replace(status=Status.ACTIVATED, result=shown), cls  # type: ignore[return-value]


def _select(
    namespace: PluginNamespace, discovery: DiscoveryResult, strict: bool, gate: Gate
) -> tuple[PlatformSelection, PluginEntryPoint | None]:
    """The decision tree; the selected entry point too (``None``: the fallback)."""
    plan, error = plan_platforms(namespace, discovery)
    if error is not None:
        raise error
    env, selected = namespace.platform_env, namespace.selected_platform()
    candidates = [p.entry_point for p in plan if p.status in (Status.TO_LOAD, Status.SELECTED) and p.entry_point]
    activations: list[PluginOutcome] = []
    activated: list[tuple[PluginEntryPoint, type]] = []
    runs: dict[str, object] = {}
    try:
        for ep in candidates:
            why = f"{env}={selected!r} selects it"
            policy = Policy(strict, namespace.strict_env, selected and ep.distribution, why, logging.WARNING, _FATAL)
            outcome, cls = _activate(namespace, ep, gate, runs, policy)
            activations.append(outcome)
            if cls is not None:
                logger.info("Platform plugin %r (%s) activated -> %s", ep.name, ep.label, outcome.result)
                activated.append((ep, cls))
            elif selected and outcome.ok:
                message = (
                    f"{describe(ep)} is selected by {env}={selected!r}, but its activate() returned None: its "
                    f"hardware or backend is not available on this machine. Check the device and its driver, or "
                    f"unset {env}."
                )
                raise _error(PlatformUnavailableError, ep, message)
        if len(activated) > 1:
            names = ", ".join(f"{ep.name!r} ({ep.label})" for ep, _ in activated)
            message = f"Several platform plugins activated: {names}. Set {env} to the one to use, e.g. {env}="
            raise _error(AmbiguousPlatformError, None, message + activated[0][0].name + ".")
    except PluginError as exc:
        exc.outcomes = (*activations, *(o for o in exc.outcomes if o not in activations))
        raise
    chosen, cls = activated[0] if activated else (None, None)
    for ep in candidates:
        if ep is not chosen:  # an unselected platform plugin leaves no hooks (SGLang's diffusion loader's rule)
            discard_hooks(ep)
    problems = tuple(f"{describe(ep)} was skipped: {o.reason}" for ep, o in zip(candidates, activations) if not o.ok)
    note = f"; {len(problems)} plugin(s) failed and were skipped" if problems else ""
    if chosen is not None:
        rule, reason = RULE_EXPLICIT, f"{env}={selected!r}; only that plugin was imported and activated"
        if not selected:
            rule, reason = RULE_SINGLE, f"{env} unset; {chosen.name!r} was the only plugin whose activate() "
            reason += f"returned a class (of {len(candidates)} installed){note}"
        identity = (chosen.name, chosen.distribution, chosen.version)
    else:
        ref = namespace.fallback_class or platform_state(namespace).fallback or namespace.base_class
        cls, rule, identity = resolve_class_ref(ref), RULE_FALLBACK, (None, None, None)
        why = f"no platform plugin is installed in group {namespace.platform_group!r}"
        if candidates:
            why = f"none of the {len(candidates)} installed platform plugin(s) activated{note}"
        (logger.warning if problems else logger.info)("Using fallback platform %s: %s.", cls.__qualname__, why)
        reason = f"{env} unset; {why}"
    selection = PlatformSelection(namespace.name, cls, rule, reason, *identity, tuple(activations), problems)
    return selection, chosen


def _reentry(namespace: PluginNamespace) -> Callable[[Gate], PluginError]:
    """The error for code that reads ``current_platform`` while it is being selected."""

    def refuse(gate: Gate) -> PluginError:
        advice = (
            "Selection cannot depend on its own result: probe the hardware directly (for example the vendor "
            "module's device count or torch.<device>.is_available()) and read current_platform only after "
            "selection, e.g. in the platform's methods or a general plugin's register()."
        )
        running = gate.running
        who = running.where if running is not None else "code run by selection"
        message = f"{who} read {namespace.name} current_platform while it was being selected. {advice}"
        return _error(ReentrantSelectionError, running and running.ep, message)

    return refuse


def select_platform(
    namespace: PluginNamespace, discovery: DiscoveryResult | None = None, *, strict: bool | None = None
) -> PlatformSelection:
    """Run the decision tree for ``namespace`` and return the chosen class with its provenance; the class is not
    instantiated, nor kept (``current_platform`` does both). ``strict``: default, the namespace's variable."""
    gate = platform_state(namespace).gate
    if not gate.enter(_reentry(namespace)):
        raise gate.refused(_reentry(namespace)(gate))
    try:
        strict = namespace.strict() if strict is None else strict
        return _select(namespace, discovery or discover_entry_points(), strict, gate)[0]
    finally:
        gate.leave()


def current_platform_of(namespace: PluginNamespace, *, strict: bool | None = None) -> object:
    """The platform instance of ``namespace``, selected and instantiated on first use (once per process)."""
    state = platform_state(namespace)
    platform = state.platform
    if platform is not None:
        return platform
    gate = state.gate
    if not gate.enter(_reentry(namespace)):
        raise gate.refused(_reentry(namespace)(gate))
    try:
        if state.platform is None:
            strict = namespace.strict() if strict is None else strict
            selection, ep = _select(namespace, discover_entry_points(), strict, gate)
            cls, step = selection.platform_class, f"the constructor of platform class {selection.class_path}"
            if ep is None:
                platform = cls()
            else:  # the selected plugin's code: hooks it registers are its own, and gone if it raises
                policy = Policy(strict, namespace.strict_env, ep.distribution, "it is the selected platform")
                platform, _ = run_plugin_code(ep, cls, step=step, policy=policy._replace(fatal=_FATAL), gate=gate)
            state.selection, state.platform = selection, platform  # published together, once both exist
        return state.platform
    finally:
        gate.leave()


def current_selection_of(namespace: PluginNamespace) -> PlatformSelection:
    """How the current platform was chosen, selecting it first if needed."""
    current_platform_of(namespace)
    selection = platform_state(namespace).selection
    assert selection is not None
    return selection


def set_current_platform_of(namespace: PluginNamespace, platform: object) -> None:
    """Use ``platform`` (an instance, or a class to instantiate) from now on."""
    state = platform_state(namespace)
    instance = platform() if isinstance(platform, type) else platform
    reason = "set by code through set_current_platform()"
    with state.gate.lock:
        state.platform = instance
        state.selection = PlatformSelection(namespace.name, type(instance), RULE_OVERRIDE, reason)


def reset_current_platform_of(namespace: PluginNamespace) -> None:
    """Forget the current platform; the next access selects again."""
    state = platform_state(namespace)
    with state.gate.lock:
        state.platform = state.selection = None
