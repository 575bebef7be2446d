"""The hook registry: one object that owns the registrations, the patches, the lock and the import watcher, and
the algorithms that apply and undo them.

Registrations are kept per target *string* (``TargetRecord``). A target that resolves joins the ``Slot`` of the
attribute it names, keyed by the owner object and the attribute name, so every spelling of one attribute (``m.f``
and ``m:f``, or a module under two names in ``sys.modules``) shares one wrapper. A slot is always rebuilt from the
original it recorded: wrappers never stack. After each batch the result is made independent of how registrations
were split into batches: a target hooked through a class that a class REPLACE has since replaced (or restored)
moves to the class its path names now, and a subclass slot is rebuilt when the method it inherits changed.

``HookRegistry`` and ``plugin_hook`` act on the *active* registry: the process's default one, or the fresh one
``isolated_registry()`` makes active for a block.
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import itertools
import logging
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, cast

from ..._forking import after_fork_in_child
from ..._namespace import env_flag
from ..._plugin_code import describe_failure, guarded
from . import _types as t
from ._import_watch import ImportWatcher
from ._rebinding import Replacement, rebind
from ._targets import MISSING, Resolution, TargetNotFound, Unresolved, own_value, parse_target, resolve, rewrap, unwrap
from ._wrappers import build_wrapper

if TYPE_CHECKING:
    from ._describe import TargetReport

logger = logging.getLogger(__name__)

#: Attribute kinds a module can import by name, so a stale ``from x import f`` copy can exist.
_REBINDABLE = frozenset({"function", "class", "classmethod", "staticmethod", "nonbinding"})
_APPLIED, _PENDING, _REPLACE = t.HookStatus.APPLIED, t.HookStatus.PENDING, t.HookType.REPLACE


class _Batch:
    """What one apply (or discard) collects: failures, and the rebinding walks to run at its end."""

    def __init__(self) -> None:
        self.failures: list[t.HookFailure] = []
        self.walks: list[Replacement] = []  # stale copies of what was replaced or removed get what replaced it


class Registry:
    """Registrations per target, one slot per patched attribute, and what it takes to undo them.

    Thread-safe: registration, application, undo and introspection share one re-entrant lock.
    """

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.targets: dict[str, t.TargetRecord] = {}
        self.slots: dict[tuple[int, str], t.Slot] = {}  # by (id(owner), name), in the order first patched
        self.watched: dict[str, set[str]] = {}  # module name -> the pending targets waiting for its import
        self.applied = False  # whether apply_hooks() ran: later registrations then apply at once
        self._seq = itertools.count()
        self._watcher = ImportWatcher(self._on_module_loaded, self.watched)

    def register(
        self,
        target: str,
        hook: Callable[..., object],
        hook_type: t.HookType | str = t.HookType.AFTER,
        *,
        source: t.HookSource | None = None,
        priority: int = 0,
    ) -> None:
        """See :meth:`sglang_plugin_runtime.plugins.hook_registry.HookRegistry.register`."""
        hook_type = t.HookType(hook_type)
        if isinstance(hook, type) and hook_type is not _REPLACE:
            raise TypeError(
                f"Class {hook.__name__} can only be used with HookType.REPLACE, got HookType.{hook_type.name}. "
                "Use a function for BEFORE/AFTER/AROUND hooks."
            )
        if not callable(hook):
            raise TypeError(f"Hook for {target!r} must be callable, got {type(hook).__name__}: {hook!r}")
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise TypeError(f"priority must be an int, got {type(priority).__name__}")
        spec = parse_target(target)
        source = source if source is not None else t._current_plugin_source.get()
        with self.lock:
            record = self.targets.setdefault(target, t.TargetRecord(spec))
            new = t.Registration(next(self._seq), hook_type, hook, source, priority)
            self._warn_about_repeats(target, record, new)
            record.registrations.append(new)
            if self.applied:  # apply_hooks() already ran: apply now, as strict as the plugin's context says
                record.strict = _strictness(t._current_strict.get())
                self._apply([target])

    def _warn_about_repeats(self, target: str, record: t.TargetRecord, new: t.Registration) -> None:
        # Rare paths: the messages are built eagerly.
        twin = next((r for r in record.registrations if r.hook is new.hook and r.hook_type is new.hook_type), None)
        if twin is not None:
            logger.warning(
                f"{t.describe_callable(new.hook)} is registered as a {new.hook_type.name} hook on '{target}' a second "
                f"time (first by {t.format_source(twin.source)}, now by {t.format_source(new.source)}): it will run "
                "twice per call. Register it once; a hook module imported under two names registers its decorators "
                "twice."
            )
        replaces = [r for r in t.ordered(record.slot.records if record.slot else [record]) if r.hook_type is _REPLACE]
        if replaces and new.hook_type is _REPLACE:
            logger.warning(
                f"Multiple REPLACE hooks on '{target}': previous ({replaces[-1].label()}) will be overridden by "
                f"({new.label()}). The last registered REPLACE (highest priority first) takes effect."
            )

    # ------------------------------------------------------------------ applying

    def apply_hooks(self, strict: bool | None = None) -> None:
        """See :meth:`sglang_plugin_runtime.plugins.hook_registry.HookRegistry.apply_hooks`."""
        with self.lock:
            self.applied = True
            names = [name for name, record in self.targets.items() if record.status is not _APPLIED]
            for name in names:  # a pending target keeps the strictness of the apply that took it
                if self.targets[name].status is not _PENDING:
                    self.targets[name].strict = _strictness(strict)
            self._apply(names)

    def _apply(self, names: list[str], walk: Sequence[object] | None = None) -> None:
        """Patch what resolves of ``names``, then one rebinding walk (over ``walk``, default every module) for all
        of them; raise the failures of strict targets."""
        batch = _Batch()
        self._patch(names, batch)
        self._finish(batch, walk)
        if strict := [failure for failure in batch.failures if self.targets[failure.target].strict]:
            raise t.HookApplyError(strict)

    def _patch(self, names: Iterable[str], batch: _Batch) -> None:
        slots = {id(slot): slot for name in sorted(names) if (slot := self._take(name, batch)) is not None}
        for slot in sorted(slots.values(), key=_depth):  # base classes first: a subclass wraps the base's method
            self._build(slot, batch)

    def _finish(self, batch: _Batch, walk: Sequence[object] | None = None) -> None:
        """Make the result independent of the order of batches; then the walks; then log the failures."""
        moved = [n for n, r in self.targets.items() if r.slot is not None and _owner(r) is not r.slot.owner]
        for name in moved:  # a class REPLACE on the way came or went: take it again through what the path names
            record = self.targets[name]
            slot, record.slot, record.status = record.slot, None, t.HookStatus.REGISTERED
            assert slot is not None
            slot.records.remove(record)
            self._refresh(slot, batch)
        self._patch(moved, batch)
        heirs = [s for s in self.slots.values() if s.inherited and s.current is not None]
        for slot in sorted(heirs, key=_depth):  # rebuild a subclass slot whose base changed underneath it
            if _base_raw(slot) is not slot.original.raw:
                self._build(slot, batch)
        rebind(batch.walks, walk)
        for failure in batch.failures:
            logger.error("Failed to apply hooks to %s", failure)

    def _take(self, name: str, batch: _Batch) -> t.Slot | None:
        """The slot of ``name``'s attribute (made on first resolution), or ``None`` (failed or pending)."""
        record = self.targets[name]
        if record.slot is not None:
            return record.slot
        with guarded(f"resolving the hook target {name}") as call:
            found = resolve(record.spec)
            if isinstance(found, Resolution) and (key := (id(found.owner), found.name)) not in self.slots:
                original = unwrap(found.raw, found.owner)
                if found.owned and (
                    other := next((s for s in self.slots.values() if s.current is original.func), None)
                ):
                    # A module global we rebound earlier (a re-export): hook the real original, not our wrapper.
                    original = original._replace(func=other.original.func)
                inherited = isinstance(found.owner, type) and not found.owned
                self.slots[key] = t.Slot(found.key, found.owner, found.name, original, inherited)
        if call.error is not None:
            error = call.error
            reason = (
                str(error) if isinstance(error, TargetNotFound) else f"cannot hook {name}: {describe_failure(error)}"
            )
            self._fail([record], reason, batch)
        elif isinstance(found, Unresolved):
            self._pend(record, found, batch)
        else:
            self._unwatch(name)
            record.slot, record.resolved = self.slots[id(found.owner), found.name], found.key
            record.slot.records.append(record)
        return record.slot

    def _pend(self, record: t.TargetRecord, found: Unresolved, batch: _Batch) -> None:
        name, record.error = record.spec.text, found.reason
        top = (record.spec.module or record.spec.parts[0]).split(".")[0]
        if top not in sys.modules and importlib.util.find_spec(top) is None:
            record.error = f"module {top!r} cannot be found (is it installed?)"
            if record.strict:
                return self._fail([record], record.error, batch)
            logger.warning("Hooks on %s stay pending: %s", name, record.error)
        record.status = _PENDING
        self._unwatch(name)
        for module in found.watch:
            self.watched.setdefault(module, set()).add(name)
        self._watcher.install()

    def _fail(self, records: Iterable[t.TargetRecord], reason: str, batch: _Batch) -> None:
        for record in records:
            record.status, record.error = t.HookStatus.FAILED, reason
            self._unwatch(record.spec.text)
            labels = tuple(r.label() for r in record.registrations)
            batch.failures.append(t.HookFailure(record.spec.text, reason, labels))

    def _build(self, slot: t.Slot, batch: _Batch) -> None:
        """(Re)build ``slot``'s wrapper from its original and install it; queue the walk for stale copies."""
        regs, old, key = t.ordered(slot.records), slot.current, (id(slot.owner), slot.name)
        with guarded(f"the hooks on {slot.key}") as call:
            if slot.inherited:
                slot.original = unwrap(_base_raw(slot), slot.owner)
            new, raw = self._compose(slot, regs)
            if old is None:
                slot.previous = own_value(slot.owner, slot.name)
                self.slots[key] = self.slots.pop(key)  # undone in the reverse order of first patches
            elif own_value(slot.owner, slot.name) is not slot.raw:
                raise RuntimeError("the attribute was changed outside the hook registry after it was patched")
            setattr(slot.owner, slot.name, raw)
        if call.error is not None:
            kept = " (the previously applied hooks stay in place)" if old is not None else ""
            return self._fail(slot.records, describe_failure(call.error) + kept, batch)
        slot.raw, slot.current = raw, new
        slot.conflicts = self._conflicts(slot, regs)
        for namespace in slot.rebinds:
            if namespace.get(slot.name) is old:
                namespace[slot.name] = new
        for record in slot.records:
            record.status, record.error = _APPLIED, None
        sources = ", ".join(sorted({t.format_source(r.source) for r in regs}))
        logger.info("Applied %d hook(s) to %s (from: %s)", len(regs), slot.key, sources)
        if slot.original.kind in _REBINDABLE and not slot.inherited:  # no global holds what a subclass inherits
            stale = (slot.original.func,) if old is None else (slot.original.func, old)
            batch.walks.append(Replacement(slot.name, stale, new, slot.rebinds))

    def _compose(self, slot: t.Slot, regs: list[t.Registration]) -> tuple[object, object]:
        """The callable to install and the raw attribute holding it: may raise, changes nothing."""
        original, target = slot.original, slot.records[0].spec.text
        replaces = [r for r in regs if r.hook_type is _REPLACE]
        others = [r for r in regs if r.hook_type is not _REPLACE]
        if original.kind == "class" and others:
            raise TypeError(
                f"Target '{target}' is a class: only HookType.REPLACE applies to a class, not "
                f"{others[0].hook_type.name} ({others[0].label()}). To hook a method, use '{target}.<method_name>'."
            )
        for r in [] if inspect.iscoroutinefunction(original.func) else others:
            if inspect.iscoroutinefunction(r.hook):
                raise TypeError(
                    f"{r.hook_type.name} hook {t.describe_callable(r.hook)!r} is 'async def' but the target is "
                    f"synchronous; its coroutine would never be awaited ({r.label()})"
                )
        new = replaces[-1].hook if replaces else original.func
        if not replaces or not (original.kind == "class" or (isinstance(new, type) and not others)):
            chain = [(r.hook_type.value, r.hook) for r in reversed(others)]
            new = build_wrapper(original.func, new, chain, slot.key)  # type: ignore[arg-type]
        return new, new if original.kind == "class" else rewrap(original, new)

    def _conflicts(self, slot: t.Slot, regs: list[t.Registration]) -> tuple[tuple[str, str], ...]:
        """A class REPLACE leaves the existing subclasses of the original behind: warn, and keep it as a conflict."""
        if slot.original.kind != "class" or not isinstance(slot.current, type):
            return ()
        mine = {id(r.hook) for r in regs}
        subclasses: list[type] = type.__subclasses__(cast(type, slot.original.func))  # not a metaclass's override
        left = [c for c in subclasses if id(c) not in mine]
        if not left:
            return ()
        names = ", ".join(f"{c.__module__}.{c.__qualname__}" for c in left)
        message = (
            f"class REPLACE by {regs[-1].label()}: existing subclasses of the original keep inheriting from it: {names}"
        )
        logger.warning("Class REPLACE on '%s': %s", slot.key, message)
        return (("class_replace_subclasses", message),)

    def _on_module_loaded(self, name: str, before: frozenset[str]) -> None:
        with self.lock:
            if waiting := self.watched.get(name):
                new_modules = [module for key, module in list(sys.modules.items()) if key not in before]
                try:  # each target as strict as the apply that took it
                    self._apply(sorted(waiting), new_modules)
                except t.HookApplyError:
                    raise  # strict: the import that made the target resolvable fails, naming it
                except Exception:  # a bug here must not break the user's import
                    logger.exception("Hook registry failed while handling the import of %s", name)

    def _unwatch(self, name: str) -> None:
        for module, waiting in list(self.watched.items()):
            waiting.discard(name)
            if not waiting:
                del self.watched[module]
        if not self.watched:
            self._watcher.uninstall()

    # ------------------------------------------------------------------ undoing

    def _undo(self, slot: t.Slot) -> Replacement | None:
        """Put back what ``slot`` changed; the walk that gives the original to copies taken after the patch."""
        original, current = slot.original.func, slot.current
        if current is None:
            return None
        for namespace in slot.rebinds:
            if namespace.get(slot.name) is current:
                namespace[slot.name] = original
        if own_value(slot.owner, slot.name) is not slot.raw:
            logger.warning("Not restoring %s: it was changed after the hook registry patched it", slot.key)
        elif slot.previous is MISSING:
            delattr(slot.owner, slot.name)
        else:
            setattr(slot.owner, slot.name, slot.previous)
        slot.raw = slot.current = None
        slot.rebinds.clear()
        rebindable = slot.original.kind in _REBINDABLE and not slot.inherited
        return Replacement(slot.name, (current,), original) if rebindable else None

    def _refresh(self, slot: t.Slot, batch: _Batch) -> None:
        """After ``slot`` lost registrations: rebuild it, or restore its original when none is left."""
        if slot.records and slot.current is not None:
            self._build(slot, batch)
        elif not slot.records:
            if (restore := self._undo(slot)) is not None:
                batch.walks.append(restore)
            del self.slots[id(slot.owner), slot.name]

    def reset(self) -> None:
        """See :meth:`sglang_plugin_runtime.plugins.hook_registry.HookRegistry.reset`."""
        with self.lock:
            # Modules that imported a target after it was patched hold our wrapper: they get the original too.
            rebind([r for slot in reversed(self.slots.values()) if (r := self._undo(slot)) is not None])
            self.targets.clear()
            self.slots.clear()
            self.watched.clear()
            self.applied = False
            self._watcher.uninstall()

    def discard_source(self, source: t.HookSource) -> int:
        """See :meth:`sglang_plugin_runtime.plugins.hook_registry.HookRegistry.discard_source`."""
        with self.lock:
            batch, removed, touched = _Batch(), 0, dict[int, t.Slot]()
            for name, record in list(self.targets.items()):
                keep = [r for r in record.registrations if r.source != source]
                removed += len(record.registrations) - len(keep)
                if len(keep) < len(record.registrations) and record.slot is not None:
                    touched[id(record.slot)] = record.slot
                record.registrations = keep
                if not keep:
                    self._unwatch(name)
                    del self.targets[name]
                    if record.slot is not None:
                        record.slot.records.remove(record)
            for slot in sorted(touched.values(), key=_depth):
                self._refresh(slot, batch)
            self._finish(batch)
            return removed

    # ------------------------------------------------------------------ introspection

    def _records_for(self, target: str) -> list[t.TargetRecord]:
        """The records of ``target`` in either spelling (``pkg.mod.Class.f`` or ``pkg.mod:Class.f``)."""
        dotted = target.replace(":", ".")
        return [r for r in self.targets.values() if r.spec.text.replace(":", ".") == dotted or r.resolved == target]

    def describe(self, target: str | None = None) -> list[TargetReport]:
        """See :meth:`sglang_plugin_runtime.plugins.hook_registry.HookRegistry.describe`."""
        from ._describe import report  # reports are built only when asked: a serving process never loads them

        with self.lock:
            records = self.targets.values() if target is None else self._records_for(target)
            return [report(record, self.slots.values()) for record in sorted(records, key=lambda r: r.spec.text)]

    def is_hook_applied(
        self, target: str, hook: Callable[..., object], hook_type: t.HookType | str | None = None
    ) -> bool:
        """See :meth:`sglang_plugin_runtime.plugins.hook_registry.HookRegistry.is_hook_applied`."""
        wanted = None if hook_type is None else t.HookType(hook_type)
        with self.lock:
            slots = [r.slot for r in self._records_for(target) if r.status is _APPLIED and r.slot is not None]
            return any(
                r.hook is hook and wanted in (None, r.hook_type) for slot in slots for r in t.ordered(slot.records)
            )

    def after_fork(self) -> None:
        # A thread of the parent may have held the lock at fork time; the child has only one thread.
        self.lock = threading.RLock()


def _strictness(strict: bool | None) -> bool:
    """``strict`` as given, else what ``SGLANG_PLUGINS_STRICT`` says now (SGLang's ``apply_hooks()`` reads it)."""
    return env_flag(t.STRICT_ENV) if strict is None else strict


def _depth(slot: t.Slot) -> int:
    """Base classes sort before their subclasses; non-class owners first."""
    return len(slot.owner.__mro__) if isinstance(slot.owner, type) else 0


def _owner(record: t.TargetRecord) -> object:
    """The object ``record``'s attribute belongs to now (``None`` when it does not resolve)."""
    with guarded(f"resolving the hook target {record.spec.text}") as call:
        found = resolve(record.spec)
    return found.owner if call.error is None and isinstance(found, Resolution) else None


def _base_raw(slot: t.Slot) -> object:
    """What an inherited slot's class inherits for its name right now (maybe a base's wrapper), or ``MISSING``."""
    assert isinstance(slot.owner, type)
    return next((k.__dict__[slot.name] for k in slot.owner.__mro__[1:] if slot.name in k.__dict__), MISSING)


_default = Registry()
_active = _default


def active_registry() -> Registry:
    """The registry ``HookRegistry`` and ``plugin_hook`` act on."""
    return _active


@contextlib.contextmanager
def isolated_registry() -> Iterator[Registry]:
    """Give the block a fresh, empty registry; on exit undo its patches and make the previous one active again.

    Patches applied before the block stay in place during it and after it.
    """
    global _active
    previous, fresh = _active, Registry()
    _active = fresh
    try:
        yield fresh
    finally:
        fresh.reset()
        _active = previous


@contextlib.contextmanager
def _plugin_context(source: t.HookSource | None, strict: bool | None) -> Iterator[None]:
    """For plugin loaders: hooks registered in the block come from ``source``, and those applied at once (after
    ``apply_hooks()`` ran) are strict as ``strict`` says (``None``: as ``SGLANG_PLUGINS_STRICT`` says then)."""
    source_token, strict_token = t._current_plugin_source.set(source), t._current_strict.set(strict)
    try:
        yield
    finally:
        t._current_strict.reset(strict_token)
        t._current_plugin_source.reset(source_token)


@after_fork_in_child
def _after_fork() -> None:
    _default.after_fork()
    _active.after_fork()
