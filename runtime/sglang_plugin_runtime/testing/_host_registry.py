"""A plugin package's hook targets in its tests: reached through their target strings, and the hook
registry the package builds on (the runtime's, or released SGLang's), isolated for one test.

A generated package registers with whichever ``HookRegistry`` its ``host.py`` chose. The runtime's
``reset()`` undoes every patch; SGLang 0.5.23's forgets the hooks and leaves its patches in place
(the original stays only in the wrapper). :func:`isolated_hooks` gives both the runtime's behaviour
for one test.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import types
from collections.abc import Iterator
from typing import Any

from .._namespace import import_if_module

_MISSING: Any = object()


def _import_owner(target: str) -> tuple[Any, list[str]]:
    """The module ``target`` starts in (imported; the longest importable prefix of a dotted target)
    and the names after it."""
    from ..plugins.hook_registry import Target

    for module, path in Target.parse(target).splits():
        if (owner := import_if_module(module)) is not None:
            return owner, path
    raise ModuleNotFoundError(
        f"no module of the hook target {target!r} can be imported", name=target.split(".")[0]
    )


def resolve_target(target: str) -> Any:
    """What ``target`` names now (the hooked object once its hooks are applied), importing its
    module."""
    module, path = _import_owner(target)
    return functools.reduce(getattr, path, module)


def target_owner(target: str) -> Any:
    """What holds the object ``target`` names: its class for a method, its module for a function or
    class."""
    module, path = _import_owner(target)
    return functools.reduce(getattr, path[:-1], module)


class UndoingRegistry:
    """``register``, ``apply_hooks`` and ``reset`` of a registry whose ``reset()`` keeps its patches
    (SGLang 0.5.23's), with a ``reset()`` that puts back every binding ``apply_hooks()`` changed:
    each target's attribute, and every module attribute that held the original (SGLang rebinds those
    too)."""

    def __init__(self, registry: Any) -> None:
        self.registry = registry
        self._saved: dict[tuple[int, str], tuple[Any, str, Any]] = {}

    def register(self, *args: Any, **kwargs: Any) -> Any:
        return self.registry.register(*args, **kwargs)

    def apply_hooks(self) -> None:
        for target in list(getattr(self.registry, "_hooks", {})):
            try:
                owner = target_owner(target)
            except (ImportError, AttributeError):
                continue  # SGLang's apply_hooks() reports it
            name = target.replace(":", ".").rpartition(".")[2]
            original = vars(owner).get(name, _MISSING)
            self._save(owner, name)
            if original is not _MISSING:
                for module in list(sys.modules.values()):
                    if isinstance(module, types.ModuleType):
                        for attribute, value in list(vars(module).items()):
                            if value is original:
                                self._save(module, attribute)
        self.registry.apply_hooks()

    def _save(self, owner: Any, name: str) -> None:
        self._saved.setdefault((id(owner), name), (owner, name, vars(owner).get(name, _MISSING)))

    def reset(self) -> None:
        self.registry.reset()
        for owner, name, value in reversed(list(self._saved.values())):
            if value is _MISSING:
                with contextlib.suppress(AttributeError):
                    delattr(owner, name)
            elif vars(owner).get(name, _MISSING) is not value:
                setattr(owner, name, value)
        self._saved.clear()


@contextlib.contextmanager
def isolated_hooks(registry: Any = None) -> Iterator[Any]:
    """The hook registry ``registry`` (the ``HookRegistry`` class a package registers with; default:
    the runtime's) with no hooks inside; every patch undone on exit. Yields what to call
    ``register()``, ``apply_hooks()`` and ``reset()`` on."""
    from ..plugins import hook_registry as runtime

    if registry is None or registry is runtime.HookRegistry:
        with runtime.isolated_registry() as isolated:
            yield isolated
        return
    undoing = UndoingRegistry(registry)
    registry.reset()
    try:
        yield undoing
    finally:
        undoing.reset()
