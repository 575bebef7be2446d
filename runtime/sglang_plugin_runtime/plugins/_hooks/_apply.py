"""Applying a batch of targets: resolve each, build its wrapper, install it, then one rebinding walk.

Nothing here imports a target module: resolution reads ``sys.modules`` and ``__dict__`` entries only, and a
target whose module is not imported yet is handed to the registry's import watcher. Everything runs under the
registry's lock (the caller holds it).
"""

from __future__ import annotations

import importlib.util
import logging
import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ..._plugin_code import describe_failure, is_plugin_failure
from ._attributes import Unwrapped, rewrap_attribute, unwrap_attribute
from ._describe import Conflict, registration_conflicts
from ._errors import HookApplyError, HookFailure
from ._patching import install
from ._rebinding import Replacement, rebind
from ._state import Registration, Slot
from ._targets import Resolution, TargetNotFound, Unresolved, resolve
from ._types import HookStatus, HookType, format_source
from ._wrappers import build_wrapper, check_hook_kinds

if TYPE_CHECKING:
    from ._registry import Registry

logger = logging.getLogger(__name__)

#: Attribute kinds a module can import by name, so a stale ``from x import f`` copy can exist.
REBINDABLE_KINDS = frozenset({"function", "class", "classmethod", "staticmethod", "nonbinding"})


def apply_batch(registry: Registry, names: Iterable[str], strict: bool, walk: Sequence[object] | None = None) -> None:
    """Resolve and apply ``names``; then one rebinding walk (over ``walk``, default all modules) for all of them."""
    names = list(names)
    failures: list[HookFailure] = []
    replacements: list[Replacement] = []
    # Class REPLACE first, so that ``Class.method`` targets resolve against the replacement.
    first = sorted(n for n in names if _has_class_replace(registry, n))
    rest = sorted(n for n in names if n not in set(first))
    for group in (first, rest):
        slots: dict[str, Slot] = {}
        for name in group:
            slot = _resolve_target(registry, name, strict, failures)
            if slot is not None:
                slots[slot.key] = slot
        # Base classes before subclasses, so a subclass wraps the base's hooked method.
        batch = sorted(slots.values(), key=lambda s: (_mro_length(s), s.key))
        for slot in batch:
            replacement = build_slot(registry, slot, failures)
            if replacement is not None:
                replacements.append(replacement)
            rebuild_inheriting(registry, slot, failures, skip={id(s) for s in batch})
    if replacements:
        for key, records in rebind(replacements, walk).items():
            registry.slots[key].rebinds.extend(records)
            logger.debug("Rebound %d stale reference(s) to %s", len(records), key)
    if failures:
        for failure in failures:
            logger.error("Failed to apply hooks to %s", failure)
        if strict:
            raise HookApplyError(failures)


def _has_class_replace(registry: Registry, name: str) -> bool:
    return any(
        r.hook_type is HookType.REPLACE and isinstance(r.hook, type) for r in registry.targets[name].registrations
    )


def fail(registry: Registry, names: Iterable[str], message: str, failures: list[HookFailure]) -> None:
    for name in names:
        record = registry.targets[name]
        record.status, record.error, record.applied = HookStatus.FAILED, message, ()
        registry.unwatch(name)
        failures.append(HookFailure(name, message, tuple(r.label() for r in record.registrations)))


def _resolve_target(registry: Registry, name: str, strict: bool, failures: list[HookFailure]) -> Slot | None:
    record = registry.targets[name]
    if record.key is not None and record.key in registry.slots:
        return registry.slots[record.key]
    try:
        found = resolve(record.spec)
    except TargetNotFound as exc:
        fail(registry, [name], str(exc), failures)
        return None
    if isinstance(found, Unresolved):
        _set_pending(registry, name, found, strict, failures)
        return None
    slot = registry.slots.get(found.key)
    if slot is None:
        try:
            slot = _new_slot(registry, found)
        except TypeError as exc:
            fail(registry, [name], f"cannot hook {found.key}: {exc}", failures)
            return None
        registry.slots[found.key] = slot
    registry.unwatch(name)
    record.key = found.key
    if name not in slot.targets:
        slot.targets.append(name)
    return slot


def _new_slot(registry: Registry, found: Resolution) -> Slot:
    original = unwrap_attribute(found.raw, found.owner)
    other = registry.installed.get(id(original.func))
    if found.owned and other is not None and other.current is original.func:
        # A module global we rebound earlier: hook the real original, not our wrapper.
        original = Unwrapped(original.kind, other.original.func, original.raw)
    inherited = isinstance(found.owner, type) and not found.owned
    return Slot(found.key, found.attr_path[-1], found.owner, original, inherited)


def _set_pending(registry: Registry, name: str, found: Unresolved, strict: bool, failures: list[HookFailure]) -> None:
    record = registry.targets[name]
    top = (record.spec.module or record.spec.parts[0]).split(".")[0]
    if top not in sys.modules and importlib.util.find_spec(top) is None:
        message = f"module {top!r} cannot be found (is it installed?)"
        if strict:
            fail(registry, [name], message, failures)
            return
        logger.warning("Hooks on %s stay pending: %s", name, message)
        record.error = message
    else:
        record.error = found.reason
    record.status = HookStatus.PENDING
    registry.watch(name, found.watch)
    logger.debug("Hooks on %s deferred: %s", name, found.reason)


def _inherited_original(slot: Slot) -> Unwrapped:
    """What a subclass inherits for ``slot.name`` right now (a base's hooked wrapper, if it has one)."""
    assert isinstance(slot.owner, type)
    for klass in slot.owner.__mro__[1:]:
        if slot.name in klass.__dict__:
            return unwrap_attribute(klass.__dict__[slot.name], slot.owner)
    raise TypeError(f"no base class of {slot.key} defines {slot.name!r} any more")


def rebuild_inheriting(registry: Registry, slot: Slot, failures: list[HookFailure], skip: set[int] = set()) -> None:  # noqa: B006 - never mutated
    """Rebuild the patched subclass slots that inherit ``slot``'s attribute, so they wrap what the base has now."""
    if not isinstance(slot.owner, type):
        return
    owner = slot.owner
    inheriting = [
        other
        for other in registry.slots.values()
        if other.inherited
        and other is not slot
        and id(other) not in skip
        and other.name == slot.name
        and other.patch is not None
        and isinstance(other.owner, type)
        and issubclass(other.owner, owner)
    ]
    for other in sorted(inheriting, key=_mro_length):
        build_slot(registry, other, failures)


def _mro_length(slot: Slot) -> int:
    """Base classes sort before their subclasses; non-class owners first."""
    return len(slot.owner.__mro__) if isinstance(slot.owner, type) else 0


def build_slot(registry: Registry, slot: Slot, failures: list[HookFailure]) -> Replacement | None:
    """(Re)build ``slot``'s wrapper from its original and install it; the walk to run for stale copies, if any."""
    regs = registry.slot_registrations(slot)
    try:
        if slot.inherited:
            slot.original = _inherited_original(slot)
        new_callable, new_raw, conflicts = _build(registry, slot, regs)
        old_callable = slot.current
        if slot.patch is None:
            slot.patch = install(slot.owner, slot.name, new_raw)
            registry.order.append(slot.key)
        else:
            if not slot.patch.is_intact():
                raise RuntimeError("the attribute was changed outside the hook registry after it was patched")
            slot.patch.replace(new_raw)
            for rebinding in slot.rebinds:
                if rebinding.namespace.get(rebinding.name) is rebinding.installed:
                    rebinding.namespace[rebinding.name] = new_callable
                    rebinding.installed = new_callable
    except BaseException as exc:  # reported with target, hooks and sources
        if not is_plugin_failure(exc):
            raise
        message = describe_failure(exc)
        if slot.patch is not None:
            message += " (the previously applied hooks stay in place)"
        fail(registry, slot.targets, message, failures)
        return None
    if old_callable is not None:
        registry.installed.pop(id(old_callable), None)
    registry.installed[id(new_callable)] = slot
    slot.current = new_callable
    slot.history.append(new_callable)
    slot.conflicts = conflicts
    for name in slot.targets:
        record = registry.targets[name]
        record.status, record.error, record.applied = HookStatus.APPLIED, None, tuple(regs)
    logger.info(
        "Applied %d hook(s) to %s (from: %s)",
        len(regs),
        slot.key,
        ", ".join(sorted({format_source(r.source) for r in regs})),
    )
    if slot.original.kind not in REBINDABLE_KINDS or slot.inherited:
        # No module global can hold "the method a subclass inherits" apart from the base's own attribute.
        return None
    stale = (slot.original.func,) if old_callable is None else (slot.original.func, old_callable)
    return Replacement(slot.key, slot.name, stale, new_callable, slot.original.func)


def _build(registry: Registry, slot: Slot, regs: list[Registration]) -> tuple[object, object, tuple[Conflict, ...]]:
    """Everything before the first setattr: may raise, changes nothing."""
    original = slot.original
    replaces = [r for r in regs if r.hook_type is HookType.REPLACE]
    others = [r for r in regs if r.hook_type is not HookType.REPLACE]
    winner = replaces[-1] if replaces else None
    if original.kind == "class" and others:
        raise TypeError(
            f"Target '{slot.targets[0]}' is a class. Only HookType.REPLACE is allowed for class "
            f"targets (got {others[0].hook_type.value} from {others[0].label()}). "
            f"To hook a method, use '{slot.targets[0]}.<method_name>' instead."
        )
    for r in others:
        try:
            check_hook_kinds(original.func, [(r.hook_type, r.hook)])
        except TypeError as exc:
            raise TypeError(f"{exc} ({r.label()})") from None
    if winner is not None and (original.kind == "class" or (isinstance(winner.hook, type) and not others)):
        new_callable: object = winner.hook
    else:
        core = winner.hook if winner is not None else original.func
        chain = [(r.hook_type, r.hook) for r in reversed(others)]
        new_callable = build_wrapper(original.func, core, chain, slot.key)  # type: ignore[arg-type]
    new_raw = new_callable if original.kind == "class" else rewrap_attribute(original, new_callable)
    return new_callable, new_raw, _conflicts(registry, slot, regs, winner)


def _conflicts(
    registry: Registry, slot: Slot, regs: list[Registration], winner: Registration | None
) -> tuple[Conflict, ...]:
    found = registration_conflicts(regs)
    for conflict in found:
        if conflict.kind == "multiple_around":
            logger.warning("Multiple AROUND hooks on '%s': %s", slot.key, conflict.message)
    replaces = [r for r in regs if r.hook_type is HookType.REPLACE]
    if slot.original.kind == "class" and winner is not None and isinstance(winner.hook, type):
        mine = {id(r.hook) for r in replaces}
        replaced = slot.original.func
        assert isinstance(replaced, type)
        existing: list[type] = type.__subclasses__(replaced)
        subclasses = [cls for cls in existing if id(cls) not in mine]
        if subclasses:
            names = ", ".join(f"{cls.__module__}.{cls.__qualname__}" for cls in subclasses)
            message = (
                f"class REPLACE by {winner.label()}: existing subclasses of the original keep inheriting from it: "
                f"{names}"
            )
            found.append(Conflict("class_replace_subclasses", message))
            logger.warning("Class REPLACE on '%s': %s", slot.key, message)
    owner_slot = registry.installed.get(id(slot.owner))
    if (
        winner is not None
        and owner_slot is not None
        and owner_slot.current is slot.owner
        and owner_slot.original.kind == "class"
        and slot.name in vars(slot.owner)
        and slot.patch is None
    ):
        message = (
            f"method REPLACE ({winner.label()}) overrides the class REPLACE's own implementation of "
            f"'{slot.name}' on {owner_slot.key}"
        )
        found.append(Conflict("method_replace_overrides_class_replace", message))
        logger.warning("%s: %s", slot.key, message)
    elif slot.patch is not None:
        found.extend(c for c in slot.conflicts if c.kind == "method_replace_overrides_class_replace")
    return tuple(found)
