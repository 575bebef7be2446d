"""General plugins: ``load_plugins()`` and ``load_plugins_by_group()``, with SGLang's signatures.

``load_plugins()`` loads the ``sglang.srt.plugins`` entry points (filtered by ``SGLANG_PLUGINS``), runs each
plugin's function with the plugin as the current hook source, then applies the registered hooks. Call it early
in every process (server, scheduler, workers); it is idempotent and safe after ``fork``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._lazy_exports import lazy_exports
from .._namespace import MULTIMODAL, SRT, PluginNamespace, get_namespace
from ._loading import (
    LoadReport,
    PluginRecord,
    last_load_report,
    load_entry_points,
    load_general_plugins,
    namespace_for_group,
)

if TYPE_CHECKING:
    from .hook_registry import HookRegistry, HookSource, HookType, plugin_hook
    from .hook_registry import _current_plugin_source as _current_plugin_source

#: Entry-point group of platform plugins (same name as SGLang's constant).
PLATFORM_PLUGINS_GROUP = SRT.platform_group
#: Entry-point group of general plugins.
GENERAL_PLUGINS_GROUP = SRT.plugin_group
#: The diffusion side's general-plugin group.
MM_GENERAL_PLUGINS_GROUP = MULTIMODAL.plugin_group

__all__ = ["LoadReport", "PluginRecord", "load_plugins", "load_plugins_by_group", "plugin_load_report"]
__all__ += ["HookRegistry", "HookSource", "HookType", "plugin_hook"]
__all__ += ["GENERAL_PLUGINS_GROUP", "MM_GENERAL_PLUGINS_GROUP", "PLATFORM_PLUGINS_GROUP"]


def load_plugins_by_group(
    group: str,
    excluded_dists: set[str] | None = None,
) -> dict[str, tuple[Callable[[], Any], str | None]]:
    """Import the plugins of ``group`` and return ``{name: (function, distribution name)}``.

    Entry points of distributions in ``excluded_dists`` are never imported. ``SGLANG_PLUGINS`` filters
    general-plugin groups only, never platform groups. A plugin that fails to import is logged and skipped
    (raised with ``SGLANG_PLUGINS_STRICT=1``). Distribution names are PEP 503 normalised.
    """
    namespace = namespace_for_group(group, SRT)
    loaded = load_entry_points(
        group, namespace, excluded_dists=excluded_dists, apply_allowlist=group == namespace.plugin_group
    )
    return {name: (func, ep.dist_name) for name, (func, ep) in loaded.items()}


def load_plugins(namespace: str | PluginNamespace = SRT) -> LoadReport:
    """Load and run the general plugins once per process, then apply the registered hooks.

    Returns what happened to each plugin (SGLang's version returns ``None``; callers that ignore the result
    are unaffected). When ``SGLANG_PLATFORM`` is set, plugins of distributions that offer only other platforms
    are skipped without being imported.
    """
    return load_general_plugins(get_namespace(namespace))


def plugin_load_report(namespace: str | PluginNamespace = SRT) -> LoadReport | None:
    """What the last ``load_plugins()`` of this process did, or ``None`` if it has not run."""
    return last_load_report(get_namespace(namespace))


# The hook registry is imported when first asked for (a process with no plugin and no hook never needs it);
# SGLang exposes _current_plugin_source here too.
_HOOK_NAMES = ("HookRegistry", "HookSource", "HookType", "plugin_hook", "_current_plugin_source")
__getattr__ = lazy_exports(__name__, globals(), dict.fromkeys(_HOOK_NAMES, ".hook_registry"))
