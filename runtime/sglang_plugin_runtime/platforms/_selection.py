"""Platform selection: SGLang's decision tree, with every step recorded and every failure said out loud.

- ``SGLANG_PLATFORM`` set: only that entry point is imported and activated; unknown name, ``None`` and raising
  ``activate()`` are errors.
- unset: every platform plugin is imported and activated; 0 activated -> the namespace's fallback, 1 -> it,
  N -> error. A plugin that fails to import or activate is a WARNING (an error in strict mode), never silent.

What ``activate()`` returns is validated (a non-empty ``module.Class`` / ``module:Class`` string naming a subclass of
the namespace's base class, out-of-tree, with a device name and type) before anything is instantiated.
"""

# No ``from __future__ import annotations`` here: typing.NamedTuple would compile a ForwardRef for every
# string annotation of its fields, a cost paid by every process at start-up.
import contextvars
import logging
import threading
import time
from typing import Any, NamedTuple

from .._discovery import DiscoveryResult, PluginEntryPoint, discover_entry_points, normalize_distribution_name
from .._forking import after_fork_in_child
from .._namespace import PluginNamespace, resolve_qualified_name
from .._plugin_code import describe_failure, is_plugin_failure, note_interrupt, plugin_traceback
from ..errors import (
    AmbiguousPlatformError,
    DuplicatePluginError,
    InvalidPlatformError,
    PlatformNotFoundError,
    PlatformUnavailableError,
    PluginError,
    PluginLoadError,
    ReentrantSelectionError,
)
from .device_mixin import PlatformEnum

logger = logging.getLogger(__name__)

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
        return {
            "plugin": self.plugin,
            "distribution": self.dist_name,
            "version": self.dist_version,
            "value": self.value,
            "status": self.status,
            "result": self.result,
            "error": self.error,
            "seconds": self.seconds,
            "traceback": self.traceback,
        }


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
        return {
            "namespace": self.namespace,
            "platform_class": self.class_path,
            "rule": self.rule,
            "reason": self.reason,
            "plugin": self.plugin,
            "distribution": self.dist_name,
            "version": self.dist_version,
            "activations": [a.to_dict() for a in self.activations],
            "problems": list(self.problems),
        }


def _describe(ep: PluginEntryPoint) -> str:
    return f"platform plugin {ep.name!r} (distribution {ep.dist_label}, entry point {ep.value!r})"


def _reject_duplicates(discovery: DiscoveryResult, group: str, names: set[str] | None = None) -> None:
    for name, eps in discovery.duplicates(group).items():
        if names is not None and name not in names:
            continue
        dists = " and ".join(ep.dist_label for ep in eps)
        raise DuplicatePluginError(
            f"Platform plugin name {name!r} in group {group!r} is offered by {dists}. "
            f"Entry-point names must be unique: uninstall one of these distributions.",
            plugin=name,
            dist=eps[0].dist_name,
        )


def _reject_reserved_names(namespace: PluginNamespace, candidates: tuple[PluginEntryPoint, ...]) -> None:
    """Refuse, before importing anything, platform plugins named like one of the host's built-in platforms."""
    reserved = sorted({ep.name for ep in candidates if ep.name.lower() in namespace.reserved_platform_names})
    if reserved:
        offenders = [ep for ep in candidates if ep.name in reserved]
        raise PluginError(
            f"Platform plugin names in group {namespace.platform_group!r} cannot be names of the host's built-in "
            f"platforms ({', '.join(sorted(namespace.reserved_platform_names))}): "
            + ", ".join(f"{ep.name!r} ({ep.dist_label})" for ep in offenders)
            + ". Rename the entry point in the plugin's pyproject.toml.",
            plugin=offenders[0].name,
            dist=offenders[0].dist_name,
        )


def _validate_result(ep: PluginEntryPoint, result: object, namespace: PluginNamespace) -> type:
    """Check what ``activate()`` returned and load the class it names."""
    where = _describe(ep)
    if not isinstance(result, str):
        raise InvalidPlatformError(
            f"{where}: activate() returned {result!r} ({type(result).__name__}); it must return a qualified class "
            f"name such as 'my_plugin.platform:MyPlatform', or None when the hardware is absent.",
            plugin=ep.name,
            dist=ep.dist_name,
        )
    qualname = result.strip()
    if not qualname or ("." not in qualname and ":" not in qualname):
        raise InvalidPlatformError(
            f"{where}: activate() returned {result!r}; it must be a qualified class name 'module.Class' or "
            f"'module:Class'.",
            plugin=ep.name,
            dist=ep.dist_name,
        )
    try:
        cls = resolve_qualified_name(qualname)
    except Exception as exc:
        raise InvalidPlatformError(
            f"{where}: activate() returned {qualname!r}, which cannot be imported: {type(exc).__name__}: {exc}",
            plugin=ep.name,
            dist=ep.dist_name,
        ) from exc
    # A class built on the host's own base (released SGLang's) is one the host runs: accepted too.
    bases = [namespace.resolve_base_class()]
    host_base = namespace.host_base()
    if host_base is not None and host_base not in bases:
        bases.append(host_base)
    if not isinstance(cls, type) or not issubclass(cls, tuple(bases)):
        names = " or ".join(f"{base.__module__}.{base.__qualname__}" for base in bases)
        raise InvalidPlatformError(
            f"{where}: activate() returned {qualname!r}, which is {cls!r}, not a subclass of {names}.",
            plugin=ep.name,
            dist=ep.dist_name,
        )
    problems = out_of_tree_identity_problems(cls)
    if problems:
        raise InvalidPlatformError(
            f"{where}: class {qualname!r} is not a valid out-of-tree platform: " + "; ".join(problems),
            plugin=ep.name,
            dist=ep.dist_name,
        )
    return cls


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


class _Activating:
    """The platform plugin whose import or ``activate()`` is running in this context (see :func:`activating`)."""

    __slots__ = ("ep", "reentered")

    def __init__(self, ep: PluginEntryPoint) -> None:
        self.ep = ep
        #: Set when this plugin's code read ``current_platform`` of the namespace being selected.
        self.reentered: ReentrantSelectionError | None = None


_ACTIVATING: contextvars.ContextVar[_Activating | None] = contextvars.ContextVar("_activating", default=None)


def activating() -> PluginEntryPoint | None:
    """The platform plugin whose import or ``activate()`` runs right now (diagnostics attribute log lines)."""
    current = _ACTIVATING.get()
    return current.ep if current is not None else None


def _activate(ep: PluginEntryPoint, namespace: PluginNamespace) -> tuple[Activation, type | None, BaseException | None]:
    """Import and call one plugin's ``activate()``; never raises, the caller decides what a failure means.

    A ``KeyboardInterrupt`` is the exception: it propagates (the user stopped the start-up).
    """
    start = time.perf_counter()

    def record(
        status: str, result: str | None = None, error: str | None = None, exc: BaseException | None = None
    ) -> Activation:
        seconds = time.perf_counter() - start
        trace = plugin_traceback(exc) if exc is not None else None
        return Activation(ep.name, ep.dist_name, ep.dist_version, ep.value, status, result, error, seconds, trace)

    context = _Activating(ep)
    token = _ACTIVATING.set(context)
    try:
        try:
            activate = ep.load()
        except BaseException as exc:
            if not is_plugin_failure(exc):
                note_interrupt(exc, f"the import of {_describe(ep)}")
                raise
            return record("failed", error=f"import failed: {describe_failure(exc)}", exc=exc), None, exc
        if not callable(activate):
            invalid = InvalidPlatformError(
                f"{_describe(ep)}: the entry point names {type(activate).__name__} {activate!r}, not a function. "
                f"A platform plugin's entry point must name its activate() function, e.g. "
                f"'{ep.module}:activate'.",
                plugin=ep.name,
                dist=ep.dist_name,
            )
            return record("failed", error=str(invalid)), None, invalid
        try:
            result = activate()
        except BaseException as exc:
            if not is_plugin_failure(exc):
                note_interrupt(exc, f"activate() of {_describe(ep)}")
                raise
            if context.reentered is not None:
                return record("failed", error=str(context.reentered)), None, context.reentered
            return record("failed", error=f"activate() raised {describe_failure(exc)}", exc=exc), None, exc
    finally:
        _ACTIVATING.reset(token)
    if context.reentered is not None:
        # The plugin caught the error and returned anyway: its answer was computed from a selection that
        # cannot exist yet, so it is not used.
        return record("failed", error=str(context.reentered)), None, context.reentered
    if result is None:
        return record("unavailable"), None, None
    # The time is activate()'s own; validating the class it names is not the plugin's cost.
    activation = record("activated", result)
    try:
        cls = _validate_result(ep, result, namespace)
    except InvalidPlatformError as exc:
        return activation._replace(status="failed", result=repr(result), error=str(exc)), None, exc
    return activation, cls, None


def select_platform(namespace: PluginNamespace, discovery: DiscoveryResult | None = None) -> PlatformSelection:
    """Run the decision tree for ``namespace`` and return the chosen class with its provenance.

    Does not instantiate the class and does not cache; :class:`PlatformHolder` does both.
    """
    discovery = discovery if discovery is not None else discover_entry_points()
    group = namespace.platform_group
    candidates = discovery.group(group)
    selected = namespace.selected_platform()
    if selected:
        return _select_explicit(namespace, discovery, candidates, selected)
    return _select_automatic(namespace, discovery, candidates)


def _select_explicit(
    namespace: PluginNamespace, discovery: DiscoveryResult, candidates: tuple[PluginEntryPoint, ...], selected: str
) -> PlatformSelection:
    matches = [ep for ep in candidates if ep.name == selected]
    if not matches:
        raise PlatformNotFoundError(unknown_platform_message(namespace, candidates, selected), plugin=selected)
    _reject_duplicates(discovery, namespace.platform_group, {selected})
    _reject_reserved_names(namespace, tuple(matches))
    ep = matches[0]
    activation, cls, error = _activate(ep, namespace)
    if error is not None:
        if isinstance(error, (InvalidPlatformError, ReentrantSelectionError)):
            error.activations = (activation,)
            raise error
        raise PluginLoadError(
            f"{_describe(ep)} selected by {namespace.platform_env} failed: {activation.error}",
            plugin=ep.name,
            dist=ep.dist_name,
            activations=(activation,),
        ) from error
    if cls is None:
        raise PlatformUnavailableError(
            f"{_describe(ep)} is selected by {namespace.platform_env}={selected!r}, but its activate() returned "
            f"None: its hardware or backend is not available on this machine. Check the device and its driver, "
            f"or unset {namespace.platform_env}.",
            plugin=ep.name,
            dist=ep.dist_name,
            activations=(activation,),
        )
    logger.info("Platform plugin %r (%s) selected by %s -> %s", ep.name, ep.dist_label, namespace.platform_env, cls)
    return PlatformSelection(
        namespace=namespace.name,
        platform_class=cls,
        rule=RULE_EXPLICIT,
        reason=f"{namespace.platform_env}={selected!r}; only that plugin was imported and activated",
        plugin=ep.name,
        dist_name=ep.dist_name,
        dist_version=ep.dist_version,
        activations=(activation,),
    )


def unknown_platform_message(
    namespace: PluginNamespace, candidates: tuple[PluginEntryPoint, ...], selected: str
) -> str:
    """Why ``selected`` names no installed platform plugin, with the likely intended name when there is one."""
    available = ", ".join(f"{ep.name!r} ({ep.dist_label})" for ep in candidates) or "none installed"
    message = (
        f"{namespace.platform_env}={selected!r} does not match any platform plugin in group "
        f"{namespace.platform_group!r} (available: {available})."
    )
    suggestions = platform_name_suggestions(candidates, selected)
    if suggestions:
        names = " or ".join(repr(name) for name in suggestions)
        return (
            f"{message} Did you mean {namespace.platform_env}={names}? Platform names are matched exactly "
            f"(they are entry-point names, not distribution names)."
        )
    return (
        f"{message} Install the plugin's package (pip install <package>, or pip install -e <path> for a checkout) "
        f"so it registers its entry point, or unset {namespace.platform_env} to pick automatically."
    )


def platform_name_suggestions(candidates: tuple[PluginEntryPoint, ...], selected: str) -> list[str]:
    """Installed platform names that ``selected`` probably meant: other case or separators, the distribution's
    name instead of the entry point's, or a near miss."""

    def folded(name: str) -> str:
        return name.lower().replace("-", "_").replace(".", "_")

    names = sorted({ep.name for ep in candidates})
    found = [name for name in names if folded(name) == folded(selected)]
    if not found:
        dist = normalize_distribution_name(selected)
        found = sorted({ep.name for ep in candidates if ep.dist_name == dist})
    if not found and names:
        import difflib

        by_fold = {folded(name): name for name in names}
        found = [
            by_fold[close] for close in difflib.get_close_matches(folded(selected), list(by_fold), n=3, cutoff=0.75)
        ]
    return found


def _select_automatic(
    namespace: PluginNamespace, discovery: DiscoveryResult, candidates: tuple[PluginEntryPoint, ...]
) -> PlatformSelection:
    _reject_duplicates(discovery, namespace.platform_group)
    _reject_reserved_names(namespace, candidates)
    strict = namespace.strict()
    activations: list[Activation] = []
    activated: list[tuple[PluginEntryPoint, type]] = []
    problems: list[str] = []
    for ep in candidates:
        activation, cls, error = _activate(ep, namespace)
        activations.append(activation)
        if isinstance(error, (InvalidPlatformError, ReentrantSelectionError)):
            # The plugin says its hardware is here but hands over an unusable class, or its activate() depends on
            # the selection it is part of: falling back would run the job on the wrong device, so this is an error
            # even in auto mode.
            error.activations = tuple(activations)
            raise error
        if error is not None:
            message = f"{_describe(ep)} was skipped: {activation.error}"
            if strict:
                raise PluginLoadError(
                    f"{message} ({namespace.strict_env}=1 makes this an error)",
                    plugin=ep.name,
                    dist=ep.dist_name,
                    activations=tuple(activations),
                ) from error
            logger.warning("%s. Set %s=1 to make this an error.", message, namespace.strict_env)
            problems.append(message)
        elif cls is not None:
            logger.info("Platform plugin %r (%s) activated -> %s", ep.name, ep.dist_label, activation.result)
            activated.append((ep, cls))
    if len(activated) > 1:
        names = ", ".join(f"{ep.name!r} ({ep.dist_label})" for ep, _ in activated)
        raise AmbiguousPlatformError(
            f"Several platform plugins activated: {names}. Set {namespace.platform_env} to the one to use, "
            f"e.g. {namespace.platform_env}={activated[0][0].name}.",
            activations=tuple(activations),
        )
    note = f"; {len(problems)} plugin(s) failed and were skipped" if problems else ""
    if len(activated) == 1:
        ep, cls = activated[0]
        return PlatformSelection(
            namespace=namespace.name,
            platform_class=cls,
            rule=RULE_SINGLE,
            reason=f"{namespace.platform_env} unset; {ep.name!r} was the only plugin whose activate() "
            f"returned a class (of {len(candidates)} installed){note}",
            plugin=ep.name,
            dist_name=ep.dist_name,
            dist_version=ep.dist_version,
            activations=tuple(activations),
            problems=tuple(problems),
        )
    fallback = namespace.resolve_fallback_class()
    if candidates:
        why = f"none of the {len(candidates)} installed platform plugin(s) activated{note}"
    else:
        why = f"no platform plugin is installed in group {namespace.platform_group!r}"
    if problems:
        logger.warning("Falling back to %s: %s.", fallback.__qualname__, why)
    else:
        logger.info("Using fallback platform %s: %s.", fallback.__qualname__, why)
    return PlatformSelection(
        namespace=namespace.name,
        platform_class=fallback,
        rule=RULE_FALLBACK,
        reason=f"{namespace.platform_env} unset; {why}",
        activations=tuple(activations),
        problems=tuple(problems),
    )


class PlatformHolder:
    """The lazy, thread-safe, per-process platform singleton of one namespace."""

    def __init__(self, namespace: PluginNamespace) -> None:
        self.namespace = namespace
        self._lock = threading.RLock()
        self._platform: Any = None
        self._selection: PlatformSelection | None = None
        #: What is being resolved right now, by the thread holding the lock: a second ``get()`` from that thread
        #: is a re-entry (plugin code reading ``current_platform`` during its own selection).
        self._resolving: str | None = None

    def get(self) -> Any:
        platform = self._platform
        if platform is not None:
            return platform
        with self._lock:
            if self._platform is None and self._resolving is None:
                # Importing the host may select the platform itself (through this holder): then it is done.
                self.namespace.import_host(discover_entry_points().distributions)
            if self._platform is None:
                if self._resolving is not None:
                    raise self._reentry_error()
                self._resolving = "selection"
                try:
                    selection = select_platform(self.namespace)
                    self._resolving = selection.class_path
                    try:
                        platform = selection.platform_class()
                    except BaseException as exc:
                        if not is_plugin_failure(exc) or isinstance(exc, ReentrantSelectionError):
                            raise
                        raise PluginLoadError(
                            f"Platform class {selection.class_path} (plugin {selection.plugin!r}, distribution "
                            f"{selection.dist_name}) could not be instantiated: {describe_failure(exc)}",
                            plugin=selection.plugin,
                            dist=selection.dist_name,
                        ) from exc
                finally:
                    self._resolving = None
                # Publish the instance and its provenance together, only once both exist.
                self._selection = selection
                self._platform = platform
            return self._platform

    def _reentry_error(self) -> ReentrantSelectionError:
        """The error for plugin code that reads ``current_platform`` while it is being selected; remembered on
        the running activation, so a plugin that catches it is still reported."""
        advice = (
            "Selection cannot depend on its own result: probe the hardware directly (for example the vendor "
            "module's device count or torch.<device>.is_available()) and read current_platform only after "
            "selection, e.g. in the platform's methods or a general plugin's register()."
        )
        running = _ACTIVATING.get()
        if running is not None:
            ep = running.ep
            error = ReentrantSelectionError(
                f"{_describe(ep)} read {self.namespace.name} current_platform while it was being selected (in its "
                f"module's import or its activate()). {advice}",
                plugin=ep.name,
                dist=ep.dist_name,
            )
            running.reentered = error
            return error
        where = (
            f"the constructor of platform class {self._resolving}"
            if self._resolving not in (None, "selection")
            else "code run by the selection"
        )
        return ReentrantSelectionError(
            f"{where} read {self.namespace.name} current_platform while it was being selected. {advice}"
        )

    def selection(self) -> PlatformSelection:
        """The provenance of the current platform, resolving it first if needed."""
        self.get()
        assert self._selection is not None
        return self._selection

    def peek_selection(self) -> PlatformSelection | None:
        """The provenance if the platform was already resolved; never triggers selection."""
        return self._selection

    def override(self, platform: Any) -> None:
        """Use ``platform`` (an instance or a class) from now on; for tests and hosts that choose themselves."""
        instance = platform() if isinstance(platform, type) else platform
        cls = type(instance)
        with self._lock:
            self._platform = instance
            self._selection = PlatformSelection(
                namespace=self.namespace.name,
                platform_class=cls,
                rule=RULE_OVERRIDE,
                reason="set by code through set_current_platform()",
            )

    def snapshot(self) -> tuple[Any, PlatformSelection | None]:
        """The current state (instance or ``None``, provenance), for :meth:`restore` (the testing kit uses it)."""
        with self._lock:
            return self._platform, self._selection

    def restore(self, state: tuple[Any, PlatformSelection | None]) -> None:
        """Put back a state taken by :meth:`snapshot`, exactly (same instance, or unresolved)."""
        with self._lock:
            self._platform, self._selection = state

    def reset(self) -> None:
        """Forget the current platform; the next access selects again."""
        with self._lock:
            self._platform = None
            self._selection = None

    def after_fork(self) -> None:
        # The resolved platform is inherited and still right; only the lock may be in a bad state.
        self._lock = threading.RLock()


_HOLDERS: dict[str, PlatformHolder] = {}
_HOLDERS_LOCK = threading.Lock()


def platform_holder(namespace: PluginNamespace) -> PlatformHolder:
    """The process-wide holder of ``namespace``'s current platform."""
    holder = _HOLDERS.get(namespace.name)
    if holder is None:
        with _HOLDERS_LOCK:
            holder = _HOLDERS.setdefault(namespace.name, PlatformHolder(namespace))
    return holder


@after_fork_in_child
def _after_fork() -> None:
    global _HOLDERS_LOCK
    _HOLDERS_LOCK = threading.Lock()
    for holder in _HOLDERS.values():
        holder.after_fork()
