"""Hooks that change functions, methods and classes by dotted target, and undo cleanly.

Call-compatible with ``sglang.srt.plugins.hook_registry`` (SGLang 0.5.23 and main): the same names,
signatures, defaults and error types, so plugin code moves between the two by swapping the
``sglang.srt`` prefix for ``sglang_plugin_runtime``. Where this module behaves better (lazy
application, stale-reference rebinding, exact undo, async, introspection) docs/hooks.md says how.

Importing this module never loads the plugin discovery code, never imports torch and never imports a
target module; the report classes (``TargetReport``, ``HookReport``, ``Conflict``) load when first
used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from .. import _plugin_code
from .._plugin_code import HookSource
from ._hooks._registry import Registry, active_registry, isolated_registry
from ._hooks._types import (
    HookApplyError,
    HookFailure,
    HookStatus,
    HookType,
    Target,
)

if TYPE_CHECKING:
    from ._hooks._describe import (
        Conflict,
        HookReport,
        ResolutionHookReport,
        TargetReport,
        describe_resolution_hooks,
    )

#: The plugin whose code runs now (SGLang's name): plugin loaders set it, ``register()`` reads it.
_current_plugin_source = _plugin_code.plugin_source


# Registering hooks, applying them (strict mode: HookApplyError), and the reports (imported on first
# use).

__all__ = [
    "STATUSES",
    "Conflict",
    "HookApplyError",
    "HookFailure",
    "HookRegistry",
    "HookReport",
    "HookSource",
    "HookStatus",
    "HookType",
    "Registry",
    "ResolutionHookReport",
    "Target",
    "TargetReport",
    "describe_resolution_hooks",
    "isolated_registry",
    "plugin_hook",
]

#: The statuses a target can have (the values of :class:`HookStatus`).
STATUSES = tuple(status.value for status in HookStatus)

_H = TypeVar("_H", bound=Callable[..., object])


class _SGLangStateView:
    """A class attribute with the shape of one of SGLang's private ``HookRegistry`` attributes,
    computed from the active registry when read, by ``_describe``'s function ``view`` (loaded
    then): real plugins read them (orbitkv checks ``_patched`` after applying, qsa-hisparse's tests
    read ``_hooks``). A snapshot: changing it changes no hook (item assignment and ``add``
    raise)."""

    def __init__(self, view: str) -> None:
        self.view = view

    def __get__(self, instance: object, owner: type) -> object:
        from ._hooks import _describe

        registry = active_registry()
        with registry.lock:
            return getattr(_describe, self.view)(registry.targets.values())


class HookRegistry:
    """The process-wide hook registry, with SGLang's classmethod API.

    Every method acts on the active :class:`Registry`: the process's default one, or the fresh one
    :func:`isolated_registry` makes active for a block.
    """

    # SGLang's private state, as read-only views (see _SGLangStateView).
    _hooks = _SGLangStateView("sglang_hooks")
    _patched = _SGLangStateView("sglang_patched")

    @classmethod
    def register(
        cls,
        target: str,
        hook: Callable[..., object],
        hook_type: HookType = HookType.AFTER,
        *,
        source: HookSource | None = None,
        priority: int = 0,
    ) -> None:
        """Register ``hook`` on ``target`` (``pkg.mod.func``, ``pkg.mod.Class.method``,
        ``pkg.mod.Class`` or ``pkg.mod:Class.method``).

        ``source`` defaults to the plugin being loaded (``_current_plugin_source``, also in a
        thread its code started). Hooks with a higher ``priority`` wrap those with a lower one;
        equal priorities nest in registration order, last registered outermost (SGLang's rule).
        If :meth:`apply_hooks` already ran in this process, the target is (re)built right away.

        Raises ``TypeError`` when a class is registered with a type other than REPLACE or the
        hook is not callable, ``ValueError`` for a malformed target.
        """
        active_registry().register(target, hook, hook_type, source=source, priority=priority)

    @classmethod
    def apply_hooks(cls, strict: bool = False) -> None:
        """Patch every target whose module is imported; watch the others' imports.

        Idempotent. Failures are logged and kept for :meth:`describe`; with ``strict=True`` they
        raise :class:`HookApplyError`, also when a target this call leaves pending fails as its
        module is imported. ``load_plugins()`` passes its namespace's ``SGLANG_PLUGINS_STRICT``; a
        hook registered after an apply is applied at once, its failure logged (the next strict
        call raises).
        """
        active_registry().apply_hooks(strict)

    @classmethod
    def reset(cls) -> None:
        """Undo every patch and rebinding exactly, stop watching imports, forget all hooks."""
        active_registry().reset()

    @classmethod
    def discard_source(cls, source: HookSource) -> int:
        """Drop every hook registered by ``source`` (a plugin that failed half-way).

        Targets it had patched are rebuilt from their originals without its hooks, or restored
        when no hook is left. Returns how many registrations were dropped.
        """
        return active_registry().discard_source(source)

    @classmethod
    def describe(cls, target: str | None = None) -> list[TargetReport]:
        """Report each registered target (or only ``target``, in either spelling)."""
        return active_registry().describe(target)

    @classmethod
    def is_hook_applied(
        cls,
        target: str,
        hook: Callable[..., object],
        hook_type: HookType | None = None,
    ) -> bool:
        """Whether ``hook`` (this very object; of ``hook_type`` when given) is applied on
        ``target`` now.

        ``False`` until the target is patched with it, after :meth:`reset`, and while the target
        is failed (until a retry succeeds). ``target`` may use either spelling
        (``pkg.mod.Class.m`` or ``pkg.mod:Class.m``). A hook registered after the target was
        patched is applied at once here (SGLang drops it), so this answers ``True`` for it once the
        rebuild succeeded.
        """
        return active_registry().is_hook_applied(target, hook, hook_type)


def plugin_hook(
    target: str,
    type: HookType = HookType.AFTER,
    *,
    priority: int = 0,
) -> Callable[[_H], _H]:
    """Decorator form of :meth:`HookRegistry.register`; returns the hook unchanged."""

    def decorator(hook: _H) -> _H:
        active_registry().register(target, hook, type, priority=priority)
        return hook

    return decorator


def __getattr__(name: str) -> object:
    # The names in __all__ not defined here, the reports, are imported on first use: a serving
    # process never needs them.
    if name in __all__:
        from ._hooks import _describe

        return getattr(_describe, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
