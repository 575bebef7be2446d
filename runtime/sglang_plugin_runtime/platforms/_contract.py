"""The platform contract, and the one rule a platform class must follow: accept the host's real
calls.

Contract classes (``DeviceMixin``, ``SRTPlatform``, ``MMPlatform``) mark every public method with
:func:`active` or :func:`reserved`; their public annotated class attributes are contract attributes
(active).

Every other platform class is checked when it is defined, against how the hosts actually call each
member: the interface table, ``interface_table.jsonl`` beside this module, one row per public name
of SGLang's platform classes (``scripts/sglang_releases.py`` writes it from the newest SGLang
wheel and fails when it drifts). It is read only when a platform subclass is defined. Where an
older SGLang release is installed, the calls are that release's (``_sglang_releases``), with the
runtime's own. A class that SGLang would run is never refused:

- ``TypeError`` only for an override that cannot accept a call the host makes (wrong arity, a
  keyword it lacks, an instance method where the host calls the class, data where the host calls a
  method);
- a WARNING with "did you mean" for a public name that is one or two keystrokes from a contract name
  and is no name of any SGLang version: a likely misspelling that the host would silently never
  call;
- nothing for anything else: a vendor's own public API, names of other SGLang versions, retired
  hooks the host still serves. ``_describe.find_override_problems`` says what each of those means
  (``doctor`` lists them), and the testing kit's conformance check fails on a misspelling, where the
  plugin's author can act on it.

A vendor device mixin (a ``DeviceMixin`` subclass that is no SRT or diffusion platform) is never
refused: no host calls it on its own. It is checked as part of each platform that uses it.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Collection, Iterable
from functools import cache, cached_property, partialmethod, singledispatchmethod
from typing import TYPE_CHECKING, Any, Literal, TypeVar

if TYPE_CHECKING:
    import inspect

logger = logging.getLogger(__name__)

Status = Literal["active", "reserved"]

_F = TypeVar("_F", bound=Callable[..., Any])
_MARK = "__sglang_contract__"
# The hosts of each contract class, by the interface table's names; the root ``DeviceMixin`` alone
# has none.
_HOSTS: dict[str, tuple[str, ...]] = {"SRTPlatform": ("srt",), "MMPlatform": ("diffusion",)}
#: Each contract class, and the members it declares itself in declaration order (attributes first).
OWN_MEMBERS: dict[type, dict[str, Mark]] = {}
#: The names already warned about, per class that defines them: one WARNING per misspelling.
_WARNED: weakref.WeakKeyDictionary[type, set[str]] = weakref.WeakKeyDictionary()


# --------------------------------------------------------------------------------------
# Markers and contract classes
# --------------------------------------------------------------------------------------


class Mark:
    """What a marker says of a contract member, and the marker itself: ``@active`` decorates a
    member (returned unchanged) with its mark. ``required``: the base implementation fails fast, so
    an out-of-tree platform overrides it. A plain class: a dataclass costs every process about 1 ms
    at start-up."""

    def __init__(self, status: Status, required: bool = False) -> None:
        self.status, self.required = status, required

    def __call__(self, member: _F) -> _F:
        setattr(underlying(member), _MARK, self)
        return member


#: A contract member that hosts call today through ``current_platform``.
active = Mark("active")
#: A contract member that is planned: hosts do not call it yet.
reserved = Mark("reserved")
#: ``active`` and ``reserved`` members whose base implementation fails fast.
active_required, reserved_required = Mark("active", True), Mark("reserved", True)


def underlying(raw: Any) -> Any:
    """The function behind a class-``__dict__`` entry (a classmethod's, a property's getter,
    ...)."""
    if isinstance(raw, property):
        return raw.fget
    if isinstance(raw, cached_property):
        return raw.func
    return raw.__func__ if isinstance(raw, (classmethod, staticmethod)) else raw


def not_implemented(obj: object, method: str) -> NotImplementedError:
    """The fail-fast error of a required method, naming the concrete class."""
    cls = obj if isinstance(obj, type) else type(obj)
    return NotImplementedError(
        f"{cls.__name__}.{method}() is not implemented: override it in your platform class"
    )


def register_contract_class(cls: type) -> None:
    """Record ``cls`` as a contract class: its annotated public attributes (active) and its marked
    public methods; an unmarked public method is refused."""
    annotations = vars(cls).get("__annotations__", {})  # what inspect.get_annotations(cls) reads
    members = {name: active for name in annotations if not name.startswith("_")}
    for name, raw in public_names(cls):
        if name not in members:
            mark = getattr(underlying(raw), _MARK, None)
            if mark is None:
                raise TypeError(
                    f"invalid contract class: {cls.__name__}.{name} has no @active/@reserved marker"
                )
            members[name] = mark
    OWN_MEMBERS[cls] = members


def contract_classes(cls: type) -> list[type]:
    """The contract classes in ``cls``'s MRO, most derived first."""
    return [klass for klass in cls.__mro__ if klass in OWN_MEMBERS]


def contract_members(cls: type) -> dict[str, Mark]:
    """Every contract member visible to ``cls``: the union over its contract bases, base-most
    first."""
    return {
        name: mark
        for klass in reversed(contract_classes(cls))
        for name, mark in OWN_MEMBERS[klass].items()
    }


def hosts_of(cls: type) -> tuple[str, ...]:
    """The hosts that call ``cls``: ``("srt",)`` for an SRT platform, ``("diffusion",)`` for a
    diffusion one."""
    return tuple(host for klass in contract_classes(cls) for host in _HOSTS.get(klass.__name__, ()))


def checked_classes(cls: type, *, whole_mro: bool) -> list[type]:
    """The classes whose names are checked for ``cls``: with ``whole_mro`` every non-contract class
    in its MRO; without (at definition), ``cls`` and its bases that are no platform (platform bases
    were checked already). None for a class that is no platform."""
    if not contract_classes(cls):
        return []
    return [
        klass
        for klass in cls.__mro__
        if klass not in (object, *OWN_MEMBERS)
        and (klass is cls or whole_mro or not hosts_of(klass))
    ]


def public_names(klass: type) -> list[tuple[str, Any]]:
    """The public names ``klass`` itself defines, with their class-``__dict__`` entries."""
    return [(name, raw) for name, raw in vars(klass).items() if not name.startswith("_")]


# --------------------------------------------------------------------------------------
# The interface table
# --------------------------------------------------------------------------------------


@cache
def interface_rows() -> tuple[dict[str, Any], ...]:
    """Every row of the interface table: a name of an SGLang platform class (with ``host``), or of
    another version."""
    import json  # only a platform subclass's definition reads the table
    from importlib.resources import files

    text = files(__package__).joinpath("interface_table.jsonl").read_text(encoding="utf-8")
    return tuple(json.loads(line) for line in text.splitlines())


@cache
def interface_row(name: str, host: str) -> dict[str, Any] | None:
    """The row of ``name`` for ``host`` (``""``: names of other SGLang versions), or ``None``."""
    rows = interface_rows()
    return next((row for row in rows if row["name"] == name and row.get("host", "") == host), None)


def render_call(call: dict[str, Any], name: str) -> str:
    """A host call as code, e.g. ``platform.get_kv_pool_cls(kind=...)`` or
    ``PlatformClass.name``."""
    receiver = "PlatformClass" if call.get("on_class") else "platform"
    parts = ["<arg>"] * call.get("args", 0) + [f"{k}=..." for k in call.get("kwargs", ())]
    return f"{receiver}.{name}" if call.get("read") else f"{receiver}.{name}({', '.join(parts)})"


# --------------------------------------------------------------------------------------
# Can an override accept the host's call? Is a name a likely misspelling?
# --------------------------------------------------------------------------------------


#: Descriptors that are not callable themselves but make a method of the class.
_METHOD_DESCRIPTORS = (partialmethod, singledispatchmethod)


def kind_of(raw: Any) -> str:
    """How a class-``__dict__`` entry binds when read from an instance."""
    if isinstance(raw, classmethod):
        return "classmethod"
    if isinstance(raw, (property, cached_property)):
        return "property"
    if isinstance(raw, type) or not (callable(raw) or isinstance(raw, _METHOD_DESCRIPTORS)):
        return "attribute"
    # A function binds (a descriptor); a staticmethod or a callable object without __get__ does not.
    is_bound = hasattr(type(raw), "__get__") and not isinstance(raw, staticmethod)
    return "method" if is_bound else "staticmethod"


def bound_signature(kind: str, func: Any, *, on_class: bool) -> inspect.Signature | None:
    """The signature a caller sees: ``self``/``cls`` dropped where the descriptor binds it; ``None``
    if unknown."""
    # only a platform subclass's definition needs it: a process on the fallback never imports it
    import inspect

    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return None
    params = list(signature.parameters.values())
    first = params[0].kind if params else inspect.Parameter.KEYWORD_ONLY
    if (
        kind == "classmethod" or (kind == "method" and not on_class)
    ) and first != first.VAR_POSITIONAL:
        # The first positional parameter takes self/cls; without one, nothing can take it (any
        # call fails below).
        return signature.replace(parameters=params[1:] if first < first.VAR_POSITIONAL else [])
    return signature


def _call_problem(raw: Any, call: dict[str, Any], name: str) -> tuple[str, str] | None:
    """Why ``raw`` (a class-``__dict__`` entry) cannot serve ``call``, or ``None`` when it can."""
    kind, shown, on_class = kind_of(raw), render_call(call, name), bool(call.get("on_class"))
    if call.get("read"):
        if kind in ("method", "classmethod", "staticmethod"):
            return "binding", f"the host reads it as data ({shown}); this defines a {kind}"
        if kind == "property" and on_class:
            return (
                "binding",
                f"the runtime reads it on the class ({shown}), where a property is no value",
            )
        return None
    if kind == "property":
        return "binding", f"the host calls it ({shown}); this defines a property"
    if kind == "attribute":
        return (
            "binding",
            f"the host calls it ({shown}); this sets it to a non-callable {type(raw).__name__}",
        )
    signature = bound_signature(kind, underlying(raw), on_class=on_class)
    if signature is None:
        return None
    try:
        signature.bind(*[None] * call.get("args", 0), **dict.fromkeys(call.get("kwargs", ())))
    except TypeError as exc:
        if kind == "method" and on_class:
            return (
                "binding",
                f"the host calls it on the class ({shown}); this defines an instance method",
            )
        bare = [p.replace(annotation=p.empty) for p in signature.parameters.values()]
        shape = signature.replace(parameters=bare, return_annotation=signature.empty)
        return "signature", f"{name}{shape} cannot accept the host's call {shown}: {exc}"
    return None


def host_call_problem(
    raw: Any, name: str, hosts: tuple[str, ...], release: str | None = None
) -> tuple[str, str] | None:
    """``("signature" | "binding", why)`` when ``raw``, defined as ``name``, cannot serve a call
    ``hosts`` make (``release``: those of that SGLang release and the runtime's own)."""
    for host in hosts:
        row = interface_row(name, host) or {"signature": ""}
        if release is not None:
            from .. import _sglang_releases as data

            row = data.as_in(release, row, name, host)
        for call in row.get("calls", ()):
            if found := _call_problem(raw, call, name):
                declared = f"; SGLang declares {name}{row['signature']}" if row["signature"] else ""
                return found[0], f"{found[1]} (called from {call['site']}){declared}"
    return None


@cache
def host_release() -> str | None:
    """The installed SGLang release whose calls a platform class must accept where it is not the
    newest (the one the interface table describes); ``None``: the table's (no SGLang installed,
    the newest release, a version no release data describes)."""
    from .._discovery import discover_entry_points

    if "sglang" not in discover_entry_points().distributions:
        return None
    from .. import _sglang_releases as data

    release = data.installed()[1]
    return None if release == data.releases()[-1] else release


def is_known_name(name: str) -> bool:
    """Whether a contract class or some SGLang version's platform classes declare ``name`` (so it is
    no typo)."""
    return any(name in members for members in OWN_MEMBERS.values()) or any(
        r["name"] == name for r in interface_rows()
    )


def near_misses(
    name: str, known: Iterable[str], *, cutoff: float, max_edits: int | None = None
) -> list[str]:
    """The ``known`` names ``name`` is probably a typo of, best first: at least ``cutoff`` similar
    (``difflib``'s ratio) and, with ``max_edits``, at most that many characters changed. Also the
    "did you mean" of an unknown plugin name (``_unknown_name``)."""
    import difflib  # (only where a name is no contract name)

    close = difflib.get_close_matches(name, list(known), n=3, cutoff=cutoff)
    if max_edits is None:
        return close

    def edits(guess: str) -> int:
        opcodes = difflib.SequenceMatcher(None, name, guess).get_opcodes()
        return sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in opcodes if tag != "equal")

    return [guess for guess in close if edits(guess) <= max_edits]


def misspelling(name: str, contract: Collection[str]) -> str | None:
    """Why public name ``name`` is likely a misspelling of a ``contract`` name, or ``None``: it is
    no known name, at most two edits away from one and at least 85% similar (``difflib``): close
    enough for ``synchronise`` or ``get_devce_name``, far enough for ``vendor_name`` or
    ``get_device_count``."""
    if is_known_name(name) or not (guess := near_misses(name, contract, cutoff=0.85, max_edits=2)):
        return None
    return (
        f"not a name SGLang calls; did you mean {guess[0]!r}? (a vendor helper that is no typo "
        f"can start with an underscore: '_{name}')"
    )


def enforce(cls: type) -> None:
    """Refuse ``cls`` when its host cannot call it; warn once per likely misspelling."""
    contract, hosts = contract_members(cls), hosts_of(cls)
    release = host_release() if hosts else None
    names = [
        (k, *entry) for k in checked_classes(cls, whole_mro=False) for entry in public_names(k)
    ]
    errors = [
        f"{k.__name__}.{n}: {found[1]}"
        for k, n, r in names
        if (found := host_call_problem(r, n, hosts, release))
    ]
    if errors:
        bases = ", ".join(k.__name__ for k in contract_classes(cls))
        raise TypeError(
            f"{cls.__name__} cannot serve its host's calls ({bases}): {len(errors)} "
            f"problem{'s' if len(errors) != 1 else ''}:\n  - " + "\n  - ".join(errors)
        )
    for klass, name, _ in names:
        warned = _WARNED.setdefault(klass, set())
        if name not in contract and name not in warned and (typo := misspelling(name, contract)):
            warned.add(name)
            logger.warning("%s.%s: %s", klass.__name__, name, typo)
