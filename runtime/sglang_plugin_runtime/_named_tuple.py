"""``NamedTuple`` class syntax without ``typing``'s per-field ``compile``, for the start-up path.

Under ``from __future__ import annotations`` every field annotation is a string, and
``typing.NamedTuple`` turns each one into a ``ForwardRef``, which compiles the string: about half the
cost of defining the class. Ten such classes are defined while a serving process resolves its
platform and loads its plugins, so this module builds the same class ``typing.NamedTuple`` builds
(``collections.namedtuple`` plus the class body's methods, properties and docstring: same
``_fields``, defaults, MRO ``(cls, tuple, object)``, pickling and repr) and keeps the annotations as
the strings the module wrote. ``typing.get_type_hints`` resolves those exactly as it resolves
``ForwardRef`` objects.

Modules import it as ``NamedTuple`` only at run time; type checkers see ``typing.NamedTuple``::

    if TYPE_CHECKING:
        from typing import NamedTuple
    else:
        from ._named_tuple import NamedTuple
"""

import collections
import typing

__all__ = ["NamedTuple"]

# The checks and the copy loop follow ``typing.NamedTupleMeta`` (Python 3.10-3.13).
_PROHIBITED = frozenset(
    {"__new__", "__init__", "__slots__", "__getnewargs__", "_fields", "_field_defaults", "_make", "_replace",
     "_asdict", "_source"}
)
_SPECIAL = frozenset({"__module__", "__name__", "__annotations__"})


class _NamedTupleMeta(type):
    def __new__(cls, typename: str, bases: tuple, ns: dict) -> type:
        if bases != (NamedTuple,):
            raise TypeError("can only inherit from a NamedTuple type")
        types = ns.get("__annotations__", {})
        default_names = []
        for field_name in types:
            if field_name in ns:
                default_names.append(field_name)
            elif default_names:
                raise TypeError(
                    f"Non-default namedtuple field {field_name} cannot follow default field"
                    f"{'s' if len(default_names) > 1 else ''} {', '.join(default_names)}"
                )
        nm_tpl = collections.namedtuple(
            typename, list(types), defaults=[ns[n] for n in default_names], module=ns["__module__"]
        )
        nm_tpl.__annotations__ = nm_tpl.__new__.__annotations__ = dict(types)
        for key, value in ns.items():
            if key in _PROHIBITED:
                raise AttributeError("Cannot overwrite NamedTuple attribute " + key)
            if key in _SPECIAL:
                continue
            if key not in nm_tpl._fields:
                setattr(nm_tpl, key, value)
            set_name = getattr(type(value), "__set_name__", None)
            if set_name is not None:  # as typing does from Python 3.13 on
                set_name(value, nm_tpl, key)
        # What ``class X(typing.NamedTuple)`` records, so ``types.get_original_bases`` agrees.
        nm_tpl.__orig_bases__ = (typing.NamedTuple,)
        return nm_tpl


#: The base to write in place of ``typing.NamedTuple``; only its subclasses' definitions use it.
NamedTuple = type.__new__(_NamedTupleMeta, "NamedTuple", (), {})
