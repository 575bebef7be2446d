"""Failures while applying hooks, and strict mode.

Default mode logs a failure and keeps the target ``failed`` (or ``pending``) for diagnostics;
strict mode (``SGLANG_PLUGINS_STRICT=1`` or ``apply_hooks(strict=True)``) raises
:class:`HookApplyError` listing every failure of the batch at once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

#: The variable that turns on strict mode (the SRT namespace's; a host's namespace may name its own).
STRICT_ENV = "SGLANG_PLUGINS_STRICT"


@dataclass(frozen=True, slots=True)
class HookFailure:
    """Why one target could not be patched."""

    target: str
    message: str
    hooks: tuple[str, ...]
    """``"hook qualname [plugin=..., dist=...]"`` for each hook concerned."""

    def __str__(self) -> str:
        hooks = "; ".join(self.hooks) if self.hooks else "no hooks"
        return f"{self.target}: {self.message} (hooks: {hooks})"


class HookApplyError(RuntimeError):
    """Strict mode: one or more targets could not be patched."""

    def __init__(self, failures: Iterable[HookFailure]) -> None:
        self.failures: tuple[HookFailure, ...] = tuple(failures)
        lines = "\n".join(f"  - {failure}" for failure in self.failures)
        super().__init__(f"{len(self.failures)} hook target(s) could not be applied:\n{lines}")
