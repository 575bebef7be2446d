"""The hook registry: one object that owns its registrations, patches, lock and import watcher.

The public ``HookRegistry`` class (classmethods, as in SGLang) and ``plugin_hook`` delegate to the *active*
registry: the process-wide default one, or the fresh one ``isolated_registry()`` makes active for a block. The
algorithms live beside it, one concept per module: ``_apply`` (resolve, build, install), ``_undo`` (restore) and
``_describe`` (reports).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import sys
import threading
from collections.abc import Callable, Iterable, Iterator

from ..._forking import after_fork_in_child
from ..._namespace import SRT
from . import _apply, _undo
from ._describe import TargetReport, hook_reports, registration_conflicts
from ._errors import HookApplyError
from ._import_watch import ImportWatcher
from ._state import Registration, Slot, TargetRecord, ordered
from ._targets import parse_target
from ._types import HookSource, HookStatus, HookType, _current_plugin_source, describe_callable, format_source

logger = logging.getLogger(__name__)


class Registry:
    """Registrations per target, one slot per patched attribute, and what it takes to undo them.

    Thread-safe: registration, application, undo and introspection share one re-entrant lock.
    """

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.targets: dict[str, TargetRecord] = {}
        self.slots: dict[str, Slot] = {}
        self.order: list[str] = []
        """Slot keys in the order they were first patched (undone in reverse)."""
        self.watched: dict[str, set[str]] = {}
        """Module name -> target strings waiting for it; the import watcher tests membership here."""
        self.installed: dict[int, Slot] = {}
        """id(installed callable) -> slot: a rebound copy is seen through, not wrapped again."""
        self.applied = False
        """Whether apply_hooks() ran: later registrations then apply at once."""
        self.strict: bool | None = None
        self._seq = itertools.count()
        self._watcher: ImportWatcher | None = None

    # ------------------------------------------------------------------ registration

    def register(
        self,
        target: str,
        hook: Callable[..., object],
        hook_type: HookType | str = HookType.AFTER,
        *,
        source: HookSource | None = None,
        priority: int = 0,
    ) -> None:
        """See :meth:`sglang_plugin_runtime.plugins.hook_registry.HookRegistry.register`."""
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
        source = source if source is not None else _current_plugin_source.get()
        with self.lock:
            record = self.targets.setdefault(target, TargetRecord(spec))
            registration = Registration(next(self._seq), target, hook_type, hook, source, priority)
            self._warn_about_repeats(record, registration)
            record.registrations.append(registration)
            logger.debug("Registered %s hook on %s [%s]", hook_type.value, target, format_source(source))
            if self.applied:
                # apply_hooks() already ran in this process: apply now, rebuilding the target from its original.
                _apply.apply_batch(self, [target], self.effective_strict(None))

    def _warn_about_repeats(self, record: TargetRecord, new: Registration) -> None:
        twins = [r for r in record.registrations if r.hook is new.hook and r.hook_type is new.hook_type]
        if twins:
            logger.warning(
                "%s is registered as a %s hook on '%s' a second time (first by %s, now by %s): it will run twice "
                "per call. Register it once; a hook module imported under two names registers its decorators "
                "twice.",
                describe_callable(new.hook),
                new.hook_type.name,
                new.target,
                format_source(twins[0].source),
                format_source(new.source),
            )
        if new.hook_type is HookType.REPLACE:
            previous = [r for r in self.registrations_of(record) if r.hook_type is HookType.REPLACE]
            if previous:
                logger.warning(
                    "Multiple REPLACE hooks on '%s': previous (%s) will be overridden by (%s). "
                    "The last registered REPLACE (highest priority first) takes effect.",
                    new.target,
                    previous[-1].label(),
                    new.label(),
                )

    def registrations_of(self, record: TargetRecord) -> list[Registration]:
        """The registrations that share ``record``'s attribute (both spellings), innermost first."""
        if record.key is not None and record.key in self.slots:
            return self.slot_registrations(self.slots[record.key])
        return ordered(record.registrations)

    def slot_registrations(self, slot: Slot) -> list[Registration]:
        return ordered([r for name in slot.targets for r in self.targets[name].registrations])

    # ------------------------------------------------------------------ applying

    def effective_strict(self, strict: bool | None) -> bool:
        if strict is not None:
            return strict
        if self.strict is not None:
            return self.strict
        return SRT.strict()

    def apply_hooks(self, strict: bool | None = None) -> None:
        """See :meth:`sglang_plugin_runtime.plugins.hook_registry.HookRegistry.apply_hooks`."""
        with self.lock:
            self.applied = True
            if strict is not None:
                self.strict = strict
            names = [name for name, record in self.targets.items() if record.status is not HookStatus.APPLIED]
            if names:
                _apply.apply_batch(self, names, self.effective_strict(strict))

    def watch(self, name: str, modules: Iterable[str]) -> None:
        """Wait for ``modules`` to be imported before trying ``name`` again."""
        self.unwatch(name)
        record = self.targets[name]
        record.watching = tuple(modules)
        for module in record.watching:
            self.watched.setdefault(module, set()).add(name)
        if self._watcher is None:
            self._watcher = ImportWatcher(self._on_module_loaded)
        self._watcher.watched = self.watched
        self._watcher.install()

    def unwatch(self, name: str) -> None:
        record = self.targets[name]
        for module in record.watching:
            waiting = self.watched.get(module)
            if waiting is not None:
                waiting.discard(name)
                if not waiting:
                    del self.watched[module]
        record.watching = ()
        if not self.watched and self._watcher is not None:
            self._watcher.uninstall()

    def _on_module_loaded(self, name: str, before: frozenset[str]) -> None:
        with self.lock:
            waiting = self.watched.get(name)
            if not waiting:
                return
            new_modules = [module for key, module in list(sys.modules.items()) if key not in before]
            try:
                _apply.apply_batch(self, sorted(waiting), self.effective_strict(None), walk=new_modules)
            except HookApplyError:
                raise  # strict mode: the import that made the target resolvable fails, naming it
            except Exception:  # a bug here must not break the user's import
                logger.exception("Hook registry failed while handling the import of %s", name)

    # ------------------------------------------------------------------ undo

    def reset(self) -> None:
        """See :meth:`sglang_plugin_runtime.plugins.hook_registry.HookRegistry.reset`."""
        with self.lock:
            _undo.undo_all(self)
            self.targets.clear()
            self.slots.clear()
            self.order.clear()
            self.watched.clear()
            self.installed.clear()
            self.applied = False
            self.strict = None
            if self._watcher is not None:
                self._watcher.uninstall()

    def discard_source(self, source: HookSource) -> int:
        """See :meth:`sglang_plugin_runtime.plugins.hook_registry.HookRegistry.discard_source`."""
        with self.lock:
            return _undo.discard_source(self, source)

    # ------------------------------------------------------------------ introspection

    def _records_for(self, target: str) -> list[TargetRecord]:
        """The records of ``target`` in either spelling (``pkg.mod.Class.f`` or ``pkg.mod:Class.f``)."""
        dotted = target.replace(":", ".")
        return [r for r in self.targets.values() if r.spec.dotted == dotted or r.key == target]

    def describe(self, target: str | None = None) -> list[TargetReport]:
        """See :meth:`sglang_plugin_runtime.plugins.hook_registry.HookRegistry.describe`."""
        with self.lock:
            names = sorted(self.targets) if target is None else sorted(r.spec.text for r in self._records_for(target))
            reports = []
            for name in names:
                record = self.targets[name]
                slot = self.slots.get(record.key) if record.key is not None else None
                regs = self.registrations_of(record)
                rebound = 0
                if slot is not None:
                    rebound = sum(1 for rb in slot.rebinds if rb.namespace.get(rb.name) is rb.installed)
                reports.append(
                    TargetReport(
                        target=name,
                        status=record.status.value,
                        error=record.error,
                        resolved=record.key,
                        hooks=hook_reports(regs),
                        conflicts=slot.conflicts if slot is not None else tuple(registration_conflicts(regs)),
                        rebound=rebound,
                    )
                )
            return reports

    def is_hook_applied(self, target: str, hook: Callable[..., object], hook_type: HookType | None = None) -> bool:
        """See :meth:`sglang_plugin_runtime.plugins.hook_registry.HookRegistry.is_hook_applied`."""
        wanted = None if hook_type is None else HookType(hook_type)
        with self.lock:
            return any(
                record.status is HookStatus.APPLIED
                and any(r.hook is hook and (wanted is None or r.hook_type is wanted) for r in record.applied)
                for record in self._records_for(target)
            )

    def after_fork(self) -> None:
        # A thread of the parent may have held the lock at fork time; the child has only one thread.
        self.lock = threading.RLock()


_default = Registry()
_active = _default


def active_registry() -> Registry:
    """The registry ``HookRegistry`` and ``plugin_hook`` act on."""
    return _active


@contextlib.contextmanager
def isolated() -> Iterator[Registry]:
    """Make a fresh registry active for the block; on exit undo its patches and reactivate the previous one."""
    global _active
    previous, fresh = _active, Registry()
    _active = fresh
    try:
        yield fresh
    finally:
        fresh.reset()
        _active = previous


@after_fork_in_child
def _after_fork() -> None:
    _default.after_fork()
    if _active is not _default:
        _active.after_fork()
