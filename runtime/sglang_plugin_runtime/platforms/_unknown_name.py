"""What to tell a user whose ``SGLANG_PLATFORM`` names no installed platform plugin: what is
installed, and the name they probably meant (other case or separators, the distribution's name
instead of the entry point's, a near miss).

Loaded only when that happens (and by ``sglang-plugins list``): a correctly configured process never
needs it.
"""

from __future__ import annotations

import difflib

from .._discovery import PluginEntryPoint, normalize_distribution_name
from .._namespace import PluginNamespace


def unknown_platform_message(
    namespace: PluginNamespace, candidates: tuple[PluginEntryPoint, ...], selected: str
) -> str:
    """Why ``selected`` names no installed platform plugin, with the likely intended name when there
    is one."""
    available = ", ".join(f"{ep.name!r} ({ep.label})" for ep in candidates) or "none installed"
    shown = (
        repr(selected)
        if len(selected) <= 80
        else f"{selected[:60]!r}... ({len(selected)} characters)"
    )
    message = (
        f"{namespace.platform_env}={shown} does not match any platform plugin in group "
        f"{namespace.platform_group!r} (available: {available})."
    )
    suggestions = platform_name_suggestions(candidates, selected)
    if suggestions:
        names = " or ".join(repr(name) for name in suggestions)
        return (
            f"{message} Did you mean {namespace.platform_env}={names}? Platform names are matched "
            f"exactly (they are entry-point names, not distribution names)."
        )
    return (
        f"{message} Install the plugin's package (pip install <package>, or pip install -e <path> "
        f"for a checkout) "
        f"so it registers its entry point, or unset {namespace.platform_env} to pick automatically."
    )


def platform_name_suggestions(candidates: tuple[PluginEntryPoint, ...], selected: str) -> list[str]:
    """Installed platform names that ``selected`` probably meant: other case or separators, the
    distribution's name instead of the entry point's, or a near miss."""

    def folded(name: str) -> str:
        return name.lower().replace("-", "_").replace(".", "_")

    by_fold = {folded(ep.name): ep.name for ep in candidates}
    found = sorted({name for fold, name in by_fold.items() if fold == folded(selected)})
    found = found or sorted(
        {ep.name for ep in candidates if ep.distribution == normalize_distribution_name(selected)}
    )
    return found or [
        by_fold[m] for m in difflib.get_close_matches(folded(selected), list(by_fold), 3, 0.75)
    ]
