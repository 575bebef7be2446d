"""Recorded attribute patches: every setattr the registry makes can be undone exactly.

A record keeps the owner, the attribute name, whether the owner had the attribute in its own
``__dict__`` (False for a method inherited from a base class, where the patch *shadows* it), the
exact raw previous value (the descriptor object itself) and what was installed. Undo puts the raw
value back (or deletes the shadowing attribute), but only while the attribute still holds what we
installed, so a later patch by somebody else is never clobbered.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

logger = logging.getLogger(__name__)

_MISSING = object()


def own_value(owner: object, name: str) -> object:
    """The raw value in ``owner.__dict__`` (descriptors not invoked), or a private sentinel."""
    try:
        namespace = vars(owner)
    except TypeError:
        return getattr(owner, name, _MISSING)
    return namespace.get(name, _MISSING)


@dataclass(slots=True, eq=False)
class PatchRecord:
    """One attribute the registry changed."""

    owner: object
    name: str
    had_own: bool
    previous: object
    installed: object

    def is_intact(self) -> bool:
        """Whether the attribute still holds what the registry installed."""
        return own_value(self.owner, self.name) is self.installed

    def replace(self, new: object) -> None:
        """Install a rebuilt value in place of ours; the original previous value is kept."""
        setattr(self.owner, self.name, new)
        self.installed = new

    def undo(self) -> bool:
        """Restore the exact previous state; False (and a warning) when it was changed since."""
        if not self.is_intact():
            logger.warning(
                "Not restoring %s.%s: it was changed after the hook registry patched it",
                _owner_name(self.owner),
                self.name,
            )
            return False
        if self.had_own:
            setattr(self.owner, self.name, self.previous)
        else:
            delattr(self.owner, self.name)
        return True


def install(owner: object, name: str, value: object) -> PatchRecord:
    """Set ``owner.name = value`` and return the record that undoes it."""
    previous = own_value(owner, name)
    record = PatchRecord(owner, name, previous is not _MISSING, previous, value)
    setattr(owner, name, value)
    return record


def _owner_name(owner: object) -> str:
    name = getattr(owner, "__qualname__", None) or getattr(owner, "__name__", None)
    module = getattr(owner, "__module__", None)
    if isinstance(owner, type) and isinstance(module, str):
        return f"{module}.{name}"
    return str(name or repr(owner))
