"""The registry state and how a batch of targets is applied, rebuilt, watched and undone.

State model. Registrations are kept per target *string* (``_Target``). Once a target resolves, it
is attached to a ``_Slot``: one per concrete attribute, keyed ``module:attr.path``, so the dotted
and the colon spelling of one target share a single wrapper. A slot remembers the original raw
attribute and is always rebuilt from it: hooks never stack on one attribute.

Everything that changes state runs under one re-entrant lock. Nothing here imports a target
module: resolution reads ``sys.modules`` and ``__dict__`` entries only, and targets whose module is
not imported yet are handed to the import watcher.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from ._attributes import Unwrapped, rewrap_attribute, unwrap_attribute
from ._errors import HookApplyError, HookFailure, strict_from_env
from ._patching import PatchRecord, install
from ._rebinding import Rebinding, Replacement, rebind
from ._targets import Resolution, TargetNotFound, TargetSpec, Unresolved, parse_target, resolve
from ._types import HookSource, HookType, _current_plugin_source, describe_callable, format_source
from ._wrappers import build_wrapper, check_hook_kinds

if TYPE_CHECKING:
    from ._import_watch import ImportWatcher
    # Reports and conflicts are frozen dataclasses; ``_introspection`` is imported only when one is
    # built (describe(), or a conflict found while applying), never on the start-up path.
    from ._introspection import Conflict, HookReport, TargetReport

logger = logging.getLogger(__name__)

# Rebinding module globals only makes sense for objects a module can import by name.
_REBINDABLE_KINDS = frozenset({"function", "class", "classmethod", "staticmethod", "nonbinding"})


# The state classes below are plain slotted classes: this module is imported on every start-up
# path, and a dataclass costs a generated-code ``exec`` per class at import.


class _Registration:
    """One ``register()`` call; ``seq`` orders registrations of equal priority."""

    __slots__ = ("seq", "target", "hook_type", "hook", "source", "priority")

    def __init__(
        self,
        seq: int,
        target: str,
        hook_type: HookType,
        hook: Callable[..., object],
        source: HookSource | None,
        priority: int,
    ) -> None:
        self.seq = seq
        self.target = target
        self.hook_type = hook_type
        self.hook = hook
        self.source = source
        self.priority = priority

    def label(self) -> str:
        return f"{describe_callable(self.hook)} [{format_source(self.source)}]"


class _Target:
    """The registrations and status of one target *string*."""

    __slots__ = ("spec", "registrations", "status", "error", "key", "watching")

    def __init__(self, spec: TargetSpec) -> None:
        self.spec = spec
        self.registrations: list[_Registration] = []
        self.status = "registered"
        self.error: str | None = None
        self.key: str | None = None
        self.watching: tuple[str, ...] = ()


class _Slot:
    """One concrete attribute (``module:attr.path``) and everything installed on it."""

    __slots__ = (
        "key", "name", "owner", "original", "unshared", "targets", "patch", "current", "history", "rebinds",
        "conflicts", "built",
    )

    def __init__(self, key: str, name: str, owner: object, original: Unwrapped, unshared: bool = False) -> None:
        self.key = key
        self.name = name
        self.owner = owner
        self.original = original
        #: No module global held the original when it was resolved: the first patch needs no walk.
        self.unshared = unshared
        self.targets: list[str] = []
        self.patch: PatchRecord | None = None
        self.current: object = None
        #: Every callable installed over time (rebuilds included), for the walk made by reset().
        self.history: list[object] = []
        self.rebinds: list[Rebinding] = []
        self.conflicts: tuple[Conflict, ...] = ()
        #: The registrations (by ``seq``) the installed callable was built from.
        self.built: frozenset[int] = frozenset()


class _State:
    """Everything the registry knows; ``isolated()`` swaps in a fresh one."""

    __slots__ = ("targets", "slots", "order", "watched", "installed", "seq", "applied", "strict")

    def __init__(self) -> None:
        self.targets: dict[str, _Target] = {}
        self.slots: dict[str, _Slot] = {}
        self.order: list[str] = []
        #: module name -> target strings waiting for it; the import watcher tests membership here.
        self.watched: dict[str, set[str]] = {}
        #: id(installed callable) -> slot; lets a rebound copy be seen through, not wrapped again.
        self.installed: dict[int, _Slot] = {}
        self.seq: Iterator[int] = itertools.count()
        self.applied = False
        self.strict: bool | None = None


_lock = threading.RLock()
_state = _State()


def _reinit_lock_after_fork() -> None:
    # A thread of the parent may have held the lock at fork time; the child has only one thread.
    global _lock
    _lock = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reinit_lock_after_fork)


def _on_module_loaded(name: str, before: frozenset[str]) -> None:
    with _lock:
        waiting = _state.watched.get(name)
        if not waiting:
            return
        new_modules = [m for key, m in list(sys.modules.items()) if key not in before]
        strict = _effective_strict(None)
        try:
            _apply_batch(sorted(waiting), strict, walk=new_modules)
        except HookApplyError:
            raise
        except Exception:  # pragma: no cover - a bug here must not break the user's import
            logger.exception("Hook registry failed while handling the import of %s", name)


# The import watcher is built the first time a target has to wait for an import: when every target's
# module is already imported (the usual start-up), ``_import_watch`` is never imported at all.
_watcher: ImportWatcher | None = None


def _install_watcher() -> None:
    global _watcher
    if _watcher is None:
        from ._import_watch import ImportWatcher

        _watcher = ImportWatcher(_on_module_loaded)
    _watcher.watched = _state.watched
    _watcher.install()


def _uninstall_watcher() -> None:
    if _watcher is not None:
        _watcher.uninstall()


def _effective_strict(strict: bool | None) -> bool:
    if strict is not None:
        return strict
    if _state.strict is not None:
        return _state.strict
    return strict_from_env()


# ---------------------------------------------------------------- registration


def register(
    target: str,
    hook: Callable[..., object],
    hook_type: HookType | str,
    source: HookSource | None,
    priority: int,
) -> None:
    hook_type = HookType(hook_type)
    if isinstance(hook, type) and hook_type is not HookType.REPLACE:
        raise TypeError(
            f"Class {hook.__name__} can only be used with HookType.REPLACE, "
            f"got HookType.{hook_type.name}. Use a function for BEFORE/AFTER/AROUND hooks."
        )
    if not callable(hook):
        raise TypeError(f"Hook for {target!r} must be callable, got {type(hook).__name__}: {hook!r}")
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise TypeError(f"priority must be an int, got {type(priority).__name__}")
    spec = parse_target(target)
    resolved_source = source if source is not None else _current_plugin_source.get()
    with _lock:
        record = _state.targets.get(target)
        if record is None:
            record = _state.targets[target] = _Target(spec)
        reg = _Registration(next(_state.seq), target, hook_type, hook, resolved_source, priority)
        if hook_type is HookType.REPLACE:
            previous = [r for r in _registrations_for(record) if r.hook_type is HookType.REPLACE]
            if previous:
                logger.warning(
                    "Multiple REPLACE hooks on '%s': previous (%s) will be overridden by (%s). "
                    "The last registered REPLACE (highest priority first) takes effect.",
                    target,
                    previous[-1].label(),
                    reg.label(),
                )
        record.registrations.append(reg)
        logger.debug("Registered %s hook on %s [%s]", hook_type.value, target, format_source(resolved_source))
        if _state.applied:
            # apply_hooks() already ran in this process: apply now instead of waiting for the
            # next call, rebuilding the target's wrapper from its original.
            _apply_batch([target], _effective_strict(None))


def _registrations_for(record: _Target) -> list[_Registration]:
    if record.key is not None and record.key in _state.slots:
        return _slot_registrations(_state.slots[record.key])
    return sorted(record.registrations, key=lambda r: (r.priority, r.seq))


def _slot_registrations(slot: _Slot) -> list[_Registration]:
    regs = [r for name in slot.targets for r in _state.targets[name].registrations]
    return sorted(regs, key=lambda r: (r.priority, r.seq))


# ---------------------------------------------------------------- applying


def apply(strict: bool | None) -> None:
    with _lock:
        _state.applied = True
        if strict is not None:
            _state.strict = strict
        names = [
            name
            for name, record in _state.targets.items()
            if record.status != "applied"
        ]
        if names:
            _apply_batch(names, _effective_strict(strict))


def _has_class_replace(record: _Target) -> bool:
    return any(
        r.hook_type is HookType.REPLACE and isinstance(r.hook, type) for r in record.registrations
    )


def _apply_batch(
    names: Iterable[str], strict: bool, walk: list[object] | None = None
) -> None:
    """Resolve and apply ``names``; then one rebinding walk for everything that changed."""
    names = list(names)
    failures: list[HookFailure] = []
    replacements: list[Replacement] = []
    # Class REPLACE first, so that ``Class.method`` targets resolve against the replacement.
    first = sorted(n for n in names if _has_class_replace(_state.targets[n]))
    rest = sorted(n for n in names if n not in set(first))
    for group in (first, rest):
        slots: dict[str, _Slot] = {}
        for name in group:
            slot = _resolve_target(name, strict, failures)
            if slot is not None:
                slots[slot.key] = slot
        # Base classes before subclasses, so a subclass target wraps the hooked base method.
        ordered = sorted(
            slots.values(),
            key=lambda s: (len(s.owner.__mro__) if isinstance(s.owner, type) else 0, s.key),
        )
        for slot in ordered:
            rep = _build_slot(slot, failures)
            if rep is not None:
                replacements.append(rep)
    if replacements:
        for key, records in rebind(replacements, walk).items():
            _state.slots[key].rebinds.extend(records)
            logger.debug("Rebound %d stale reference(s) to %s", len(records), key)
    if failures:
        for failure in failures:
            logger.error("Failed to apply hooks to %s", failure)
        if strict:
            raise HookApplyError(failures)


def _fail(names: Iterable[str], message: str, failures: list[HookFailure]) -> None:
    for name in names:
        record = _state.targets[name]
        record.status = "failed"
        record.error = message
        _unwatch(name)
        failures.append(HookFailure(name, message, tuple(r.label() for r in record.registrations)))


def _resolve_target(name: str, strict: bool, failures: list[HookFailure]) -> _Slot | None:
    record = _state.targets[name]
    if record.key is not None and record.key in _state.slots:
        return _state.slots[record.key]
    try:
        found = resolve(record.spec)
    except TargetNotFound as exc:
        _fail([name], str(exc), failures)
        return None
    if isinstance(found, Unresolved):
        _set_pending(name, found, strict, failures)
        return None
    slot = _state.slots.get(found.key)
    if slot is None:
        try:
            slot = _new_slot(found)
        except TypeError as exc:
            _fail([name], f"cannot hook {found.key}: {exc}", failures)
            return None
        _state.slots[found.key] = slot
    _unwatch(name)
    record.key = found.key
    if name not in slot.targets:
        slot.targets.append(name)
    return slot


def _new_slot(found: Resolution) -> _Slot:
    original = unwrap_attribute(found.raw, found.owner)
    other = _state.installed.get(id(original.func))
    if found.owned and other is not None and other.current is original.func:
        # A module global we rebound earlier: hook the real original, not our wrapper.
        original = Unwrapped(original.kind, other.original.func, original.raw)
    # The proof covers the namespace entry itself; for a classmethod or a property the stale object is
    # the function inside it, which the proof says nothing about.
    unshared = found.unshared and original.func is found.raw
    return _Slot(found.key, found.attr_path[-1], found.owner, original, unshared)


def _set_pending(name: str, found: Unresolved, strict: bool, failures: list[HookFailure]) -> None:
    record = _state.targets[name]
    top = record.spec.module or record.spec.parts[0]
    top = top.split(".")[0]
    if top not in sys.modules and _find_spec(top) is None:
        message = f"module {top!r} cannot be found (is it installed?)"
        if strict:
            _fail([name], message, failures)
            return
        logger.warning("Hooks on %s stay pending: %s", name, message)
        record.error = message
    else:
        record.error = found.reason
    record.status = "pending"
    _unwatch(name)
    record.watching = found.watch
    for module in found.watch:
        _state.watched.setdefault(module, set()).add(name)
    _install_watcher()
    logger.debug("Hooks on %s deferred: %s", name, found.reason)


def _find_spec(name: str) -> object:
    import importlib.util  # only when a target's module is not imported yet

    return importlib.util.find_spec(name)


def _unwatch(name: str) -> None:
    record = _state.targets[name]
    for module in record.watching:
        waiting = _state.watched.get(module)
        if waiting is not None:
            waiting.discard(name)
            if not waiting:
                del _state.watched[module]
    record.watching = ()
    if not _state.watched:
        _uninstall_watcher()


def _build_slot(slot: _Slot, failures: list[HookFailure]) -> Replacement | None:
    regs = _slot_registrations(slot)
    try:
        new_callable, new_raw, conflicts = _build(slot, regs)
        old_callable = slot.current
        if slot.patch is None:
            slot.patch = install(slot.owner, slot.name, new_raw)
            _state.order.append(slot.key)
        else:
            if not slot.patch.is_intact():
                raise RuntimeError(
                    "the attribute was changed outside the hook registry after it was patched"
                )
            slot.patch.replace(new_raw)
            for rb in slot.rebinds:
                if rb.namespace.get(rb.name) is rb.installed:
                    rb.namespace[rb.name] = new_callable
                    rb.installed = new_callable
    except Exception as exc:  # noqa: BLE001 - reported with target, hooks and sources
        message = f"{type(exc).__name__}: {exc}"
        if slot.patch is not None:
            message += " (the previously applied hooks stay in place)"
        _fail(slot.targets, message, failures)
        return None
    if old_callable is not None:
        _state.installed.pop(id(old_callable), None)
    _state.installed[id(new_callable)] = slot
    slot.current = new_callable
    slot.history.append(new_callable)
    slot.conflicts = conflicts
    slot.built = frozenset(r.seq for r in regs)
    for name in slot.targets:
        record = _state.targets[name]
        record.status, record.error = "applied", None
    logger.info(
        "Applied %d hook(s) to %s (from: %s)",
        len(regs),
        slot.key,
        ", ".join(sorted({format_source(r.source) for r in regs})),
    )
    if slot.original.kind not in _REBINDABLE_KINDS:
        return None
    if old_callable is None and slot.unshared:
        logger.debug("No stale copies of %s can exist (its namespace held the only reference)", slot.key)
        return None
    stale = (slot.original.func,) if old_callable is None else (slot.original.func, old_callable)
    return Replacement(slot.key, slot.name, stale, new_callable, slot.original.func)


def _build(slot: _Slot, regs: list[_Registration]) -> tuple[object, object, tuple[Conflict, ...]]:
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
    return new_callable, new_raw, _conflicts(slot, replaces, others, winner)


def _conflict(kind: str, message: str) -> Conflict:
    """Build a report entry; ``_introspection`` is imported only once there is something to report."""
    from ._introspection import Conflict

    return Conflict(kind, message)


def _conflicts(
    slot: _Slot,
    replaces: list[_Registration],
    others: list[_Registration],
    winner: _Registration | None,
) -> tuple[Conflict, ...]:
    found: list[Conflict] = []
    if len(replaces) > 1:
        found.append(_conflict(
            "multiple_replace",
            f"{len(replaces)} REPLACE hooks; only {winner.label()} runs, overriding "  # type: ignore[union-attr]
            + ", ".join(r.label() for r in replaces[:-1]),
        ))
    arounds = [r for r in others if r.hook_type is HookType.AROUND]
    if len(arounds) > 1:
        message = (
            f"{len(arounds)} AROUND hooks ({', '.join(r.label() for r in arounds)}); if one skips "
            "original_fn, the hooks inside it are bypassed"
        )
        found.append(_conflict("multiple_around", message))
        logger.warning("Multiple AROUND hooks on '%s': %s", slot.key, message)
    if slot.original.kind == "class" and winner is not None and isinstance(winner.hook, type):
        mine = {id(r.hook) for r in replaces}
        subclasses = [
            s for s in type.__subclasses__(slot.original.func)  # type: ignore[arg-type]
            if id(s) not in mine
        ]
        if subclasses:
            names = ", ".join(f"{s.__module__}.{s.__qualname__}" for s in subclasses)
            message = (
                f"class REPLACE by {winner.label()}: existing subclasses of the original keep "
                f"inheriting from it: {names}"
            )
            found.append(_conflict("class_replace_subclasses", message))
            logger.warning("Class REPLACE on '%s': %s", slot.key, message)
    owner_slot = _state.installed.get(id(slot.owner))
    if (
        replaces
        and owner_slot is not None
        and owner_slot.current is slot.owner
        and owner_slot.original.kind == "class"
        and slot.name in vars(slot.owner)
        and slot.patch is None
    ):
        message = (
            f"method REPLACE ({winner.label()}) overrides the class REPLACE's own "  # type: ignore[union-attr]
            f"implementation of '{slot.name}' on {owner_slot.key}"
        )
        found.append(_conflict("method_replace_overrides_class_replace", message))
        logger.warning("%s: %s", slot.key, message)
    elif slot.patch is not None:
        found.extend(c for c in slot.conflicts if c.kind == "method_replace_overrides_class_replace")
    return tuple(found)


# ---------------------------------------------------------------- undo and isolation


def reset() -> None:
    with _lock:
        _undo_all(_state)
        _state.targets.clear()
        _state.slots.clear()
        _state.order.clear()
        _state.watched.clear()
        _state.installed.clear()
        _state.applied = False
        _state.strict = None
        _uninstall_watcher()


def _undo_slot(slot: _Slot) -> Replacement | None:
    """Undo one slot's rebindings and patch; return the walk that restores later copies."""
    for rb in reversed(slot.rebinds):
        rb.undo()
    if slot.patch is not None:
        slot.patch.undo()
    restore = None
    if slot.original.kind in _REBINDABLE_KINDS and slot.history:
        restore = Replacement(
            slot.key, slot.name, tuple(slot.history), slot.original.func, slot.original.func
        )
    for installed in slot.history:
        _state.installed.pop(id(installed), None)
    slot.patch = None
    slot.rebinds.clear()
    slot.history.clear()
    slot.current = None
    slot.built = frozenset()
    return restore


def _undo_all(state: _State) -> None:
    restore = [r for key in reversed(state.order) if (r := _undo_slot(state.slots[key])) is not None]
    if restore:
        # Modules that imported a target after it was patched hold our wrapper: give them the
        # original back too (same name rule as the forward walk).
        rebind(restore)


def discard_source(source: HookSource) -> int:
    with _lock:
        removed = 0
        touched: list[str] = []
        for name, record in _state.targets.items():
            keep = [r for r in record.registrations if r.source != source]
            if len(keep) != len(record.registrations):
                removed += len(record.registrations) - len(keep)
                record.registrations = keep
                touched.append(name)
        failures: list[HookFailure] = []
        restore: list[Replacement] = []
        rebuilt: list[Replacement] = []
        for key in {_state.targets[n].key for n in touched} - {None}:
            slot = _state.slots.get(key)  # type: ignore[arg-type]
            if slot is None or slot.patch is None:
                continue
            if _slot_registrations(slot):
                rep = _build_slot(slot, failures)
                if rep is not None:
                    rebuilt.append(rep)
            else:
                rep = _undo_slot(slot)
                if rep is not None:
                    restore.append(rep)
                _state.order.remove(key)  # type: ignore[arg-type]
                del _state.slots[key]  # type: ignore[arg-type]
        for name in touched:
            record = _state.targets[name]
            if not record.registrations:
                _unwatch(name)
                del _state.targets[name]
        if restore:
            rebind(restore)
        for key, records in rebind(rebuilt).items():
            _state.slots[key].rebinds.extend(records)
        for failure in failures:
            logger.error("Failed to rebuild hooks on %s", failure)
        return removed


def _activate(state: _State) -> None:
    global _state
    _state = state
    if state.watched:
        _install_watcher()
    else:
        _uninstall_watcher()


@contextlib.contextmanager
def isolated() -> Iterator[None]:
    with _lock:
        saved = _state
        _activate(_State())
    try:
        yield
    finally:
        with _lock:
            reset()
            _activate(saved)


# ---------------------------------------------------------------- introspection


def describe(target: str | None) -> list[TargetReport]:
    from ._introspection import TargetReport

    with _lock:
        wanted = None if target is None else target.replace(":", ".")
        reports = []
        for name in sorted(_state.targets):
            record = _state.targets[name]
            if wanted is not None and record.spec.dotted != wanted and record.key != target:
                continue
            slot = _state.slots.get(record.key) if record.key is not None else None
            regs = _slot_registrations(slot) if slot is not None else _registrations_for(record)
            reports.append(TargetReport(
                target=name,
                status=record.status,
                error=record.error,
                resolved=record.key,
                hooks=_hook_reports(regs),
                conflicts=slot.conflicts if slot is not None else _registration_conflicts(regs),
                rebound=sum(
                    1 for rb in slot.rebinds if rb.namespace.get(rb.name) is rb.installed
                ) if slot is not None else 0,
            ))
        return reports


def is_applied(target: str, hook: Callable[..., object], hook_type: HookType | str | None) -> bool:
    """Whether this very ``hook`` (and ``hook_type``) is part of what is installed on ``target`` now."""
    wanted_type = None if hook_type is None else HookType(hook_type)
    wanted = target.replace(":", ".")
    with _lock:
        for name, record in _state.targets.items():
            if (name != target and record.spec.dotted != wanted) or record.status != "applied":
                continue
            slot = _state.slots.get(record.key) if record.key is not None else None
            if slot is None or slot.patch is None:
                continue
            if any(
                r.hook is hook and (wanted_type is None or r.hook_type is wanted_type) and r.seq in slot.built
                for r in record.registrations
            ):
                return True
        return False


def _hook_reports(regs: list[_Registration]) -> tuple[HookReport, ...]:
    from ._introspection import HookReport

    replaces = [r for r in regs if r.hook_type is HookType.REPLACE]
    others = [r for r in regs if r.hook_type is not HookType.REPLACE]

    def report(r: _Registration, active: bool) -> HookReport:
        return HookReport(
            r.hook_type.value,
            describe_callable(r.hook),
            r.source.plugin_name if r.source is not None else None,
            r.source.dist_name if r.source is not None else None,
            r.priority,
            active,
        )

    ordered = [report(r, True) for r in reversed(others)]
    if replaces:
        ordered.append(report(replaces[-1], True))
        ordered.extend(report(r, False) for r in reversed(replaces[:-1]))
    return tuple(ordered)


def _registration_conflicts(regs: list[_Registration]) -> tuple[Conflict, ...]:
    """Conflicts visible before a target is resolved (no class information yet)."""
    found = []
    replaces = [r for r in regs if r.hook_type is HookType.REPLACE]
    if len(replaces) > 1:
        found.append(_conflict(
            "multiple_replace",
            f"{len(replaces)} REPLACE hooks; only {replaces[-1].label()} runs, overriding "
            + ", ".join(r.label() for r in replaces[:-1]),
        ))
    arounds = [r for r in regs if r.hook_type is HookType.AROUND]
    if len(arounds) > 1:
        found.append(_conflict(
            "multiple_around",
            f"{len(arounds)} AROUND hooks ({', '.join(r.label() for r in arounds)}); if one skips "
            "original_fn, the hooks inside it are bypassed",
        ))
    return tuple(found)
