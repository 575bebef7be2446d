"""Reports about registered hooks: a stable, JSON-friendly API for ``sglang-plugins doctor`` and ``explain``.

Reports are frozen dataclasses built from a snapshot of the registry; holding one never keeps the registry
locked and never changes when the registry does.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ._state import Registration
from ._types import HookType, describe_callable


@dataclass(frozen=True)
class HookReport:
    """One registered hook, as it takes part in its target's chain."""

    hook_type: str
    hook: str
    plugin: str | None
    dist: str | None
    priority: int
    active: bool
    """False for a REPLACE hook that a later (or higher-priority) REPLACE overrides."""

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
    """Hooks in nesting order, outermost first (the order BEFORE/AROUND hooks run on the way in; AFTER hooks
    run in reverse on the way out), REPLACE last; overridden REPLACEs flagged."""
    conflicts: tuple[Conflict, ...]
    rebound: int
    """How many stale module globals currently point at the patched object through rebinding."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "status": self.status,
            "error": self.error,
            "resolved": self.resolved,
            "hooks": [h.to_dict() for h in self.hooks],
            "conflicts": [c.to_dict() for c in self.conflicts],
            "rebound": self.rebound,
        }


def hook_reports(regs: list[Registration]) -> tuple[HookReport, ...]:
    """``regs`` (innermost first) as reports in nesting order, outermost first, the REPLACEs last."""
    replaces = [r for r in regs if r.hook_type is HookType.REPLACE]
    others = [r for r in regs if r.hook_type is not HookType.REPLACE]

    def report(r: Registration, active: bool) -> HookReport:
        return HookReport(
            r.hook_type.value,
            describe_callable(r.hook),
            r.source.plugin_name if r.source is not None else None,
            r.source.dist_name if r.source is not None else None,
            r.priority,
            active,
        )

    reports = [report(r, True) for r in reversed(others)]
    if replaces:
        reports.append(report(replaces[-1], True))
        reports.extend(report(r, False) for r in reversed(replaces[:-1]))
    return tuple(reports)


def registration_conflicts(regs: list[Registration]) -> list[Conflict]:
    """Conflicts visible from the registrations alone (no class information needed)."""
    found = []
    replaces = [r for r in regs if r.hook_type is HookType.REPLACE]
    if len(replaces) > 1:
        found.append(
            Conflict(
                "multiple_replace",
                f"{len(replaces)} REPLACE hooks; only {replaces[-1].label()} runs, overriding "
                + ", ".join(r.label() for r in replaces[:-1]),
            )
        )
    arounds = [r for r in regs if r.hook_type is HookType.AROUND]
    if len(arounds) > 1:
        found.append(
            Conflict(
                "multiple_around",
                f"{len(arounds)} AROUND hooks ({', '.join(r.label() for r in arounds)}); if one skips "
                "original_fn, the hooks inside it are bypassed",
            )
        )
    return found
