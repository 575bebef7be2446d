"""The platform contract: which public names a platform class may define, and how.

Contract classes (``DeviceMixin``, ``SRTPlatform``, ``MMPlatform``) mark every public
member with :func:`active` or :func:`reserved`, so a host, the docs and the conformance
check can ask what each method is for. Every other subclass of ``DeviceMixin`` is
checked against the union of the contract classes in its MRO when it is defined: a
misspelled, unknown or retired public name, or an override that cannot accept every call
the contract accepts, is a ``TypeError`` listing every problem at once. A hook that is
silently never called is the failure this module exists to prevent.

The check runs at import of every platform module, on the start-up path, so it reads
parameters straight from code objects and imports ``inspect`` and ``difflib`` only to
render a signature or suggest a name.
"""

# No ``from __future__ import annotations`` here: typing.NamedTuple would compile a ForwardRef for every
# string annotation of its fields, a cost paid by every process at start-up.
import logging
from functools import cached_property
from types import FunctionType
from typing import TYPE_CHECKING, Any, Callable, Literal, NamedTuple, TypeVar

if TYPE_CHECKING:
    import inspect

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


class _Mark:
    """What ``@active`` / ``@reserved`` attach to a function (a slotted class: cheaper to define than a
    ``NamedTuple``, and this module is imported on every start-up path)."""

    __slots__ = ("status", "required")

    def __init__(self, status: Status, required: bool) -> None:
        self.status = status
        self.required = required

    def __repr__(self) -> str:
        return f"_Mark(status={self.status!r}, required={self.required!r})"


# A parameter as the check needs it: (name, kind, has_default); kinds as in inspect.
_POSITIONAL_ONLY, _POSITIONAL_OR_KEYWORD, _VAR_POSITIONAL, _KEYWORD_ONLY, _VAR_KEYWORD = range(5)
_Param = tuple  # (str, int, bool)


class ContractMethod(NamedTuple):
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
    declared_in: type
    summary: str
    function: Any
    params: tuple[_Param, ...] | None

    @property
    def qualname(self) -> str:
        """``DeclaringClass.name``, the form the docs and error messages use."""
        return f"{self.declared_in.__name__}.{self.name}"

    @property
    def signature(self) -> "inspect.Signature | None":
        """The contract signature without ``self``/``cls`` (``None`` for data and properties)."""
        if self.params is None:
            return None
        return _inspect_signature(self.kind, self.function)

    def render(self) -> str:
        """A one-line rendering such as ``get_device(device_id: int = 0) -> torch.device``."""
        signature = self.signature
        if signature is None:
            return self.name
        return f"{self.name}{_display(signature)}"


class OverrideProblem(NamedTuple):
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


# The four usual marks, shared: the contract classes mark about a hundred members at import.
_SHARED_MARKS = {
    (status, required): _Mark(status, required)
    for status in ("active", "reserved")
    for required in (False, True)
}


def _mark_for(status: Status, required: bool) -> _Mark:
    if required is True or required is False:
        return _SHARED_MARKS[status, required]
    return _Mark(status, required)


def active(func: _F | None = None, *, required: bool = False) -> Any:
    """Mark a contract member that hosts call today through ``current_platform``."""
    mark = _mark_for("active", required)
    if func is None:
        return lambda f: _mark(f, mark)
    return _mark(func, mark)


def reserved(func: _F | None = None, *, required: bool = False) -> Any:
    """Mark a contract member that is planned: hosts do not call it yet."""
    mark = _mark_for("reserved", required)
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
    if isinstance(raw, FunctionType) or (callable(raw) and hasattr(type(raw), "__get__")):
        return "method", raw
    if callable(raw):
        # A callable object without __get__ is not bound: it behaves like a staticmethod.
        return "staticmethod", raw
    return "attribute", None


def _inspect_signature(kind: str, func: Any) -> "inspect.Signature | None":
    """``inspect.signature`` without the bound first parameter; ``None`` when unavailable."""
    import inspect

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


def _params(kind: str, func: Any) -> tuple[_Param, ...] | None:
    """The parameters of ``func`` as ``(name, kind, has_default)``, without ``self``/``cls``.

    Plain functions are read from their code object (fast, no ``inspect``); wrapped or
    exotic callables fall back to ``inspect.signature``. ``None`` means "cannot tell".
    """
    # Follow functools.wraps chains as inspect.signature does (contextmanager, lru_cache).
    for _ in range(100):
        if hasattr(func, "__signature__") or not hasattr(func, "__wrapped__"):
            break
        func = func.__wrapped__
    code = getattr(func, "__code__", None)
    if isinstance(func, FunctionType) and code is not None and not hasattr(func, "__signature__"):
        names = code.co_varnames
        n_pos = code.co_argcount
        n_posonly = code.co_posonlyargcount
        n_kwonly = code.co_kwonlyargcount
        defaults = func.__defaults__ or ()
        kwdefaults = func.__kwdefaults__ or {}
        first_default = n_pos - len(defaults)
        params: list[_Param] = []
        for index in range(n_pos):
            kind_code = _POSITIONAL_ONLY if index < n_posonly else _POSITIONAL_OR_KEYWORD
            params.append((names[index], kind_code, index >= first_default))
        position = n_pos + n_kwonly
        if code.co_flags & 0x04:  # CO_VARARGS
            params.append((names[position], _VAR_POSITIONAL, False))
            position += 1
        for index in range(n_pos, n_pos + n_kwonly):
            params.append((names[index], _KEYWORD_ONLY, names[index] in kwdefaults))
        if code.co_flags & 0x08:  # CO_VARKEYWORDS
            params.append((names[position], _VAR_KEYWORD, False))
        # Keep inspect's order: positional, *args, keyword-only, **kwargs.
        params.sort(key=lambda p: (p[1] if p[1] != _POSITIONAL_OR_KEYWORD else _POSITIONAL_ONLY))
    else:
        sig = _inspect_signature("staticmethod", func)
        if sig is None:
            return None
        params = [
            (p.name, int(p.kind), p.default is not p.empty) for p in sig.parameters.values()
        ]
    if kind in ("method", "classmethod") and params and params[0][1] in (
        _POSITIONAL_ONLY,
        _POSITIONAL_OR_KEYWORD,
    ):
        params = params[1:]
    return tuple(params)


class _Text:
    """An annotation that prints as its source text (no quotes) in a rendered signature."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _display(sig: "inspect.Signature") -> str:
    """Render a signature with string annotations unquoted, as they read in source."""

    def plain(annotation: Any) -> Any:
        return _Text(annotation) if isinstance(annotation, str) else annotation

    params = [p.replace(annotation=plain(p.annotation)) for p in sig.parameters.values()]
    return str(sig.replace(parameters=params, return_annotation=plain(sig.return_annotation)))


def _summary(func: Any) -> str:
    doc = getattr(func, "__doc__", None) if func is not None else None
    return doc.strip().splitlines()[0].strip() if doc and doc.strip() else ""


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
                f"{cls.__name__}.{name} redefines {inherited[name].qualname}: a contract "
                f"class would shadow a vendor mixin's implementation"
            )
            continue
        kind, func = _kind_of(raw)
        if name in attributes:
            status, summary = attributes.pop(name)
            members[name] = ContractMethod(
                name, status, False, "attribute", cls, summary, None, None
            )
            continue
        mark = getattr(func, _MARK, None) if func is not None else None
        if mark is None:
            errors.append(f"{cls.__name__}.{name} has no @active/@reserved marker")
            continue
        params = None if kind == "property" else _params(kind, func)
        members[name] = ContractMethod(
            name, mark.status, mark.required, kind, cls, _summary(func), func, params  # type: ignore[arg-type]
        )
    for name, (status, summary) in attributes.items():
        # Declared attributes that only have an annotation (no value) still count.
        members[name] = ContractMethod(name, status, False, "attribute", cls, summary, None, None)
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

_POSITIONAL = (_POSITIONAL_ONLY, _POSITIONAL_OR_KEYWORD)
_KIND_WORDS = {
    "method": "an instance method",
    "classmethod": "a classmethod",
    "staticmethod": "a staticmethod",
    "property": "a property",
    "attribute": "a data attribute",
}


def _signature_reasons(base: tuple[_Param, ...], over: tuple[_Param, ...]) -> list[str]:
    """Why ``over`` cannot accept every call that ``base`` accepts (empty if it can)."""
    reasons: list[str] = []
    b_pos = [p for p in base if p[1] in _POSITIONAL]
    o_pos = [p for p in over if p[1] in _POSITIONAL]
    o_var_pos = any(p[1] == _VAR_POSITIONAL for p in over)
    o_var_kw = any(p[1] == _VAR_KEYWORD for p in over)

    b_names = [p[0] for p in b_pos]
    o_names = [p[0] for p in o_pos[: len(b_pos)]]
    reordered = (
        len(o_names) == len(b_names) and o_names != b_names and sorted(o_names) == sorted(b_names)
    )
    if reordered:
        reasons.append(
            f"parameters reordered: the contract has ({', '.join(b_names)}), "
            f"this has ({', '.join(o_names)})"
        )

    for index, (b_name, b_kind, b_default) in enumerate(b_pos):
        if index < len(o_pos):
            o_name, o_kind, o_default = o_pos[index]
            if b_kind == _POSITIONAL_OR_KEYWORD and not reordered:
                if o_name != b_name:
                    reasons.append(
                        f"parameter {index + 1} is named {o_name!r}; the contract names it "
                        f"{b_name!r} (callers may pass {b_name}=...)"
                    )
                elif o_kind == _POSITIONAL_ONLY:
                    reasons.append(
                        f"parameter {b_name!r} is positional-only here; callers may pass it by keyword"
                    )
            if b_default and not o_default:
                reasons.append(
                    f"parameter {o_name!r} has no default; the contract's {b_name!r} is optional"
                )
        elif o_var_pos:
            if b_kind == _POSITIONAL_OR_KEYWORD and not o_var_kw:
                reasons.append(f"parameter {b_name!r} cannot be passed by keyword here")
        else:
            reasons.append(f"missing parameter {b_name!r}")

    o_by_name = {p[0]: p for p in over}
    for b_name, b_kind, b_default in base:
        if b_kind == _KEYWORD_ONLY:
            match = o_by_name.get(b_name)
            if match is None or match[1] not in (_KEYWORD_ONLY, _POSITIONAL_OR_KEYWORD):
                if not o_var_kw:
                    reasons.append(f"missing keyword-only parameter {b_name!r}")
            elif b_default and not match[2]:
                reasons.append(f"parameter {b_name!r} has no default; the contract's is optional")
        elif b_kind == _VAR_POSITIONAL and not o_var_pos:
            reasons.append(f"the contract accepts *{b_name}; this does not")
        elif b_kind == _VAR_KEYWORD and not o_var_kw:
            reasons.append(f"the contract accepts **{b_name}; this does not")

    known = {p[0] for p in base}
    for index, (o_name, _kind, o_default) in enumerate(o_pos):
        if index >= len(b_pos) and not o_default:
            reasons.append(f"new required parameter {o_name!r}")
    for o_name, o_kind, o_default in over:
        if o_kind == _KEYWORD_ONLY and o_name not in known and not o_default:
            reasons.append(f"new required keyword-only parameter {o_name!r}")
    return reasons


def _rendered(name: str, kind: str, func: Any) -> str:
    signature = _inspect_signature(kind, func)
    return f"{name}{_display(signature)}" if signature is not None else name


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
    if member.params is None:
        return None
    params = _params(kind, func)
    if params is None:
        return None
    reasons = _signature_reasons(member.params, params)
    if not reasons:
        return None
    return OverrideProblem(
        owner.__name__, name, "signature",
        f"{owner.__name__}.{_rendered(name, kind, func)} is incompatible with "
        f"{member.declared_in.__name__}.{member.render()}: " + "; ".join(reasons),
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
            import difflib

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
