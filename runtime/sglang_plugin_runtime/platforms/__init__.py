"""The current platform of the SRT namespace, and the selection API.

``from sglang_plugin_runtime.platforms import current_platform`` resolves the platform on first access (lazily,
once per process, thread-safe) and never imports torch. ``current_platform_selection()`` says which plugin and
distribution provided it and which rule chose it.

The platform classes themselves (``SRTPlatform``, ``MMPlatform``, ``DeviceMixin``) are imported lazily too, so that
asking "which platform am I on" costs only what it must.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from .._discovery import refresh_discovery
from .._lazy_exports import lazy_exports
from .._namespace import MULTIMODAL, SRT, ClassRef, PluginNamespace, get_namespace, register_namespace
from .._plugin_code import PluginOutcome
from . import _selection
from ._selection import RULE_EXPLICIT, RULE_FALLBACK, RULE_OVERRIDE, RULE_SINGLE, PlatformSelection
from ._selection import plan_platforms, select_platform

if TYPE_CHECKING:
    from ._describe import describe_contract
    from .device_mixin import CpuArchEnum, DeviceCapability, DeviceMixin, PlatformEnum
    from .interface import SRTPlatform
    from .multimodal import MMPlatform

    current_platform: SRTPlatform

#: Entry-point group of SRT platform plugins (same name as SGLang's constant).
PLATFORM_PLUGINS_GROUP = SRT.platform_group
#: Entry-point group of SRT general plugins.
GENERAL_PLUGINS_GROUP = SRT.plugin_group
#: Entry-point group of diffusion platform plugins.
MM_PLATFORM_PLUGINS_GROUP = MULTIMODAL.platform_group

__all__ = ["current_platform", "current_platform_selection", "get_current_platform", "set_current_platform"]
__all__ += ["refresh_discovery", "reset_current_platform", "select_platform", "set_fallback_platform"]
__all__ += ["RULE_EXPLICIT", "RULE_FALLBACK", "RULE_OVERRIDE", "RULE_SINGLE", "PluginOutcome", "PlatformSelection"]
__all__ += ["GENERAL_PLUGINS_GROUP", "MM_PLATFORM_PLUGINS_GROUP", "PluginNamespace", "register_namespace"]
__all__ += ["PLATFORM_PLUGINS_GROUP", "CpuArchEnum", "DeviceCapability", "DeviceMixin", "PlatformEnum"]
__all__ += ["MMPlatform", "SRTPlatform", "describe_contract", "plan_platforms"]

_LAZY_CLASSES = {"SRTPlatform": ".interface", "MMPlatform": ".multimodal", "describe_contract": "._describe"}
_LAZY_CLASSES |= dict.fromkeys(("DeviceMixin", "PlatformEnum", "DeviceCapability", "CpuArchEnum"), ".device_mixin")


def get_current_platform(namespace: str | PluginNamespace = SRT) -> Any:
    """The platform instance of ``namespace`` (``"srt"`` by default), selecting it on first use."""
    return _selection.current_platform_of(get_namespace(namespace))


def current_platform_selection(namespace: str | PluginNamespace = SRT) -> PlatformSelection:
    """How the current platform was chosen: plugin, distribution, version, rule, reason, every activation."""
    return _selection.current_selection_of(get_namespace(namespace))


def set_current_platform(platform: Any, namespace: str | PluginNamespace = SRT) -> None:
    """Override the current platform with an instance or a class (tests; hosts that choose themselves)."""
    _selection.set_current_platform_of(get_namespace(namespace), platform)


def set_fallback_platform(fallback: ClassRef | None, namespace: str | PluginNamespace = SRT) -> None:
    """Name the platform a host falls back to when no plugin activates (``None``: the namespace's own again).

    ``fallback`` is a class, a qualified name, or a callable returning a class: a host passes its own
    hardware detection (SGLang: CPU engine, CUDA, NPU, ROCm, ...), which then runs only when no plugin
    activated. A namespace that names its own ``fallback_class`` keeps it. Call it before the platform is
    first resolved: a platform already chosen by fallback stays in place (a WARNING says so).
    """
    ns = get_namespace(namespace)
    state = _selection.platform_state(ns)
    state.fallback, chosen = fallback, state.selection
    if chosen is not None and chosen.rule == RULE_FALLBACK:
        logging.getLogger(__name__).warning(
            "set_fallback_platform(%r) for namespace %r came after the platform was resolved to the fallback %s; "
            "it applies from the next selection (reset_current_platform()).",
            *(fallback, ns.name, chosen.class_path),
        )


def reset_current_platform(namespace: str | PluginNamespace = SRT, *, rescan: bool = False) -> None:
    """Forget the current platform so the next access selects again; ``rescan`` also drops the discovery cache."""
    _selection.reset_current_platform_of(get_namespace(namespace))
    if rescan:
        refresh_discovery()


_lazy_class = lazy_exports(__name__, globals(), _LAZY_CLASSES)


def __getattr__(name: str) -> Any:
    if name == "current_platform":  # never cached: it is resolved (and may be reset) per process
        return _selection.current_platform_of(SRT)
    return _lazy_class(name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
