"""Failures while applying hooks, and strict mode.

Default mode logs a failure and keeps the target ``failed`` (or ``pending``) for diagnostics;
strict mode (``SGLANG_PLUGINS_STRICT=1`` or ``apply_hooks(strict=True)``) raises
:class:`HookApplyError` listing every failure of the batch at once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

STRICT_ENV = "SGLANG_PLUGINS_STRICT"
_TRUE = frozenset({"1", "true", "yes", "on"})


def strict_from_env() -> bool:
    """Whether ``SGLANG_PLUGINS_STRICT`` asks for strict mode."""
    return os.environ.get(STRICT_ENV, "").strip().lower() in _TRUE


@dataclass(frozen=True)
class HookFailure:
    """Why one target could not be patched."""

    target: str
    message: str
    #: ``"hook qualname [plugin=..., dist=...]"`` for each hook concerned.
    hooks: tuple[str, ...]

    def __str__(self) -> str:
        hooks = "; ".join(self.hooks) if self.hooks else "no hooks"
        return f"{self.target}: {self.message} (hooks: {hooks})"


class HookApplyError(RuntimeError):
    """Strict mode: one or more targets could not be patched."""

    def __init__(self, failures: list[HookFailure] | tuple[HookFailure, ...]) -> None:
        self.failures: tuple[HookFailure, ...] = tuple(failures)
        lines = "\n".join(f"  - {failure}" for failure in self.failures)
        super().__init__(f"{len(self.failures)} hook target(s) could not be applied:\n{lines}")
