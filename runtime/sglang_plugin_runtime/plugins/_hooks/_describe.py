"""Reports about registered hooks: a stable, JSON-friendly API for ``sglang-plugins doctor`` and
``explain``.

Imported only when a report is asked for, never by a serving process. Reports are frozen dataclasses
built from a snapshot of the registry; holding one never keeps the registry locked and never changes
when the registry does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from ._types import (
    MISSING,
    HookType,
    Registration,
    Slot,
    TargetRecord,
    describe_callable,
    ordered,
    subclasses_left,
)


@dataclass(frozen=True)
class HookReport:
    """One registered hook, as it takes part in its target's chain."""

    type: str
    """``before``, ``after``, ``around`` or ``replace``."""
    hook: str
    plugin: str | None
    distribution: str | None
    priority: int
    active: bool
    """False for a REPLACE hook that a later (or higher-priority) REPLACE overrides."""
    target: str = ""
    """The target it was registered on: another one than the report's when both name one function (a
    re-export) or one attribute (a module under two names)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Conflict:
    """A combination of hooks that works but deserves a look."""

    kind: str
    """"multiple_replace", "multiple_around", "class_replace_subclasses" or
    "method_replace_overrides_class_replace"."""
    message: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class TargetReport:
    """Everything known about one target string."""

    target: str
    status: str
    """A :class:`~sglang_plugin_runtime.plugins.hook_registry.HookStatus` value."""
    error: str | None
    resolved: str | None
    """Canonical ``module:attr.path`` once resolved, else ``None``."""
    hooks: tuple[HookReport, ...]
    """Hooks in nesting order, outermost first (the order BEFORE/AROUND hooks run on the way in;
    AFTER hooks run in reverse on the way out), REPLACE last; overridden REPLACEs flagged."""
    conflicts: tuple[Conflict, ...]
    rebound: int
    """How many stale module globals currently point at the patched object through rebinding."""

    def to_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "hooks": [h.to_dict() for h in self.hooks],
            "conflicts": [c.to_dict() for c in self.conflicts],
        }


def report(record: TargetRecord, slots: Iterable[Slot]) -> TargetReport:
    """The report of one target; ``slots``: all of its registry's (the caller holds its lock)."""
    slot = record.slot
    records = slot.records if slot is not None else [record]
    regs = ordered(records)
    found = _conflicts(regs)
    rebound = 0
    if slot is not None and slot.current is not None:
        if left := subclasses_left(slot):
            message = f"class REPLACE by {regs[-1].label()}: existing subclasses of the original "
            found.append(
                ("class_replace_subclasses", message + f"keep inheriting: {', '.join(left)}")
            )
        replaces = [r for r in regs if r.hook_type is HookType.REPLACE]
        owner = next(
            (s for s in slots if s.current is slot.owner and s.original.kind == "class"), None
        )
        if owner is not None and replaces and slot.previous is not MISSING:  # its own method
            message = (
                f"method REPLACE ({replaces[-1].label()}) overrides the class REPLACE's own "
                f"implementation of '{slot.name}' on {owner.key}"
            )
            found.append(("method_replace_overrides_class_replace", message))
        targets = {id(vars(r.found.owner)) for r in slot.records if r.found is not None}
        rebound = sum(
            ns.get(slot.name) is slot.raw for key, ns in slot.modules.items() if key not in targets
        )
    return TargetReport(
        target=str(record.target),
        status=record.status.value,
        error=record.error,
        resolved=record.found.key if record.found is not None else None,
        hooks=_hooks(regs, {id(reg): str(r.target) for r in records for reg in r.registrations}),
        conflicts=tuple(Conflict(kind, message) for kind, message in found),
        rebound=rebound,
    )


def _hooks(regs: list[Registration], targets: dict[int, str]) -> tuple[HookReport, ...]:
    """``regs`` (innermost first) in nesting order, outermost first, then the winning REPLACE and
    overridden ones; ``targets``: the target each was registered on, by ``id()``."""
    replaces = [r for r in regs if r.hook_type is HookType.REPLACE]
    others = [r for r in regs if r.hook_type is not HookType.REPLACE]
    return tuple(
        HookReport(
            r.hook_type.value,
            describe_callable(r.hook),
            r.source.plugin_name if r.source is not None else None,
            r.source.dist_name if r.source is not None else None,
            r.priority,
            active=r.hook_type is not HookType.REPLACE or r is replaces[-1],
            target=targets[id(r)],
        )
        for r in [*reversed(others), *reversed(replaces)]
    )


def _conflicts(regs: list[Registration]) -> list[tuple[str, str]]:
    """``(kind, message)`` for combinations that work but deserve a look, seen from the
    registrations alone."""
    found = []
    replaces = [r for r in regs if r.hook_type is HookType.REPLACE]
    arounds = [r for r in regs if r.hook_type is HookType.AROUND]
    if len(replaces) > 1:
        message = f"{len(replaces)} REPLACE hooks; only {replaces[-1].label()} runs, overriding "
        found.append(("multiple_replace", message + ", ".join(r.label() for r in replaces[:-1])))
    if len(arounds) > 1:
        labels = ", ".join(r.label() for r in arounds)
        message = f"{len(arounds)} AROUND hooks ({labels}); if one skips original_fn, "
        message += "the hooks inside it are bypassed"
        found.append(("multiple_around", message))
    return found
