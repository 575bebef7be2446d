"""Override or re-select the current platform in a test, and put the previous one back afterwards."""

from __future__ import annotations

from typing import Any

from .._namespace import NamespaceState, PluginNamespace, get_namespace, known_namespaces, state_of
from ..platforms._selection import PlatformHolder, PlatformSelection, platform_holder


class PlatformOverride:
    """Set, reset or re-select ``current_platform`` per namespace; :meth:`stop` restores what was there before.

    Restoring is exact: a platform resolved before the test is the same instance afterwards, and one that was not
    resolved yet is left unresolved.
    """

    def __init__(self) -> None:
        self._saved: dict[str, tuple[NamespaceState, tuple[Any, Any]]] = {}

    def start(self) -> PlatformOverride:
        for namespace in known_namespaces():
            self._remember(namespace)
        return self

    def _remember(self, namespace: PluginNamespace) -> PlatformHolder:
        if namespace.name not in self._saved:
            state = state_of(namespace)
            with state.platform_lock:
                self._saved[namespace.name] = (state, (state.platform, state.selection))
        return platform_holder(namespace)

    def set(self, platform: Any, namespace: str | PluginNamespace = "srt") -> Any:
        """Make ``platform`` (an instance, or a class to instantiate) current; returns the instance."""
        holder = self._remember(get_namespace(namespace))
        holder.override(platform)
        return holder.get()

    def reset(self, namespace: str | PluginNamespace = "srt", *, rescan: bool = False) -> None:
        """Forget the current platform, so the next access runs the real selection (``rescan``: rescan too)."""
        from .._discovery import refresh_discovery

        self._remember(get_namespace(namespace)).reset()
        if rescan:
            refresh_discovery()

    def select(self, namespace: str | PluginNamespace = "srt") -> PlatformSelection:
        """Run the real selection now (with the current environment) and return its provenance."""
        holder = self._remember(get_namespace(namespace))
        holder.reset()
        return holder.selection()

    def current(self, namespace: str | PluginNamespace = "srt") -> Any:
        """The current platform instance, selecting it if needed."""
        return self._remember(get_namespace(namespace)).get()

    def stop(self) -> None:
        for state, (platform, selection) in self._saved.values():
            with state.platform_lock:
                state.platform, state.selection = platform, selection
        self._saved.clear()
