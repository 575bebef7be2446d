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
from dataclasses import dataclass
from typing import Any

from .._simulated_device import active_simulated_device
from ..platforms import _contract
from ..platforms._describe import ERROR_KINDS, ContractMethod
from ..platforms._selection import out_of_tree_identity_problems
from ._host_classes import PlatformView, has_member, platform_view


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


#: Example arguments for the probes, by the contract's parameter name, or ``method.parameter`` for
#: one method (several values: one probe each).
_EXAMPLE_ARGUMENTS = {
    "device_id": (0,),
    # SGLang 0.5.23 asks get_device(None) when --device is not given (srt/utils/common.py)
    "get_device.device_id": (0, None),
    "device": (None,),
    "mode": (None,),
    "kind": ("mha", "mla", "dsa"),
}


def _probes(view: PlatformView, device: bool) -> list[tuple[Any, ...]]:
    """The probes of the class's contract: the calls its hosts make (the interface table), the
    cheap ones first, then (with ``device``) those that need the device.

    A member is probed with each of its hosts' call forms whose arguments have example values; a
    member the hosts never call, with its leading example arguments. Members whose row has no
    ``probe`` (effects, or real inputs) are never called.
    """
    probes: dict[str, dict[tuple[Any, ...], None]] = {"cheap": {}, "device": {}}
    for row in (r for h in view.hosts for r in _contract.interface_rows() if r.get("host") == h):
        member = view.contract.get(row["name"])
        # attributes and properties have no signature: they are read, not called
        if not row.get("probe") or member is None or member.signature is None:
            continue
        names = list(member.signature.parameters)
        # Uncalled: positionally, every leading parameter that has an example (as the probes
        # always did).
        leading = len(list(itertools.takewhile(_EXAMPLE_ARGUMENTS.__contains__, names)))
        calls = [c for c in row.get("calls", ()) if not c.get("read") and not c.get("on_class")]
        for form in calls or [{"args": leading}]:
            count, keywords = form.get("args", 0), list(form.get("kwargs", ()))
            # a parameter without an example value leaves nothing to call it with
            wanted = (
                _EXAMPLE_ARGUMENTS.get(f"{row['name']}.{n}", _EXAMPLE_ARGUMENTS.get(n, ()))
                for n in names[:count] + keywords
            )
            for values in itertools.product(*wanted):
                named = tuple(zip(keywords, values[count:], strict=True))
                probes[row["probe"]][(row["name"], values[:count], named)] = None
    return [*probes["cheap"], *(probes["device"] if device else ())]


def check_platform_conformance(
    cls: type,
    *,
    out_of_tree: bool = True,
    include_reserved: bool = True,
    device_present: bool = False,
    release: str | None = None,
) -> list[ConformanceProblem]:
    """Every conformance problem of platform class ``cls`` (an empty list when it conforms).

    ``out_of_tree`` demands ``_enum is PlatformEnum.OOT`` (a plugin platform);
    ``include_reserved=False`` stops requiring the reserved (not yet called) methods;
    ``device_present``: the class's device is here (its plugin's ``activate()`` said so), so the
    calls that need it (memory, name, capability) are made too, as under a simulated device;
    ``release`` (an SGLang release such as ``"0.5.21"``, see :func:`sglang_releases`): also what
    that release requires (each method its base leaves raising ``NotImplementedError``) and calls
    (each override accepts its calls), from the runtime's data of that release's wheel.
    """
    view = platform_view(cls)
    if view is None:
        message = (
            f"{cls!r} is not a platform class: subclass SRTPlatform or MMPlatform "
            "(sglang_plugin_runtime's, or SGLang's own sglang.srt.platforms.interface.SRTPlatform)"
        )
        return [ConformanceProblem("<class>", "not_a_platform", message)]
    name, contract = cls.__name__, view.contract
    problems = [
        *_identity_problems(view, out_of_tree),
        *_override_problems(view),
        *_attribute_type_problems(view),
    ]
    # Required reserved members are excused without include_reserved: not required, not probed.
    excused = (
        set()
        if include_reserved
        else {m.name for m in contract.values() if m.required and m.status == "reserved"}
    )
    # A member whose override cannot take the host's call is not probed with that call again.
    reported = excused | {p.attribute for p in problems if p.kind in ERROR_KINDS}
    for member in contract.values():
        if member.required and member.name not in excused and view.inherits_base(member):
            reported.add(member.name)
            source = (
                "is not defined"
                if view.base_definition(member) is None  # what the class has: it inherits it
                else f"still raises NotImplementedError from {member.qualname}"
            )
            message = (
                f"{name}.{member.name}() is required ({member.status}) and {source}: override it"
            )
            problems.append(ConformanceProblem(member.name, "not_implemented", message))
    if release is not None:
        from .._sglang_releases import check_release
        from ..platforms._describe import release_problems

        seen = {(p.attribute, p.kind) for p in problems}
        for found in release_problems(cls, [check_release(release)]):
            kind = "not_implemented" if found.kind == "required" else found.kind
            if found.kind != "uncalled" and (found.attribute, kind) not in seen:
                reported.add(found.attribute)
                problems.append(ConformanceProblem(found.attribute, kind, found.message))

    try:
        instance = cls()
    except Exception as exc:
        message = f"{name}() raised {type(exc).__name__}: {exc}"
        return [*problems, ConformanceProblem("__init__", "instantiation", message)]

    simulation = active_simulated_device(getattr(cls, "device_type", None))
    for method, args, kwargs in _probes(view, simulation is not None or device_present):
        # already reported (or excused), or a contract name the host's base lacks
        if method in reported or not has_member(cls, method):
            continue
        if problem := _probe(view, instance, contract[method], args, dict(kwargs)):
            if problem.kind == "not_implemented":
                reported.add(method)
            problems.append(problem)

    if simulation is not None and "set_device" in contract and "get_device" not in reported:
        try:
            device = instance.get_device(0)
        except Exception:
            return problems
        if problem := _probe(view, instance, contract["set_device"], (device,), {}):
            problems.append(problem)
    return problems


def assert_platform_conformance(
    cls: type,
    *,
    out_of_tree: bool = True,
    include_reserved: bool = True,
    release: str | None = None,
) -> None:
    """Raise ``AssertionError`` listing every conformance problem of ``cls`` (``release``: judged
    against that SGLang release too)."""
    __tracebackhide__ = True
    problems = check_platform_conformance(
        cls, out_of_tree=out_of_tree, include_reserved=include_reserved, release=release
    )
    if problems:
        label = getattr(cls, "__name__", repr(cls))
        lines = "\n".join(f"  - [{p.kind}] {p.message}" for p in problems)
        against = f" of SGLang {release}" if release else ""
        raise AssertionError(
            f"{label} does not conform to the platform contract{against} "
            f"({len(problems)} problem{'s' if len(problems) != 1 else ''}):\n{lines}"
        )


# --------------------------------------------------------------------------------------


def _override_problems(view: PlatformView) -> list[ConformanceProblem]:
    """The override findings the kit fails on: what breaks a host call, misspellings, and retired
    hooks the class relies on (it defines no replacement). A vendor's own API and other versions'
    names pass."""
    problems = []
    for problem in view.override_problems():
        if problem.kind == "retired":
            rows = (_contract.interface_row(problem.attribute, h) for h in view.hosts)
            replacement = next(r for r in rows if r is not None)["replacement"].split("(")[0]
            if not view.inherits_base(view.contract[replacement]):
                # the class overrides the replacement too: the retired name only serves older hosts
                continue
        if problem.kind != "unknown":
            problems.append(ConformanceProblem(problem.attribute, problem.kind, problem.message))
    return problems


def _identity_problems(view: PlatformView, out_of_tree: bool) -> list[ConformanceProblem]:
    """What selection would refuse (``out_of_tree_identity_problems``), and identity left at
    DeviceMixin's."""
    cls = view.cls
    name = cls.__name__
    refused = {text.split(" ", 1)[0]: text for text in out_of_tree_identity_problems(cls)}
    messages = {}
    if out_of_tree and "_enum" in refused:
        messages["_enum"] = (
            f"{name}._enum is {getattr(cls, '_enum', None)}; an out-of-tree platform must set "
            "_enum = PlatformEnum.OOT"
        )
    for attribute in ("device_name", "device_type"):
        # where the class gets the attribute from: a contract class only holds a placeholder
        owner = next((k for k in cls.__mro__ if attribute in vars(k)), None)
        if attribute in refused:
            messages[attribute] = f"{name}.{refused[attribute]}"
        elif out_of_tree and (owner is None or view.is_contract_class(owner)):
            messages[attribute] = (
                f"{name}.{attribute} is DeviceMixin's placeholder "
                f"{getattr(cls, attribute)!r}; set it on your platform (or device mixin) class"
            )
    return [ConformanceProblem(a, "identity", m) for a, m in messages.items()]


def _attribute_type_problems(view: PlatformView) -> list[ConformanceProblem]:
    problems = []
    for member in view.contract.values():
        # identity is _identity_problems'; a contract attribute the host's base does not declare
        if member.kind != "attribute" or member.name in ("device_name", "device_type"):
            continue
        if has_member(view.cls, member.name):
            value = getattr(view.cls, member.name, None)
            if declared := _mismatch(view, member, value):
                message = f"{view.cls.__name__}.{member.name} is {value!r}; the contract declares "
                problems.append(
                    ConformanceProblem(member.name, "attribute_type", message + declared)
                )
    return problems


def _probe(
    view: PlatformView,
    instance: Any,
    member: ContractMethod,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> ConformanceProblem | None:
    arguments = ", ".join([*map(repr, args), *(f"{k}={v!r}" for k, v in kwargs.items())])
    call = f"{type(instance).__name__}.{member.name}({arguments})"
    try:
        result = getattr(instance, member.name)(*args, **kwargs)
    except NotImplementedError as exc:
        message = f"{call} raised NotImplementedError: {exc}"
        return ConformanceProblem(member.name, "not_implemented", message)
    except Exception as exc:
        return ConformanceProblem(
            member.name, "raises", f"{call} raised {type(exc).__name__}: {exc}"
        )
    text = _mismatch(view, member, result)
    if text is None:
        return None
    message = f"{call} returned {result!r} ({type(result).__name__}); the contract declares {text}"
    return ConformanceProblem(member.name, "return_type", message)


def _mismatch(view: PlatformView, member: ContractMethod, value: Any) -> str | None:
    """The contract's annotation of ``member`` (an attribute's, or a method's return) as text when
    ``value`` does not match it; ``None`` when it does, or when it cannot be evaluated (in the
    contract's module, which is imported: it defines the class; torch only where it is
    imported)."""
    annotation = (
        inspect.get_annotations(member.declared_in).get(member.name)
        if member.kind == "attribute"
        else getattr(member.function, "__annotations__", {}).get("return")
    )
    namespace = {"typing": typing, **vars(sys.modules[member.declared_in.__module__])}
    if "torch" in sys.modules:
        namespace["torch"] = sys.modules["torch"]
    try:
        hint = eval(annotation, namespace) if isinstance(annotation, str) else annotation
    except Exception:
        return None
    if annotation is None or _conforms(view.to_runtime(value), hint):
        return None
    return annotation if isinstance(annotation, str) else repr(annotation)


def _conforms(value: Any, hint: Any) -> bool:
    """A small runtime type check covering the forms the contract's annotations use: ``Any``,
    ``None``, unions, fixed-length ``tuple[...]``, ``list[X]``, ``dict[...]``, ``Callable[...]``,
    ``Iterator[...]`` and classes."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return True
    if hint is None or hint is type(None):
        return value is None
    if origin in (typing.Union, types.UnionType):
        return any(_conforms(value, arg) for arg in args)
    if origin is tuple:
        return (
            isinstance(value, tuple)
            and len(value) == len(args)
            and all(map(_conforms, value, args))
        )
    if origin is list:
        return isinstance(value, list) and all(_conforms(v, args[0]) for v in value)
    if origin in (dict, collections.abc.Callable, collections.abc.Iterator):
        return isinstance(value, origin)
    if hint is int or hint is float:
        return isinstance(value, (int, hint)) and not isinstance(value, bool)
    return isinstance(value, hint) if isinstance(hint, type) else True
