"""A plugin namespace: the handful of names that differ between SGLang's SRT and diffusion plugin systems.

The discovery, selection and loading logic is written once and parameterised by one of these, so a host (the
diffusion engine, or another project) declares its own namespace instead of copying code.
"""

# No ``from __future__ import annotations`` here: typing.NamedTuple would compile a ForwardRef for every
# string annotation of its fields, a cost paid by every process at start-up.
import logging
import os
import sys
from collections.abc import Callable
from typing import NamedTuple

from ._plugin_code import describe_failure, is_plugin_failure

logger = logging.getLogger(__name__)

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
    """Used when no platform plugin activates; ``None``: the host's (``set_host_fallback``), else the base class."""
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
        return _resolve_class_ref(self.base_class)

    def host_base(self) -> type | None:
        """The host's base class if its module is imported (see :meth:`import_host`), else ``None``."""
        if self.host_base_class is None or self.host_base_class.split(":")[0] not in sys.modules:
            return None
        base = _resolve_class_ref(self.host_base_class)
        return base if isinstance(base, type) else None

    def import_host(self, installed: frozenset[str]) -> None:
        """Where the host is installed, import its platform module before selecting, as the host's own start-up
        does: the host may read ``current_platform`` while it is imported (SGLang does), and a plugin built on the
        host's classes imports the host. If the host cannot be imported (released SGLang refuses, at import, a
        plugin built on this runtime's classes), what that import added to ``sys.modules`` is removed again and
        selection goes on without it."""
        if self.host_base_class is None or self.host_distribution not in installed:
            return
        import importlib

        module = self.host_base_class.split(":")[0]
        if module in sys.modules:
            return
        before = set(sys.modules)
        try:
            importlib.import_module(module)
        except BaseException as exc:
            if not is_plugin_failure(exc):
                raise
            for name in set(sys.modules) - before:
                del sys.modules[name]
            logger.info("The host's %s could not be imported, selecting without it: %s", module, describe_failure(exc))

    def resolve_fallback_class(self) -> type:
        ref = self.fallback_class
        if ref is None:
            ref = _HOST_FALLBACKS.get(self.name, self.base_class)
        return _resolve_class_ref(ref)

    def selected_platform(self) -> str | None:
        """The platform the user asked for with the namespace's env var, or ``None``; whitespace ignored."""
        value = os.environ.get(self.platform_env, "").strip()
        return value or None

    def allowed_plugins(self) -> frozenset[str] | None:
        """The general-plugin allowlist (comma-separated, whitespace-tolerant), or ``None`` for all."""
        raw = os.environ.get(self.plugins_env, "")
        if not raw.strip():
            return None
        return frozenset(part.strip() for part in raw.split(",") if part.strip())

    def strict(self) -> bool:
        """Whether the namespace's strict variable (``SGLANG_PLUGINS_STRICT``) turns plugin failures into errors."""
        return env_flag(self.strict_env)


def env_flag(name: str) -> bool:
    """Whether environment variable ``name`` is set to a true value (``1``, ``true``, ``yes``, ``on``)."""
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def resolve_qualified_name(name: str) -> object:
    """Import ``pkg.mod:Obj.attr`` or ``pkg.mod.Obj`` (the longest importable module prefix wins).

    ``pkgutil.resolve_name``, except that a module on the path that exists but fails to import (a missing
    dependency of the plugin, say) raises that import error instead of a misleading ``AttributeError``.
    """
    import pkgutil

    try:
        return pkgutil.resolve_name(name)
    except AttributeError:
        if ":" not in name:
            _raise_hidden_import_error(name)
        raise


def _raise_hidden_import_error(name: str) -> None:
    """Re-import the prefixes ``pkgutil`` tried; raise the first failure that is not "no such module"."""
    import importlib

    parts = name.split(".")
    for cut in range(2, len(parts)):
        prefix = ".".join(parts[:cut])
        try:
            importlib.import_module(prefix)
        except ModuleNotFoundError as exc:
            if exc.name is not None and (prefix == exc.name or prefix.startswith(exc.name + ".")):
                return  # the prefix is not a module: pkgutil's AttributeError is the right answer
            raise
        except ImportError:
            raise


#: Fallbacks declared by the host that owns a namespace, by namespace name: SGLang keeps its own chain of in-tree
#: platforms (CPU engine, CUDA, NPU, ROCm, ...) for the SRT namespace, whose description is fixed here.
_HOST_FALLBACKS: dict[str, ClassRef] = {}


def set_host_fallback(name: str, ref: ClassRef | None) -> ClassRef | None:
    """Use ``ref`` as namespace ``name``'s fallback (``None`` removes it); returns the previous one."""
    previous = _HOST_FALLBACKS.pop(name, None)
    if ref is not None:
        _HOST_FALLBACKS[name] = ref
    return previous


def _resolve_class_ref(ref: ClassRef) -> type:
    if isinstance(ref, type):  # a class is callable too: calling it would make an instance
        return ref
    if callable(ref):
        return ref()
    return resolve_qualified_name(ref)  # type: ignore[return-value]


SRT = PluginNamespace(
    name="srt",
    platform_group="sglang.srt.platforms",
    plugin_group="sglang.srt.plugins",
    base_class="sglang_plugin_runtime.platforms.interface:SRTPlatform",
    host_base_class="sglang.srt.platforms.interface:SRTPlatform",
    host_distribution="sglang",
)

MULTIMODAL = PluginNamespace(
    name="multimodal_gen",
    platform_group="sglang.multimodal_gen.platforms",
    plugin_group="sglang.multimodal_gen.plugins",
    base_class="sglang_plugin_runtime.platforms.multimodal:MMPlatform",
    platform_env="SGLANG_DIFFUSION_PLATFORM_OVERRIDE",
    # SGLang's diffusion engine selects these built-ins by SGLANG_DIFFUSION_PLATFORM_OVERRIDE and refuses plugins
    # named like them (sglang/multimodal_gen/runtime/platforms/__init__.py, 0.5.23).
    reserved_platform_names=frozenset({"cpu", "cuda", "rocm", "xpu", "mps", "npu", "musa"}),
)

_NAMESPACES: dict[str, PluginNamespace] = {SRT.name: SRT, MULTIMODAL.name: MULTIMODAL}


def register_namespace(namespace: PluginNamespace) -> PluginNamespace:
    """Make a host's namespace known by name (for the CLI's ``--namespace``)."""
    existing = _NAMESPACES.get(namespace.name)
    if existing is not None and existing != namespace:
        raise ValueError(f"a different plugin namespace named {namespace.name!r} is already registered")
    _NAMESPACES[namespace.name] = namespace
    return namespace


def get_namespace(name: str | PluginNamespace) -> PluginNamespace:
    if isinstance(name, PluginNamespace):
        return name
    try:
        return _NAMESPACES[name]
    except KeyError:
        known = ", ".join(sorted(_NAMESPACES))
        raise ValueError(f"unknown plugin namespace {name!r} (known: {known})") from None


def known_namespaces() -> tuple[PluginNamespace, ...]:
    return tuple(_NAMESPACES.values())
