"""Targets: parsing a target string, finding the attribute it names, and the kind of attribute it is.

Two spellings are accepted: ``pkg.mod.Class.method`` (dotted; the module is the longest prefix present in
``sys.modules``) and ``pkg.mod:Class.method`` (the module is explicit). Finding a target reads ``sys.modules`` and
``__dict__`` entries only: nothing is imported, no module-level ``__getattr__`` runs, and a module that
``importlib.util.LazyLoader`` has not executed yet counts as not imported (reading it would execute it).

A class attribute is read from ``__dict__`` so that a ``classmethod`` stays a ``classmethod`` and an inherited
method is found on its base without binding it; the wrapper goes back in the same kind of descriptor.
"""

from __future__ import annotations

import copy
import functools
import sys
import types
from typing import NamedTuple

#: No such attribute (as the value an attribute had before a patch: there is nothing to restore but a deletion).
MISSING = object()
_MODULE_GETATTRIBUTE = types.ModuleType.__getattribute__


class Resolution(NamedTuple):
    """Where a target lives now: ``owner.name`` holds ``raw`` (``owned``: in the owner's own ``__dict__``)."""

    key: str  # the canonical spelling, module:attr.path
    owner: object
    name: str
    raw: object
    owned: bool


class Unresolved(NamedTuple):
    """Not resolvable now; importing one of ``watch`` may change that (none: no import can, the attribute path does
    not exist in a module that is imported)."""

    reason: str
    watch: tuple[str, ...]


class Unwrapped(NamedTuple):
    """The callable in a raw attribute; ``kind``: "class", "function", "classmethod", "staticmethod", "property",
    "cached_property" or "nonbinding" (a callable class attribute that does not bind, e.g. a builtin)."""

    kind: str
    func: object
    raw: object


def parse_target(target: object) -> tuple[str | None, tuple[str, ...]]:
    """``(module, names after it)`` of a target string (``module`` is ``None`` for the dotted spelling); raise
    ``ValueError`` (``TypeError`` for a non-string) when it is malformed."""
    if not isinstance(target, str):
        raise TypeError(f"Hook target must be a string, got {type(target).__name__}: {target!r}")
    module, colon, attr = target.rpartition(":")
    parts = tuple(attr.split("."))
    names = (*module.split("."), *parts) if colon else parts
    if target.count(":") > 1 or not all(name.isidentifier() for name in names):
        raise ValueError(f"Invalid target path (expected pkg.module.attr or pkg.module:Attr.path): {target}")
    if not colon and len(parts) < 2:
        raise ValueError(f"Invalid target path (need at least module.attr): {target}")
    return module if colon else None, parts


def module_dict(obj: object) -> dict[str, object] | None:
    """A module's namespace, read without running code: ``None`` for anything else, and for a module whose class
    intercepts attribute access (``LazyLoader``'s, until the module has executed)."""
    kind = type(obj)
    if kind is types.ModuleType or (
        issubclass(kind, types.ModuleType) and kind.__getattribute__ is _MODULE_GETATTRIBUTE
    ):
        return obj.__dict__
    return None


def resolve(target: str) -> Resolution | Unresolved:
    """Locate ``target`` among the modules imported now."""
    module, parts = parse_target(target)
    # The module named before ':', else the longest prefix of the dotted path that is imported.
    splits = [(module, parts)] if module else [(".".join(parts[:i]), parts[i:]) for i in range(len(parts) - 1, 0, -1)]
    imported = [(name, rest) for name, rest in splits if sys.modules.get(name) is not None]
    if not imported:
        watch = tuple(name for name, _rest in splits)
        return Unresolved(f"module {watch[-1]!r} is not imported yet", watch)
    module_name, parts = imported[0]
    owner: object = sys.modules[module_name]
    owner_name = module_name
    for index, name in enumerate(parts):
        namespace = module_dict(owner)
        if namespace is None and isinstance(owner, types.ModuleType):
            return Unresolved(f"module {owner_name!r} is imported lazily and has not executed yet", (owner_name,))
        raw, owned = _lookup(owner, name, namespace)
        if raw is MISSING and namespace is not None:
            if (sub := sys.modules.get(f"{owner_name}.{name}")) is not None:
                raw, owned = sub, True
            elif "__path__" in namespace or getattr(namespace.get("__spec__"), "_initializing", False):
                # A package may gain the name when a submodule is imported; a module that is still executing
                # may define it further down.
                watch = tuple(f"{owner_name}.{'.'.join(parts[index:j])}" for j in range(index + 1, len(parts)))
                rest = ".".join(parts[index:])
                return Unresolved(f"{owner_name!r} has no attribute {rest!r} yet", watch or (owner_name,))
        if raw is MISSING:
            kind = "module" if namespace is not None else type(owner).__name__
            return Unresolved(f"{kind} {owner_name!r} has no attribute {name!r}", ())
        if index == len(parts) - 1:
            return Resolution(f"{module_name}:{'.'.join(parts)}", owner, name, raw, owned)
        owner = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
        owner_name = f"{owner_name}.{name}"
    raise AssertionError("unreachable: a target has at least one attribute")  # pragma: no cover


def _lookup(obj: object, name: str, namespace: dict[str, object] | None) -> tuple[object, bool]:
    """``(raw value, in obj's own __dict__)`` without running descriptors or ``__getattr__``; ``MISSING`` if absent."""
    if isinstance(obj, type):
        klass = next((k for k in obj.__mro__ if name in k.__dict__), None)
        return (MISSING, False) if klass is None else (klass.__dict__[name], klass is obj)
    if namespace is None and isinstance(own := getattr(obj, "__dict__", None), dict) and name in own:
        namespace = own
    if namespace is not None:
        return namespace.get(name, MISSING), True
    return getattr(obj, name, MISSING), False


def own_value(owner: object, name: str) -> object:
    """The raw value in ``owner.__dict__`` (descriptors not run), or :data:`MISSING`."""
    namespace = getattr(owner, "__dict__", None)
    if isinstance(namespace, (dict, types.MappingProxyType)):
        return namespace.get(name, MISSING)
    return getattr(owner, name, MISSING)


def unwrap(raw: object, owner: object) -> Unwrapped:
    """Classify ``raw``; ``TypeError`` for an attribute that cannot carry hooks."""
    if isinstance(raw, (classmethod, staticmethod)):
        return Unwrapped("classmethod" if isinstance(raw, classmethod) else "staticmethod", raw.__func__, raw)
    if isinstance(raw, (property, functools.cached_property)):
        getter = raw.fget if isinstance(raw, property) else raw.func
        if getter is None:
            raise TypeError("property has no getter to hook")
        return Unwrapped("property", getter, raw)
    if not callable(raw):
        raise TypeError(
            "no such attribute" if raw is MISSING else f"attribute is not callable (a {type(raw).__name__})"
        )
    # e.g. ``f = len`` in a class body stays unbound, so its wrapper must not bind either.
    binds = not isinstance(owner, type) or hasattr(type(raw), "__get__")
    return Unwrapped("class" if isinstance(raw, type) else "function" if binds else "nonbinding", raw, raw)


def rewrap(unwrapped: Unwrapped, wrapper: object) -> object:
    """``wrapper`` in the kind of attribute the original came in."""
    kind, raw = unwrapped.kind, unwrapped.raw
    if kind in ("classmethod", "staticmethod", "nonbinding"):
        return (classmethod if kind == "classmethod" else staticmethod)(wrapper)  # type: ignore[arg-type]
    if isinstance(raw, property):
        return raw.getter(wrapper)  # type: ignore[arg-type]  # keeps fset, fdel, doc and a subclass's type
    if isinstance(raw, functools.cached_property):
        raw = copy.copy(raw)
        raw.func = wrapper  # type: ignore[assignment]
    return raw if kind == "property" else wrapper
