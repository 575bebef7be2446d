"""Reports about registered hooks: a stable, JSON-friendly API for ``sglang-plugins doctor``.

Reports are frozen dataclasses built from a snapshot of the registry; holding one never keeps
the registry locked and never changes when the registry does.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

#: The statuses a target can have.
STATUSES = ("registered", "applied", "pending", "failed")


@dataclass(frozen=True)
class HookReport:
    """One registered hook, as it takes part in its target's chain."""

    hook_type: str
    hook: str
    plugin: str | None
    dist: str | None
    priority: int
    #: False for a REPLACE hook that a later (or higher-priority) REPLACE overrides.
    active: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Conflict:
    """A combination of hooks that works but deserves a look."""

    #: "multiple_replace", "multiple_around", "class_replace_subclasses" or
    #: "method_replace_overrides_class_replace".
    kind: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class TargetReport:
    """Everything known about one target string."""

    target: str
    #: One of :data:`STATUSES`.
    status: str
    error: str | None
    #: Canonical ``module:attr.path`` once resolved, else ``None``.
    resolved: str | None
    #: Hooks in nesting order, outermost first (the order BEFORE/AROUND hooks run on the way in;
    #: AFTER hooks run in reverse on the way out), REPLACE last; overridden REPLACEs flagged.
    hooks: tuple[HookReport, ...]
    conflicts: tuple[Conflict, ...]
    #: How many stale module globals currently point at the patched object through rebinding.
    rebound: int

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
