"""What to tell a user whose ``SGLANG_PLATFORM`` names no installed platform plugin, or whose
``SGLANG_PLUGINS`` lists a name no plugin has: what is installed, and the name they probably meant
(other case or separators, the distribution's name instead of the entry point's, a near miss).
Its near misses are those of the platform contract's "did you mean" for a misspelled method.

Loaded only when that happens (and by ``sglang-plugins list``): a correctly configured process never
needs it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from .._discovery import DiscoveryResult, PluginEntryPoint, normalize_distribution_name
from .._namespace import PluginNamespace
from ._contract import near_misses


def unknown_platform_message(
    namespace: PluginNamespace, discovery: DiscoveryResult, selected: str
) -> str:
    """Why ``selected`` names no installed platform plugin, with the likely intended name when there
    is one, a general plugin of that name, and the distributions discovery had to skip."""
    env, group = namespace.platform_env, namespace.platform_group
    candidates = discovery.group(group)
    available = ", ".join(f"{ep.name!r} ({ep.label})" for ep in candidates) or "none installed"
    cut = f"{selected[:60]!r}... ({len(selected)} characters)"
    message = (
        f"{env}={repr(selected) if len(selected) <= 80 else cut} does not match any platform "
        f"plugin in group {group!r} (available: {available})."
    )
    if discovery.malformed:
        skipped = "; ".join(f"{bad.path} ({bad.reason})" for bad in discovery.malformed)
        message += f" Skipped by discovery (it may be the one; fix or reinstall it): {skipped}."
    if suggestions := name_suggestions(candidates, selected):
        return (
            f"{message} Did you mean {env}={' or '.join(map(repr, suggestions))}? Platform names "
            "are matched exactly (they are entry-point names, not distribution names)."
        )
    general = [g for g in (namespace.plugin_group, namespace.startup_group) if g]
    if ep := next((ep for g in general for ep in discovery.group(g) if ep.name == selected), None):
        return (
            f"{message} {selected!r} is installed ({ep.label}) as a general plugin (group "
            f"{ep.group!r}), not a platform plugin: general plugins are loaded (filtered by "
            f"{namespace.plugins_env}), never selected. Name a platform plugin, or unset {env}."
        )
    return (
        f"{message} Install the plugin's package (pip install <package>, or pip install -e <path> "
        f"for a checkout) so it registers its entry point, or unset {env} to pick automatically."
    )


def not_installed_reason(
    namespace: PluginNamespace,
    discovery: DiscoveryResult,
    installed: Sequence[PluginEntryPoint],
    name: str,
) -> str:
    """Why ``name``, listed in ``SGLANG_PLUGINS``, loads nothing (of the ``installed`` plugins it
    filters); the value meant, when likely."""
    env = namespace.plugins_env
    parts = [part.strip() for part in os.environ.get(env, "").split(",") if part.strip()]
    platforms = discovery.group(namespace.platform_group)
    if platform := next((ep for ep in platforms if ep.name == name), None):
        rest = ",".join(part for part in parts if part != name)
        fix = f"{env}={rest!r}" if rest else f"unset {env}"
        return (
            f"listed in {env}, but {name!r} is a platform plugin ({platform.label}): {env} filters "
            f"general and startup plugins only, and {namespace.platform_env}={name} selects a "
            f"platform (unset, the one whose hardware is found); remove it ({fix})"
        )
    if not (suggestions := name_suggestions(installed, name)):
        return f"listed in {env} but not installed"
    value = ",".join(suggestions[0] if part == name else part for part in parts)
    return (
        f"listed in {env} but not installed; did you mean {env}={value!r}? (entry-point names, "
        "matched exactly)"
    )


def name_suggestions(candidates: Sequence[PluginEntryPoint], selected: str) -> list[str]:
    """Installed plugin names that ``selected`` probably meant: other case or separators, the
    distribution's name instead of the entry point's, or a near miss."""

    def folded(name: str) -> str:
        return name.lower().replace("-", "_").replace(".", "_")

    by_fold = {folded(ep.name): ep.name for ep in candidates}  # one name per folded form
    if (fold := folded(selected)) in by_fold:
        return [by_fold[fold]]
    distribution = normalize_distribution_name(selected)
    return sorted({ep.name for ep in candidates if ep.distribution == distribution}) or [
        by_fold[match] for match in near_misses(fold, by_fold, cutoff=0.75)
    ]
