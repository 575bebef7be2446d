"""Override or re-select the current platform in a test, and put the previous one back
afterwards."""

from __future__ import annotations

from typing import Any

from .._namespace import PluginNamespace, get_namespace, known_namespaces
from ..platforms import _selection
from ..platforms._selection import PlatformSelection, PlatformState


class PlatformOverride:
    """Set, reset or re-select ``current_platform`` per namespace; :meth:`stop` restores what was
    there before.

    Restoring is exact: a platform resolved before the test is the same instance afterwards, and one
    that was not resolved yet is left unresolved.
    """

    def __init__(self) -> None:
        self._saved: dict[str, tuple[PlatformState, object | None, PlatformSelection | None]] = {}

    def start(self) -> PlatformOverride:
        for namespace in known_namespaces():
            self._remember(namespace)
        return self

    def _remember(self, namespace: str | PluginNamespace) -> PluginNamespace:
        namespace = get_namespace(namespace)
        if namespace.name not in self._saved:
            state = _selection.platform_state(namespace)
            with state.gate.lock:
                self._saved[namespace.name] = (state, state.platform, state.selection)
        return namespace

    def set(self, platform: Any, namespace: str | PluginNamespace = "srt") -> Any:
        """Make ``platform`` (an instance, or a class to instantiate) current; returns the
        instance."""
        _selection.set_current_platform(platform, self._remember(namespace))
        return _selection.get_current_platform(namespace)

    def reset(self, namespace: str | PluginNamespace = "srt", *, rescan: bool = False) -> None:
        """Forget the current platform, so the next access runs the real selection (``rescan``:
        rescan too)."""
        _selection.reset_current_platform(self._remember(namespace), rescan=rescan)

    def select(self, namespace: str | PluginNamespace = "srt") -> PlatformSelection:
        """Run the real selection now (with the current environment) and return its provenance."""
        _selection.reset_current_platform(self._remember(namespace))
        return _selection.current_platform_selection(namespace)

    def current(self, namespace: str | PluginNamespace = "srt") -> Any:
        """The current platform instance, selecting it if needed."""
        return _selection.get_current_platform(self._remember(namespace))

    def stop(self) -> None:
        for state, platform, selection in self._saved.values():
            with state.gate.lock:
                state.platform, state.selection = platform, selection
        self._saved.clear()
