"""Platform selection: SGLang's decision tree, with every step recorded and every failure said out loud.

- ``SGLANG_PLATFORM`` set: only that entry point is imported and activated; unknown name, ``None`` and raising
  ``activate()`` are errors.
- unset: every platform plugin is imported and activated; 0 activated -> the namespace's fallback, 1 -> it,
  N -> error. A plugin that fails to import or activate is a WARNING (an error in strict mode), never silent.

What ``activate()`` returns is validated (a non-empty ``module.Class`` / ``module:Class`` string naming a subclass of
the namespace's base class, out-of-tree, with a device name and type) before anything is instantiated. Each
plugin's code runs once per process: where the host's own start-up already ran an ``activate()`` (released SGLang
resolves its platform while it is imported), its outcome is reused.
"""

# No ``from __future__ import annotations`` here: typing.NamedTuple would compile a ForwardRef for every
# string annotation of its fields, a cost paid by every process at start-up.
import contextlib
import logging
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any, NamedTuple, TypeVar

from .. import errors
from .._discovery import DiscoveryResult, PluginEntryPoint, discover_entry_points, duplicate_reason
from .._namespace import NamespaceState, PluginNamespace, resolve_qualified_name, state_of
from .._plugin_code import describe_failure, guarded, plugin_traceback
from ..errors import InvalidPlatformError, PluginError, PluginLoadError, ReentrantSelectionError
from .device_mixin import PlatformEnum

logger = logging.getLogger(__name__)
_E = TypeVar("_E", bound=PluginError)

#: How a platform was chosen; part of the CLI's JSON schema, so values only ever get added.
RULE_EXPLICIT = "explicit"  # SGLANG_PLATFORM named it
RULE_SINGLE = "single-activated"  # auto mode, exactly one plugin activated
RULE_FALLBACK = "fallback"  # auto mode, none activated
RULE_OVERRIDE = "override"  # set by code (tests, a host) through set_current_platform()


class Activation(NamedTuple):
    """What one platform plugin's ``activate()`` did."""

    plugin: str
    dist_name: str
    dist_version: str
    value: str
    status: str
    """``activated``, ``unavailable`` (returned None), ``failed`` (import or activate raised, or a bad return)."""
    result: str | None = None
    error: str | None = None
    seconds: float = 0.0
    traceback: str | None = None
    """For a plugin whose import or ``activate()`` raised: the traceback, without the runtime's frames."""

    def to_dict(self) -> dict[str, Any]:
        from .._json_names import as_json  # the one rule for JSON names (dist_name -> distribution, ...)

        return as_json(self)


class PlatformSelection(NamedTuple):
    """The chosen platform class and its provenance: which plugin, which distribution, which rule, and why."""

    namespace: str
    platform_class: type
    rule: str
    reason: str
    plugin: str | None = None
    dist_name: str | None = None
    dist_version: str | None = None
    activations: tuple[Activation, ...] = ()
    problems: tuple[str, ...] = ()
    """Plugins that failed and were skipped (auto mode only); empty means a clean selection."""

    @property
    def class_path(self) -> str:
        return f"{self.platform_class.__module__}.{self.platform_class.__qualname__}"

    def to_dict(self) -> dict[str, Any]:
        from .._json_names import as_json

        activations, problems = [a.to_dict() for a in self.activations], list(self.problems)
        return {**as_json(self), "platform_class": self.class_path, "activations": activations, "problems": problems}


def _describe(ep: PluginEntryPoint) -> str:
    return f"platform plugin {ep.name!r} (distribution {ep.dist_label}, entry point {ep.value!r})"


def _reject_reserved_names(namespace: PluginNamespace, candidates: tuple[PluginEntryPoint, ...]) -> None:
    """Refuse, before importing anything, platform plugins named like one of the host's built-in platforms."""
    offenders = [ep for ep in candidates if ep.name.lower() in namespace.reserved_platform_names]
    if offenders:
        message = (
            f"Platform plugin names in group {namespace.platform_group!r} cannot be names of the host's built-in "
            f"platforms ({', '.join(sorted(namespace.reserved_platform_names))}): "
            + ", ".join(f"{ep.name!r} ({ep.dist_label})" for ep in offenders)
            + ". Rename the entry point in the plugin's pyproject.toml."
        )
        raise _error(PluginError, offenders[0], message)


def out_of_tree_identity_problems(cls: type) -> list[str]:
    """What is missing for ``cls`` to identify itself as an out-of-tree platform."""
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


def _error(kind: type[_E], ep: PluginEntryPoint | None, message: str, activations: Any = ()) -> _E:
    """A ``kind`` error naming ``ep``'s plugin and distribution (for diagnostics) and the activations so far."""
    return kind(message, plugin=ep and ep.name, dist=ep and ep.dist_name, activations=tuple(activations))


def _invalid(ep: PluginEntryPoint, message: str) -> InvalidPlatformError:
    return _error(InvalidPlatformError, ep, f"{_describe(ep)}: {message}")


def _validated_class(ep: PluginEntryPoint, result: object, namespace: PluginNamespace) -> type:
    """The class ``activate()`` named; ``InvalidPlatformError`` for anything that is not a usable platform class.
    Runs plugin code (the class's module, its metaclass): the caller guards it."""
    returned = f"activate() returned {result!r}"
    qualname = result.strip() if isinstance(result, str) else ""
    if not isinstance(result, str) or ("." not in qualname and ":" not in qualname):
        kind = "" if isinstance(result, str) else f" ({type(result).__name__})"
        raise _invalid(
            ep,
            f"{returned}{kind}; it must return a qualified class name such as "
            "'my_plugin.platform:MyPlatform' ('module.Class' or 'module:Class'), or None when the hardware "
            "is absent.",
        )
    with guarded(f"the import of {qualname!r} for {_describe(ep)}") as imported:
        cls = resolve_qualified_name(qualname)
    if imported.error is not None:
        error = _invalid(ep, f"{returned}, which cannot be imported: {describe_failure(imported.error)}")
        raise error from imported.error
    # A class built on the host's own base (released SGLang's) is one the host runs: accepted too.
    bases = [base for base in dict.fromkeys([namespace.resolve_base_class(), namespace.host_base()]) if base]
    if not isinstance(cls, type) or not issubclass(cls, tuple(bases)):
        names = " or ".join(f"{base.__module__}.{base.__qualname__}" for base in bases)
        raise _invalid(ep, f"{returned}, which is {cls!r}, not a subclass of {names}.")
    problems = out_of_tree_identity_problems(cls)
    if problems:
        raise _invalid(ep, f"class {qualname!r} is not a valid out-of-tree platform: " + "; ".join(problems))
    return cls


class _Activating:
    """A platform plugin whose code (import, ``activate()``, class, constructor) runs in the resolving thread."""

    def __init__(self, ep: PluginEntryPoint | None) -> None:
        self.ep = ep
        #: Threads alive when the plugin's code started: one born since then was started by that code.
        self.threads = frozenset(threading.enumerate())
        #: Set when this plugin's code read ``current_platform`` of the namespace being selected.
        self.reentered: ReentrantSelectionError | None = None


@contextlib.contextmanager
def _plugin_code(namespace: PluginNamespace, ep: PluginEntryPoint | None) -> Iterator[_Activating]:
    """Mark plugin code as running in the resolving thread; hooks it registers are attributed to plugin ``ep``."""
    state = state_of(namespace)
    context: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
    if ep is not None:  # the hook registry is imported once a plugin's code runs, never before
        from ..plugins.hook_registry import HookSource, _plugin_context

        context = _plugin_context(HookSource(ep.name, ep.dist_name), namespace.strict())
    running = state.running = _Activating(ep)
    try:
        with context:
            yield running
    finally:
        state.running = None


def _activate(ep: PluginEntryPoint, namespace: PluginNamespace) -> tuple[Activation, type | None, BaseException | None]:
    """Import and call one plugin's ``activate()``; never raises but for a user's Ctrl-C: the caller decides what
    a failure means. A failed plugin's hooks (registered while its module was imported) are discarded."""
    state = state_of(namespace)
    start = time.perf_counter()
    result = cls = exc = error = raised = seconds = None
    with _plugin_code(namespace, ep) as running:
        observed = state.host_outcomes.pop(ep.name, None)
        if observed is not None and observed[0] == ep.value:  # the host's start-up already ran it
            _value, result, raised, seconds = observed
        else:
            with guarded(f"the import of {_describe(ep)}") as call:
                activate = ep.load()
            if call.error is not None:
                exc, error = call.error, f"import failed: {describe_failure(call.error)}"
            elif not callable(activate):
                exc = _invalid(
                    ep,
                    f"the entry point names {type(activate).__name__} {activate!r}, not a function. A "
                    f"platform plugin's entry point must name its activate() function, e.g. "
                    f"'{ep.module}:activate'.",
                )
            else:
                with guarded(f"activate() of {_describe(ep)}") as call:
                    result = activate()
                raised = call.error
        if raised is not None:
            exc, error = raised, f"activate() raised {describe_failure(raised)}"
        seconds = time.perf_counter() - start if seconds is None else seconds
        if running.reentered is not None:
            # It read current_platform during its own selection (even if it caught the error): its answer was
            # computed from a selection that cannot exist yet, so it is not used.
            exc, result, error = running.reentered, None, None
        elif exc is None and result is not None:
            with guarded(f"the platform class of {_describe(ep)}") as call:
                cls = _validated_class(ep, result, namespace)
            if call.error is not None:  # an InvalidPlatformError, or the class's metaclass or attributes raised
                exc, result = call.error, repr(result)
                if not isinstance(exc, InvalidPlatformError):
                    exc = _invalid(
                        ep, f"its platform class {result} failed while being checked: {describe_failure(exc)}"
                    )
    if exc is not None:  # a failed plugin's hooks are discarded (its code imported the registry): nothing half-done
        from ..plugins.hook_registry import HookRegistry, HookSource

        HookRegistry.discard_source(HookSource(plugin_name=ep.name, dist_name=ep.dist_name))
    status = "failed" if exc is not None else "activated" if cls is not None else "unavailable"
    trace = plugin_traceback(exc) if error is not None and exc is not None else None
    error = error if error is not None or exc is None else str(exc)
    activation = Activation(ep.name, ep.dist_name, ep.dist_version, ep.value, status, result, error, seconds, trace)
    return activation, cls, exc


def select_platform(namespace: PluginNamespace, discovery: DiscoveryResult | None = None) -> PlatformSelection:
    """Run the decision tree for ``namespace`` and return the chosen class with its provenance.

    Does not instantiate the class and does not keep it; :class:`PlatformHolder` does both.
    """
    discovery = discovery if discovery is not None else discover_entry_points()
    candidates, env = discovery.group(namespace.platform_group), namespace.platform_env
    selected = namespace.selected_platform()
    if selected:
        installed, candidates = candidates, tuple(ep for ep in candidates if ep.name == selected)
        if not candidates:
            from ._unknown_name import unknown_platform_message  # a misconfiguration: the only path needing it

            message = unknown_platform_message(namespace, installed, selected)
            raise errors.PlatformNotFoundError(message, plugin=selected[:80])
    for name, eps in discovery.duplicates(namespace.platform_group).items():
        if not selected or name == selected:
            message = f"Platform plugin name {name!r} in group {namespace.platform_group!r}: {duplicate_reason(eps)}."
            raise _error(errors.DuplicatePluginError, eps[0], message)
    _reject_reserved_names(namespace, candidates)
    activations: list[Activation] = []
    activated: list[tuple[PluginEntryPoint, type]] = []
    problems: list[str] = []
    for ep in candidates[:1] if selected else candidates:
        activation, cls, error = _activate(ep, namespace)
        activations.append(activation)
        if isinstance(error, (InvalidPlatformError, ReentrantSelectionError)):
            # The plugin says its hardware is here but hands over an unusable class, or its activate() depends on
            # the selection it is part of: falling back would run the job on the wrong device, so this is an error
            # even in auto mode.
            error.activations = tuple(activations)
            raise error
        if error is not None and (selected or namespace.strict()):
            why = f"selected by {env} failed" if selected else f"failed ({namespace.strict_env}=1 makes this an error)"
            raise _error(PluginLoadError, ep, f"{_describe(ep)} {why}: {activation.error}", activations) from error
        if error is not None:
            problems.append(f"{_describe(ep)} was skipped: {activation.error}")
            logger.warning("%s. Set %s=1 to make this an error.", problems[-1], namespace.strict_env)
        elif cls is not None:
            logger.info("Platform plugin %r (%s) activated -> %s", ep.name, ep.dist_label, activation.result)
            activated.append((ep, cls))
        elif selected:
            message = (
                f"{_describe(ep)} is selected by {env}={selected!r}, but its activate() returned None: its hardware "
                f"or backend is not available on this machine. Check the device and its driver, or unset {env}."
            )
            raise _error(errors.PlatformUnavailableError, ep, message, activations)
    if len(activated) > 1:
        names = ", ".join(f"{ep.name!r} ({ep.dist_label})" for ep, _ in activated)
        message = f"Several platform plugins activated: {names}. Set {env} to the one to use, e.g. {env}="
        raise _error(errors.AmbiguousPlatformError, None, message + activated[0][0].name + ".", activations)
    note = f"; {len(problems)} plugin(s) failed and were skipped" if problems else ""
    if activated:
        (ep, cls), count = activated[0], len(candidates)
        rule, reason = RULE_SINGLE, f"{env} unset; {ep.name!r} was the only plugin whose activate() returned a class "
        reason += f"(of {count} installed){note}"
        if selected:
            rule, reason = RULE_EXPLICIT, f"{env}={selected!r}; only that plugin was imported and activated"
        return PlatformSelection(
            namespace.name,
            cls,
            rule,
            reason,
            ep.name,
            ep.dist_name,
            ep.dist_version,
            tuple(activations),
            tuple(problems),
        )
    fallback = namespace.resolve_fallback_class()
    if candidates:
        why = f"none of the {len(candidates)} installed platform plugin(s) activated{note}"
    else:
        why = f"no platform plugin is installed in group {namespace.platform_group!r}"
    (logger.warning if problems else logger.info)("Using fallback platform %s: %s.", fallback.__qualname__, why)
    return PlatformSelection(
        namespace.name,
        fallback,
        RULE_FALLBACK,
        f"{env} unset; {why}",
        activations=tuple(activations),
        problems=tuple(problems),
    )


def _thread_wait(thread: threading.Thread | None) -> object | None:
    """The frame in which ``thread`` is blocked in one of :mod:`threading`'s waits (``join``, ``Event.wait``, a
    ``Condition``, so a future's ``result()`` or a queue's ``get()``), else ``None``: its innermost frame, where that
    is :mod:`threading`'s own code. (Frames further out do not count: every helper thread starts in threading.)"""
    frame = sys._current_frames().get(thread.ident) if thread is not None and thread.ident is not None else None
    return frame if frame is not None and frame.f_code.co_filename == threading.__file__ else None


class PlatformHolder:
    """The lazy, thread-safe, per-process platform singleton of one namespace (a view of its state)."""

    def __init__(self, namespace: PluginNamespace) -> None:
        self.namespace = namespace
        self.state = state_of(namespace)

    def get(self) -> Any:
        state = self.state
        platform = state.platform
        if platform is not None:
            return platform
        running, me = state.running, threading.current_thread()
        if running is not None and state.resolver is not me and me not in running.threads:
            # Started while plugin code runs: wait for the selection, unless that code is itself waiting on threads
            # (a join, an event, a future's result): then it waits for this thread, and both would wait forever.
            # The same wait seen twice, 50 ms apart, is that; a passing one (Thread.start() waits too) is not.
            wait: object | None = None
            while not state.platform_lock.acquire(timeout=0.05):
                seen, wait = wait, _thread_wait(state.resolver) if state.running is running else None
                if wait is not None and wait is seen:
                    raise self._reentry_error()
            state.platform_lock.release()
        with state.platform_lock:
            host = (self.namespace.host_base_class or "").split(":")[0]
            installed = self.namespace.host_distribution in discover_entry_points().distributions
            if state.platform is None and state.resolving is None and installed and host not in sys.modules:
                from ._host import import_host  # only where the host is installed but not imported yet

                import_host(self.namespace, state, host)  # may select the platform through this holder
            if state.platform is None:
                if state.resolving is not None:
                    raise self._reentry_error()
                state.resolving, state.resolver = "selection", me
                try:
                    self._resolve(state)
                finally:
                    state.resolving = state.resolver = None
            return state.platform

    def _resolve(self, state: NamespaceState) -> None:
        selection = select_platform(self.namespace)
        state.resolving = selection.class_path
        where = f"the constructor of platform class {selection.class_path}"
        with _plugin_code(self.namespace, None) as running, guarded(where) as call:
            platform = selection.platform_class()
        error = running.reentered or call.error
        if isinstance(error, ReentrantSelectionError):
            raise error
        if error is not None:
            who = f"(plugin {selection.plugin!r}, distribution {selection.dist_name})"
            message = (
                f"Platform class {selection.class_path} {who} could not be instantiated: {describe_failure(error)}"
            )
            raise PluginLoadError(message, plugin=selection.plugin, dist=selection.dist_name) from error
        # Publish the instance and its provenance together, only once both exist.
        state.selection, state.platform = selection, platform

    def _reentry_error(self) -> ReentrantSelectionError:
        """The error for plugin code that reads ``current_platform`` while it is being selected; remembered on
        the running plugin code, so a plugin that catches it is still reported."""
        advice = (
            "Selection cannot depend on its own result: probe the hardware directly (for example the vendor "
            "module's device count or torch.<device>.is_available()) and read current_platform only after "
            "selection, e.g. in the platform's methods or a general plugin's register()."
        )
        running, resolving = self.state.running, self.state.resolving
        ep = running.ep if running is not None else None
        who = (
            f"the constructor of platform class {resolving}"
            if resolving not in (None, "selection")
            else "code run by selection"
        )
        who = f"{_describe(ep)} (in its module's import or its activate())" if ep else who
        message = f"{who} read {self.namespace.name} current_platform while it was being selected. {advice}"
        error = _error(ReentrantSelectionError, ep, message)
        if running is not None:
            running.reentered = error
        return error

    def selection(self) -> PlatformSelection:
        """The provenance of the current platform, resolving it first if needed."""
        self.get()
        return self.state.selection  # type: ignore[no-any-return]

    def override(self, platform: Any) -> None:
        """Use ``platform`` (an instance or a class) from now on; for tests and hosts that choose themselves."""
        instance = platform() if isinstance(platform, type) else platform
        reason = "set by code through set_current_platform()"
        with self.state.platform_lock:
            self.state.platform = instance
            self.state.selection = PlatformSelection(self.namespace.name, type(instance), RULE_OVERRIDE, reason)

    def reset(self) -> None:
        """Forget the current platform; the next access selects again."""
        with self.state.platform_lock:
            self.state.platform = self.state.selection = None


def platform_holder(namespace: PluginNamespace) -> PlatformHolder:
    """The process-wide holder of ``namespace``'s current platform."""
    return PlatformHolder(namespace)
