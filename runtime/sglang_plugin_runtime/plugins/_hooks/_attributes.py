"""Descriptors: which callable a raw attribute holds, and how to put a wrapped one back.

A class attribute is read from ``__dict__`` (not ``getattr``) so that a ``classmethod`` stays a
``classmethod`` and an inherited method is found on the base without binding it. After the
callable is wrapped it is re-dressed in the same kind of descriptor.
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Unwrapped:
    """The callable inside a raw attribute, and what kind of attribute it was."""

    kind: str
    """One of "class", "function", "classmethod", "staticmethod", "property", "cached_property",
    "nonbinding" (a callable class attribute that does not bind, e.g. a builtin)."""
    func: object
    raw: object


def unwrap_attribute(raw: object, owner: object) -> Unwrapped:
    """Classify ``raw``; raise ``TypeError`` for attributes that cannot carry hooks."""
    if isinstance(raw, type):
        return Unwrapped("class", raw, raw)
    if isinstance(raw, classmethod):
        return Unwrapped("classmethod", raw.__func__, raw)
    if isinstance(raw, staticmethod):
        return Unwrapped("staticmethod", raw.__func__, raw)
    if isinstance(raw, property):
        if raw.fget is None:
            raise TypeError("property has no getter to hook")
        return Unwrapped("property", raw.fget, raw)
    if isinstance(raw, functools.cached_property):
        return Unwrapped("cached_property", raw.func, raw)
    if not callable(raw):
        raise TypeError(f"attribute is not callable (it is a {type(raw).__name__})")
    if isinstance(owner, type) and not hasattr(type(raw), "__get__"):
        # e.g. ``f = len`` in a class body: stays unbound, so the wrapper must not bind either.
        return Unwrapped("nonbinding", raw, raw)
    return Unwrapped("function", raw, raw)


def rewrap_attribute(unwrapped: Unwrapped, wrapper: object) -> object:
    """Put ``wrapper`` back into the descriptor kind the original attribute had."""
    kind = unwrapped.kind
    if kind in ("function", "class"):
        return wrapper
    if kind == "classmethod":
        return classmethod(wrapper)  # type: ignore[arg-type]
    if kind in ("staticmethod", "nonbinding"):
        return staticmethod(wrapper)  # type: ignore[arg-type]
    if kind == "property":
        # ``getter`` copies fset, fdel and doc and keeps a property subclass's type.
        assert isinstance(unwrapped.raw, property)
        return unwrapped.raw.getter(wrapper)  # type: ignore[arg-type]
    if kind == "cached_property":
        new = copy.copy(unwrapped.raw)
        new.func = wrapper  # type: ignore[attr-defined]
        return new
    raise AssertionError(f"unknown attribute kind {kind!r}")  # pragma: no cover
