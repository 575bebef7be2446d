"""The platform contract, and the one rule a platform class must follow: accept the host's real calls.

Contract classes (``DeviceMixin``, ``SRTPlatform``, ``MMPlatform``) mark every public method with :func:`active`
or :func:`reserved`; their public annotated class attributes are contract attributes (active).

Every other platform class is checked when it is defined, against how the hosts actually call each member: the
interface table, ``interface_table.jsonl`` beside this module, one row per public name of SGLang's platform classes
(``tests_sglang/test_interface_table.py`` writes it from the SGLang wheel and fails when it drifts). It is read only
when a platform subclass is defined. A class that SGLang would run is never refused:

- ``TypeError`` only for an override that cannot accept a call the host makes (wrong arity, a keyword it lacks,
  an instance method where the host calls the class, data where the host calls a method);
- a WARNING with "did you mean" for a public name that is one or two keystrokes from a contract name and is no name
  of any SGLang version: a likely misspelling that the host would silently never call;
- nothing for anything else: a vendor's own public API, names of other SGLang versions, retired hooks the host still
  serves. ``_describe.find_override_problems`` says what each of those means (``doctor`` lists them), and the
  testing kit's conformance check fails on a misspelling, where the plugin's author can act on it.

A vendor device mixin (a ``DeviceMixin`` subclass that is no SRT or diffusion platform) is never refused: no host
calls it on its own. It is checked as part of each platform that uses it.
"""

from __future__ import annotations

import difflib
import inspect
import json
import logging
import weakref
from collections.abc import Callable, Collection
from functools import cache, cached_property
from importlib.resources import files
from types import FunctionType
from typing import Any, Literal, NamedTuple, TypeVar, overload

logger = logging.getLogger(__name__)

Status = Literal["active", "reserved"]
MemberKind = Literal["method", "classmethod", "staticmethod", "property", "attribute"]
ErrorKind = Literal["signature", "binding"]

_F = TypeVar("_F", bound=Callable[..., Any])
_MARK = "__sglang_contract__"
# The hosts of each contract class, by the interface table's names; the root ``DeviceMixin`` alone has none.
_HOSTS: dict[str, tuple[str, ...]] = {"SRTPlatform": ("srt",), "MMPlatform": ("diffusion",)}
_OWN_MEMBERS: dict[type, dict[str, Mark]] = {}
#: The names already warned about, per class that defines them: one WARNING per misspelling.
_WARNED: weakref.WeakKeyDictionary[type, set[str]] = weakref.WeakKeyDictionary()


class Mark(NamedTuple):
    """What ``@active`` / ``@reserved`` say of a contract member; ``required``: the base fails fast."""

    status: Status
    required: bool


# --------------------------------------------------------------------------------------
# Markers and contract classes
# --------------------------------------------------------------------------------------


def underlying(raw: Any) -> Any:
    """The function behind a class-``__dict__`` entry (a classmethod's, a property's getter, ...)."""
    if isinstance(raw, property):
        return raw.fget
    if isinstance(raw, cached_property):
        return raw.func
    return raw.__func__ if isinstance(raw, (classmethod, staticmethod)) else raw


def _marker(status: Status, required: bool) -> Callable[[_F], _F]:
    def mark(func: _F) -> _F:
        setattr(underlying(func), _MARK, Mark(status, required))
        return func

    return mark


@overload
def active(func: _F, /) -> _F: ...
@overload
def active(*, required: bool = False) -> Callable[[_F], _F]: ...
def active(func: _F | None = None, /, *, required: bool = False) -> _F | Callable[[_F], _F]:
    """Mark a contract member that hosts call today through ``current_platform`` (returns it unchanged)."""
    mark = _marker("active", required)
    return mark if func is None else mark(func)


@overload
def reserved(func: _F, /) -> _F: ...
@overload
def reserved(*, required: bool = False) -> Callable[[_F], _F]: ...
def reserved(func: _F | None = None, /, *, required: bool = False) -> _F | Callable[[_F], _F]:
    """Mark a contract member that is planned: hosts do not call it yet (returns it unchanged)."""
    mark = _marker("reserved", required)
    return mark if func is None else mark(func)


def not_implemented(obj: object, method: str) -> NotImplementedError:
    """The fail-fast error of a required method, naming the concrete class."""
    cls = obj if isinstance(obj, type) else type(obj)
    return NotImplementedError(f"{cls.__name__}.{method}() is not implemented: override it in your platform class")


def register_contract_class(cls: type) -> None:
    """Record ``cls`` as a contract class: its annotated public attributes and its marked public methods.

    An unmarked public method is refused. (That no contract class redefines another's name, which would shadow a
    vendor mixin's implementation, is checked by the tests.)
    """
    members = {name: Mark("active", False) for name in inspect.get_annotations(cls) if not name.startswith("_")}
    unmarked = []
    for name, raw in cls.__dict__.items():
        mark = getattr(underlying(raw), _MARK, None)
        if name.startswith("_") or name in members:
            continue
        if mark is None:
            unmarked.append(f"{cls.__name__}.{name} has no @active/@reserved marker")
        else:
            members[name] = mark
    if unmarked:
        raise TypeError("invalid contract class:\n  - " + "\n  - ".join(unmarked))
    _OWN_MEMBERS[cls] = members


def is_contract_class(cls: type) -> bool:
    """Whether ``cls`` declares part of the contract (rather than implementing it)."""
    return cls in _OWN_MEMBERS


def contract_classes(cls: type) -> list[type]:
    """The contract classes in ``cls``'s MRO, most derived first."""
    return [klass for klass in cls.__mro__ if klass in _OWN_MEMBERS]


def own_members(cls: type) -> dict[str, Mark]:
    """The members contract class ``cls`` declares itself, in declaration order."""
    return _OWN_MEMBERS[cls]


def contract_members(cls: type) -> dict[str, Mark]:
    """Every contract member visible to ``cls``: the union over its contract bases, base-most first."""
    return {name: mark for klass in reversed(contract_classes(cls)) for name, mark in _OWN_MEMBERS[klass].items()}


def hosts_of(cls: type) -> tuple[str, ...]:
    """The hosts that call ``cls``: ``("srt",)`` for an SRT platform, ``("diffusion",)`` for a diffusion one."""
    return tuple(host for klass in contract_classes(cls) for host in _HOSTS.get(klass.__name__, ()))


def checked_classes(cls: type, *, whole_mro: bool) -> list[type]:
    """The classes whose names are checked for ``cls``: with ``whole_mro`` every non-contract class in its MRO;
    without (at definition), ``cls`` and its bases that are no platform (platform bases were checked already)."""
    if not contract_classes(cls):
        return []
    mro = [klass for klass in cls.__mro__ if klass is not object and klass not in _OWN_MEMBERS]
    return [klass for klass in mro if klass is cls or whole_mro or not hosts_of(klass)]


# --------------------------------------------------------------------------------------
# The interface table
# --------------------------------------------------------------------------------------


@cache
def interface_rows() -> tuple[dict[str, Any], ...]:
    """Every row of the interface table: a name of an SGLang platform class (with ``host``), or of another version."""
    text = files(__package__).joinpath("interface_table.jsonl").read_text(encoding="utf-8")
    return tuple(json.loads(line) for line in text.splitlines())


@cache
def _index() -> dict[tuple[str, str], dict[str, Any]]:
    return {(row.get("host", ""), row["name"]): row for row in interface_rows()}


def interface_row(name: str, host: str) -> dict[str, Any] | None:
    """The row of ``name`` for ``host`` (``""``: names of other SGLang versions), or ``None``."""
    return _index().get((host, name))


def render_call(call: dict[str, Any], name: str) -> str:
    """A host call as code, e.g. ``platform.get_kv_pool_cls(kind=...)`` or ``PlatformClass.name``."""
    receiver = "PlatformClass" if call.get("on_class") else "platform"
    parts = ["<arg>"] * call.get("args", 0) + [f"{k}=..." for k in call.get("kwargs", ())]
    return f"{receiver}.{name}" if call.get("read") else f"{receiver}.{name}({', '.join(parts)})"


# --------------------------------------------------------------------------------------
# Can an override accept the host's call? Is a name a likely misspelling?
# --------------------------------------------------------------------------------------


def kind_of(raw: Any) -> MemberKind:
    """How a class-``__dict__`` entry binds when read from an instance."""
    if isinstance(raw, (staticmethod, classmethod)):
        return "classmethod" if isinstance(raw, classmethod) else "staticmethod"
    if isinstance(raw, (property, cached_property)):
        return "property"
    if isinstance(raw, type) or not callable(raw):
        return "attribute"
    # A callable object without __get__ is not bound.
    return "method" if isinstance(raw, FunctionType) or hasattr(type(raw), "__get__") else "staticmethod"


def bound_signature(kind: str, func: Any, *, on_class: bool) -> inspect.Signature | None:
    """The signature a caller sees: ``self``/``cls`` dropped where the descriptor binds it; ``None`` if unknown."""
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return None
    params = list(signature.parameters.values())
    if kind == "classmethod" or (kind == "method" and not on_class):
        if params and params[0].kind in (params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD):
            return signature.replace(parameters=params[1:])
        if not (params and params[0].kind is params[0].VAR_POSITIONAL):
            return signature.replace(parameters=[])  # nothing can take self: any call fails below
    return signature


def _call_problem(raw: Any, call: dict[str, Any], name: str) -> tuple[ErrorKind, str] | None:
    """Why ``raw`` (a class-``__dict__`` entry) cannot serve ``call``, or ``None`` when it can."""
    kind, shown, on_class = kind_of(raw), render_call(call, name), bool(call.get("on_class"))
    if call.get("read"):
        if kind in ("method", "classmethod", "staticmethod"):
            return "binding", f"the host reads it as data ({shown}); this defines a {kind}"
        if kind == "property" and on_class:
            return "binding", f"the runtime reads it on the class ({shown}), where a property is no value"
        return None
    if kind in ("attribute", "property"):
        what = "defines a property" if kind == "property" else f"sets it to a non-callable {type(raw).__name__}"
        return "binding", f"the host calls it ({shown}); this {what}"
    signature = bound_signature(kind, underlying(raw), on_class=on_class)
    try:
        if signature is not None:
            signature.bind(*[None] * call.get("args", 0), **dict.fromkeys(call.get("kwargs", ())))
    except TypeError as exc:
        if kind == "method" and on_class:
            return "binding", f"the host calls it on the class ({shown}); this defines an instance method"
        assert signature is not None
        bare = [p.replace(annotation=p.empty) for p in signature.parameters.values()]
        shape = signature.replace(parameters=bare, return_annotation=signature.empty)
        return "signature", f"{name}{shape} cannot accept the host's call {shown}: {exc}"
    return None


def host_call_problem(raw: Any, name: str, hosts: tuple[str, ...]) -> tuple[ErrorKind, str] | None:
    """``("signature" | "binding", why)`` when ``raw``, defined as ``name``, cannot serve a call ``hosts`` make."""
    for row in (row for host in hosts if (row := interface_row(name, host)) is not None):
        for call in row.get("calls", ()):
            found = _call_problem(raw, call, name)
            if found is not None:
                declared = f"; SGLang declares {name}{row['signature']}" if row["signature"] else ""
                return found[0], f"{found[1]} (called from {call['site']}){declared}"
    return None


def declared_by(name: str) -> str:
    """Who declares ``name``: another SGLang version, a contract class, SGLang's class in the table; ``""``: no one."""
    owners = [klass.__name__ for klass, members in _OWN_MEMBERS.items() if name in members]
    owners = owners or [row.get("owner", "") for row in interface_rows() if row["name"] == name]
    return str((interface_row(name, "") or {}).get("origin") or " and ".join(dict.fromkeys(owners)))


def _edit_distance(a: str, b: str) -> int:
    """Optimal string alignment distance (insertions, deletions, substitutions, adjacent swaps)."""
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], previous2[j - 2] + 1)
        previous2, previous = previous, current
    return previous[-1]


def near_miss(name: str, candidates: Collection[str]) -> str | None:
    """The contract name ``name`` is most likely a misspelling of, or ``None``.

    A near miss is at most two edits away and at least 85% similar (``difflib``): close enough for ``synchronise``
    or ``get_devce_name``, far enough for a vendor's ``vendor_name`` or ``get_device_count``.
    """
    close = difflib.get_close_matches(name, list(candidates), n=3, cutoff=0.85)
    return next((c for c in close if _edit_distance(name, c) <= 2), None)


def misspelling(name: str, contract: Collection[str]) -> str | None:
    """Why public name ``name`` is likely a misspelling of a ``contract`` name (it is no known name), or ``None``."""
    guess = None if declared_by(name) else near_miss(name, contract)
    if guess is None:
        return None
    return (
        f"not a name SGLang calls; did you mean {guess!r}? (a vendor helper that is no typo can start with an "
        f"underscore: '_{name}')"
    )


def enforce(cls: type) -> None:
    """Refuse ``cls`` when its host cannot call it; warn once per likely misspelling."""
    contract, hosts = contract_members(cls), hosts_of(cls)
    errors: list[str] = []
    typos: list[tuple[type, str, str]] = []
    for klass in checked_classes(cls, whole_mro=False):
        for name, raw in ((n, r) for n, r in klass.__dict__.items() if not n.startswith("_")):
            found = host_call_problem(raw, name, hosts)
            if found is not None:
                errors.append(f"\n  - {klass.__name__}.{name}: {found[1]}")
            typo = None if name in contract else misspelling(name, contract)
            if typo is not None:
                typos.append((klass, name, f"{klass.__name__}.{name}: {typo}"))
    if errors:
        bases = ", ".join(k.__name__ for k in contract_classes(cls))
        count = f"{len(errors)} problem{'s' if len(errors) != 1 else ''}"
        raise TypeError(f"{cls.__name__} cannot serve its host's calls ({bases}): {count}:" + "".join(errors))
    for klass, name, message in typos:
        if name not in _WARNED.setdefault(klass, set()):
            _WARNED[klass].add(name)
            logger.warning("%s", message)
