"""A plugin namespace (the names that differ between SGLang's SRT and diffusion plugin systems) and its state.

Discovery, selection and loading are written once and parameterised by a :class:`PluginNamespace`, so a host (the
diffusion engine, or another project) declares its own namespace instead of copying code. Everything a process
remembers about one namespace (its current platform, its general plugins' load, the host's fallback) lives in one
:class:`NamespaceState`, owned by this module's table.
"""

# No ``from __future__ import annotations`` here: typing.NamedTuple would compile a ForwardRef for every
# string annotation of its fields, a cost paid by every process at start-up.
import os
import sys
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

from ._forking import after_fork_in_child

#: A class given by its import path (``"pkg.mod:Class"`` or ``"pkg.mod.Class"``), by a callable returning a class,
#: so a namespace can name its base and fallback classes without importing them, or by the class itself.
ClassRef = str | type | Callable[[], type]


class PluginNamespace(NamedTuple):
    """Group names, environment variables and classes of one plugin namespace."""

    name: str
    platform_group: str
    plugin_group: str
    base_class: ClassRef
    fallback_class: ClassRef | None = None
    """Used when no platform plugin activates; ``None``: the host's (``set_fallback_platform``), else the base."""
    platform_env: str = "SGLANG_PLATFORM"
    plugins_env: str = "SGLANG_PLUGINS"
    strict_env: str = "SGLANG_PLUGINS_STRICT"
    reserved_platform_names: frozenset[str] = frozenset()
    """Names (case-insensitive) the host keeps for its built-in platforms: a platform plugin may not use one."""
    host_base_class: str | None = None
    """The host's own platform base (``"pkg.mod:Class"``), accepted too where the host is installed: a plugin
    built on released SGLang's classes is one SGLang runs, so this runtime (``sglang-plugins doctor``) runs it."""
    host_distribution: str | None = None
    """The host's distribution (PEP 503 name): "installed" means the discovery scan found it."""

    def resolve_base_class(self) -> type:
        return resolve_class_ref(self.base_class)

    def host_base(self) -> type | None:
        """The host's base class if its module is imported, else ``None``."""
        if self.host_base_class is None or self.host_base_class.split(":")[0] not in sys.modules:
            return None
        base = resolve_class_ref(self.host_base_class)
        return base if isinstance(base, type) else None

    def resolve_fallback_class(self) -> type:
        return resolve_class_ref(self.fallback_class or state_of(self).fallback or self.base_class)

    def selected_platform(self) -> str | None:
        """The platform the user asked for with the namespace's env var, or ``None``; whitespace ignored."""
        return os.environ.get(self.platform_env, "").strip() or None

    def allowed_plugins(self) -> frozenset[str] | None:
        """The general-plugin allowlist (comma-separated, whitespace-tolerant), or ``None`` for all."""
        raw = os.environ.get(self.plugins_env, "")
        return frozenset(part.strip() for part in raw.split(",") if part.strip()) if raw.strip() else None

    def strict(self) -> bool:
        """Whether the namespace's strict variable (``SGLANG_PLUGINS_STRICT``) turns plugin failures into errors."""
        return env_flag(self.strict_env)


def env_flag(name: str) -> bool:
    """Whether environment variable ``name`` is set to a true value (``1``, ``true``, ``yes``, ``on``)."""
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


class NamespaceState:
    """What this process remembers about one namespace. Selection (``platforms/_selection.py``) and loading
    (``plugins/_loading.py``) read and write it under its two locks; a forked child keeps what was finished."""

    def __init__(self) -> None:
        self.fallback: ClassRef | None = None  # the host's fallback platform (set_fallback_platform)
        self.platform_lock = threading.RLock()
        self.platform: Any = None
        self.selection: Any = None  # the PlatformSelection of `platform`, published together with it
        self.resolving: str | None = None  # what `resolver` resolves right now (re-entrant reads are errors)
        self.resolver: threading.Thread | None = None
        self.running: Any = None  # the platform plugin whose code runs in the resolver now (an _Activating)
        self.host_outcomes: dict[str, Any] = {}  # activate() outcomes the host's own start-up ran: never run twice
        self.load_lock = threading.RLock()
        self.report: Any = None  # the LoadReport of the general plugins (complete, or in progress while loading)
        self.loading = False
        self.done: dict[str, Any] = {}  # register() completed in a load that did not (strict retry, fork)
        self.in_flight: Any = None  # the HookSource of the plugin whose code the load runs right now

    def after_fork(self) -> None:
        """In a forked child: fresh locks; a finished selection and load stay, an interrupted one is redone."""
        self.platform_lock, self.load_lock = threading.RLock(), threading.RLock()
        self.resolving = self.resolver = self.running = None
        self.loading = False
        if self.report is not None and not self.report.completed:
            self.report = None


_NAMESPACES: dict[str, tuple[PluginNamespace, NamespaceState]] = {}
_LOCK = threading.Lock()


def register_namespace(namespace: PluginNamespace) -> PluginNamespace:
    """Make a host's namespace known by name (for the CLI's ``--namespace``)."""
    with _LOCK:
        existing = _NAMESPACES.get(namespace.name)
        if existing is not None and existing[0] != namespace:
            raise ValueError(f"a different plugin namespace named {namespace.name!r} is already registered")
        if existing is None:
            _NAMESPACES[namespace.name] = (namespace, NamespaceState())
    return namespace


def get_namespace(name: str | PluginNamespace) -> PluginNamespace:
    """The namespace named ``name`` (a namespace object is registered if it is new, and returned as it is)."""
    if isinstance(name, PluginNamespace):
        return name if name.name in _NAMESPACES else register_namespace(name)
    if name not in _NAMESPACES:
        raise ValueError(f"unknown plugin namespace {name!r} (known: {', '.join(sorted(_NAMESPACES))})")
    return _NAMESPACES[name][0]


def state_of(namespace: PluginNamespace) -> NamespaceState:
    """The state of ``namespace`` in this process."""
    return _NAMESPACES[get_namespace(namespace).name][1]


def known_namespaces() -> tuple[PluginNamespace, ...]:
    return tuple(namespace for namespace, _state in _NAMESPACES.values())


@after_fork_in_child
def _after_fork() -> None:
    global _LOCK
    _LOCK = threading.Lock()
    for _namespace, state in _NAMESPACES.values():
        state.after_fork()


def resolve_qualified_name(name: str) -> object:
    """Import ``pkg.mod:Obj.attr`` or ``pkg.mod.Obj`` (``pkgutil.resolve_name``), except that a module on the path
    that exists but fails to import (a missing dependency of the plugin) raises that import error instead of a
    misleading ``AttributeError``."""
    import importlib
    import pkgutil

    head, _, tail = name.replace(":", ".").rpartition(".")
    if head in sys.modules and tail in vars(sys.modules[head]):  # already imported: no import machinery needed
        return vars(sys.modules[head])[tail]
    try:
        return pkgutil.resolve_name(name)
    except AttributeError:
        parts = name.split(".")
        for cut in range(2, len(parts) if ":" not in name else 0):
            prefix = ".".join(parts[:cut])
            try:
                importlib.import_module(prefix)
            except ModuleNotFoundError as exc:
                if exc.name is not None and (prefix == exc.name or prefix.startswith(exc.name + ".")):
                    break  # the prefix is not a module: pkgutil's AttributeError is the right answer
                raise
        raise


def resolve_class_ref(ref: ClassRef) -> type:
    if isinstance(ref, type):  # a class is callable too: calling it would make an instance
        return ref
    return ref() if callable(ref) else resolve_qualified_name(ref)  # type: ignore[return-value]


SRT = register_namespace(
    PluginNamespace(
        name="srt",
        platform_group="sglang.srt.platforms",
        plugin_group="sglang.srt.plugins",
        base_class="sglang_plugin_runtime.platforms.interface:SRTPlatform",
        host_base_class="sglang.srt.platforms.interface:SRTPlatform",
        host_distribution="sglang",
    )
)

MULTIMODAL = register_namespace(
    PluginNamespace(
        name="multimodal_gen",
        platform_group="sglang.multimodal_gen.platforms",
        plugin_group="sglang.multimodal_gen.plugins",
        base_class="sglang_plugin_runtime.platforms.multimodal:MMPlatform",
        platform_env="SGLANG_DIFFUSION_PLATFORM_OVERRIDE",
        # SGLang's diffusion engine selects these built-ins by SGLANG_DIFFUSION_PLATFORM_OVERRIDE and refuses plugins
        # named like them (sglang/multimodal_gen/runtime/platforms/__init__.py, 0.5.23).
        reserved_platform_names=frozenset({"cpu", "cuda", "rocm", "xpu", "mps", "npu", "musa"}),
    )
)
