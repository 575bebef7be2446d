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


def plugin_variables() -> tuple[str, ...]:
    """Every environment variable that steers plugin selection, in any known namespace."""
    names = list(BASE_VARIABLES)
    for namespace in known_namespaces():
        for name in (namespace.platform_env, namespace.plugins_env, namespace.strict_env):
            if name not in names:
                names.append(name)
    return tuple(names)


class PluginEnv:
    """The plugin environment variables of this process, cleared on :meth:`start`, restored on
    :meth:`stop`.

    Setting a variable does not re-run a selection that already happened; pair it with
    ``platform_override.reset()`` (or ``reset_current_platform()``) when the current platform was
    resolved.
    """

    def __init__(self, extra: Iterable[str] = ()) -> None:
        self.variables = tuple(dict.fromkeys([*plugin_variables(), *extra]))
        self._saved: dict[str, str | None] | None = None

    def start(self) -> PluginEnv:
        if self._saved is not None:
            raise RuntimeError("PluginEnv is already started")
        self._saved = {name: os.environ.get(name) for name in self.variables}
        for name in self.variables:
            os.environ.pop(name, None)
        return self

    def stop(self) -> None:
        """Put back every variable as it was before :meth:`start`, including ones the test set or
        removed."""
        if self._saved is None:
            return
        touched = set(self.variables)
        for name in touched:
            previous = self._saved.get(name)
            if previous is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = previous
        self._saved = None

    def _track(self, name: str) -> None:
        if self._saved is not None and name not in self._saved:
            self._saved[name] = os.environ.get(name)
            self.variables = (*self.variables, name)

    def set(self, name: str, value: str) -> None:
        if not isinstance(value, str):
            raise TypeError(
                f"environment variable {name} must be set to a str, got {type(value).__name__}"
            )
        self._track(name)
        os.environ[name] = value

    def unset(self, name: str) -> None:
        self._track(name)
        os.environ.pop(name, None)

    def __getitem__(self, name: str) -> str | None:
        return os.environ.get(name)

    def __setitem__(self, name: str, value: str) -> None:
        self.set(name, value)

    def __delitem__(self, name: str) -> None:
        self.unset(name)

    def platform(self, name: str | None, namespace: str | PluginNamespace = "srt") -> None:
        """Select a platform plugin by entry-point name (``None`` unsets: automatic selection)."""
        variable = get_namespace(namespace).platform_env
        self.unset(variable) if name is None else self.set(variable, name)

    def plugins(self, *names: str, namespace: str | PluginNamespace = "srt") -> None:
        """Allow only these general plugins; no names unsets the allowlist (all load)."""
        variable = get_namespace(namespace).plugins_env
        self.set(variable, ",".join(names)) if names else self.unset(variable)

    def strict(self, enabled: bool = True, namespace: str | PluginNamespace = "srt") -> None:
        """Turn strict mode on (plugin failures raise) or off."""
        variable = get_namespace(namespace).strict_env
        self.set(variable, "1") if enabled else self.unset(variable)
