"""Hook types, hook sources and the context variable that attributes registrations to plugins."""

# No ``from __future__ import annotations`` here: typing.NamedTuple would compile a ForwardRef for every
# string annotation of its fields, a cost paid by every process at start-up.
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


# Both classes are documented under the public module; pickles and reprs should say so.
HookSource.__module__ = _PUBLIC_MODULE
HookType.__module__ = _PUBLIC_MODULE

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
