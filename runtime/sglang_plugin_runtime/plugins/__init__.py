"""Plugins: ``load_plugins()`` and ``load_plugins_by_group()`` with SGLang's signatures, and
``load_startup_plugins()``.

``load_plugins()`` runs the startup plugins (``sglang.srt.startup_plugins``), then the general
plugins (``sglang.srt.plugins``, filtered by ``SGLANG_PLUGINS``), each with the plugin as the
current hook source, then applies the registered hooks. Call it early in every process (server,
scheduler, workers); it is idempotent and safe after ``fork``. ``load_startup_plugins()`` runs only
the first phase: a host calls it before its own imports (an SGLang that adopted the runtime does
when its package is imported; so does ``sglang-plugins run``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy_exports import lazy_exports
from .._namespace import MULTIMODAL, SRT
from .._plugin_code import PluginOutcome, Status
from ._loading import (
    LoadReport,
    load_plugins,
    load_plugins_by_group,
    load_startup_plugins,
    plugin_load_report,
)

if TYPE_CHECKING:
    from .hook_registry import HookRegistry, HookSource, HookType, plugin_hook
    from .hook_registry import _current_plugin_source as _current_plugin_source

#: Entry-point group of platform plugins (same name as SGLang's constant).
PLATFORM_PLUGINS_GROUP = SRT.platform_group
#: Entry-point group of general plugins.
GENERAL_PLUGINS_GROUP = SRT.plugin_group
#: Entry-point group of startup plugins: run first, before the host's own imports where it runs
#: them.
STARTUP_PLUGINS_GROUP = str(SRT.startup_group)
#: The diffusion side's general-plugin group.
MM_GENERAL_PLUGINS_GROUP = MULTIMODAL.plugin_group

__all__ = [
    "GENERAL_PLUGINS_GROUP",
    "MM_GENERAL_PLUGINS_GROUP",
    "PLATFORM_PLUGINS_GROUP",
    "STARTUP_PLUGINS_GROUP",
    "HookRegistry",
    "HookSource",
    "HookType",
    "LoadReport",
    "PluginOutcome",
    "Status",
    "load_plugins",
    "load_plugins_by_group",
    "load_startup_plugins",
    "plugin_hook",
    "plugin_load_report",
]

# The hook registry is imported when first asked for (a process with no plugin and no hook never
# needs it); SGLang exposes _current_plugin_source here too.
_HOOK_NAMES = ("HookRegistry", "HookSource", "HookType", "plugin_hook", "_current_plugin_source")
__getattr__ = lazy_exports(__name__, globals(), dict.fromkeys(_HOOK_NAMES, ".hook_registry"))
