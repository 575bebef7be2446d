"""The current platform of the SRT namespace, and the selection API.

``from sglang_plugin_runtime.platforms import current_platform`` resolves the platform on first
access (lazily, once per process, thread-safe) and never imports torch.
``current_platform_selection()`` says which plugin and distribution provided it and which rule chose
it.

The platform classes themselves (``SRTPlatform``, ``MMPlatform``, ``DeviceMixin``) are imported
lazily too, so that asking "which platform am I on" costs only what it must.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._discovery import refresh_discovery
from .._lazy_exports import lazy_exports
from .._namespace import MULTIMODAL, SRT, PluginNamespace, register_namespace
from .._plugin_code import PluginOutcome
from ._selection import (
    PlatformSelection,
    Rule,
    current_platform_selection,
    get_current_platform,
    plan_platforms,
    reset_current_platform,
    select_platform,
    set_current_platform,
    set_fallback_platform,
)

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

__all__ = [
    "GENERAL_PLUGINS_GROUP",
    "MM_PLATFORM_PLUGINS_GROUP",
    "PLATFORM_PLUGINS_GROUP",
    "CpuArchEnum",
    "DeviceCapability",
    "DeviceMixin",
    "MMPlatform",
    "PlatformEnum",
    "PlatformSelection",
    "PluginNamespace",
    "PluginOutcome",
    "Rule",
    "SRTPlatform",
    "current_platform",
    "current_platform_selection",
    "describe_contract",
    "get_current_platform",
    "plan_platforms",
    "refresh_discovery",
    "register_namespace",
    "reset_current_platform",
    "select_platform",
    "set_current_platform",
    "set_fallback_platform",
]

_DEVICE_NAMES = ("DeviceMixin", "PlatformEnum", "DeviceCapability", "CpuArchEnum")
_LAZY = {
    "SRTPlatform": ".interface",
    "MMPlatform": ".multimodal",
    "describe_contract": "._describe",
}
_lazy = lazy_exports(__name__, globals(), _LAZY | dict.fromkeys(_DEVICE_NAMES, ".device_mixin"))


def __getattr__(name: str) -> Any:
    if name == "current_platform":  # never cached: it is resolved (and may be reset) per process
        return get_current_platform(SRT)
    return _lazy(name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
