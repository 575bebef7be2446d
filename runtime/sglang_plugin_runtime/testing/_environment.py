"""Isolation of the plugin environment variables: start from a clean slate, set what a test needs,
restore."""

from __future__ import annotations

import os
from collections.abc import Iterable

from .._namespace import PluginNamespace, get_namespace, known_namespaces

#: Always isolated, even for namespaces a host has not registered yet.
BASE_VARIABLES = (
    "SGLANG_PLATFORM",
    "SGLANG_PLUGINS",
    "SGLANG_PLUGINS_STRICT",
    "SGLANG_DIFFUSION_PLATFORM_OVERRIDE",
)


class PluginEnv:
    """The plugin environment variables of this process, cleared on :meth:`start`, restored on
    :meth:`stop`.

    Setting a variable does not re-run a selection that already happened; pair it with
    ``platform_override.reset()`` (or ``reset_current_platform()``) when the current platform was
    resolved.
    """

    def __init__(self, extra: Iterable[str] = ()) -> None:
        # every variable that steers plugin selection, in any known namespace
        steering = [
            name
            for namespace in known_namespaces()
            for name in (namespace.platform_env, namespace.plugins_env, namespace.strict_env)
        ]
        self.variables = tuple(dict.fromkeys([*BASE_VARIABLES, *steering, *extra]))
        self._saved: dict[str, str | None] | None = None

    def start(self) -> PluginEnv:
        if self._saved is not None:
            raise RuntimeError("PluginEnv is already started")
        self._saved = {name: os.environ.pop(name, None) for name in self.variables}
        return self

    def stop(self) -> None:
        """Put back every variable as it was before :meth:`start`, including ones the test set or
        removed."""
        saved, self._saved = self._saved, None
        for name, previous in (saved or {}).items():
            self._change(name, previous)

    def _change(self, name: str, value: str | None) -> None:
        """Set (``None``: remove) a variable, remembering its value first while started."""
        if self._saved is not None and name not in self._saved:
            self._saved[name] = os.environ.get(name)
            self.variables = (*self.variables, name)
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value

    def set(self, name: str, value: str) -> None:
        if not isinstance(value, str):
            raise TypeError(
                f"environment variable {name} must be set to a str, got {type(value).__name__}"
            )
        self._change(name, value)

    def unset(self, name: str) -> None:
        self._change(name, None)

    def __getitem__(self, name: str) -> str | None:
        return os.environ.get(name)

    __setitem__ = set
    __delitem__ = unset

    def platform(self, name: str | None, namespace: str | PluginNamespace = "srt") -> None:
        """Select a platform plugin by entry-point name (``None`` unsets: automatic selection)."""
        variable = get_namespace(namespace).platform_env
        self.unset(variable) if name is None else self.set(variable, name)

    def plugins(self, *names: str, namespace: str | PluginNamespace = "srt") -> None:
        """Allow only these general plugins; no names unsets the allowlist (all load)."""
        self._change(get_namespace(namespace).plugins_env, ",".join(names) if names else None)

    def strict(self, enabled: bool = True, namespace: str | PluginNamespace = "srt") -> None:
        """Turn strict mode on (plugin failures raise) or off."""
        self._change(get_namespace(namespace).strict_env, "1" if enabled else None)
