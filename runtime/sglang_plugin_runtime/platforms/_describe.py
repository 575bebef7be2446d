"""The platform contract member by member (``describe_contract``), for the docs and the conformance
check.

Off the serving path: a host process never imports it. What it describes is recorded by
``_contract``: the ``@active`` / ``@reserved`` markers of the methods, and the annotated class
attributes with their ``#:`` comments.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from . import _contract

MemberKind = Literal["method", "classmethod", "staticmethod", "property", "attribute"]
#: A ``#:`` comment line, then the annotated attribute it describes.
_ATTRIBUTE_COMMENT = re.compile(r"^\s*#:(.*)\n\s*(\w+)\s*:", re.M)


@dataclass(frozen=True)
class ContractMethod:
    """One public member of the platform contract, as code (and the docs) can read it.

    ``status`` is ``"active"`` when a host calls it today through ``current_platform`` and
    ``"reserved"`` when the seam exists but hosts still use hard-coded calls. ``required`` means the
    base implementation fails fast, so an out-of-tree platform must override it.
    """

    name: str
    status: _contract.Status
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
        if self.kind not in ("attribute", "property"):
            return _contract.bound_signature(self.kind, self.function, on_class=False)
        return None

    def render(self) -> str:
        """A one-line rendering such as ``get_device(device_id: int = 0) -> torch.device``."""
        signature = self.signature
        if signature is None:
            return self.name
        params = [
            p.replace(annotation=_unquoted(p.annotation)) for p in signature.parameters.values()
        ]
        unquoted = signature.replace(
            parameters=params, return_annotation=_unquoted(signature.return_annotation)
        )
        return f"{self.name}{unquoted}"


class _Text(str):
    """An annotation that prints as its source text (no quotes) in a rendered signature."""

    def __repr__(self) -> str:
        return str(self)


def _unquoted(annotation: Any) -> Any:
    # String annotations (``from __future__ import annotations``) print as they read in the source.
    return _Text(annotation) if isinstance(annotation, str) else annotation


def describe_contract(cls: type) -> list[ContractMethod]:
    """The contract ``cls`` must honour, base-most contract class first, in declaration order.

    A method's summary is its docstring's first paragraph; an attribute's, the ``#:`` comment above
    it.
    """
    members = []
    for klass in reversed(_contract.contract_classes(cls)):
        attributes = inspect.get_annotations(klass)
        try:
            source = inspect.getsource(klass)
        except (OSError, TypeError):  # no source to read the attributes' comments from
            source = ""
        comments = {name: text.strip() for text, name in _ATTRIBUTE_COMMENT.findall(source)}
        for name, mark in _contract.OWN_MEMBERS[klass].items():
            raw = None if name in attributes else vars(klass)[name]
            function = _contract.underlying(raw)
            kind: Any = "attribute" if raw is None else _contract.kind_of(raw)
            summary = (
                comments.get(name, "")
                if raw is None
                else " ".join((inspect.getdoc(function) or "").partition("\n\n")[0].split())
            )
            members.append(
                ContractMethod(name, mark.status, mark.required, kind, klass, summary, function)
            )
    return members


# --------------------------------------------------------------------------------------
# What each public name of a platform class means (doctor, the conformance check)
# --------------------------------------------------------------------------------------

#: ``signature`` and ``binding`` make a class unusable by its host (errors); ``misspelled`` is a
#: likely typo (a warning at definition, an error in the conformance check); ``retired`` and
#: ``unknown`` are information. Judged against SGLang releases (``release_problems``):
#: ``required`` (a member a release requires that the class leaves to its base) and ``uncalled``
#: (an override no judged release calls).
ProblemKind = Literal[
    "signature", "binding", "misspelled", "retired", "unknown", "required", "uncalled"
]
ERROR_KINDS: frozenset[str] = frozenset({"signature", "binding"})


@dataclass(frozen=True)
class OverrideProblem:
    """One public name of a platform class, as the check sees it (see ``ProblemKind``)."""

    owner: str
    attribute: str
    kind: ProblemKind
    message: str
    #: The SGLang releases the problem is about (judged against releases only).
    releases: tuple[str, ...] = ()

    @property
    def is_error(self) -> bool:
        """Whether the host's call would fail (the class is refused at definition)."""
        return self.kind in ERROR_KINDS

    def __str__(self) -> str:
        return self.message


def find_override_problems(cls: type, *, whole_mro: bool = True) -> list[OverrideProblem]:
    """What every public name of ``cls`` means for its hosts, without raising (see ``ProblemKind``).

    With ``whole_mro`` (the conformance check's mode) every non-contract class in the MRO is
    inspected, so a base created with checks bypassed is reported too; without, what the
    definition-time check inspects.
    """
    contract, hosts = _contract.contract_members(cls), _contract.hosts_of(cls)
    return [
        problem
        for klass in _contract.checked_classes(cls, whole_mro=whole_mro)
        for problem in check_class_namespace(klass, contract, hosts)
    ]


def check_class_namespace(
    klass: type, contract: Collection[str], hosts: tuple[str, ...]
) -> list[OverrideProblem]:
    """What each public name ``klass`` itself defines means for ``hosts`` (a host-call problem
    first, if any)."""
    problems = []
    for name, raw in _contract.public_names(klass):
        findings = [_contract.host_call_problem(raw, name, hosts)]
        if name not in contract:
            findings.append(_meaning(name, contract, hosts))
        problems += [
            OverrideProblem(
                klass.__name__,
                name,
                kind,  # type: ignore[arg-type]
                f"{klass.__name__}.{name}: {text}",
            )
            for kind, text in filter(None, findings)
        ]
    return problems


def _meaning(
    name: str, contract: Collection[str], hosts: tuple[str, ...]
) -> tuple[ProblemKind, str]:
    """What a public name that is no contract member means to the hosts."""
    released = next(v for v in reversed(host_versions()) if v != "main")
    for row in filter(None, (_contract.interface_row(name, host) for host in hosts)):
        if "replacement" in row:
            served = "a retired SGLang hook, still served with a DeprecationWarning"
            return "retired", f"{served}; override {row['replacement']} instead"
    if typo := _contract.misspelling(name, contract):
        return "misspelled", typo
    if not _contract.is_known_name(name):
        return "unknown", f"the platform's own API; not called by SGLang {released}"
    return "unknown", f"a name of {_declared_by(name)}; not called here by SGLang {released}"


def _declared_by(name: str) -> str:
    """Who declares ``name``: another SGLang version, our contract classes, or SGLang's classes in
    the table."""
    if other_version := _contract.interface_row(name, ""):
        return str(other_version["origin"])
    ours = [klass.__name__ for klass, members in _contract.OWN_MEMBERS.items() if name in members]
    sglangs = dict.fromkeys(
        row["owner"] for row in _contract.interface_rows() if row["name"] == name and "owner" in row
    )
    return " and ".join(ours or sglangs)


def release_problems(cls: type, releases: Sequence[str]) -> list[OverrideProblem]:
    """What SGLang ``releases`` make of platform class ``cls``, from each release's contract data:
    a member a release requires (its base raises ``NotImplementedError``) that ``cls`` leaves to a
    base (``required``); an override that cannot accept a call the release makes (``signature``,
    ``binding``); an override of a member that some release declares and judged ones do not
    (``uncalled``: never called there). One problem per finding, with the releases it holds in."""
    from .. import _sglang_releases as data

    hosts = _contract.hosts_of(cls) or (
        ("srt",) if any(k.__name__ == "SRTPlatform" for k in cls.__mro__) else ()
    )
    bases = data.base_classes()
    mro = [k for k in cls.__mro__ if k is not object]
    is_base = {k: k in _contract.OWN_MEMBERS or (k.__module__, k.__name__) in bases for k in mro}
    # the vendor's classes: SGLang's own (its bases, its in-tree platforms) are the host's
    vendor = [k for k in mro if not is_base[k] and not k.__module__.startswith("sglang.")]
    # (kind, name, the message before and after the releases) -> the releases
    found: dict[tuple[str, str, str, str], list[str]] = {}
    for release in releases:
        for host in hosts:
            for name, shape in data.contract(release, host).items():
                owner = next((k for k in mro if name in vars(k)), None)
                if shape.get("required") and (owner is None or is_base[owner]):
                    head = f"{cls.__name__}.{name}() is required by SGLang "
                    tail = (
                        " (its base raises NotImplementedError) and the class leaves it to "
                        f"{'no class' if owner is None else owner.__name__}: override it"
                    )
                    found.setdefault(("required", name, head, tail), []).append(release)
            calls = data.sections(release)[f"{host} calls"]
            for klass in vendor:
                for name, raw in _contract.public_names(klass):
                    for call in calls.get(name, ()):
                        if problem := _contract._call_problem(raw, call, name):
                            head = f"{klass.__name__}.{name}: {problem[1]} (SGLang "
                            key = (problem[0], name, head, f", {call['site']})")
                            found.setdefault(key, []).append(release)
    for host in hosts:
        for name, where in data.declared(host).items():
            definer = next((k for k in vendor if name in vars(k)), None)
            if definer is not None and (lacking := [r for r in releases if r not in where]):
                head = f"{definer.__name__}.{name}: never called by SGLang "
                tail = f": a platform member of SGLang {data.describe(where)} only"
                found[("uncalled", name, head, tail)] = lacking
    return [
        OverrideProblem(
            cls.__name__,
            name,
            cast(ProblemKind, kind),
            head + data.describe(held) + tail,
            tuple(held),
        )
        for (kind, name, head, tail), held in found.items()
    ]


def host_versions() -> tuple[str, ...]:
    """The supported SGLang versions, oldest first, as the interface table's rows name them
    (``main`` last)."""
    named = {
        v
        for row in _contract.interface_rows()
        for v in row.get("versions", []) + row.get("served_by", [])
    }
    return tuple(
        sorted(named, key=lambda v: (v == "main", [int(p) for p in v.split(".") if p.isdigit()]))
    )
