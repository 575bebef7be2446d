"""``sglang-plugins list``: every entry point of a namespace and what the environment would do with it.

Reads the discovery scan and predicts; imports no plugin.
"""

from __future__ import annotations

from typing import Any

from .._discovery import discover_entry_points
from .._namespace import PluginNamespace
from ._report import ERROR, WARNING, Problems, Simulation, allowlist_problem, discovery_problems, envelope

ACTION_SELECTED = "selected"
ACTION_NOT_SELECTED = "not-selected"
ACTION_CANDIDATE = "candidate"
ACTION_ALLOWED = "allowed"
ACTION_SKIPPED_ALLOWLIST = "skipped-allowlist"
ACTION_SKIPPED_PLATFORM = "skipped-unselected-platform"
ACTION_DUPLICATE = "duplicate"
ACTION_NOT_INSTALLED = "not-installed"


def _entry_point_dict(ep: Any, action: str, reason: str) -> dict[str, Any]:
    return {
        "name": ep.name,
        "distribution": ep.dist_name,
        "version": ep.dist_version,
        "value": ep.value,
        "path": ep.dist_path,
        "action": action,
        "reason": reason,
    }


def list_report(
    namespace: PluginNamespace, *, simulation: Simulation | None = None, strict: bool = False
) -> dict[str, Any]:
    """Every entry point of ``namespace`` and what the environment would make of it; imports no plugin."""
    from ..plugins._loading import unselected_platform_dists

    discovery = discover_entry_points()
    problems = Problems()
    duplicates = discovery_problems(discovery, namespace, problems)
    selected = namespace.selected_platform()
    allowed = namespace.allowed_plugins()

    platform_rows = []
    platform_dupes = discovery.duplicates(namespace.platform_group)
    for ep in discovery.group(namespace.platform_group):
        if ep.name in platform_dupes and (selected is None or selected == ep.name):
            action, reason = ACTION_DUPLICATE, "another distribution offers the same name; selection will fail"
        elif selected is None:
            action, reason = ACTION_CANDIDATE, f"{namespace.platform_env} unset: imported and activate() called"
        elif ep.name == selected:
            action, reason = ACTION_SELECTED, f"{namespace.platform_env}={selected!r}: the only platform imported"
        else:
            action, reason = ACTION_NOT_SELECTED, f"{namespace.platform_env}={selected!r}: never imported"
        platform_rows.append(_entry_point_dict(ep, action, reason))
    if selected is not None and not any(ep.name == selected for ep in discovery.group(namespace.platform_group)):
        from ..platforms._selection import unknown_platform_message

        problems.add(
            ERROR,
            "selection",
            unknown_platform_message(namespace, discovery.group(namespace.platform_group), selected),
            plugin=selected,
        )
    allowlist_problem(namespace, problems)

    excluded = unselected_platform_dists(namespace, discovery)
    plugin_rows = []
    plugin_dupes = discovery.duplicates(namespace.plugin_group)
    installed_names = {ep.name for ep in discovery.group(namespace.plugin_group)}
    for ep in discovery.group(namespace.plugin_group):
        if allowed is not None and ep.name not in allowed:
            action, reason = ACTION_SKIPPED_ALLOWLIST, f"not in {namespace.plugins_env}"
        elif ep.dist_name in excluded:
            action = ACTION_SKIPPED_PLATFORM
            reason = f"its distribution offers only platforms other than {namespace.platform_env}={selected!r}"
        elif ep.name in plugin_dupes:
            action, reason = ACTION_DUPLICATE, "another distribution offers the same name; it will not load"
        else:
            action = ACTION_ALLOWED
            reason = (
                f"listed in {namespace.plugins_env}"
                if allowed is not None
                else f"{namespace.plugins_env} unset: all load"
            )
        plugin_rows.append(_entry_point_dict(ep, action, reason))
    for missing in sorted((allowed or set()) - installed_names):
        plugin_rows.append(
            {
                "name": missing,
                "distribution": None,
                "version": None,
                "value": None,
                "path": None,
                "action": ACTION_NOT_INSTALLED,
                "reason": f"listed in {namespace.plugins_env} but not installed",
            }
        )
        problems.add(
            WARNING, "plugins", f"{namespace.plugins_env} lists {missing!r}, which is not installed", plugin=missing
        )

    report = envelope("list", namespace, simulation, problems, strict)
    report.update(
        {
            "distribution_count": discovery.distribution_count,
            "groups": [
                {"group": namespace.platform_group, "kind": "platform", "entry_points": platform_rows},
                {"group": namespace.plugin_group, "kind": "general", "entry_points": plugin_rows},
            ],
            "malformed": [{"path": bad.path, "reason": bad.reason} for bad in discovery.malformed],
            "duplicates": duplicates,
        }
    )
    return report


# ---- doctor ------------------------------------------------------------------------------------------------
