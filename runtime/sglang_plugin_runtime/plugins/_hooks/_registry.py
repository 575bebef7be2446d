"""The hook registry: one object that owns the registrations, the patches, the lock and the import
watcher, and the algorithms that find targets, apply hooks and undo them.

Targets. A :class:`~._types.Target` is parsed once: ``pkg.mod.Class.method`` (dotted; the module is
the longest prefix present in ``sys.modules``) and ``pkg.mod:Class.method`` (the module is explicit)
are one record. Finding a target reads ``sys.modules`` and ``__dict__`` entries only: nothing is
imported, no module-level ``__getattr__`` runs, and a module that ``importlib.util.LazyLoader`` has
not executed yet counts as not imported (reading it would execute it). A class attribute is read
from ``__dict__`` so that a ``classmethod`` stays a ``classmethod`` and an inherited method is found
on its base without binding it; the wrapper goes back in the same kind of descriptor.

Slots. A target that resolves joins the ``Slot`` of what it names. A module-level object (a
function, a class) is one slot per object and name: ``pkg.core.f``, its re-export ``pkg.api.f`` and
every ``from pkg.core import f`` are bindings of one function, so one chain (the hooks of every
target naming it) runs in all of them. A class's attribute is one slot per class and name: every
spelling of one method (through a module re-exporting the class, or a module under two names) shares
one wrapper too. A slot is always rebuilt from the original it recorded: wrappers never stack.

One rule keeps every binding right after any sequence of register, apply, discard and reset: a batch
resolves every target again, and one that names something else now (a class REPLACE replaced or
restored the class on its path, ``importlib.reload()`` made new objects) moves to the slot of what
it names; the batch goes on until nothing moves. A slot left without hooks restores its original; a
subclass slot is rebuilt when the method it inherits changed.

Bindings. ``from x import f`` copies the reference, so the module globals holding a module-level
slot's object are found by one walk over ``sys.modules`` per pass: a global whose *name equals the
slot's name* and whose value *is* the original (or the wrapper being replaced) gets the new one. A
hook module's ``from x import f as _orig`` therefore keeps the original, which a REPLACE delegating
to ``_orig`` needs. The walk costs one set intersection per module (its globals with the batch's
names), not a pass over every global of every module per target: SGLang's walk costs about 53 ms per
target with ``sglang.srt.managers.scheduler`` imported. It writes into a module's namespace (a
module's ``__setattr__`` never runs) and reads only namespaces that reading cannot execute
(``module_dict``). Undoing walks back the same way.

The post-import hook. A target whose module is not imported yet is patched right after it executes,
never earlier. One finder sits at the front of ``sys.meta_path`` while a target is pending or
applied. For a module name that is not watched it does a single set membership test and steps
aside, so unrelated imports stay cheap. For a watched name (a pending target's, or a patched
module's, which ``importlib.reload()`` looks up too) it asks the finders behind it for the spec and
wraps its loader, whose ``exec_module`` runs the real one and then reports the module. The real
loader is put back on the module and its spec before the module's code runs: ``__loader__`` is never
the proxy.

``HookRegistry`` and ``plugin_hook`` act on the *active* registry: the process's default one, or the
fresh one ``isolated_registry()`` makes active for a block.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import inspect
import itertools
import logging
import sys
import threading
import types
from collections.abc import Callable, Iterator
from importlib.machinery import ModuleSpec
from typing import TYPE_CHECKING, NamedTuple

from ..._forking import after_fork_in_child
from ..._plugin_code import attach_registry, current_source, describe_failure, guarded
from ._types import (
    MISSING,
    Hook,
    HookApplyError,
    HookFailure,
    HookSource,
    HookStatus,
    HookType,
    Registration,
    Resolution,
    Slot,
    Target,
    TargetRecord,
    Unwrapped,
    describe_callable,
    format_source,
    module_dict,
    ordered,
)
from ._wrappers import build_wrapper

if TYPE_CHECKING:
    from ._describe import TargetReport

logger = logging.getLogger(__name__)

_APPLIED, _PENDING, _REPLACE = HookStatus.APPLIED, HookStatus.PENDING, HookType.REPLACE
#: The conflicts register() warns about when a registration makes them.
_ON_REGISTER = ("multiple_replace", "same_hook_twice")
_PASSES = 8  # a batch resolves again until nothing moves: a nested class REPLACE takes one more


# ------------------------------------------------------------------ targets


class Unresolved(NamedTuple):
    """Not resolvable now; importing one of ``watch`` may change that (none: no import can, the
    attribute path does not exist in a module that is imported)."""

    reason: str
    watch: tuple[str, ...]


def resolve(target: Target) -> Resolution | Unresolved:
    """Locate ``target`` among the modules imported now."""
    splits = target.splits()
    for module_name, parts in splits:  # noqa: B007 (the parts of the one found)
        if sys.modules.get(module_name) is not None:
            break
    else:
        watch = tuple(name for name, _rest in splits)
        return Unresolved(f"module {watch[-1]!r} is not imported yet", watch)
    owner: object = sys.modules[module_name]
    path = module_name
    for index, name in enumerate(parts):
        namespace = module_dict(owner)
        if namespace is None and isinstance(owner, types.ModuleType):
            return Unresolved(f"module {path!r} is imported lazily and has not run yet", (path,))
        raw, owned = lookup(owner, name)
        if raw is MISSING and namespace is not None:
            if (sub := sys.modules.get(f"{path}.{name}")) is not None:
                raw, owned = sub, True
            elif "__path__" in namespace or getattr(
                namespace.get("__spec__"), "_initializing", False
            ):
                # A package may gain the name when a submodule is imported; a module that is
                # still executing may define it further down.
                rest = parts[index:]
                watch = tuple(f"{path}.{'.'.join(rest[:j])}" for j in range(1, len(rest)))
                return Unresolved(
                    f"{path!r} has no attribute {'.'.join(rest)!r} yet", watch or (path,)
                )
        if raw is MISSING:
            kind = "module" if namespace is not None else type(owner).__name__
            return Unresolved(f"{kind} {path!r} has no attribute {name!r}", ())
        if index == len(parts) - 1:
            return Resolution(f"{module_name}:{'.'.join(parts)}", owner, name, raw, owned)
        # not isinstance() on the module itself: a lazily loaded one would execute
        owner = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
        path = f"{path}.{name}"
    raise AssertionError("unreachable: a target has at least one attribute")  # pragma: no cover


def lookup(obj: object, name: str, start: int = 0) -> tuple[object, bool]:
    """``(raw value, whether obj holds it itself)``, read without running descriptors or
    ``__getattr__`` (``MISSING`` if absent). A class's value comes from its MRO from position
    ``start`` on (``1``: what it inherits); an object's from its own ``__dict__``, else from
    wherever it gets it."""
    if isinstance(obj, type):
        for klass in obj.__mro__[start:]:
            if name in klass.__dict__:
                return klass.__dict__[name], klass is obj
        return MISSING, False
    namespace = module_dict(obj)
    if namespace is None:
        namespace = getattr(obj, "__dict__", None)
        if not isinstance(namespace, dict) or name not in namespace:
            return getattr(obj, name, MISSING), False
    return namespace.get(name, MISSING), True


def unwrap(raw: object, owner: object) -> Unwrapped:
    """The callable in ``raw`` and how to put a wrapper back in the same kind of attribute;
    ``TypeError`` for an attribute that cannot carry hooks."""
    if isinstance(raw, (classmethod, staticmethod)):
        return Unwrapped(raw.__func__, raw, type(raw))
    if isinstance(raw, property):
        if raw.fget is None:
            raise TypeError("property has no getter to hook")
        return Unwrapped(raw.fget, raw, raw.getter)  # keeps fset, fdel, doc, subclass
    if isinstance(raw, functools.cached_property):
        return Unwrapped(raw.func, raw, functools.partial(_cached_property_of, raw))
    if isinstance(raw, functools.partialmethod) and callable(raw.func):
        args, keywords = raw.args, raw.keywords  # the hooks see the bound arguments too
        return Unwrapped(
            raw.func, raw, lambda wrapper: functools.partialmethod(wrapper, *args, **keywords)
        )
    if not callable(raw):
        raise TypeError(
            "no such attribute" if raw is MISSING else f"not callable (a {type(raw).__name__})"
        )
    # e.g. ``f = len`` in a class body stays unbound, so its wrapper must not bind either.
    binds = not isinstance(owner, type) or hasattr(type(raw), "__get__")
    return Unwrapped(raw, raw, _as_is if binds else staticmethod)


def never_called(owner: object, name: str) -> str | None:
    """Why the host never calls ``owner``'s attribute ``name`` through the attribute, for the owners
    known to call something else: a hook there would be applied and never fire."""
    if "__ray_metadata__" in getattr(owner, "__dict__", ()):
        return (
            "it is an attribute of a Ray actor class (@ray.remote), and Ray runs the actor in its "
            "own process from a copy of the class it wrapped; hook what the actor's methods call"
        )
    if name == "__post_init__" and type(owner).__module__.startswith("msgspec"):
        return (
            "msgspec calls the __post_init__ a Struct class had when it was made, not the "
            "attribute; hook the function that builds the object"
        )
    return None


def _as_is(wrapper: object) -> object:
    return wrapper


def _cached_property_of(raw: functools.cached_property[object], wrapper: Hook) -> object:
    new = copy.copy(raw)
    new.func = wrapper
    return new


# ------------------------------------------------------------------ the post-import hook


class _NotifyingLoader:
    """Delegates everything to the real loader (``create_module`` too); reports after
    ``exec_module``."""

    def __init__(self, loader: object, on_loaded: Callable[[str], None]) -> None:
        self._loader, self._on_loaded = loader, on_loaded

    def __getattr__(self, name: str) -> object:
        return getattr(self._loader, name)

    def exec_module(self, module: types.ModuleType) -> None:
        __tracebackhide__ = True
        for holder, attribute in ((module.__spec__, "loader"), (module, "__loader__")):
            if getattr(holder, attribute, None) is self:  # the real loader, not us
                setattr(holder, attribute, self._loader)
        self._loader.exec_module(module)  # type: ignore[attr-defined]
        self._on_loaded(module.__name__)


class ImportWatcher:
    """A ``sys.meta_path`` finder that reports when one of the ``watched`` modules finishes
    executing (a first import, or a reload)."""

    def __init__(self, on_loaded: Callable[[str], None]) -> None:
        """``on_loaded(name)`` is called after a watched module executed."""
        self.watched: set[str] = set()
        self._on_loaded = on_loaded

    # The import system calls this for every module not imported yet: keep the unwatched path short.
    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> ModuleSpec | None:
        if fullname not in self.watched:
            return None
        behind = sys.meta_path[sys.meta_path.index(self) + 1 :] if self in sys.meta_path else []
        for finder in behind:  # what the others find
            spec = getattr(finder, "find_spec", lambda *_: None)(fullname, path, target)
            if spec is not None:
                if hasattr(spec.loader, "exec_module"):
                    spec.loader = _NotifyingLoader(spec.loader, self._on_loaded)
                return spec  # type: ignore[no-any-return]
        return None

    def watch(self, modules: set[str]) -> None:
        """Watch ``modules``: the finder sits at the front of ``sys.meta_path`` while there are
        any (modules already being imported still report)."""
        self.watched = modules
        installed = any(f is self for f in sys.meta_path)
        if modules and not installed:
            sys.meta_path.insert(0, self)
        elif installed and not modules:
            sys.meta_path[:] = [f for f in sys.meta_path if f is not self]


# ------------------------------------------------------------------ the registry


class _Walk(NamedTuple):
    """Module globals named like ``slot`` that hold one of ``stale`` get ``new``; their namespaces
    join ``slot.modules``, which every later walk for the slot visits too (a module that left
    ``sys.modules``, or one a walk over the modules of one import does not see)."""

    slot: Slot
    stale: tuple[object, ...]
    new: object


class _Batch(NamedTuple):
    """What one apply (or discard) collects: failures, and the walks to run at the end of a pass."""

    failures: list[tuple[bool, HookFailure]]  # (strict, failure)
    walks: list[_Walk]


class Registry:
    """Registrations per target, one slot per hooked object or attribute, and what it takes to
    undo them.

    Thread-safe: registration, application, undo and introspection share one re-entrant lock.
    """

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.targets: dict[str, TargetRecord] = {}  # by Target.dotted
        self.slots: list[Slot] = []  # in the order made; undone in reverse
        self.applied = False  # whether apply_hooks() ran: later registrations then apply at once
        self._seq = itertools.count()
        self._watcher = ImportWatcher(self._on_module_loaded)

    def register(
        self,
        target: str,
        hook: Hook,
        hook_type: HookType | str = HookType.AFTER,
        *,
        source: HookSource | None = None,
        priority: int = 0,
    ) -> None:
        """See :meth:`sglang_plugin_runtime.plugins.hook_registry.HookRegistry.register`."""
        hook_type = HookType(hook_type)
        if isinstance(hook, type) and hook_type is not _REPLACE:
            raise TypeError(
                f"Class {hook.__name__} can only be used with HookType.REPLACE, got "
                f"HookType.{hook_type.name}. Use a function for BEFORE/AFTER/AROUND hooks."
            )
        if not callable(hook):
            raise TypeError(
                f"Hook for {target!r} must be callable, got {type(hook).__name__}: {hook!r}"
            )
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise TypeError(f"priority must be an int, got {type(priority).__name__}")
        parsed = Target.parse(target)
        with self.lock:
            record = self.targets.setdefault(parsed.dotted, TargetRecord(parsed))
            known = self._conflicts(record, _ON_REGISTER)
            source = source or current_source()
            record.registrations.append(
                Registration(next(self._seq), hook_type, hook, source, priority)
            )
            for message in self._conflicts(record, _ON_REGISTER):
                if message not in known:
                    logger.warning("Hooks on '%s': %s", target, message)
            # apply_hooks() already ran: apply now (a failure is logged, and raised by the next
            # apply_hooks(strict=True), which takes the target again)
            if self.applied:
                self._apply([record])

    def _conflicts(self, record: TargetRecord, kinds: tuple[str, ...]) -> list[str]:
        """The messages of the conflicts of ``kinds`` on ``record``'s slot that
        :func:`._describe.find_conflicts` finds (loaded only when there is something to analyse:
        two hooks, or a class REPLACE)."""
        slot = record.slot
        regs = ordered(slot.records if slot else [record])
        if len(regs) < 2 and not (slot and isinstance(slot.original.func, type)):
            return []
        from ._describe import find_conflicts

        found = find_conflicts(regs, slot, self.slots)
        return [message for kind, message in found if kind in kinds]

    # ------------------------------------------------------------------ applying

    def apply_hooks(self, strict: bool = False) -> None:
        """See :meth:`sglang_plugin_runtime.plugins.hook_registry.HookRegistry.apply_hooks`."""
        with self.lock:
            self.applied = True
            for record in self.targets.values():  # a pending target keeps its apply's strictness
                if record.status not in (_APPLIED, _PENDING):
                    record.strict = strict
            self._apply([r for r in self.targets.values() if r.status is not _APPLIED])

    def _apply(self, records: list[TargetRecord]) -> None:
        """Place ``records`` and every target in a slot in the slot of what it names now, then
        bring the slots in line with their hooks, pass after pass until nothing moves; each pass
        ends with one walk. Raise the failures of strict targets."""
        batch = _Batch([], [])
        for _pass in range(_PASSES):
            attached = [r for r in self.targets.values() if r.slot is not None]
            moved = [r for r in dict.fromkeys([*records, *attached]) if self._place(r, batch)]
            if _pass and not moved:
                break
            taken = {r.slot for r in [*records, *moved]}  # a retried failed build too
            # Base classes first (non-class owners before them): a subclass slot wraps what its
            # bases hold now.
            for slot in sorted(
                self.slots, key=lambda s: len(s.owner.__mro__) if isinstance(s.owner, type) else 0
            ):
                slot.records = [r for r in slot.records if r.registrations and r.slot is slot]
                if not slot.records:
                    self._undo(slot, batch)
                    self.slots.remove(slot)
                elif (  # its hooks changed, or for an inherited slot the method it inherits
                    slot in taken
                    or slot.built != ordered(slot.records)
                    or (
                        slot.inherited
                        and lookup(slot.owner, slot.name, 1)[0] is not slot.original.raw
                    )
                ):
                    self._build(slot, batch)
            _rebind(batch.walks)
            batch.walks.clear()
            records = []
        watched = {m for r in self.targets.values() if r.status is _PENDING for m in r.watch}
        watched |= {r.found.key.partition(":")[0] for r in self.targets.values() if r.found}
        self._watcher.watch(watched)
        for _strict, failure in batch.failures:
            logger.error("Failed to apply hooks to %s", failure)
        if strict := [failure for is_strict, failure in batch.failures if is_strict]:
            raise HookApplyError(strict)

    def _place(self, record: TargetRecord, batch: _Batch) -> bool:
        """Put ``record`` in the slot of what it names now (made on first resolution), or leave it
        pending until one of the modules it watches is imported, or failed when no import can help;
        whether that changed its slot."""
        slot = None  # also when resolving or classifying raises (a module constant: not callable)
        with guarded(f"resolving the hook target {record.target}") as call:
            found = resolve(record.target)
            if isinstance(found, Resolution):
                slot = self._slot_for(found)
        if slot is not None and slot is record.slot:
            return False
        record.slot = record.found = None  # it names something else now: its old slot lets it go
        if call.error is not None:
            self._fail(
                [record], f"cannot hook {record.target}: {describe_failure(call.error)}", batch
            )
        elif isinstance(found, Unresolved) and not found.watch:
            self._fail([record], found.reason, batch)
        elif isinstance(found, Unresolved):
            record.status, record.error, record.watch = _PENDING, found.reason, found.watch
            if (missing := why_missing(record.target)) is not None:
                record.error, certain = missing
                if record.strict and certain:
                    self._fail([record], record.error, batch)
                else:
                    logger.warning(
                        "Hooks on %s stay pending: %s (hooks: %s)",
                        record.target,
                        record.error,
                        ", ".join(r.label() for r in record.registrations),
                    )
        elif slot is not None:  # resolved
            record.slot, record.found = slot, found
            slot.records.append(record)
            if (namespace := module_dict(found.owner)) is not None:
                slot.modules[id(namespace)] = namespace
        return True

    def _slot_for(self, found: Resolution) -> Slot:
        """The slot of what ``found`` names: a module-level object's, wherever it is bound (a module
        holding our wrapper under its name too), or an attribute's; made when there is none."""
        module_level = module_dict(found.owner) is not None
        for slot in self.slots:
            if slot.name != found.name or slot.module_level is not module_level:
                continue
            if (
                found.raw is slot.original.raw or (slot.raw is not None and found.raw is slot.raw)
                if module_level
                else found.owner is slot.owner
            ):
                return slot
        if never := never_called(found.owner, found.name):
            raise TypeError(f"a patch there never runs: {never}")
        inherited = isinstance(found.owner, type) and not found.owned  # a module is not a type
        original = unwrap(found.raw, found.owner)
        slot = Slot(found.key, found.owner, found.name, original, inherited, module_level)
        self.slots.append(slot)
        return slot

    def _fail(self, records: list[TargetRecord], reason: str, batch: _Batch) -> None:
        for record in records:
            record.status, record.error = HookStatus.FAILED, reason
            hooks = tuple(r.label() for r in record.registrations)
            batch.failures.append((record.strict, HookFailure(str(record.target), reason, hooks)))

    def _build(self, slot: Slot, batch: _Batch) -> None:
        """(Re)build ``slot``'s wrapper from its original and install it: set the attribute, or
        queue the walk that gives it to every module holding the object."""
        slot.built = regs = ordered(slot.records)
        old = slot.raw
        with guarded(f"the hooks on {slot.key}") as call:
            if slot.inherited:
                slot.original = unwrap(lookup(slot.owner, slot.name, 1)[0], slot.owner)
            raw = _compose(slot)
            if not slot.module_level:
                held, owned = lookup(slot.owner, slot.name)
                if old is None:
                    slot.previous = held if owned else MISSING
                elif not owned or held is not old:
                    raise RuntimeError(
                        "the attribute was changed outside the hook registry after it was patched"
                    )
                setattr(slot.owner, slot.name, raw)
        if call.error is not None:
            kept = " (the previously applied hooks stay in place)" if old is not None else ""
            return self._fail(slot.records, describe_failure(call.error) + kept, batch)
        slot.raw = raw
        for message in self._conflicts(slot.records[0], ("class_replace_subclasses",)):
            logger.warning("Hooks on '%s': %s", slot.key, message)
        for record in slot.records:
            record.status, record.error = _APPLIED, None
        logger.info(
            "Applied %d hook(s) to %s (from: %s)",
            len(regs),
            slot.key,
            ", ".join(sorted({format_source(r.source) for r in regs})),
        )
        if slot.module_level:
            batch.walks.append(_Walk(slot, (slot.original.raw, old), raw))

    def _on_module_loaded(self, name: str) -> None:
        with self.lock:
            waiting = [r for r in self.targets.values() if r.status is _PENDING and name in r.watch]
            try:  # as strict as the apply that took each target; a reload moves its targets
                self._apply(waiting)
            except HookApplyError:
                raise  # strict: the import that made the target resolvable fails, naming it
            except Exception:  # a bug here must not break the user's import
                logger.exception("Hook registry failed while handling the import of %s", name)

    # ------------------------------------------------------------------ undoing

    def _undo(self, slot: Slot, batch: _Batch) -> None:
        """Put back what ``slot`` changed (a module-level object: in the walk, which gives the
        original to every module holding the wrapper, copies taken after the patch too)."""
        held, owned = lookup(slot.owner, slot.name)
        kept = not owned or held is not slot.raw
        if slot.raw is not None and kept and (slot.records or not slot.module_level):
            logger.warning(
                "Not restoring %s: it was changed after the hook registry patched it", slot.key
            )
        if slot.module_level:
            batch.walks.append(_Walk(slot, (slot.raw,), slot.original.raw))
        elif not kept:
            if slot.previous is MISSING:
                delattr(slot.owner, slot.name)
            else:
                setattr(slot.owner, slot.name, slot.previous)

    def reset(self) -> None:
        """See :meth:`sglang_plugin_runtime.plugins.hook_registry.HookRegistry.reset`."""
        with self.lock:
            batch = _Batch([], [])
            for slot in reversed(self.slots):
                self._undo(slot, batch)
            _rebind(batch.walks)
            self.targets, self.slots, self.applied = {}, [], False
            self._watcher.watch(set())

    def discard_source(self, source: HookSource) -> int:
        """See :meth:`sglang_plugin_runtime.plugins.hook_registry.HookRegistry.discard_source`."""
        with self.lock:
            count = 0
            for record in self.targets.values():
                kept = [r for r in record.registrations if r.source != source]
                count += len(record.registrations) - len(kept)
                record.registrations = kept
            self.targets = {name: r for name, r in self.targets.items() if r.registrations}
            self._apply([])  # a slot left with no target restores its original
            return count

    def failed_targets(self, distribution: str) -> list[str]:
        """The targets with hooks from ``distribution`` that failed, or wait for a module that
        cannot be found."""
        with self.lock:
            return [
                str(record.target)
                for record in self.targets.values()
                if any(
                    r.source and r.source.dist_name == distribution for r in record.registrations
                )
                and (
                    record.status is HookStatus.FAILED
                    or (record.status is _PENDING and why_missing(record.target) is not None)
                )
            ]

    # ------------------------------------------------------------------ introspection

    def _records_for(self, target: str | None) -> list[TargetRecord]:
        """Every record, or the one of ``target`` in either spelling (``[]`` when none matches)."""
        if target is None:
            return sorted(self.targets.values(), key=lambda r: str(r.target))
        with contextlib.suppress(TypeError, ValueError, KeyError):
            return [self.targets[Target.parse(target).dotted]]
        return []

    def describe(self, target: str | None = None) -> list[TargetReport]:
        """See :meth:`sglang_plugin_runtime.plugins.hook_registry.HookRegistry.describe`."""
        # Reports are built only when asked for: a serving process never loads them.
        from ._describe import report

        with self.lock:
            return [report(record, self.slots) for record in self._records_for(target)]

    def is_hook_applied(
        self, target: str, hook: Hook, hook_type: HookType | str | None = None
    ) -> bool:
        """See :meth:`sglang_plugin_runtime.plugins.hook_registry.HookRegistry.is_hook_applied`."""
        wanted = None if hook_type is None else HookType(hook_type)
        with self.lock:
            return any(
                r.hook is hook and wanted in (None, r.hook_type)
                for record in self._records_for(target)
                if record.status is _APPLIED and record.slot
                for r in record.slot.built
            )


def _compose(slot: Slot) -> object:
    """The raw attribute to install for ``slot.built``: may raise, changes nothing (so a failed
    build leaves the previously applied hooks in place)."""
    original, target = slot.original, slot.records[0].target
    replaces = [r for r in slot.built if r.hook_type is _REPLACE]
    others = [r for r in slot.built if r.hook_type is not _REPLACE]
    if isinstance(original.raw, type) and others:
        raise TypeError(
            f"Target '{target}' is a class: only HookType.REPLACE applies to a class, not "
            f"{others[0].hook_type.name} ({others[0].label()}). To hook a method, use "
            f"'{target}.<method_name>'."
        )
    for r in [] if inspect.iscoroutinefunction(original.func) else others:
        if inspect.iscoroutinefunction(r.hook):
            raise TypeError(
                f"{r.hook_type.name} hook {describe_callable(r.hook)!r} is 'async def' but the "
                f"target is synchronous; its coroutine would never be awaited ({r.label()})"
            )
    new = replaces[-1].hook if replaces else original.func
    if others or not (replaces and (isinstance(original.raw, type) or isinstance(new, type))):
        new = build_wrapper(original.func, new, others[::-1], slot.key, slot.name == "__init__")
    return original.put_back(new)


def why_missing(target: Target) -> tuple[str, bool] | None:
    """Why no import can bring a pending ``target``'s module, and whether that is certain here
    (:func:`._missing.why_missing`, loaded only when a target waits)."""
    from ._missing import why_missing

    return why_missing(target.dotted)


def _rebind(walks: list[_Walk]) -> None:
    """Run ``walks`` in one pass over ``sys.modules`` and the namespaces their slots hold."""
    news = {  # by id: the walks keep them alive
        (w.slot.name, id(old)): w
        for w in walks
        for old in w.stale
        if old is not None and old is not w.new
    }

    names = {name for name, _ in news}
    visit = [module_dict(module) for module in list(sys.modules.values())] if names else []
    visit += [namespace for walk in walks for namespace in walk.slot.modules.values()]
    for namespace in {id(ns): ns for ns in visit if ns is not None}.values():
        for name in namespace.keys() & names:  # a C-level intersection: no loop over the globals
            if (hit := news.get((name, id(namespace[name])))) is not None:
                namespace[name] = hit.new
                hit.slot.modules[id(namespace)] = namespace


_default = Registry()
_active = _default


def active_registry() -> Registry:
    """The registry ``HookRegistry`` and ``plugin_hook`` act on."""
    return _active


# Loading reaches the registry through this (it never imports it: plugins that register hooks do).
# Where a load applied hooks before anything imported the registry, hooks registered from now on
# apply at once.
_default.applied = attach_registry(active_registry)


@contextlib.contextmanager
def isolated_registry() -> Iterator[Registry]:
    """Give the block a fresh, empty registry; on exit undo its patches and make the previous one
    active again.

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


@after_fork_in_child
def _after_fork() -> None:
    # A thread of the parent may have held a lock at fork time; the child has only one thread.
    for registry in (_default, _active):
        registry.lock = threading.RLock()
