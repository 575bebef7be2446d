"""Stale references: module globals that still hold an original after it was patched.

``from x import f`` copies the reference, so patching ``x.f`` alone leaves the importer calling the
original. After a batch of targets is applied, one walk over ``sys.modules`` rebinds, for every
target of the batch at once, the globals whose *name equals the target's attribute name* and whose
value *is* the replaced object. A hook module's ``from x import f as _orig`` therefore keeps the
original, which is what a REPLACE hook delegating to ``_orig`` needs.

The walk costs one dict lookup per (module, distinct attribute name), not one pass over every
global of every module per target. It is skipped for a target proven to have no copies: when the
attribute is resolved, its value's reference count shows that its owner's namespace is the only
place that holds it (see :func:`references`), so no module global can hold it either.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterable


_getrefcount = getattr(sys, "getrefcount", None)


def references(value: object) -> int:
    """Strong references to ``value``, for a caller that holds it in one local variable.

    Compare the result with :data:`SOLE_REFERENCE`: equal means the caller's local and one namespace
    entry are all there is. The count is relative to the caller's own references, so it is calibrated
    once, on this interpreter, with a value in exactly that position (see ``_calibrate``).
    """
    return _getrefcount(value) if _getrefcount is not None else -1


def _probe() -> None:
    """A module-level function that only this module's namespace holds (see ``_calibrate``)."""


def _calibrate() -> int:
    """:func:`references` of a value held by one namespace entry and the caller's local, on this interpreter.

    The proof also needs the count to grow by one per extra holder and to work alike for a module-level
    function and one made at run time (interpreters with deferred reference counting may differ); if any
    of that fails, or there is no ``sys.getrefcount``, nothing is ever proven unshared.
    """
    value = globals()["_probe"]
    sole = references(value)
    second_holder = {"value": value}
    shared = references(value)
    del second_holder
    made = {"value": lambda: None}
    fresh = made["value"]
    consistent = sole >= 2 and shared == sole + 1 and references(fresh) == sole
    return sole if consistent else -2


#: :func:`references` of a value held by one namespace entry and the caller's local, and nothing else.
SOLE_REFERENCE = _calibrate()


def is_unshared(count: int) -> bool:
    """Whether a :func:`references` count proves the value is held by its namespace entry alone.

    Only an exact match proves it: a lower count than calibrated means the counting is not what the
    calibration saw, and the walk stays.
    """
    return count == SOLE_REFERENCE


class Rebinding:
    """One module global the registry rebound."""

    __slots__ = ("namespace", "module_name", "name", "restore", "installed")

    def __init__(
        self, namespace: dict[str, object], module_name: str, name: str, restore: object, installed: object
    ) -> None:
        self.namespace = namespace
        self.module_name = module_name
        self.name = name
        self.restore = restore
        self.installed = installed

    def undo(self) -> bool:
        """Put the original back if the global still holds our value."""
        if self.namespace.get(self.name, None) is self.installed:
            self.namespace[self.name] = self.restore
            return True
        return False


class Replacement:
    """For one target: globals named ``name`` holding one of ``stale`` become ``new``."""

    __slots__ = ("key", "name", "stale", "new", "restore")

    def __init__(self, key: str, name: str, stale: tuple[object, ...], new: object, restore: object) -> None:
        self.key = key
        self.name = name
        self.stale = stale
        self.new = new
        self.restore = restore


def rebind(
    replacements: Iterable[Replacement],
    modules: Iterable[object] | None = None,
) -> dict[str, list[Rebinding]]:
    """Walk ``modules`` (default: every module in ``sys.modules``) once; return records per key."""
    by_name: dict[str, dict[int, tuple[object, Replacement]]] = {}
    for rep in replacements:
        slot = by_name.setdefault(rep.name, {})
        for old in rep.stale:
            if old is not rep.new:
                slot[id(old)] = (old, rep)
    found: dict[str, list[Rebinding]] = {}
    if not by_name:
        return found
    names = frozenset(by_name)
    if modules is None:
        modules = list(sys.modules.values())
    module_type = types.ModuleType  # a local: this loop runs once per imported module
    for module in modules:
        if not isinstance(module, module_type):
            continue
        namespace = module.__dict__
        # A C-level intersection: one hash probe per target name, no Python loop per module.
        hits = namespace.keys() & names
        if not hits:
            continue
        for name in hits:
            value = namespace[name]
            hit = by_name[name].get(id(value))
            if hit is None or hit[0] is not value:
                continue
            rep = hit[1]
            namespace[name] = rep.new
            found.setdefault(rep.key, []).append(
                Rebinding(namespace, getattr(module, "__name__", "?"), name, rep.restore, rep.new)
            )
    return found
