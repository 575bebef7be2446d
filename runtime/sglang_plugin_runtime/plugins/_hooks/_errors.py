"""Failures while applying hooks, and strict mode.

Default mode logs a failure and keeps the target ``failed`` (or ``pending``) for diagnostics;
strict mode (``SGLANG_PLUGINS_STRICT=1`` or ``apply_hooks(strict=True)``) raises
:class:`HookApplyError` listing every failure of the batch at once.
"""

from __future__ import annotations

import os

STRICT_ENV = "SGLANG_PLUGINS_STRICT"
_TRUE = frozenset({"1", "true", "yes", "on"})


def strict_from_env() -> bool:
    """Whether ``SGLANG_PLUGINS_STRICT`` asks for strict mode."""
    return os.environ.get(STRICT_ENV, "").strip().lower() in _TRUE


class HookFailure:
    """Why one target could not be patched.

    A frozen value with the equality, hash and repr of a frozen dataclass, written by hand:
    this module is imported on every start-up path and a dataclass costs a generated-code
    ``exec`` per class at import.
    """

    __slots__ = ("target", "message", "hooks")
    __match_args__ = ("target", "message", "hooks")

    target: str
    message: str
    #: ``"hook qualname [plugin=..., dist=...]"`` for each hook concerned.
    hooks: tuple[str, ...]

    def __init__(self, target: str, message: str, hooks: tuple[str, ...]) -> None:
        object.__setattr__(self, "target", target)
        object.__setattr__(self, "message", message)
        object.__setattr__(self, "hooks", hooks)

    def __setattr__(self, name: str, value: object) -> None:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def _values(self) -> tuple[str, str, tuple[str, ...]]:
        return (self.target, self.message, self.hooks)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return (
            f"{type(self).__qualname__}(target={self.target!r}, message={self.message!r}, "
            f"hooks={self.hooks!r})"
        )

    def __str__(self) -> str:
        hooks = "; ".join(self.hooks) if self.hooks else "no hooks"
        return f"{self.target}: {self.message} (hooks: {hooks})"


class HookApplyError(RuntimeError):
    """Strict mode: one or more targets could not be patched."""

    def __init__(self, failures: list[HookFailure] | tuple[HookFailure, ...]) -> None:
        self.failures: tuple[HookFailure, ...] = tuple(failures)
        lines = "\n".join(f"  - {failure}" for failure in self.failures)
        super().__init__(f"{len(self.failures)} hook target(s) could not be applied:\n{lines}")
