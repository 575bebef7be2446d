"""Platform selection: SGLang's decision tree, every step recorded, every failure said out loud; and
each namespace's current platform, the state selection alone writes.

- ``SGLANG_PLATFORM`` set: only that entry point is imported and activated; an unknown name,
  ``None`` and a raising ``activate()`` are errors.
- unset: every platform plugin is imported and activated; 0 activated -> the namespace's fallback,
  1 -> it, N -> error. A plugin that fails to import or activate is a WARNING (an error in strict
  mode), never silent.

What ``activate()`` returns is validated (a ``module.Class`` / ``module:Class`` string naming an
out-of-tree subclass of the namespace's base class, with a device name and type) before anything
is instantiated. The hooks a platform plugin's code registered stay only when it is selected.
"""

# No ``from __future__ import annotations`` here: typing.NamedTuple would compile a ForwardRef for
# every string annotation of its fields, a cost paid by every process at start-up.
import contextlib
import enum
import logging
import sys
from collections import defaultdict
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any, NamedTuple

from .. import errors
from .._discovery import (
    DiscoveryResult,
    PluginEntryPoint,
    discover_entry_points,
    duplicate_reason,
    refresh_discovery,
)
from .._forking import after_fork_in_child
from .._lazy_exports import old_attribute
from .._namespace import (
    SRT,
    ClassRef,
    PluginNamespace,
    get_namespace,
    resolve_class_ref,
    resolve_qualified_name,
)
from .._plugin_code import (
    Gate,
    PlannedPlugin,
    PluginOutcome,
    Policy,
    Status,
    describe_failure,
    discard_hooks,
    honoured_exit,
    is_plugin_failure,
    never_ran,
    run_plugin_code,
    safe_text,
)

logger = logging.getLogger(__name__)


class Rule(str, enum.Enum):
    """How a platform was chosen; values are in the CLI's schema, so they only ever get added."""

    EXPLICIT = "explicit"  # SGLANG_PLATFORM named it
    SINGLE = "single-activated"  # auto mode, exactly one plugin activated
    FALLBACK = "fallback"  # auto mode, none activated (or SGLANG_PLATFORM names a host's own)
    OVERRIDE = "override"  # set by code (tests, a host) through set_current_platform()

    __str__ = str.__str__  # "explicit", not "Rule.EXPLICIT"


#: Failures that stop selection even in auto mode: the plugin says its hardware is here but hands
#: over an unusable class, or its activate() depends on the selection it is part of. Falling back
#: would run the job on the wrong device.
_FATAL = (errors.InvalidPlatformError, errors.ReentrantSelectionError)
#: What an ``activate()`` the host's start-up ran did, done again (see ``_host``).
Replay = Callable[[], object]


class PlatformSelection(NamedTuple):
    """The chosen platform class and its provenance: which plugin and distribution, which rule,
    why."""

    namespace: str
    platform_class: type
    rule: Rule
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
        return {
            **self._asdict(),
            "platform_class": self.class_path,
            "activations": [a.to_dict() for a in self.activations],
            "problems": list(self.problems),
        }


# old attribute names, deprecated
PlatformSelection.__getattr__ = old_attribute  # type: ignore[attr-defined]


class PlatformState:
    """What this process knows about one namespace's platform. Selection alone writes it, under
    its gate; a forked child keeps a finished selection and redoes an interrupted one."""

    platform: object | None = None
    selection: PlatformSelection | None = None  # published with ``platform``, together
    fallback: ClassRef | None = None  # the host's (set_fallback_platform)
    hosting = False  # the host is imported first: its selection may run in this thread

    def __init__(self) -> None:
        self.gate = Gate()


_STATES: defaultdict[str, PlatformState] = defaultdict(PlatformState)


def platform_state(namespace: PluginNamespace) -> PlatformState:
    """The platform state of ``namespace`` (a registered namespace: see ``get_namespace``)."""
    return _STATES[namespace.name]


@after_fork_in_child
def _after_fork() -> None:
    for state in _STATES.values():
        state.gate = Gate()


def describe(ep: PluginEntryPoint) -> str:
    return f"platform plugin {ep.name!r} (distribution {ep.label}, entry point {ep.value!r})"


def _error(kind: type[errors.PluginError], ep: Any, message: str) -> errors.PluginError:
    """A ``kind`` error naming ``ep``'s plugin and distribution (an entry point, or None)."""
    return kind(message, plugin=ep and ep.name, distribution=ep and ep.distribution)


def plan_platforms(
    namespace: PluginNamespace, discovery: DiscoveryResult
) -> tuple[list[PlannedPlugin], errors.PluginError | None]:
    """What selection will do with each platform plugin, and the error that stops it before it
    imports anything (an unknown ``SGLANG_PLATFORM``, a duplicate name, a name the host keeps)."""
    env, selected = namespace.platform_env, namespace.selected_platform()
    group, builtins = namespace.platform_group, namespace.reserved_platform_names
    duplicates = discovery.duplicates(group)
    plan = []
    for ep in discovery.group(group):
        status, reason = Status.TO_LOAD, f"{env} unset: imported and its activate() called"
        if selected is not None:
            status, reason = Status.SELECTED, f"{env}={selected!r}: the only one imported"
        if selected is not None and ep.name != selected:
            status, reason = Status.NOT_SELECTED, f"{env}={selected!r}: never imported"
        elif ep.name in duplicates:
            status, reason = Status.FAILED_DUPLICATE, duplicate_reason(duplicates[ep.name])
        plan.append(PlannedPlugin(ep.name, status, reason, ep))
    chosen = [p for p in plan if p.status is not Status.NOT_SELECTED]
    reserved = [p.entry_point for p in chosen if p.name.lower() in builtins]
    if selected is not None and not chosen and selected.lower() not in builtins:
        from ._unknown_name import unknown_platform_message  # a misconfiguration: only it needs it

        message = unknown_platform_message(namespace, discovery, selected)
        return plan, errors.PlatformNotFoundError(message, plugin=selected[:80])
    if duplicate := next((p for p in chosen if p.status is Status.FAILED_DUPLICATE), None):
        return plan, _error(
            errors.DuplicatePluginError,
            duplicate.entry_point,
            f"Platform plugin name {duplicate.name!r} in group {group!r}: {duplicate.reason}.",
        )
    if reserved:
        offenders = ", ".join(f"{ep.name!r} ({ep.label})" for ep in reserved if ep)
        return plan, _error(
            errors.PluginError,
            reserved[0],
            f"Platform plugin names in group {group!r} cannot be names of the host's built-in "
            f"platforms ({', '.join(sorted(builtins))}): {offenders}. Rename the entry point in "
            "its pyproject.toml.",
        )
    return plan, None


def out_of_tree_identity_problems(cls: type) -> list[str]:
    """What is missing for ``cls`` to identify itself as an out-of-tree platform."""
    enum_value = getattr(cls, "_enum", None)
    # This runtime's PlatformEnum.OOT, or the host's own (a plugin built on released SGLang's
    # classes): both print as ``<PlatformEnum.OOT: ...>``.
    is_oot = repr(enum_value).startswith("<PlatformEnum.OOT:")
    problems = [] if is_oot else [f"_enum is {enum_value!r}, it must be PlatformEnum.OOT"]
    for attr in ("device_name", "device_type"):
        value = getattr(cls, attr, None)
        if not isinstance(value, str) or not value.strip():
            problems.append(f"{attr} is {value!r}, it must be a non-empty string")
    return problems


def _invalid(ep: PluginEntryPoint, message: str) -> errors.PluginError:
    return _error(errors.InvalidPlatformError, ep, f"{describe(ep)}: {message}")


def _function(ep: PluginEntryPoint) -> Callable[[], object]:
    """The entry point's ``activate()`` (importing its module)."""
    activate = ep.load()
    if not callable(activate):
        raise _invalid(
            ep,
            f"the entry point names {type(activate).__name__} {safe_text(activate, repr)}, not a "
            f"function; it must name its activate() function, e.g. '{ep.module}:activate'.",
        )
    return activate


def _platform_class(ep: PluginEntryPoint, result: object, namespace: PluginNamespace) -> type:
    """The class ``activate()`` named; ``InvalidPlatformError`` for anything else."""
    if why := never_ran(result, "activate"):
        raise _invalid(ep, why)
    returned = f"activate() returned {safe_text(result, repr)}"
    qualname = result.strip() if isinstance(result, str) else ""
    if "." not in qualname and ":" not in qualname:
        kind = "" if isinstance(result, str) else f" ({type(result).__name__})"
        raise _invalid(
            ep,
            f"{returned}{kind}; it must return a qualified class name such as "
            "'my_plugin.platform:MyPlatform' ('module.Class' or 'module:Class'), or None when the "
            "hardware is absent.",
        )
    try:
        cls = resolve_qualified_name(qualname)
        # A class built on the host's own base (released SGLang's) is one the host runs: accepted.
        own, host = namespace.resolve_base_class(), namespace.host_base()
        bases = (own,) if host in (None, own) else (own, host)
        if not isinstance(cls, type) or not issubclass(cls, bases):
            names = " or ".join(f"{base.__module__}.{base.__qualname__}" for base in bases)
            raise _invalid(
                ep, f"{returned}, which is {safe_text(cls, repr)}, not a subclass of {names}."
            )
        problems = out_of_tree_identity_problems(cls)
    except BaseException as exc:  # its module failed (or exited), its metaclass raised, ...
        passes = isinstance(exc, errors.InvalidPlatformError) or not is_plugin_failure(exc)
        if passes or honoured_exit(exc):
            raise
        why = describe_failure(exc)
        raise _invalid(ep, f"{returned}, which cannot be imported or checked: {why}") from exc
    if problems:
        why = "; ".join(problems)
        raise _invalid(ep, f"class {qualname!r} is not a valid out-of-tree platform: {why}")
    return cls


def _activate(
    namespace: PluginNamespace, ep: PluginEntryPoint, gate: Gate, runs: dict[str, Replay], p: Policy
) -> tuple[PluginOutcome, type | None]:
    """Import ``ep``, run its ``activate()`` (or replay what the host's start-up got from it), check
    the class it names."""
    # An entry point that names no function says nothing about the hardware: in auto mode it is
    # skipped, as a failed import is.
    fatal = p.fatal if p.required else (errors.ReentrantSelectionError,)
    function, imported = run_plugin_code(
        ep, partial(_function, ep), step="import", policy=p._replace(fatal=fatal), gate=gate
    )
    if not imported.ok:
        return imported, None
    # the host's start-up ran it already: its answer again
    activate: Replay = runs.get(ep.name, function)  # type: ignore[arg-type]
    result, ran = run_plugin_code(ep, activate, step="activate()", policy=p, gate=gate)
    ran = ran._replace(seconds=imported.seconds + ran.seconds)
    if not ran.ok or result is None:
        return ran._replace(status=Status.UNAVAILABLE) if ran.ok else ran, None
    # Its distribution says the hardware is here: whatever is wrong with its class stops selection
    # (so past this call ``result`` is a class name).
    cls, _ = run_plugin_code(
        ep,
        partial(_platform_class, ep, result, namespace),
        step="its platform class",
        policy=p._replace(required=ep.distribution),
    )
    return ran._replace(status=Status.ACTIVATED, result=str(result).strip()), cls  # type: ignore


def _select(
    namespace: PluginNamespace,
    discovery: DiscoveryResult,
    strict: bool,
    gate: Gate,
    runs: dict[str, Replay],
) -> tuple[PlatformSelection, PluginEntryPoint | None]:
    """The decision tree; the selected entry point too (``None``: the fallback). ``runs``: what the
    plugins' ``activate()`` did in the host's start-up (see ``_host``), answered again."""
    plan, error = plan_platforms(namespace, discovery)
    if error is not None:
        raise error
    env, selected = namespace.platform_env, namespace.selected_platform()
    runnable = (Status.TO_LOAD, Status.SELECTED)
    candidates = [p.entry_point for p in plan if p.status in runnable and p.entry_point]
    outcomes: list[PluginOutcome] = []
    activated: list[tuple[PluginEntryPoint, type]] = []
    try:
        for ep in candidates:
            policy = Policy(
                strict=strict,
                strict_env=namespace.strict_env,
                required=ep.distribution if selected else None,
                why=f"{env}={selected!r} selects it",
                level=logging.WARNING,
                fatal=_FATAL,
            )
            outcome, cls = _activate(namespace, ep, gate, runs, policy)
            outcomes.append(outcome)
            if cls is not None:
                logger.info("Platform plugin %r (%s) activated -> %s", ep.name, ep.label, cls)
                activated.append((ep, cls))
            elif selected and outcome.ok:
                raise _error(
                    errors.PlatformUnavailableError,
                    ep,
                    f"{describe(ep)} is selected by {env}={selected!r}, but its activate() "
                    "returned None: its hardware or backend is not available on this machine. "
                    f"Check the device and its driver, or unset {env}.",
                )
        if len(activated) > 1:
            names = ", ".join(f"{ep.name!r} ({ep.label})" for ep, _ in activated)
            raise _error(
                errors.AmbiguousPlatformError,
                None,
                f"Several platform plugins activated: {names}. Set {env} to the one to use, "
                f"e.g. {env}={activated[0][0].name}.",
            )
    except errors.PluginError as exc:
        exc.outcomes = (*outcomes, *(o for o in exc.outcomes if o not in outcomes))
        raise
    chosen = activated[0][0] if activated else None
    for ep in candidates:
        if ep is not chosen:  # an unselected platform plugin leaves no hooks (diffusion's rule)
            discard_hooks(ep)
    skipped = zip(candidates, outcomes, strict=True)
    problems = tuple(f"{describe(ep)} was skipped: {o.reason}" for ep, o in skipped if not o.ok)
    note = f"; {len(problems)} plugin(s) failed and were skipped" if problems else ""
    if chosen is None:
        fallback = namespace.fallback_class or platform_state(namespace).fallback
        cls = resolve_class_ref(fallback or namespace.base_class)
        if selected:  # a name of the host's own platforms (the only way here with one)
            why = (
                f"{env}={selected!r} names a built-in platform of the host, which selects it "
                "itself; no platform plugin is imported"
            )
        elif candidates:
            why = f"none of the {len(candidates)} installed platform plugin(s) activated{note}"
        else:
            why = f"no platform plugin is installed in group {namespace.platform_group!r}"
        (logger.warning if problems else logger.info)("Using fallback %s: %s.", cls.__name__, why)
        rule, reason = Rule.FALLBACK, why if selected else f"{env} unset; {why}"
    elif selected:
        cls, rule = activated[0][1], Rule.EXPLICIT
        reason = f"{env}={selected!r}; only that plugin was imported and activated"
    else:
        cls, rule = activated[0][1], Rule.SINGLE
        reason = (
            f"{env} unset; {chosen.name!r} was the only plugin whose activate() returned a class "
            f"(of {len(candidates)} installed){note}"
        )
    selection = PlatformSelection(
        namespace=namespace.name,
        platform_class=cls,
        rule=rule,
        reason=reason,
        plugin=chosen and chosen.name,
        distribution=chosen and chosen.distribution,
        version=chosen and chosen.version,
        activations=tuple(outcomes),
        problems=problems,
    )
    return selection, chosen


@contextlib.contextmanager
def _selecting(namespace: PluginNamespace) -> Iterator[Gate]:
    """Own the selection of ``namespace``; code that reads ``current_platform`` while it is being
    selected gets ``ReentrantSelectionError`` (remembered on the plugin code that ran it)."""
    state = platform_state(namespace)
    gate = state.gate

    def refuse(gate: Gate) -> errors.PluginError:
        running = gate.running
        message = (
            f"{running.where if running else 'code run by selection'} read {namespace.name} "
            f"current_platform while it was being selected. Selection "
            f"cannot depend on its own result: probe the hardware directly (for example the vendor "
            f"module's device count or torch.<device>.is_available()) and read current_platform "
            f"only after selection, e.g. in the platform's methods or a general plugin's "
            f"register()."
        )
        return _error(errors.ReentrantSelectionError, running and running.ep, message)

    owned = gate.enter(refuse)
    if not owned and not state.hosting:
        raise gate.refused(refuse(gate))
    state.hosting = False  # (a selection the host's import runs is the real one; it re-enters none)
    try:
        yield gate
    finally:
        if owned:
            gate.leave()


def select_platform(
    namespace: str | PluginNamespace = SRT,
    discovery: DiscoveryResult | None = None,
    *,
    strict: bool | None = None,
) -> PlatformSelection:
    """Run the decision tree for ``namespace`` and return the chosen class with its provenance; the
    class is neither instantiated nor kept. ``strict``: default, the namespace's variable."""
    namespace = get_namespace(namespace)
    strict = namespace.strict() if strict is None else strict
    with _selecting(namespace) as gate:
        return _select(namespace, discovery or discover_entry_points(), strict, gate, {})[0]


def get_current_platform(
    namespace: str | PluginNamespace = SRT, *, strict: bool | None = None
) -> Any:
    """The platform instance of ``namespace`` (``"srt"`` by default), selected and instantiated on
    first use, once per process. ``strict``: default, the namespace's variable."""
    namespace = get_namespace(namespace)
    state = platform_state(namespace)
    if state.platform is not None:
        return state.platform
    with _selecting(namespace) as gate:
        discovery, runs = discover_entry_points(), dict[str, Replay]()
        host = (namespace.host_base_class or "").partition(":")[0]
        unloaded = (
            host
            and host not in sys.modules
            and namespace.host_distribution in discovery.distributions
        )
        # The installed host goes first when a platform plugin may be built on its classes.
        if state.platform is None and unloaded and discovery.group(namespace.platform_group):
            from ._host import import_host

            state.hosting = True
            try:
                runs = import_host(namespace, host)
            finally:
                state.hosting = False
        if state.platform is None:
            strict = namespace.strict() if strict is None else strict
            selection, ep = _select(namespace, discovery, strict, gate, runs)
            cls = selection.platform_class
            if ep is None:  # the fallback: the host's (or this runtime's) class, no plugin's code
                platform = cls()
            else:  # the selected plugin's code: hooks it registers are its own, and go if it raises
                platform, _ = run_plugin_code(
                    ep,
                    cls,
                    step=f"the constructor of platform class {selection.class_path}",
                    policy=Policy(
                        strict=strict,
                        strict_env=namespace.strict_env,
                        required=ep.distribution,
                        why="it is selected",
                        fatal=_FATAL,
                    ),
                    gate=gate,
                )
            state.selection, state.platform = selection, platform  # published together
        return state.platform


def current_platform_selection(namespace: str | PluginNamespace = SRT) -> PlatformSelection:
    """How the current platform was chosen: plugin, distribution, version, rule, reason and every
    plugin's activation."""
    get_current_platform(namespace)
    selection = platform_state(get_namespace(namespace)).selection
    assert selection is not None
    return selection


def set_current_platform(platform: Any, namespace: str | PluginNamespace = SRT) -> None:
    """Override the current platform with an instance or a class (tests; hosts that choose it)."""
    namespace = get_namespace(namespace)
    state = platform_state(namespace)
    instance = platform() if isinstance(platform, type) else platform
    with state.gate.lock:
        state.selection = PlatformSelection(
            namespace=namespace.name,
            platform_class=type(instance),
            rule=Rule.OVERRIDE,
            reason="set by code through set_current_platform()",
        )
        state.platform = instance


def reset_current_platform(namespace: str | PluginNamespace = SRT, *, rescan: bool = False) -> None:
    """Forget the current platform so the next access selects again; ``rescan``: rescan too."""
    state = platform_state(get_namespace(namespace))
    with state.gate.lock:
        state.platform = state.selection = None
    if rescan:
        refresh_discovery()


def set_fallback_platform(
    fallback: ClassRef | None, namespace: str | PluginNamespace = SRT
) -> None:
    """Name the platform a host falls back to when no plugin activates (``None``: the namespace's
    own).

    ``fallback`` is a class, a qualified name, or a callable returning a class: a host passes its
    own hardware detection (SGLang: CPU engine, CUDA, NPU, ROCm, ...), which then runs only when no
    plugin activated. A namespace that names its own ``fallback_class`` keeps it. Call it before the
    platform is first resolved: a platform already chosen by fallback stays in place (a WARNING
    says so).
    """
    namespace = get_namespace(namespace)
    state = platform_state(namespace)
    state.fallback, chosen = fallback, state.selection
    if chosen is not None and chosen.rule == Rule.FALLBACK:
        logger.warning(
            "set_fallback_platform(%r) for namespace %r came after the platform was resolved to "
            "the fallback %s; it applies from the next selection (reset_current_platform()).",
            *(fallback, namespace.name, chosen.class_path),
        )
