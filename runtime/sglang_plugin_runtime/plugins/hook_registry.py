"""Hooks that change functions, methods and classes by dotted target, and undo cleanly.

Call-compatible with ``sglang.srt.plugins.hook_registry`` (SGLang 0.5.23): the same names,
signatures, defaults and error types, so plugin code moves between the two by swapping the
``sglang.srt`` prefix for ``sglang_plugin_runtime``. Where this module behaves better (lazy
application, stale-reference rebinding, exact undo, async, introspection) docs/hooks.md says how.

This module only needs the private ``_hooks`` package: importing it never loads the plugin
discovery code, never imports torch and never imports a target module.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from ._hooks import _engine
from ._hooks._errors import STRICT_ENV, HookApplyError, HookFailure
from ._hooks._types import HookSource, HookType, _current_plugin_source

if TYPE_CHECKING:
    from ._hooks._introspection import STATUSES, Conflict, HookReport, TargetReport

#: Report names, imported from ``_hooks._introspection`` on first use (module ``__getattr__``):
#: only ``describe()`` needs them, and their dataclasses cost a generated-code ``exec`` each.
_REPORT_NAMES = frozenset({"STATUSES", "Conflict", "HookReport", "TargetReport"})

__all__ = [
    "STATUSES",
    "STRICT_ENV",
    "Conflict",
    "HookApplyError",
    "HookFailure",
    "HookRegistry",
    "HookReport",
    "HookSource",
    "HookType",
    "TargetReport",
    "_current_plugin_source",
    "isolated_registry",
    "plugin_hook",
]

_H = TypeVar("_H", bound=Callable[..., object])


class HookRegistry:
    """The process-wide registry of hooks (all methods are classmethods, as in SGLang).

    Thread-safe: registration, application, undo and introspection share one lock.
    """

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

        ``source`` defaults to the plugin being loaded (``_current_plugin_source``). Hooks with a
        higher ``priority`` wrap those with a lower one; equal priorities nest in registration
        order, last registered outermost (SGLang's rule). If :meth:`apply_hooks` already ran in
        this process, the target is (re)built right away.

        Raises ``TypeError`` when a class is registered with a type other than REPLACE or the
        hook is not callable, ``ValueError`` for a malformed target.
        """
        _engine.register(target, hook, hook_type, source, priority)

    @classmethod
    def apply_hooks(cls, strict: bool | None = None) -> None:
        """Patch every target whose module is imported; watch the others' imports.

        Idempotent. Failures are logged and kept for :meth:`describe`; in strict mode
        (``strict=True`` or ``SGLANG_PLUGINS_STRICT=1``) they raise :class:`HookApplyError`.
        """
        _engine.apply(strict)

    @classmethod
    def reset(cls) -> None:
        """Undo every patch and rebinding exactly, stop watching imports, forget all hooks."""
        _engine.reset()

    @classmethod
    def discard_source(cls, source: HookSource) -> int:
        """Drop every hook registered by ``source`` (a plugin that failed half-way).

        Targets it had patched are rebuilt from their originals without its hooks, or restored
        when no hook is left. Returns how many registrations were dropped.
        """
        return _engine.discard_source(source)

    @classmethod
    def is_hook_applied(
        cls, target: str, hook: Callable[..., object], hook_type: HookType | None = None
    ) -> bool:
        """Whether ``hook`` (this very object; of ``hook_type`` when given) is applied on ``target`` now.

        ``False`` until the target is patched with it, after :meth:`reset`, and while the target is failed
        (until a retry succeeds). ``target`` may use either spelling (``pkg.mod.Class.m`` or ``pkg.mod:Class.m``).
        A hook registered after the target was patched is applied at once here (SGLang drops it), so this
        answers ``True`` for it once the rebuild succeeded.
        """
        return _engine.is_applied(target, hook, hook_type)

    @classmethod
    def describe(cls, target: str | None = None) -> list[TargetReport]:
        """Report each registered target (or only ``target``, in either spelling)."""
        return _engine.describe(target)


def plugin_hook(target: str, type: HookType = HookType.AFTER, *, priority: int = 0) -> Callable[[_H], _H]:  # noqa: A002
    """Decorator form of :meth:`HookRegistry.register`; returns the hook unchanged."""

    def decorator(hook: _H) -> _H:
        HookRegistry.register(target, hook, type, priority=priority)
        return hook

    return decorator


@contextlib.contextmanager
def isolated_registry() -> Iterator[type[HookRegistry]]:
    """Give the block an empty registry; on exit undo its patches and restore the previous one.

    Patches applied before the block stay in place during it and after it.
    """
    with _engine.isolated():
        yield HookRegistry


def __getattr__(name: str) -> Any:
    if name in _REPORT_NAMES:
        from ._hooks import _introspection

        value = getattr(_introspection, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
