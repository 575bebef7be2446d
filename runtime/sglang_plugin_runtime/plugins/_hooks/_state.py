"""What a registry remembers: registrations per target string, and one slot per patched attribute.

Registrations are kept per target *string* (:class:`TargetRecord`). Once a target resolves, it is attached to a
:class:`Slot`: one per concrete attribute, keyed ``module:attr.path``, so the dotted and the colon spelling of one
target share a single wrapper. A slot remembers the original raw attribute and is always rebuilt from it: hooks
never stack on one attribute.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ._attributes import Unwrapped
from ._patching import PatchRecord
from ._rebinding import Rebinding
from ._targets import TargetSpec
from ._types import HookSource, HookStatus, HookType, describe_callable, format_source

if TYPE_CHECKING:
    from ._describe import Conflict


@dataclass(slots=True, eq=False)
class Registration:
    """One ``register()`` call; ``seq`` orders registrations of equal priority."""

    seq: int
    target: str
    hook_type: HookType
    hook: Callable[..., object]
    source: HookSource | None
    priority: int

    def label(self) -> str:
        return f"{describe_callable(self.hook)} [{format_source(self.source)}]"


@dataclass(slots=True, eq=False)
class TargetRecord:
    """The registrations and status of one target *string*."""

    spec: TargetSpec
    registrations: list[Registration] = field(default_factory=list)
    status: HookStatus = HookStatus.REGISTERED
    error: str | None = None
    key: str | None = None
    """The slot key once resolved."""
    watching: tuple[str, ...] = ()
    """Modules whose import may make a pending target resolvable."""
    applied: tuple[Registration, ...] = ()
    """The registrations the installed wrapper runs (what ``is_hook_applied`` answers from)."""


@dataclass(slots=True, eq=False)
class Slot:
    """One concrete attribute (``module:attr.path``) and everything installed on it."""

    key: str
    name: str
    owner: object
    original: Unwrapped
    inherited: bool = False
    """A class attribute inherited from a base: the original is whatever the base provides *now* (looked up
    again at every build), so the base's hooks run for the subclass too."""
    targets: list[str] = field(default_factory=list)
    patch: PatchRecord | None = None
    current: object = None
    history: list[object] = field(default_factory=list)
    """Every callable installed over time (rebuilds included), for the walk made by reset()."""
    rebinds: list[Rebinding] = field(default_factory=list)
    conflicts: tuple[Conflict, ...] = ()


def ordered(registrations: list[Registration]) -> list[Registration]:
    """Innermost first: by priority, then registration order (the last registered ends up outermost)."""
    return sorted(registrations, key=lambda r: (r.priority, r.seq))
