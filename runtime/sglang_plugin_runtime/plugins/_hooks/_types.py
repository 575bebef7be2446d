"""Hook types, hook sources, target statuses and the context variable that attributes registrations to plugins."""

from __future__ import annotations

import contextvars
import enum
from typing import NamedTuple

_PUBLIC_MODULE = "sglang_plugin_runtime.plugins.hook_registry"


class HookSource(NamedTuple):
    """Which plugin registered a hook, so diagnostics can name the culprit."""

    plugin_name: str
    dist_name: str | None


class HookType(enum.Enum):
    """How a hook is combined with its target (values match SGLang's)."""

    BEFORE = "before"
    AFTER = "after"
    AROUND = "around"
    REPLACE = "replace"


class HookStatus(str, enum.Enum):
    """Where a target stands; the values are part of the CLI's JSON schema."""

    REGISTERED = "registered"
    """Hooks registered, ``apply_hooks()`` not called since."""
    APPLIED = "applied"
    PENDING = "pending"
    """Waiting for its module to be imported (patched right after it is)."""
    FAILED = "failed"

    def __str__(self) -> str:
        return self.value


# The classes are documented under the public module; pickles and reprs should say so.
HookSource.__module__ = _PUBLIC_MODULE
HookType.__module__ = _PUBLIC_MODULE
HookStatus.__module__ = _PUBLIC_MODULE

# Set by the plugin loader while a plugin's module is imported and while its function runs;
# ``register()`` reads it when no explicit source is given.
_current_plugin_source: contextvars.ContextVar[HookSource | None] = contextvars.ContextVar(
    "_current_plugin_source", default=None
)


def format_source(source: HookSource | None) -> str:
    """Render a source for log lines and reports (SGLang's wording)."""
    if source is None:
        return "unknown"
    if source.dist_name:
        return f"plugin={source.plugin_name}, dist={source.dist_name}"
    return f"plugin={source.plugin_name}"


def describe_callable(obj: object) -> str:
    """A stable, human-readable name for a hook: ``module.qualname`` when available."""
    qualname = getattr(obj, "__qualname__", None)
    if not isinstance(qualname, str):
        return repr(obj)
    module = getattr(obj, "__module__", None)
    return f"{module}.{qualname}" if isinstance(module, str) and module else qualname
