"""Conformance check for a platform class: every problem at once, before a host finds one.

It reports identity attributes a host validates, required methods still inheriting the
fail-fast base, probed methods whose results do not match the contract's annotations,
overrides that cannot accept the host's calls, likely misspellings, and retired hooks the
class still relies on (also in classes created with the definition-time check bypassed).
This is where strictness lives: a deployment only warns about a misspelling; the plugin's
own tests fail on it. Probes make the calls the hosts make (the interface table); methods
that touch the device are called only while a simulated device of the platform's
``device_type`` is active.

Classes built on SGLang's own platform bases (a plugin generated with ``host_api=sglang``)
are judged against the same contract, mapped as ``_host_classes`` describes, so a vendor
needs no copy of the class on our bases to test it.
"""

from __future__ import annotations

import collections.abc
import inspect
import itertools
import sys
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._simulated_device import active_simulated_device
from ..platforms import _contract
from ..platforms._describe import ERROR_KINDS, ContractMethod, OverrideProblem
from ..platforms._selection import out_of_tree_identity_problems
from ._host_classes import RuntimePlatformView, has_member, platform_view

__all__ = ["ConformanceProblem", "assert_platform_conformance", "check_platform_conformance"]

_NO_RESULT = object()


@dataclass(frozen=True)
class ConformanceProblem:
    """One defect of a platform class.

    ``kind`` is one of ``not_a_platform``, ``identity``, ``attribute_type``,
    ``instantiation``, ``not_implemented``, ``return_type``, ``raises``, ``misspelled``,
    ``retired``, ``signature``, ``binding``.
    """

    attribute: str
    kind: str
    message: str

    def __str__(self) -> str:
        return self.message


#: Example arguments for the probes, by the contract's parameter name (several values: one probe
#: each).
_EXAMPLE_ARGUMENTS: dict[str, tuple[Any, ...]] = {
    "device_id": (0,),
    "device": (None,),
    "mode": (None,),
    "kind": ("mha", "mla", "dsa"),
}


def _probes(view: RuntimePlatformView) -> tuple[list[_Probe], list[_Probe]]:
    """(cheap, device) probes of the class's contract: the calls its hosts make (the interface
    table).

    A member is probed with each of its hosts' call forms whose arguments have example values; a
    member the hosts never call, with its leading example arguments. Members whose row has no
    ``probe`` (effects, or real inputs) are never called.
    """
    probes: dict[str, dict[_Probe, None]] = {"cheap": {}, "device": {}}
    for host in view.hosts:
        for row in (
            r for r in _contract.interface_rows() if r.get("host") == host and r.get("probe")
        ):
            member = view.contract.get(row["name"])
            if member is None or member.kind in ("attribute", "property"):
                continue
            names = list(member.signature.parameters) if member.signature is not None else []
            # Uncalled: positionally, every leading parameter that has an example (as the probes
            # always did).
            leading = len(list(itertools.takewhile(_EXAMPLE_ARGUMENTS.__contains__, names)))
            calls = [c for c in row.get("calls", ()) if not c.get("read") and not c.get("on_class")]
            for form in calls or [{"args": leading}]:
                count, keywords = form.get("args", 0), list(form.get("kwargs", ()))
                wanted = names[:count] + keywords
                if all(n in _EXAMPLE_ARGUMENTS for n in wanted):
                    for values in itertools.product(*(_EXAMPLE_ARGUMENTS[n] for n in wanted)):
                        named = tuple(zip(keywords, values[count:], strict=True))
                        probes[row["probe"]][(row["name"], values[:count], named)] = None
    return list(probes["cheap"]), list(probes["device"])


_Probe = tuple[str, tuple[Any, ...], tuple[tuple[str, Any], ...]]


def check_platform_conformance(
    cls: type,
    *,
    out_of_tree: bool = True,
    include_reserved: bool = True,
    device_present: bool = False,
) -> list[ConformanceProblem]:
    """Every conformance problem of platform class ``cls`` (an empty list when it conforms).

    ``out_of_tree`` demands ``_enum is PlatformEnum.OOT`` (a plugin platform);
    ``include_reserved=False`` stops requiring the reserved (not yet called) methods;
    ``device_present``: the class's device is here (its plugin's ``activate()`` said so), so the
    calls that need it (memory, name, capability) are made too, as under a simulated device.
    """
    view = platform_view(cls)
    if view is None:
        message = (
            f"{cls!r} is not a platform class: subclass SRTPlatform or MMPlatform "
            f"(sglang_plugin_runtime's, "
        )
        message += "or SGLang's own sglang.srt.platforms.interface.SRTPlatform)"
        return [ConformanceProblem("<class>", "not_a_platform", message)]
    name = cls.__name__
    problems: list[ConformanceProblem] = []
    problems.extend(_identity_problems(view, out_of_tree))
    problems.extend(
        ConformanceProblem(p.attribute, p.kind, p.message) for p in _override_findings(view)
    )
    contract = view.contract
    problems.extend(_attribute_type_problems(view))

    # A member whose override cannot take the host's call is not probed with that call again.
    reported: set[str] = {p.attribute for p in problems if p.kind in ERROR_KINDS}
    for member in contract.values():
        if not member.required or (member.status == "reserved" and not include_reserved):
            continue
        implementation = inspect.getattr_static(cls, member.name, None)
        if implementation is view.base_definition(member):
            reported.add(member.name)
            source = (
                "is not defined"
                if implementation is None
                else f"still raises NotImplementedError from {member.qualname}"
            )
            message = (
                f"{name}.{member.name}() is required ({member.status}) and {source}: override it"
            )
            problems.append(ConformanceProblem(member.name, "not_implemented", message))

    try:
        instance = cls()
    except Exception as exc:
        problems.append(
            ConformanceProblem(
                "__init__", "instantiation", f"{name}() raised {type(exc).__name__}: {exc}"
            )
        )
        return problems

    probes, device_probes = _probes(view)
    simulation = active_simulated_device(getattr(cls, "device_type", None))
    if simulation is not None or device_present:
        probes.extend(device_probes)
    for method, args, kwargs in probes:
        probed = contract.get(method)
        if probed is None or method in reported or not has_member(cls, method):
            # not in this contract, already reported, or a contract name the host's base lacks
            continue
        if probed.status == "reserved" and probed.required and not include_reserved:
            continue
        problem = _probe(view, instance, probed, args, dict(kwargs))
        if problem is not None:
            if problem.kind == "not_implemented":
                reported.add(method)
            problems.append(problem)

    if simulation is not None and "set_device" in contract and "get_device" not in reported:
        problem = _probe_set_device(view, instance, contract["set_device"])
        if problem is not None:
            problems.append(problem)
    return problems


def assert_platform_conformance(
    cls: type, *, out_of_tree: bool = True, include_reserved: bool = True
) -> None:
    """Raise ``AssertionError`` listing every conformance problem of ``cls``."""
    __tracebackhide__ = True
    problems = check_platform_conformance(
        cls, out_of_tree=out_of_tree, include_reserved=include_reserved
    )
    if problems:
        label = getattr(cls, "__name__", repr(cls))
        lines = "\n".join(f"  - [{p.kind}] {p.message}" for p in problems)
        raise AssertionError(
            f"{label} does not conform to the platform contract "
            f"({len(problems)} problem{'s' if len(problems) != 1 else ''}):\n{lines}"
        )


# --------------------------------------------------------------------------------------


def _override_findings(view: RuntimePlatformView) -> list[OverrideProblem]:
    """The override findings the kit fails on: what breaks a host call, misspellings, and retired
    hooks the class relies on (it defines no replacement). A vendor's own API and other versions'
    names pass."""
    findings = []
    for problem in view.override_problems():
        if problem.kind == "retired":
            row = next(
                r
                for h in view.hosts
                if (r := _contract.interface_row(problem.attribute, h)) is not None
            )
            replacement = view.contract[row["replacement"].split("(")[0]]
            if inspect.getattr_static(view.cls, replacement.name, None) is not view.base_definition(
                replacement
            ):
                # the class overrides the replacement too: the retired name only serves older hosts
                continue
        if problem.kind != "unknown":
            findings.append(problem)
    return findings


def _identity_problems(view: RuntimePlatformView, out_of_tree: bool) -> list[ConformanceProblem]:
    """What selection would refuse (``out_of_tree_identity_problems``), and identity left at
    DeviceMixin's."""
    name, problems = view.cls.__name__, []
    refused = {text.split(" ", 1)[0]: text for text in out_of_tree_identity_problems(view.cls)}
    if out_of_tree and "_enum" in refused:
        enum_value = getattr(view.cls, "_enum", None)
        message = (
            f"{name}._enum is {enum_value}; an out-of-tree platform must set _enum = "
            f"PlatformEnum.OOT"
        )
        problems.append(ConformanceProblem("_enum", "identity", message))
    for attribute in ("device_name", "device_type"):
        if attribute in refused:
            problems.append(
                ConformanceProblem(attribute, "identity", f"{name}.{refused[attribute]}")
            )
        elif out_of_tree and _defined_only_by_contract(view, attribute):
            message = (
                f"{name}.{attribute} is DeviceMixin's placeholder "
                f"{getattr(view.cls, attribute)!r}; set it on your "
                "platform (or device mixin) class"
            )
            problems.append(ConformanceProblem(attribute, "identity", message))
    return problems


def _defined_only_by_contract(view: RuntimePlatformView, attribute: str) -> bool:
    for klass in view.cls.__mro__:
        if attribute in klass.__dict__:
            return view.is_contract_class(klass)
    return True


def _attribute_type_problems(view: RuntimePlatformView) -> list[ConformanceProblem]:
    cls = view.cls
    problems = []
    for member in view.contract.values():
        if member.kind != "attribute" or member.name in ("device_name", "device_type"):
            continue
        if not has_member(cls, member.name):
            continue  # a contract attribute the host's base does not declare
        annotation = inspect.get_annotations(member.declared_in).get(member.name)
        hint = _resolve(annotation, member.declared_in)
        if hint is _NO_RESULT:
            continue
        value = getattr(cls, member.name, None)
        if not _conforms(view.to_runtime(value), hint):
            message = (
                f"{cls.__name__}.{member.name} is {value!r}; the contract declares "
                f"{_hint_text(annotation)}"
            )
            problems.append(ConformanceProblem(member.name, "attribute_type", message))
    return problems


def _probe(
    view: RuntimePlatformView,
    instance: Any,
    member: ContractMethod,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> ConformanceProblem | None:
    cls_name = type(instance).__name__
    call = f"{cls_name}.{member.name}({_call_text(args, kwargs)})"
    try:
        result = getattr(instance, member.name)(*args, **kwargs)
    except NotImplementedError as exc:
        return ConformanceProblem(
            member.name, "not_implemented", f"{call} raised NotImplementedError: {exc}"
        )
    except Exception as exc:
        return ConformanceProblem(
            member.name, "raises", f"{call} raised {type(exc).__name__}: {exc}"
        )
    declared = member.declared_in.__dict__.get(member.name)
    function = getattr(declared, "__func__", declared)
    annotation = getattr(function, "__annotations__", {}).get("return")
    hint = _resolve(annotation, member.declared_in)
    if hint is _NO_RESULT or _conforms(view.to_runtime(result), hint):
        return None
    message = (
        f"{call} returned {result!r} ({type(result).__name__}); the contract declares "
        f"{_hint_text(annotation)}"
    )
    return ConformanceProblem(member.name, "return_type", message)


def _probe_set_device(
    view: RuntimePlatformView, instance: Any, member: ContractMethod
) -> ConformanceProblem | None:
    try:
        device = instance.get_device(0)
    except Exception:
        return None
    return _probe(view, instance, member, (device,), {})


def _call_text(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    return ", ".join(parts)


def _hint_text(annotation: Any) -> str:
    return annotation if isinstance(annotation, str) else repr(annotation)


def _resolve(annotation: Any, owner: type) -> Any:
    """Evaluate a (string) annotation from the contract's module; ``_NO_RESULT`` if it cannot."""
    if annotation is None:
        return _NO_RESULT
    if not isinstance(annotation, str):
        return annotation
    module = sys.modules.get(owner.__module__)
    namespace: dict[str, Any] = dict(vars(module)) if module is not None else {}
    namespace.setdefault("typing", typing)
    torch = sys.modules.get("torch")
    if torch is not None:
        namespace["torch"] = torch
    try:
        return eval(annotation, namespace)
    except Exception:
        return _NO_RESULT


def _conforms(value: Any, hint: Any) -> bool:
    """A small runtime type check covering the forms the contract's annotations use."""
    if hint is Any or hint is inspect.Parameter.empty:
        return True
    if hint is None or hint is type(None):
        return value is None
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Union or (hasattr(types, "UnionType") and origin is types.UnionType):
        return any(_conforms(value, arg) for arg in args)
    if origin is typing.Literal:
        return value in args
    if origin is type:
        return isinstance(value, type)
    if origin is tuple:
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_conforms(v, args[0]) for v in value)
        return len(value) == len(args) and all(
            _conforms(v, a) for v, a in zip(value, args, strict=True)
        )
    if origin in (list, collections.abc.Sequence):
        return (
            isinstance(value, list) and all(_conforms(v, args[0]) for v in value)
            if args
            else isinstance(value, list)
        )
    if origin is dict:
        return isinstance(value, dict)
    if origin is collections.abc.Callable or hint is Callable:
        return callable(value)
    if origin is collections.abc.Iterator:
        return isinstance(value, collections.abc.Iterator)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(hint, type):
        return isinstance(value, hint)
    return True
