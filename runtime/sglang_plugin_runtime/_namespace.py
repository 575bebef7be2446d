"""A plugin namespace: the names that differ between SGLang's SRT and diffusion plugin systems.

Discovery, selection and loading are written once and parameterised by a :class:`PluginNamespace`,
so a host (the diffusion engine, or another project) declares its own namespace instead of copying
code. What a process remembers about a namespace belongs to the code that writes it: its platform to
selection (``platforms/_selection.py``), its plugins' load to loading (``plugins/_loading.py``). A
namespace is known by its object: a different object under a registered name is refused, so nothing
can share another namespace's state by borrowing its name.
"""

# No ``from __future__ import annotations`` here: typing.NamedTuple would compile a ForwardRef for
# every string annotation of its fields, a cost paid by every process at start-up.
import os
import sys
from collections.abc import Callable
from types import ModuleType
from typing import NamedTuple

#: A class given by its import path (``"pkg.mod:Class"`` or ``"pkg.mod.Class"``), by a callable
#: returning a class, so a namespace can name its base and fallback classes without importing them,
#: or by the class itself.
ClassRef = str | type | Callable[[], type]


class PluginNamespace(NamedTuple):
    """Group names, environment variables and classes of one plugin namespace."""

    name: str
    platform_group: str
    plugin_group: str
    base_class: ClassRef
    fallback_class: ClassRef | None = None
    """Used when no platform plugin activates; ``None``: the host's (``set_fallback_platform``),
    else the base."""
    platform_env: str = "SGLANG_PLATFORM"
    plugins_env: str = "SGLANG_PLUGINS"
    strict_env: str = "SGLANG_PLUGINS_STRICT"
    reserved_platform_names: frozenset[str] = frozenset()
    """Names (case-insensitive) the host keeps for its built-in platforms: a platform plugin may not
    use one."""
    host_base_class: str | None = None
    """The host's own platform base (``"pkg.mod:Class"``), accepted too where the host is installed:
    a plugin built on released SGLang's classes is one SGLang runs, so this runtime
    (``sglang-plugins doctor``) runs it."""
    host_distribution: str | None = None
    """The host's distribution (PEP 503 name): "installed" means the discovery scan found it."""
    startup_group: str | None = None
    """Entry points run first, before the general plugins and, where the host runs them, before its
    own imports."""

    def resolve_base_class(self) -> type:
        return resolve_class_ref(self.base_class)

    def host_base(self) -> type | None:
        """The host's base class if its module is imported, else ``None``."""
        if not self.host_base_class or self.host_base_class.split(":")[0] not in sys.modules:
            return None
        base = resolve_class_ref(self.host_base_class)
        return base if isinstance(base, type) else None

    def selected_platform(self) -> str | None:
        """The platform the user asked for with the namespace's env var, or ``None``; whitespace
        ignored."""
        return os.environ.get(self.platform_env, "").strip() or None

    def allowed_plugins(self) -> frozenset[str] | None:
        """The general-plugin allowlist (comma-separated, whitespace-tolerant), or ``None`` for
        all."""
        raw = os.environ.get(self.plugins_env, "")
        return frozenset(filter(None, map(str.strip, raw.split(",")))) if raw.strip() else None

    def strict(self) -> bool:
        """Whether the namespace's strict variable (``SGLANG_PLUGINS_STRICT``) turns plugin failures
        into errors: read once per selection and per load, and passed on from there."""
        return os.environ.get(self.strict_env, "").strip().lower() in ("1", "true", "yes", "on")


_NAMESPACES: dict[str, PluginNamespace] = {}


def register_namespace(namespace: PluginNamespace) -> PluginNamespace:
    """Make a host's namespace known by name (for the CLI's ``--namespace``); registering it again
    is a no-op.

    Raises ``ValueError`` when a different namespace object is registered under the same name.
    """
    # atomic: no lock to reset after a fork
    if _NAMESPACES.setdefault(namespace.name, namespace) is not namespace:
        raise ValueError(
            f"a different plugin namespace named {namespace.name!r} is already registered; a host "
            f"declares its namespace once and passes that object (or its name) around"
        )
    return namespace


def get_namespace(name: str | PluginNamespace) -> PluginNamespace:
    """The namespace named ``name``; a namespace object is registered if its name is new
    (``ValueError`` when the name belongs to a different object)."""
    if isinstance(name, PluginNamespace):
        return register_namespace(name)
    if name not in _NAMESPACES:
        raise ValueError(
            f"unknown plugin namespace {name!r} (known: {', '.join(sorted(_NAMESPACES))})"
        )
    return _NAMESPACES[name]


def known_namespaces() -> tuple[PluginNamespace, ...]:
    return tuple(_NAMESPACES.values())


def resolve_qualified_name(name: str) -> object:
    """Import ``pkg.mod:Obj.attr`` or ``pkg.mod.Obj`` (``pkgutil.resolve_name``), except that a
    module on the path that exists but fails to import (a missing dependency of the plugin) raises
    that import error instead of a misleading ``AttributeError``."""
    import pkgutil

    head, _, tail = name.replace(":", ".").rpartition(".")
    # already imported: no import machinery needed
    attributes = vars(sys.modules[head]) if head in sys.modules else {}
    if tail in attributes:
        return attributes[tail]
    try:
        return pkgutil.resolve_name(name)
    except AttributeError:
        parts = name.split(".")
        for cut in range(2, len(parts) if ":" not in name else 0):
            if not import_if_module(".".join(parts[:cut])):
                break  # the prefix is not a module: pkgutil's AttributeError is the right answer
        raise


def import_if_module(name: str) -> ModuleType | None:
    """Import module ``name`` and return it; None when ``name`` (or a package above it) is no
    module, so that a caller can try another split of a dotted path. Any other import error
    propagates."""
    import importlib

    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and f"{name}.".startswith(f"{exc.name}."):
            return None
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
        startup_group="sglang.srt.startup_plugins",
    )
)

MULTIMODAL = register_namespace(
    PluginNamespace(
        name="multimodal_gen",
        platform_group="sglang.multimodal_gen.platforms",
        plugin_group="sglang.multimodal_gen.plugins",
        base_class="sglang_plugin_runtime.platforms.multimodal:MMPlatform",
        platform_env="SGLANG_DIFFUSION_PLATFORM_OVERRIDE",
        # SGLang's diffusion engine selects these built-ins by SGLANG_DIFFUSION_PLATFORM_OVERRIDE
        # and refuses plugins named like them (sglang/multimodal_gen/runtime/platforms/__init__.py,
        # 0.5.23).
        reserved_platform_names=frozenset({"cpu", "cuda", "rocm", "xpu", "mps", "npu", "musa"}),
    )
)
