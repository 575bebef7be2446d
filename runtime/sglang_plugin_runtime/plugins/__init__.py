"""Plugins: ``load_plugins()`` and ``load_plugins_by_group()`` with SGLang's signatures, and ``load_startup_plugins()``.

``load_plugins()`` runs the startup plugins (``sglang.srt.startup_plugins``) and then the general plugins
(``sglang.srt.plugins``, filtered by ``SGLANG_PLUGINS``), each with the plugin as the current hook source, then
applies the registered hooks. Call it early in every process (server, scheduler, workers); it is idempotent and safe
after ``fork``. ``load_startup_plugins()`` runs only the first phase: a host calls it before its own imports (SGLang's
``sglang.srt.server_args`` does once it adopted the runtime; so does ``sglang-plugins run``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._discovery import discover_entry_points
from .._lazy_exports import lazy_exports
from .._namespace import MULTIMODAL, SRT, PluginNamespace, get_namespace, known_namespaces
from .._plugin_code import PluginOutcome, Policy, Status
from ._loading import LoadReport, import_plugins, last_load_report, load_all, plan_entry_points

if TYPE_CHECKING:
    from .hook_registry import HookRegistry, HookSource, HookType, plugin_hook
    from .hook_registry import _current_plugin_source as _current_plugin_source

#: Entry-point group of platform plugins (same name as SGLang's constant).
PLATFORM_PLUGINS_GROUP = SRT.platform_group
#: Entry-point group of general plugins.
GENERAL_PLUGINS_GROUP = SRT.plugin_group
#: Entry-point group of startup plugins: run first, before SGLang's own imports where the host runs them.
STARTUP_PLUGINS_GROUP = str(SRT.startup_group)
#: The diffusion side's general-plugin group.
MM_GENERAL_PLUGINS_GROUP = MULTIMODAL.plugin_group

__all__ = ["LoadReport", "PluginOutcome", "Status", "load_plugins", "load_plugins_by_group"]
__all__ += ["load_startup_plugins", "plugin_load_report"]
__all__ += ["HookRegistry", "HookSource", "HookType", "plugin_hook"]
__all__ += ["GENERAL_PLUGINS_GROUP", "MM_GENERAL_PLUGINS_GROUP", "PLATFORM_PLUGINS_GROUP", "STARTUP_PLUGINS_GROUP"]


def load_plugins_by_group(
    group: str,
    excluded_dists: set[str] | None = None,
) -> dict[str, tuple[Callable[[], Any], str | None]]:
    """Import the plugins of ``group`` and return ``{name: (function, distribution name)}``.

    Entry points of distributions in ``excluded_dists`` are never imported. ``SGLANG_PLUGINS`` filters
    general-plugin groups only, never platform groups. A plugin that fails to import is logged and skipped
    (raised with ``SGLANG_PLUGINS_STRICT=1``). Distribution names are PEP 503 normalised.
    """
    namespace = next((ns for ns in known_namespaces() if group in (ns.plugin_group, ns.platform_group)), SRT)
    allowlist = group != namespace.platform_group
    plan = plan_entry_points(
        group, namespace, discover_entry_points(), excluded_dists=excluded_dists or (), apply_allowlist=allowlist
    )
    policy = Policy(namespace.strict(), namespace.strict_env)
    imported, _outcomes = import_plugins(plan, policy, group)
    return {ep.name: (function, ep.distribution) for ep, function in imported}


def load_plugins(namespace: str | PluginNamespace = SRT, *, strict: bool | None = None) -> LoadReport:
    """Run the startup plugins, then the general plugins, once per process; then apply the registered hooks.

    Returns what happened to each general plugin (SGLang's version returns ``None``; callers that ignore the
    result are unaffected). When ``SGLANG_PLATFORM`` is set, plugins of distributions that offer only other
    platforms are skipped without being imported. ``strict``: default, the namespace's ``SGLANG_PLUGINS_STRICT``.
    """
    return load_all(get_namespace(namespace), strict)


def load_startup_plugins(namespace: str | PluginNamespace = SRT, *, strict: bool | None = None) -> LoadReport:
    """Run the startup plugins once per process (the first phase of :func:`load_plugins`); then apply the hooks,
    so those on modules not imported yet wait for their import."""
    return load_all(get_namespace(namespace), strict, startup_only=True)


def plugin_load_report(namespace: str | PluginNamespace = SRT, group: str | None = None) -> LoadReport | None:
    """What the last ``load_plugins()`` of this process did to ``group`` (default: the general plugins), or
    ``None`` if it has not run."""
    return last_load_report(get_namespace(namespace), group)


# The hook registry is imported when first asked for (a process with no plugin and no hook never needs it);
# SGLang exposes _current_plugin_source here too.
_HOOK_NAMES = ("HookRegistry", "HookSource", "HookType", "plugin_hook", "_current_plugin_source")
__getattr__ = lazy_exports(__name__, globals(), dict.fromkeys(_HOOK_NAMES, ".hook_registry"))
