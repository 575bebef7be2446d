"""The platform contract: which public names a platform class may define, and how.

Contract classes (``DeviceMixin``, ``SRTPlatform``, ``MMPlatform``) mark every public
member with :func:`active` or :func:`reserved`, so a host, the docs and the conformance
check can ask what each method is for. Every other subclass of ``DeviceMixin`` is
checked against the union of the contract classes in its MRO when it is defined: a
misspelled, unknown or retired public name, or an override that cannot accept every call
the contract accepts, is a ``TypeError`` listing every problem at once. A hook that is
silently never called is the failure this module exists to prevent.
"""

from __future__ import annotations

import difflib
import inspect
import logging
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Callable, Literal, TypeVar

logger = logging.getLogger(__name__)

__all__ = [
    "ContractMethod",
    "OverrideProblem",
    "RETIRED_NAMES",
    "active",
    "contract_members",
    "describe_contract",
    "find_override_problems",
    "is_contract_class",
    "not_implemented",
    "reserved",
]

Status = Literal["active", "reserved"]
MemberKind = Literal["method", "classmethod", "staticmethod", "property", "attribute"]

_F = TypeVar("_F", bound=Callable[..., Any])
_MARK = "__sglang_contract__"

#: Hooks SGLang removed; defining one means the platform would silently lose it.
RETIRED_NAMES: dict[str, str] = {
    "get_mha_kv_pool_cls": "get_kv_pool_cls(self, *, kind) and return the pool for kind='mha'",
    "get_mla_kv_pool_cls": "get_kv_pool_cls(self, *, kind) and return the pool for kind='mla'",
    "get_dsa_kv_pool_cls": "get_kv_pool_cls(self, *, kind) and return the pool for kind='dsa'",
}


@dataclass(frozen=True)
class _Mark:
    status: Status
    required: bool


@dataclass(frozen=True)
class ContractMethod:
    """One public member of the platform contract, as code (and the docs) can read it.

    ``status`` is ``"active"`` when a host calls it today through ``current_platform``
    and ``"reserved"`` when the seam exists but hosts still use hard-coded calls.
    ``required`` means the base implementation fails fast, so an out-of-tree platform
    must override it. ``signature`` excludes ``self``/``cls``; it is ``None`` for data
    attributes and properties.
    """

    name: str
    status: Status
    required: bool
    kind: MemberKind
    signature: inspect.Signature | None
    declared_in: type
    summary: str

    @property
    def qualname(self) -> str:
        """``DeclaringClass.name``, the form the docs and error messages use."""
        return f"{self.declared_in.__name__}.{self.name}"

    def render(self) -> str:
        """A one-line rendering such as ``get_device(device_id: int = 0) -> torch.device``."""
        if self.signature is None:
            return self.name
        return f"{self.name}{_display(self.signature)}"


@dataclass(frozen=True)
class OverrideProblem:
    """One way a platform subclass does not fit the contract."""

    owner: str
    attribute: str
    kind: Literal["unknown", "retired", "signature", "binding"]
    message: str

    def __str__(self) -> str:
        return self.message


# --------------------------------------------------------------------------------------
# Markers
# --------------------------------------------------------------------------------------


def _mark(func: Any, mark: _Mark) -> Any:
    target = func
    if isinstance(target, (classmethod, staticmethod)):
        target = target.__func__
    elif isinstance(target, property):
        target = target.fget
    elif isinstance(target, cached_property):
        target = target.func
    setattr(target, _MARK, mark)
    return func


def active(func: _F | None = None, *, required: bool = False) -> Any:
    """Mark a contract member that hosts call today through ``current_platform``."""
    mark = _Mark("active", required)
    if func is None:
        return lambda f: _mark(f, mark)
    return _mark(func, mark)


def reserved(func: _F | None = None, *, required: bool = False) -> Any:
    """Mark a contract member that is planned: hosts do not call it yet."""
    mark = _Mark("reserved", required)
    if func is None:
        return lambda f: _mark(f, mark)
    return _mark(func, mark)


def not_implemented(obj: object, method: str) -> NotImplementedError:
    """The fail-fast error of a required method, naming the concrete class."""
    cls = obj if isinstance(obj, type) else type(obj)
    return NotImplementedError(
        f"{cls.__name__}.{method}() is not implemented: override it in your platform class"
    )


# --------------------------------------------------------------------------------------
# Contract tables
# --------------------------------------------------------------------------------------

_OWN_MEMBERS: dict[type, dict[str, ContractMethod]] = {}
_UNION_CACHE: dict[tuple[type, ...], dict[str, ContractMethod]] = {}


def _kind_of(raw: Any) -> tuple[str, Any]:
    """Classify a class-``__dict__`` entry; return (kind, underlying function or None)."""
    if isinstance(raw, staticmethod):
        return "staticmethod", raw.__func__
    if isinstance(raw, classmethod):
        return "classmethod", raw.__func__
    if isinstance(raw, property):
        return "property", raw.fget
    if isinstance(raw, cached_property):
        return "property", raw.func
    if isinstance(raw, type):
        return "attribute", None
    if inspect.isfunction(raw) or (callable(raw) and hasattr(type(raw), "__get__")):
        return "method", raw
    if callable(raw):
        # A callable object without __get__ is not bound: it behaves like a staticmethod.
        return "staticmethod", raw
    return "attribute", None


def _callable_signature(kind: str, func: Any) -> inspect.Signature | None:
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        return None
    if kind in ("method", "classmethod"):
        params = list(sig.parameters.values())
        if params and params[0].kind in (
            inspect.Parameter.POSITIONAL_ONLY,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
        ):
            sig = sig.replace(parameters=params[1:])
    return sig


class _Text:
    """An annotation that prints as its source text (no quotes) in a rendered signature."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _display(sig: inspect.Signature) -> str:
    """Render a signature with string annotations unquoted, as they read in source."""

    def plain(annotation: Any) -> Any:
        return _Text(annotation) if isinstance(annotation, str) else annotation

    params = [p.replace(annotation=plain(p.annotation)) for p in sig.parameters.values()]
    return str(sig.replace(parameters=params, return_annotation=plain(sig.return_annotation)))


def _summary(func: Any) -> str:
    doc = inspect.getdoc(func) if func is not None else None
    return doc.strip().splitlines()[0] if doc else ""


def register_contract_class(cls: type) -> None:
    """Record ``cls`` as a contract class; every public member must carry a marker."""
    attributes: dict[str, Status] = dict(cls.__dict__.get("_CONTRACT_ATTRIBUTES", {}))
    inherited = contract_members(cls)
    members: dict[str, ContractMethod] = {}
    errors: list[str] = []
    for name, raw in cls.__dict__.items():
        if name.startswith("_"):
            continue
        if name in inherited:
            errors.append(
                f"{cls.__name__}.{name} redefines {inherited[name].qualname}: a contract "
                f"class would shadow a vendor mixin's implementation"
            )
            continue
        kind, func = _kind_of(raw)
        if name in attributes:
            members[name] = ContractMethod(
                name, attributes.pop(name), False, "attribute", None, cls, ""
            )
            continue
        mark = getattr(func, _MARK, None) if func is not None else None
        if mark is None:
            errors.append(f"{cls.__name__}.{name} has no @active/@reserved marker")
            continue
        signature = None if kind == "property" else _callable_signature(kind, func)
        members[name] = ContractMethod(
            name, mark.status, mark.required, kind, signature, cls, _summary(func)  # type: ignore[arg-type]
        )
    for name, status in attributes.items():
        # Declared attributes that only have an annotation (no value) still count.
        members[name] = ContractMethod(name, status, False, "attribute", None, cls, "")
    if errors:
        raise TypeError("invalid contract class:\n  - " + "\n  - ".join(errors))
    _OWN_MEMBERS[cls] = members
    _UNION_CACHE.clear()


def is_contract_class(cls: type) -> bool:
    """Whether ``cls`` declares part of the contract (rather than implementing it)."""
    return cls in _OWN_MEMBERS


def _contract_classes(cls: type) -> tuple[type, ...]:
    return tuple(klass for klass in cls.__mro__ if klass in _OWN_MEMBERS)


def contract_members(cls: type) -> dict[str, ContractMethod]:
    """Every contract member visible to ``cls``: the union over its contract bases."""
    key = _contract_classes(cls)
    cached = _UNION_CACHE.get(key)
    if cached is None:
        cached = {}
        for klass in reversed(key):
            cached.update(_OWN_MEMBERS[klass])
        _UNION_CACHE[key] = cached
    return cached


def describe_contract(cls: type) -> list[ContractMethod]:
    """The contract ``cls`` must honour, base-most contract class first, in declaration order."""
    return list(contract_members(cls).values())


# --------------------------------------------------------------------------------------
# Override checks
# --------------------------------------------------------------------------------------

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_KIND_WORDS = {
    "method": "an instance method",
    "classmethod": "a classmethod",
    "staticmethod": "a staticmethod",
    "property": "a property",
    "attribute": "a data attribute",
}


def _signature_reasons(base: inspect.Signature, over: inspect.Signature) -> list[str]:
    """Why ``over`` cannot accept every call that ``base`` accepts (empty if it can)."""
    empty = inspect.Parameter.empty
    reasons: list[str] = []
    b_params = list(base.parameters.values())
    o_params = list(over.parameters.values())
    b_pos = [p for p in b_params if p.kind in _POSITIONAL]
    o_pos = [p for p in o_params if p.kind in _POSITIONAL]
    o_var_pos = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in o_params)
    o_var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in o_params)

    b_names = [p.name for p in b_pos]
    o_names = [p.name for p in o_pos[: len(b_pos)]]
    reordered = (
        len(o_names) == len(b_names) and o_names != b_names and sorted(o_names) == sorted(b_names)
    )
    if reordered:
        reasons.append(f"parameters reordered: the contract has ({', '.join(b_names)}), "
                       f"this has ({', '.join(o_names)})")

    for index, bp in enumerate(b_pos):
        if index < len(o_pos):
            op = o_pos[index]
            if bp.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and not reordered:
                if op.name != bp.name:
                    reasons.append(
                        f"parameter {index + 1} is named {op.name!r}; the contract names it "
                        f"{bp.name!r} (callers may pass {bp.name}=...)"
                    )
                elif op.kind is inspect.Parameter.POSITIONAL_ONLY:
                    reasons.append(f"parameter {bp.name!r} is positional-only here; callers may pass it by keyword")
            if bp.default is not empty and op.default is empty:
                reasons.append(f"parameter {op.name!r} has no default; the contract's {bp.name!r} is optional")
        elif o_var_pos:
            if bp.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and not o_var_kw:
                reasons.append(f"parameter {bp.name!r} cannot be passed by keyword here")
        else:
            reasons.append(f"missing parameter {bp.name!r}")

    o_by_name = {p.name: p for p in o_params}
    for bp in b_params:
        if bp.kind is inspect.Parameter.KEYWORD_ONLY:
            op = o_by_name.get(bp.name)
            if op is None or op.kind not in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
                if not o_var_kw:
                    reasons.append(f"missing keyword-only parameter {bp.name!r}")
            elif bp.default is not empty and op.default is empty:
                reasons.append(f"parameter {bp.name!r} has no default; the contract's is optional")
        elif bp.kind is inspect.Parameter.VAR_POSITIONAL and not o_var_pos:
            reasons.append(f"the contract accepts *{bp.name}; this does not")
        elif bp.kind is inspect.Parameter.VAR_KEYWORD and not o_var_kw:
            reasons.append(f"the contract accepts **{bp.name}; this does not")

    known = {p.name for p in b_params}
    for index, op in enumerate(o_pos):
        if index >= len(b_pos) and op.default is empty:
            reasons.append(f"new required parameter {op.name!r}")
    for op in o_params:
        if op.kind is inspect.Parameter.KEYWORD_ONLY and op.name not in known and op.default is empty:
            reasons.append(f"new required keyword-only parameter {op.name!r}")
    return reasons


def _check_member(owner: type, name: str, raw: Any, member: ContractMethod) -> OverrideProblem | None:
    kind, func = _kind_of(raw)
    where = f"{owner.__name__}.{name}"
    if member.kind == "attribute":
        if kind != "attribute":
            return OverrideProblem(
                owner.__name__, name, "binding",
                f"{where}: {member.qualname} is a data attribute; this defines {_KIND_WORDS[kind]}",
            )
        return None
    if member.kind == "property":
        if kind not in ("property", "attribute"):
            return OverrideProblem(
                owner.__name__, name, "binding",
                f"{where}: {member.qualname} is a property; this defines {_KIND_WORDS[kind]}",
            )
        return None
    if kind != member.kind:
        if kind == "attribute":
            detail = f"this sets it to a non-callable {type(raw).__name__}"
        else:
            detail = f"this defines {_KIND_WORDS[kind]}"
        return OverrideProblem(
            owner.__name__, name, "binding",
            f"{where}: {member.qualname} is {_KIND_WORDS[member.kind]}; {detail}",
        )
    if member.signature is None:
        return None
    signature = _callable_signature(kind, func)
    if signature is None:
        return None
    reasons = _signature_reasons(member.signature, signature)
    if not reasons:
        return None
    return OverrideProblem(
        owner.__name__, name, "signature",
        f"{where}{_display(signature)} is incompatible with "
        f"{member.qualname}{_display(member.signature)}: "
        + "; ".join(reasons),
    )


def _check_namespace(owner: type, contract: dict[str, ContractMethod]) -> list[OverrideProblem]:
    problems: list[OverrideProblem] = []
    for name, raw in owner.__dict__.items():
        if name.startswith("_"):
            continue
        if name in RETIRED_NAMES:
            problems.append(OverrideProblem(
                owner.__name__, name, "retired",
                f"{owner.__name__}.{name}: this SGLang hook is retired and would never be "
                f"called; override {RETIRED_NAMES[name]}",
            ))
            continue
        member = contract.get(name)
        if member is None:
            close = difflib.get_close_matches(name, contract, n=1, cutoff=0.75)
            hint = f"did you mean {close[0]!r}? " if close else ""
            problems.append(OverrideProblem(
                owner.__name__, name, "unknown",
                f"{owner.__name__}.{name}: not part of the platform contract; {hint}"
                f"(name private helpers with a leading underscore, e.g. '_{name}')",
            ))
            continue
        problem = _check_member(owner, name, raw, member)
        if problem is not None:
            problems.append(problem)
    return problems


def find_override_problems(cls: type, *, whole_mro: bool = True) -> list[OverrideProblem]:
    """Every way ``cls`` does not fit the contract, without raising.

    With ``whole_mro`` (the conformance check's mode) every non-contract class in the
    MRO is inspected, so problems in a base created with checks bypassed are found
    too. At class definition only ``cls`` itself and its bases that are not platform
    classes at all (plain mixins) are inspected: platform bases were checked when they
    were defined.
    """
    contract = contract_members(cls)
    if not contract:
        return []
    root = _contract_classes(cls)[-1]
    problems: list[OverrideProblem] = []
    seen: set[type] = set()
    for klass in cls.__mro__:
        if klass is object or klass in _OWN_MEMBERS or klass in seen:
            continue
        seen.add(klass)
        is_platform = issubclass(klass, root)
        if klass is not cls and is_platform and not whole_mro:
            continue
        problems.extend(_check_namespace(klass, contract))
    return problems


def enforce(cls: type) -> None:
    """Raise ``TypeError`` listing every problem when ``cls`` does not fit the contract."""
    problems = find_override_problems(cls, whole_mro=False)
    if not problems:
        return
    bases = ", ".join(k.__name__ for k in _contract_classes(cls))
    lines = "\n".join(f"  - {p.message}" for p in problems)
    count = len(problems)
    raise TypeError(
        f"{cls.__name__} does not fit the platform contract ({bases}): "
        f"{count} problem{'s' if count != 1 else ''}:\n{lines}"
    )
