"""The platform contract, and the one rule a platform class must follow: accept the host's real calls.

Contract classes (``DeviceMixin``, ``SRTPlatform``, ``MMPlatform``) mark every public member with :func:`active`
or :func:`reserved`, so a host, the docs and the conformance check can ask what each member is for.

Every other platform class is checked when it is defined, against how the hosts actually call each member
(``_interface_table``, read from SGLang 0.5.23 and SGLang main). A class that SGLang would run is never refused:

- ``TypeError`` only for an override that cannot accept a call the host makes (wrong arity, a keyword it lacks,
  an instance method where the host calls the class, data where the host calls a method);
- a WARNING with "did you mean" for a public name that is one or two keystrokes from a contract name and is no name
  of any SGLang version: a likely misspelling that the host would silently never call;
- nothing for anything else: a vendor's own public API, names of other SGLang versions, retired hooks the host still
  serves. ``find_override_problems`` reports those too (``doctor`` lists them), and the testing kit's conformance
  check fails on a misspelling, where the plugin's author can act on it.

A vendor device mixin (a ``DeviceMixin`` subclass that is no SRT or diffusion platform) is never refused: no host
calls it on its own. It is checked as part of each platform that uses it.
"""

from __future__ import annotations

import difflib
import inspect
import logging
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property
from types import FunctionType
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

if TYPE_CHECKING:
    from . import _interface_table as table

logger = logging.getLogger(__name__)

__all__ = [
    "ContractMethod",
    "OverrideProblem",
    "active",
    "contract_members",
    "describe_contract",
    "find_override_problems",
    "hosts_of",
    "is_contract_class",
    "not_implemented",
    "reserved",
]

Status = Literal["active", "reserved"]
MemberKind = Literal["method", "classmethod", "staticmethod", "property", "attribute"]
#: ``signature`` and ``binding`` make a class unusable by its host (errors); ``misspelled`` is a likely typo
#: (a warning at definition, an error in the conformance check); ``retired`` and ``unknown`` are information.
ProblemKind = Literal["signature", "binding", "misspelled", "retired", "unknown"]
ERROR_KINDS: frozenset[str] = frozenset({"signature", "binding"})

_F = TypeVar("_F", bound=Callable[..., Any])
_MARK = "__sglang_contract__"


@dataclass(frozen=True)
class _Mark:
    """What ``@active`` / ``@reserved`` attach to a contract member's function."""

    status: Status
    required: bool


@dataclass(frozen=True)
class ContractMethod:
    """One public member of the platform contract, as code (and the docs) can read it.

    ``status`` is ``"active"`` when a host calls it today through ``current_platform`` and ``"reserved"`` when
    the seam exists but hosts still use hard-coded calls. ``required`` means the base implementation fails fast,
    so an out-of-tree platform must override it.
    """

    name: str
    status: Status
    required: bool
    kind: MemberKind
    declared_in: type
    summary: str
    function: Any

    @property
    def qualname(self) -> str:
        """``DeclaringClass.name``, the form the docs and error messages use."""
        return f"{self.declared_in.__name__}.{self.name}"

    @property
    def signature(self) -> inspect.Signature | None:
        """The contract signature without ``self``/``cls`` (``None`` for data and properties)."""
        if self.kind in ("attribute", "property"):
            return None
        return _bound_signature(self.kind, self.function, on_class=False)

    def render(self) -> str:
        """A one-line rendering such as ``get_device(device_id: int = 0) -> torch.device``."""
        signature = self.signature
        return self.name if signature is None else f"{self.name}{_display(signature)}"


@dataclass(frozen=True)
class OverrideProblem:
    """One public name of a platform class, as the check sees it (see ``ProblemKind``)."""

    owner: str
    attribute: str
    kind: ProblemKind
    message: str

    @property
    def is_error(self) -> bool:
        """Whether the host's call would fail (the class is refused at definition)."""
        return self.kind in ERROR_KINDS

    def __str__(self) -> str:
        return self.message


# --------------------------------------------------------------------------------------
# Markers and contract classes
# --------------------------------------------------------------------------------------


def _underlying(raw: Any) -> Any:
    if isinstance(raw, (classmethod, staticmethod)):
        return raw.__func__
    if isinstance(raw, property):
        return raw.fget
    if isinstance(raw, cached_property):
        return raw.func
    return raw


def _marker(status: Status, required: bool) -> Callable[[_F], _F]:
    def mark(func: _F) -> _F:
        setattr(_underlying(func), _MARK, _Mark(status, required))
        return func

    return mark


@overload
def active(func: _F, /) -> _F: ...
@overload
def active(*, required: bool = False) -> Callable[[_F], _F]: ...
def active(func: _F | None = None, /, *, required: bool = False) -> _F | Callable[[_F], _F]:
    """Mark a contract member that hosts call today through ``current_platform`` (returns it unchanged)."""
    return _marker("active", required) if func is None else _marker("active", required)(func)


@overload
def reserved(func: _F, /) -> _F: ...
@overload
def reserved(*, required: bool = False) -> Callable[[_F], _F]: ...
def reserved(func: _F | None = None, /, *, required: bool = False) -> _F | Callable[[_F], _F]:
    """Mark a contract member that is planned: hosts do not call it yet (returns it unchanged)."""
    return _marker("reserved", required) if func is None else _marker("reserved", required)(func)


def not_implemented(obj: object, method: str) -> NotImplementedError:
    """The fail-fast error of a required method, naming the concrete class."""
    cls = obj if isinstance(obj, type) else type(obj)
    return NotImplementedError(f"{cls.__name__}.{method}() is not implemented: override it in your platform class")


_OWN_MEMBERS: dict[type, dict[str, ContractMethod]] = {}
#: Which host calls the members of each contract class (the root ``DeviceMixin`` alone: none).
# The hosts of each contract class, by the interface table's names (``table.SRT``, ``table.DIFFUSION``).
_HOSTS: dict[str, tuple[str, ...]] = {"SRTPlatform": ("srt",), "MMPlatform": ("diffusion",)}


def _kind_of(raw: Any) -> MemberKind:
    """How a class-``__dict__`` entry binds when read from an instance."""
    if isinstance(raw, staticmethod):
        return "staticmethod"
    if isinstance(raw, classmethod):
        return "classmethod"
    if isinstance(raw, (property, cached_property)):
        return "property"
    if isinstance(raw, type) or not callable(raw):
        return "attribute"
    if isinstance(raw, FunctionType) or hasattr(type(raw), "__get__"):
        return "method"
    return "staticmethod"  # a callable object without __get__ is not bound


def register_contract_class(cls: type) -> None:
    """Record ``cls`` as a contract class; every public member must carry a marker."""
    # _CONTRACT_ATTRIBUTES maps a data attribute to (status, one-line summary).
    attributes: dict[str, tuple[Status, str]] = dict(cls.__dict__.get("_CONTRACT_ATTRIBUTES", {}))
    inherited = contract_members(cls)
    members: dict[str, ContractMethod] = {}
    errors: list[str] = []
    for name, raw in cls.__dict__.items():
        if name.startswith("_"):
            continue
        if name in inherited:
            errors.append(
                f"{cls.__name__}.{name} redefines {inherited[name].qualname}: a contract class would shadow "
                f"a vendor mixin's implementation"
            )
        elif name in attributes:
            status, summary = attributes.pop(name)
            members[name] = ContractMethod(name, status, False, "attribute", cls, summary, None)
        else:
            mark = getattr(_underlying(raw), _MARK, None)
            if mark is None:
                errors.append(f"{cls.__name__}.{name} has no @active/@reserved marker")
                continue
            function = _underlying(raw)
            doc = (inspect.getdoc(function) or "").strip()
            summary = doc.splitlines()[0] if doc else ""
            members[name] = ContractMethod(name, mark.status, mark.required, _kind_of(raw), cls, summary, function)
    for name, (status, summary) in attributes.items():
        # Declared attributes that only have an annotation (no value) still count.
        members[name] = ContractMethod(name, status, False, "attribute", cls, summary, None)
    if errors:
        raise TypeError("invalid contract class:\n  - " + "\n  - ".join(errors))
    _OWN_MEMBERS[cls] = members


def is_contract_class(cls: type) -> bool:
    """Whether ``cls`` declares part of the contract (rather than implementing it)."""
    return cls in _OWN_MEMBERS


def _contract_classes(cls: type) -> list[type]:
    return [klass for klass in cls.__mro__ if klass in _OWN_MEMBERS]


def contract_members(cls: type) -> dict[str, ContractMethod]:
    """Every contract member visible to ``cls``: the union over its contract bases, base-most first."""
    members: dict[str, ContractMethod] = {}
    for klass in reversed(_contract_classes(cls)):
        members.update(_OWN_MEMBERS[klass])
    return members


def describe_contract(cls: type) -> list[ContractMethod]:
    """The contract ``cls`` must honour, base-most contract class first, in declaration order."""
    return list(contract_members(cls).values())


def hosts_of(cls: type) -> tuple[str, ...]:
    """The hosts that call ``cls``: ``("srt",)`` for an SRT platform, ``("diffusion",)`` for a diffusion one."""
    return tuple(host for klass in _contract_classes(cls) for host in _HOSTS.get(klass.__name__, ()))


def _all_contract_names() -> set[str]:
    return {name for members in _OWN_MEMBERS.values() for name in members}


# --------------------------------------------------------------------------------------
# Can an override accept the host's call?
# --------------------------------------------------------------------------------------


def _bound_signature(kind: str, func: Any, *, on_class: bool) -> inspect.Signature | None:
    """The signature a caller sees: ``self``/``cls`` dropped where the descriptor binds it; ``None`` if unknown."""
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return None
    binds_first = kind == "classmethod" or (kind == "method" and not on_class)
    if binds_first:
        params = list(signature.parameters.values())
        if params and params[0].kind in (params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD):
            return signature.replace(parameters=params[1:])
        if not (params and params[0].kind is params[0].VAR_POSITIONAL):
            return signature.replace(parameters=[])  # nothing can take self: any call fails below
    return signature


def _call_problem(raw: Any, call: table.HostCall, name: str) -> tuple[ProblemKind, str] | None:
    """Why ``raw`` (a class-``__dict__`` entry) cannot serve ``call``, or ``None`` when it can."""
    kind = _kind_of(raw)
    shown = call.render(name)
    if call.read:
        if kind in ("method", "classmethod", "staticmethod"):
            return "binding", f"the host reads it as data ({shown}); this defines a {kind}"
        if kind == "property" and call.on_class:
            return "binding", f"the runtime reads it on the class ({shown}), where a property is no value"
        return None
    if kind == "attribute":
        return "binding", f"the host calls it ({shown}); this sets it to a non-callable {type(raw).__name__}"
    if kind == "property":
        return "binding", f"the host calls it ({shown}); this defines a property"
    signature = _bound_signature(kind, _underlying(raw), on_class=call.on_class)
    if signature is None:
        return None
    try:
        signature.bind(*[None] * call.args, **dict.fromkeys(call.kwargs))
    except TypeError as exc:
        if kind == "method" and call.on_class:
            return "binding", f"the host calls it on the class ({shown}); this defines an instance method"
        return "signature", f"{name}{_bare(signature)} cannot accept the host's call {shown}: {exc}"
    return None


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


def near_miss(name: str, candidates: Iterable[str]) -> str | None:
    """The contract name ``name`` is most likely a misspelling of, or ``None``.

    A near miss is at most two edits away and at least 85% similar (``difflib``): close enough for ``synchronise``
    or ``get_devce_name``, far enough for a vendor's ``vendor_name`` or ``get_device_count``.
    """
    close = difflib.get_close_matches(name, list(candidates), n=3, cutoff=0.85)
    return next((c for c in close if _edit_distance(name, c) <= 2), None)


# --------------------------------------------------------------------------------------
# Checking a class
# --------------------------------------------------------------------------------------


def check_class_namespace(
    klass: type, contract: dict[str, ContractMethod], hosts: tuple[str, ...]
) -> list[OverrideProblem]:
    """What each public name ``klass`` itself defines means for ``hosts`` (one finding per name at most)."""
    # Only a platform subclass's definition reads the table: a process without plugins never imports it (1.5 ms).
    from . import _interface_table as table

    problems: list[OverrideProblem] = []
    known_contract = _all_contract_names()
    for name, raw in klass.__dict__.items():
        if name.startswith("_"):
            continue
        where = f"{klass.__name__}.{name}"
        for row in filter(None, (table.entry(name, host) for host in hosts)):
            found = next(((c, f) for c in row.calls if (f := _call_problem(raw, c, name)) is not None), None)
            if found is not None:
                call, (kind, reason) = found
                declared = f"; SGLang declares {name}{row.signature}" if row.signature else ""
                problems.append(
                    OverrideProblem(
                        klass.__name__, name, kind, f"{where}: {reason} (called from {_site(call)}){declared}"
                    )
                )
                break
        if name in contract:
            continue
        retired = next((r for h in hosts if (r := table.entry(name, h)) is not None and r.retired), None)
        if retired is not None:
            problems.append(
                OverrideProblem(
                    klass.__name__,
                    name,
                    "retired",
                    f"{where}: a retired SGLang hook, still served with a DeprecationWarning; override "
                    f"{retired.replacement} instead",
                )
            )
        elif name in known_contract or table.is_known_name(name):
            origin = table.OTHER_VERSION_NAMES.get(name) or _declared_elsewhere(name)
            problems.append(
                OverrideProblem(
                    klass.__name__,
                    name,
                    "unknown",
                    f"{where}: a name of {origin}; not called here by SGLang {table.RELEASED}",
                )
            )
        else:
            guess = near_miss(name, contract)
            if guess is not None:
                problems.append(
                    OverrideProblem(
                        klass.__name__,
                        name,
                        "misspelled",
                        f"{where}: not a name SGLang calls; did you mean {guess!r}? (a vendor helper that is no "
                        f"typo can start with an underscore: '_{name}')",
                    )
                )
            else:
                problems.append(
                    OverrideProblem(
                        klass.__name__,
                        name,
                        "unknown",
                        f"{where}: the platform's own API; not called by SGLang {table.RELEASED}",
                    )
                )
    return problems


def _declared_elsewhere(name: str) -> str:
    """Who declares ``name``: our other contract class if any, else SGLang's class in the table."""
    from . import _interface_table as table

    owners = [k.__name__ for k, members in _OWN_MEMBERS.items() if name in members]
    return " and ".join(owners or dict.fromkeys(r.owner for r in table.entries() if r.name == name))


def _site(call: table.HostCall) -> str:
    return call.site if call.site.startswith("sglang_plugin_runtime") else f"sglang/{call.site}"


def find_override_problems(cls: type, *, whole_mro: bool = True) -> list[OverrideProblem]:
    """What every public name of ``cls`` means for its hosts, without raising (see ``ProblemKind``).

    With ``whole_mro`` (the conformance check's mode) every non-contract class in the MRO is inspected, so a base
    created with checks bypassed is reported too. At class definition only ``cls`` and its bases that are no SRT
    or diffusion platform (plain mixins, vendor device mixins) are inspected: platform bases were checked when
    they were defined.
    """
    contract = contract_members(cls)
    if not contract:
        return []
    hosts = hosts_of(cls)
    problems: list[OverrideProblem] = []
    for klass in cls.__mro__:
        if klass is object or klass in _OWN_MEMBERS:
            continue
        if klass is not cls and not whole_mro and hosts_of(klass):
            continue
        problems.extend(check_class_namespace(klass, contract, hosts))
    return problems


_WARNED: weakref.WeakKeyDictionary[type, set[str]] = weakref.WeakKeyDictionary()


def enforce(cls: type) -> None:
    """Refuse ``cls`` when its host cannot call it; warn once per likely misspelling."""
    problems = find_override_problems(cls, whole_mro=False)
    errors = [p for p in problems if p.is_error]
    if errors:
        bases = ", ".join(k.__name__ for k in _contract_classes(cls))
        lines = "\n".join(f"  - {p.message}" for p in errors)
        count = len(errors)
        raise TypeError(
            f"{cls.__name__} cannot serve its host's calls ({bases}): {count} problem{'s' if count != 1 else ''}:"
            f"\n{lines}"
        )
    for problem in problems:
        if problem.kind != "misspelled":
            continue
        owner = next(k for k in cls.__mro__ if k.__name__ == problem.owner and problem.attribute in k.__dict__)
        warned = _WARNED.setdefault(owner, set())
        if problem.attribute not in warned:
            warned.add(problem.attribute)
            logger.warning("%s", problem.message)


# --------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------


class _Text:
    """An annotation that prints as its source text (no quotes) in a rendered signature."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _bare(signature: inspect.Signature) -> str:
    """A signature without annotations: what a reader compares with SGLang's call."""
    params = [p.replace(annotation=p.empty) for p in signature.parameters.values()]
    return str(signature.replace(parameters=params, return_annotation=signature.empty))


def _display(signature: inspect.Signature) -> str:
    """Render a signature with string annotations unquoted, as they read in source."""

    def plain(annotation: Any) -> Any:
        return _Text(annotation) if isinstance(annotation, str) else annotation

    params = [p.replace(annotation=plain(p.annotation)) for p in signature.parameters.values()]
    return str(signature.replace(parameters=params, return_annotation=plain(signature.return_annotation)))
