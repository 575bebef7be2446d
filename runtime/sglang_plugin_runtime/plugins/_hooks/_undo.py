"""Undoing patches exactly: attributes, descriptors, shadowing on subclasses and rebound aliases.

Everything runs under the registry's lock (the caller holds it).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ._apply import REBINDABLE_KINDS, build_slot, rebuild_inheriting
from ._errors import HookFailure
from ._rebinding import Replacement, rebind
from ._state import Slot
from ._types import HookSource

if TYPE_CHECKING:
    from ._registry import Registry

logger = logging.getLogger(__name__)


def undo_slot(registry: Registry, slot: Slot) -> Replacement | None:
    """Undo one slot's rebindings and patch; return the walk that restores copies taken after the patch."""
    for rebinding in reversed(slot.rebinds):
        rebinding.undo()
    if slot.patch is not None:
        slot.patch.undo()
    restore = None
    if slot.original.kind in REBINDABLE_KINDS and slot.history and not slot.inherited:
        restore = Replacement(slot.key, slot.name, tuple(slot.history), slot.original.func, slot.original.func)
    for installed in slot.history:
        registry.installed.pop(id(installed), None)
    slot.patch = None
    slot.rebinds.clear()
    slot.history.clear()
    slot.current = None
    return restore


def undo_all(registry: Registry) -> None:
    """Undo every slot, the last patched first."""
    restore = [r for key in reversed(registry.order) if (r := undo_slot(registry, registry.slots[key])) is not None]
    if restore:
        # Modules that imported a target after it was patched hold our wrapper: give them the original back
        # too (same name rule as the forward walk).
        rebind(restore)


def discard_source(registry: Registry, source: HookSource) -> int:
    """Drop ``source``'s registrations; rebuild what it had patched, or restore it when no hook is left."""
    removed = 0
    touched: list[str] = []
    for name, record in registry.targets.items():
        keep = [r for r in record.registrations if r.source != source]
        if len(keep) != len(record.registrations):
            removed += len(record.registrations) - len(keep)
            record.registrations = keep
            touched.append(name)
    failures: list[HookFailure] = []
    restore: list[Replacement] = []
    rebuilt: list[Replacement] = []
    keys = {registry.targets[name].key for name in touched}
    for key in sorted(k for k in keys if k is not None):
        slot = registry.slots.get(key)
        if slot is None or slot.patch is None:
            continue
        if registry.slot_registrations(slot):
            replacement = build_slot(registry, slot, failures)
            if replacement is not None:
                rebuilt.append(replacement)
        else:
            replacement = undo_slot(registry, slot)
            if replacement is not None:
                restore.append(replacement)
            registry.order.remove(key)
            del registry.slots[key]
            for name in slot.targets:
                registry.targets[name].applied = ()
        rebuild_inheriting(registry, slot, failures)
    for name in touched:
        if not registry.targets[name].registrations:
            registry.unwatch(name)
            del registry.targets[name]
    if restore:
        rebind(restore)
    for key, records in rebind(rebuilt).items():
        registry.slots[key].rebinds.extend(records)
    for failure in failures:
        logger.error("Failed to rebuild hooks on %s", failure)
    return removed
