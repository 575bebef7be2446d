"""What the conformance check sees of a platform class: built on our contract, or on SGLang's own.

A plugin generated with ``host_api=sglang`` subclasses SGLang's
``sglang.srt.platforms.interface.SRTPlatform`` and
``sglang.srt.platforms.device_mixin.DeviceMixin``, not ours. Our contract mirrors SGLang 0.5.23's
(``tests_sglang/test_conformance_agreement.py`` proves that both agree), so such a class is judged
against our contract through a :class:`PlatformView` with SGLang's bases:

- SGLang's two contract classes stand for ours (``SRTPlatform`` -> ``SRTPlatform``, ``DeviceMixin``
  -> ``DeviceMixin``); a required method still inheriting SGLang's fail-fast definition is not
  implemented.
- Values of SGLang's platform types are mapped onto ours before their types are checked:
  ``PlatformEnum`` and ``CpuArchEnum`` members by name, ``DeviceCapability`` and
  ``PlatformCapabilities`` by fields.
- The class itself is used as it is. Its methods run on SGLang's base, exactly as SGLang would run
  them; nothing is copied onto our bases (a copy would break zero-argument ``super()``) and nothing
  is mutated. Every problem names the vendor's own classes.
- SGLang's classes are recognised by the names and modules in the class's MRO. Judging one of our
  own classes never imports ``sglang``; judging an SGLang one needs nothing beyond what the class
  already imported.

SGLang's in-tree implementation classes in the MRO (a vendor building on ``CudaSRTPlatform``, say)
belong to the host, not the plugin: their names are not checked against our contract.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import logging
from typing import Any, cast

from ..platforms import _contract
from ..platforms._describe import (
    ContractMethod,
    OverrideProblem,
    check_class_namespace,
    describe_contract,
    find_override_problems,
)
from ..platforms.device_mixin import CpuArchEnum, DeviceCapability, DeviceMixin, PlatformEnum
from ..platforms.interface import PlatformCapabilities, SRTPlatform

logger = logging.getLogger(__name__)

#: SGLang's contract classes, by (module, name), and our class that stands for each.
_HOST_CONTRACT_CLASSES: dict[tuple[str, str], type] = {
    ("sglang.srt.platforms.device_mixin", "DeviceMixin"): DeviceMixin,
    ("sglang.srt.platforms.interface", "SRTPlatform"): SRTPlatform,
}
#: Our value types, by the name SGLang gives its own.
_RUNTIME_VALUE_TYPES = {
    kind.__name__: kind
    for kind in (PlatformEnum, CpuArchEnum, DeviceCapability, PlatformCapabilities)
}

_MISSING = object()


def has_member(cls: type, name: str) -> bool:
    """Whether ``cls`` (or a base) defines ``name`` at all, without running a descriptor."""
    return inspect.getattr_static(cls, name, _MISSING) is not _MISSING


class PlatformView:
    """A platform class as the check judges it: built on the runtime's own contract classes, judged
    as it is; or on SGLang's (``host_bases``), judged against ours (see the module docstring)."""

    def __init__(self, cls: type, host_bases: tuple[type, ...] = ()) -> None:
        self.cls = cls
        #: SGLang's contract classes in the class's MRO, most derived first (none: built on ours).
        self.host_bases = host_bases
        ours = {_HOST_CONTRACT_CLASSES[(base.__module__, base.__name__)] for base in host_bases}
        # SGLang's SRTPlatform includes its DeviceMixin, as ours does: the most derived counterpart
        # decides the contract and the hosts.
        judged = SRTPlatform if SRTPlatform in ours else DeviceMixin if ours else cls
        self.contract = {m.name: m for m in describe_contract(judged)}
        #: The hosts that call the class (``"srt"``, ``"diffusion"``); their calls are what the
        #: class must accept.
        self.hosts = _contract.hosts_of(judged)

    def override_problems(self) -> list[OverrideProblem]:
        """What each public name anywhere in the class's MRO means for the hosts that call it; on
        SGLang's bases, our override check applied to each of the vendor's own classes in the MRO
        (never SGLang's)."""
        if not self.host_bases:
            return find_override_problems(self.cls, whole_mro=True)
        # The per-class check the definition-time enforcement uses; SGLang's bases are not ours, so
        # find_override_problems() cannot walk this MRO itself. SGLang's SRTPlatform is called by
        # the LLM host. (None of our contract classes is in this MRO: they are all DeviceMixin.)
        return [
            problem
            for klass in self.cls.__mro__
            if klass is not object and (klass.__module__ or "").split(".")[0] != "sglang"
            for problem in check_class_namespace(klass, self.contract, self.hosts)
        ]

    def base_definition(self, member: ContractMethod) -> Any:
        """The contract's own (for required members: fail-fast) definition of ``member``; on
        SGLang's bases, SGLang's (``None`` when they do not declare it)."""
        bases = self.host_bases or (member.declared_in,)
        return next((vars(b)[member.name] for b in bases if member.name in vars(b)), None)

    def inherits_base(self, member: ContractMethod) -> bool:
        """Whether the class leaves ``member`` at the contract's definition (for a required one: it
        still fails fast)."""
        return inspect.getattr_static(self.cls, member.name, None) is self.base_definition(member)

    def is_contract_class(self, klass: type) -> bool:
        """Whether ``klass`` declares the contract (so a value it sets is only a placeholder)."""
        return klass in (self.host_bases or _contract.OWN_MEMBERS)

    def to_runtime(self, value: Any) -> Any:
        """``value`` as the contract's annotations expect it: a value of one of SGLang's platform
        types as the same value of ours; anything else (and every value of a class on our bases)
        unchanged.

        A value that cannot be mapped (a member or field ours lacks) stays SGLang's, so the type
        check that follows reports it with its real ``repr``.
        """
        kind = type(value)
        target = _RUNTIME_VALUE_TYPES.get(kind.__name__)
        # where SGLang defines the value types its platform methods return
        if (
            not self.host_bases
            or target is None
            or not kind.__module__.startswith("sglang.srt.platforms.")
        ):
            return value
        try:
            if isinstance(value, enum.Enum):
                return cast("type[enum.Enum]", target)[value.name]
            # the named fields of a NamedTuple, msgspec ``Struct`` or dataclass instance
            names = getattr(kind, "_fields", None) or getattr(kind, "__struct_fields__", None)
            names = names or [field.name for field in dataclasses.fields(value)]
            return target(**{name: getattr(value, name) for name in names})
        except (KeyError, TypeError, ValueError) as exc:
            logger.debug("cannot map %r onto %s: %s", value, target.__qualname__, exc)
            return value


def platform_view(cls: Any) -> PlatformView | None:
    """How to judge ``cls``: on our contract, on SGLang's bases mapped onto ours, or ``None`` (no
    platform)."""
    if not isinstance(cls, type):
        return None
    if issubclass(cls, DeviceMixin):
        return PlatformView(cls)
    host_bases = tuple(
        klass
        for klass in cls.__mro__
        if (klass.__module__, klass.__name__) in _HOST_CONTRACT_CLASSES
    )
    return PlatformView(cls, host_bases) if host_bases else None
