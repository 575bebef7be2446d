"""The hook registry: one object that owns the registrations, the patches, the lock and the import watcher, and
the algorithms that find targets, apply hooks and undo them.

Targets. Two spellings are accepted: ``pkg.mod.Class.method`` (dotted; the module is the longest prefix present
in ``sys.modules``) and ``pkg.mod:Class.method`` (the module is explicit). Finding a target reads ``sys.modules``
and ``__dict__`` entries only: nothing is imported, no module-level ``__getattr__`` runs, and a module that
``importlib.util.LazyLoader`` has not executed yet counts as not imported (reading it would execute it). A class
attribute is read from ``__dict__`` so that a ``classmethod`` stays a ``classmethod`` and an inherited method is
found on its base without binding it; the wrapper goes back in the same kind of descriptor.

Slots. Registrations are kept per target *string* (``TargetRecord``). A target that resolves joins the ``Slot`` of
the attribute it names, keyed by the owner object and the attribute name, so every spelling of one attribute
(``m.f`` and ``m:f``, or a module under two names in ``sys.modules``) shares one wrapper. A slot is always rebuilt
from the original it recorded: wrappers never stack. After each batch every slot is brought up to date, so the
result does not depend on how registrations were split into batches: a target hooked through a class that a class
REPLACE has since replaced (or restored) moves to the class its path names now, and a subclass slot is rebuilt
when the method it inherits changed.

Stale references. ``from x import f`` copies the reference, so patching ``x.f`` alone leaves the importer calling
the original. After a batch, one walk over ``sys.modules`` rebinds, for every target of the batch at once, the
globals whose *name equals the target's attribute name* and whose value *is* the replaced object. A hook module's
``from x import f as _orig`` therefore keeps the original, which a REPLACE delegating to ``_orig`` needs. The walk
costs one set intersection per module (its globals with the batch's names), not a pass over every global of every
module per target: SGLang's walk costs about 53 ms per target with ``sglang.srt.managers.scheduler`` imported. It
writes into a module's namespace (a module's ``__setattr__`` never runs) and reads only namespaces that reading
cannot execute (``module_dict``).

The post-import hook. A target whose module is not imported yet is patched right after it executes, never
earlier. One finder sits at the front of ``sys.meta_path``. For a module name that is not watched it does a single
set membership test and steps aside, so unrelated imports stay cheap. For a watched name it asks the finders behind
it for the spec and wraps the spec's loader, whose ``exec_module`` runs the real one and then reports the fresh
module. The real loader is put back on the module and its spec before the module's code runs, so ``__loader__``
and ``__spec__.loader`` are never the proxy.

``HookRegistry`` and ``plugin_hook`` act on the *active* registry: the process's default one, or the fresh one
``isolated_registry()`` makes active for a block.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import importlib.util
import inspect
import itertools
import logging
import sys
import threading
import types
from collections.abc import Callable, Iterable, Iterator, Sequence
from importlib.machinery import ModuleSpec
from typing import TYPE_CHECKING, NamedTuple, cast

from ..._forking import after_fork_in_child
from ..._plugin_code import attach_registry, describe_failure, guarded, plugin_source
from . import _types as t
from ._wrappers import build_wrapper

if TYPE_CHECKING:
    from ._describe import TargetReport

logger = logging.getLogger(__name__)

_APPLIED, _PENDING, _REPLACE = t.HookStatus.APPLIED, t.HookStatus.PENDING, t.HookType.REPLACE


# ------------------------------------------------------------------ targets

_MODULE_GETATTR = types.ModuleType.__getattribute__


class Resolution(NamedTuple):
    """Where a target lives now: ``owner.name`` holds ``raw`` (``owned``: in the owner's own ``__dict__``)."""

    key: str  # the canonical spelling, module:attr.path
    owner: object
    name: str
    raw: object
    owned: bool


class Unresolved(NamedTuple):
    """Not resolvable now; importing one of ``watch`` may change that (none: no import can, the attribute path does
    not exist in a module that is imported)."""

    reason: str
    watch: tuple[str, ...]


def _parse_target(target: object) -> tuple[str | None, tuple[str, ...]]:
    """``(module, names after it)`` of a target string (``module`` is ``None`` for the dotted spelling); raise
    ``ValueError`` (``TypeError`` for a non-string) when it is malformed."""
    if not isinstance(target, str):
        raise TypeError(f"Hook target must be a string, got {type(target).__name__}: {target!r}")
    module, colon, attr = target.rpartition(":")
    parts = tuple(attr.split("."))
    if target.count(":") > 1 or not all(name.isidentifier() for name in target.replace(":", ".").split(".")):
        raise ValueError(f"Invalid target path (expected pkg.module.attr or pkg.module:Attr.path): {target}")
    if not colon and len(parts) < 2:
        raise ValueError(f"Invalid target path (need at least module.attr): {target}")
    return module if colon else None, parts


def module_dict(obj: object) -> dict[str, object] | None:
    """A module's namespace, read without running code: ``None`` for anything else, and for a module whose class
    intercepts attribute access (``LazyLoader``'s, until the module has executed)."""
    kind = type(obj)
    if kind is types.ModuleType or (issubclass(kind, types.ModuleType) and kind.__getattribute__ is _MODULE_GETATTR):
        return obj.__dict__
    return None


def resolve(target: str) -> Resolution | Unresolved:
    """Locate ``target`` among the modules imported now."""
    module, parts = _parse_target(target)
    # The module named before ':', else the longest prefix of the dotted path that is imported.
    splits = [(module, parts)] if module else [(".".join(parts[:i]), parts[i:]) for i in range(len(parts) - 1, 0, -1)]
    imported = [(name, rest) for name, rest in splits if sys.modules.get(name) is not None]
    if not imported:
        watch = tuple(name for name, _rest in splits)
        return Unresolved(f"module {watch[-1]!r} is not imported yet", watch)
    module_name, parts = imported[0]
    owner: object = sys.modules[module_name]
    owner_name = module_name
    for index, name in enumerate(parts):
        namespace = module_dict(owner)
        if namespace is None and isinstance(owner, types.ModuleType):
            return Unresolved(f"module {owner_name!r} is imported lazily and has not executed yet", (owner_name,))
        raw, owned = _lookup(owner, name, namespace)
        if raw is t.MISSING and namespace is not None:
            if (sub := sys.modules.get(f"{owner_name}.{name}")) is not None:
                raw, owned = sub, True
            elif "__path__" in namespace or getattr(namespace.get("__spec__"), "_initializing", False):
                # A package may gain the name when a submodule is imported; a module that is still executing
                # may define it further down.
                watch = tuple(f"{owner_name}.{'.'.join(parts[index:j])}" for j in range(index + 1, len(parts)))
                rest = ".".join(parts[index:])
                return Unresolved(f"{owner_name!r} has no attribute {rest!r} yet", watch or (owner_name,))
        if raw is t.MISSING:
            kind = "module" if namespace is not None else type(owner).__name__
            return Unresolved(f"{kind} {owner_name!r} has no attribute {name!r}", ())
        if index == len(parts) - 1:
            return Resolution(f"{module_name}:{'.'.join(parts)}", owner, name, raw, owned)
        owner = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
        owner_name = f"{owner_name}.{name}"
    raise AssertionError("unreachable: a target has at least one attribute")  # pragma: no cover


def _lookup(obj: object, name: str, namespace: dict[str, object] | None) -> tuple[object, bool]:
    """``(raw value, in obj's own __dict__)`` without running descriptors or ``__getattr__``; ``MISSING`` if absent."""
    if isinstance(obj, type):
        klass = next((k for k in obj.__mro__ if name in k.__dict__), None)
        return (t.MISSING, False) if klass is None else (klass.__dict__[name], klass is obj)
    if namespace is None and isinstance(own := getattr(obj, "__dict__", None), dict) and name in own:
        namespace = own
    if namespace is not None:
        return namespace.get(name, t.MISSING), True
    return getattr(obj, name, t.MISSING), False


def own_value(owner: object, name: str) -> object:
    """The raw value in ``owner.__dict__`` (descriptors not run), or :data:`MISSING`."""
    namespace = getattr(owner, "__dict__", None)
    if isinstance(namespace, (dict, types.MappingProxyType)):
        return namespace.get(name, t.MISSING)
    return getattr(owner, name, t.MISSING)


def unwrap(raw: object, owner: object) -> t.Unwrapped:
    """Classify ``raw``; ``TypeError`` for an attribute that cannot carry hooks."""
    if isinstance(raw, (classmethod, staticmethod)):
        return t.Unwrapped("classmethod" if isinstance(raw, classmethod) else "staticmethod", raw.__func__, raw)
    if isinstance(raw, (property, functools.cached_property)):
        getter = raw.fget if isinstance(raw, property) else raw.func
        if getter is None:
            raise TypeError("property has no getter to hook")
        return t.Unwrapped("property", getter, raw)
    if not callable(raw):
        raise TypeError("no such attribute" if raw is t.MISSING else f"attribute not callable (a {type(raw).__name__})")
    # e.g. ``f = len`` in a class body stays unbound, so its wrapper must not bind either.
    binds = not isinstance(owner, type) or hasattr(type(raw), "__get__")
    return t.Unwrapped("class" if isinstance(raw, type) else "function" if binds else "nonbinding", raw, raw)


def rewrap(unwrapped: t.Unwrapped, wrapper: object) -> object:
    """``wrapper`` in the kind of attribute the original came in."""
    kind, raw = unwrapped.kind, unwrapped.raw
    if kind in ("classmethod", "staticmethod", "nonbinding"):
        return (classmethod if kind == "classmethod" else staticmethod)(wrapper)  # type: ignore[arg-type]
    if isinstance(raw, property):
        return raw.getter(wrapper)  # type: ignore[arg-type]  # keeps fset, fdel, doc and a subclass's type
    if isinstance(raw, functools.cached_property):
        raw = copy.copy(raw)
        raw.func = wrapper  # type: ignore[assignment]
    return raw if kind == "property" else wrapper


# ------------------------------------------------------------------ the post-import hook


class _NotifyingLoader:
    """Delegates everything to the real loader (``create_module`` too); reports after ``exec_module``."""

    def __init__(self, loader: object, on_loaded: Callable[[str, frozenset[str]], None]) -> None:
        self._loader, self._on_loaded = loader, on_loaded

    def __getattr__(self, name: str) -> object:
        return getattr(self._loader, name)

    def exec_module(self, module: types.ModuleType) -> None:
        __tracebackhide__ = True
        for holder, attribute in ((module.__spec__, "loader"), (module, "__loader__")):  # the real loader, not us
            if getattr(holder, attribute, None) is self:
                setattr(holder, attribute, self._loader)
        before = frozenset(sys.modules)
        self._loader.exec_module(module)  # type: ignore[attr-defined]
        self._on_loaded(module.__name__, before)


class ImportWatcher:
    """A ``sys.meta_path`` finder that reports when one of the ``watched`` modules finishes executing."""

    def __init__(self, on_loaded: Callable[[str, frozenset[str]], None]) -> None:
        """``on_loaded(name, module_names_before_it_executed)`` is called after a watched module executed."""
        self.watched: set[str] = set()
        self._on_loaded, self._finding = on_loaded, threading.local()

    # The import system calls this for every module not imported yet: keep the unwatched path short.
    def find_spec(self, fullname: str, path: object = None, target: object = None) -> ModuleSpec | None:
        if fullname not in self.watched:
            return None
        finding: set[str] = self._finding.__dict__.setdefault("names", set())
        if fullname in finding:  # we, or a finder behind us, asked importlib again: let it go on without us
            return None
        finding.add(fullname)
        try:
            spec = importlib.util.find_spec(fullname)  # what the finders behind us find (we step aside meanwhile)
        finally:
            finding.discard(fullname)
        if spec is not None and hasattr(spec.loader, "exec_module") and not isinstance(spec.loader, _NotifyingLoader):
            spec.loader = _NotifyingLoader(spec.loader, self._on_loaded)  # type: ignore[assignment]
        return spec

    def watch(self, modules: set[str]) -> None:
        """Watch ``modules``: the finder sits at the front of ``sys.meta_path`` while there are any (modules already
        being imported still report)."""
        self.watched = modules
        installed = any(f is self for f in sys.meta_path)
        if modules and not installed:
            sys.meta_path.insert(0, self)
        elif installed and not modules:
            sys.meta_path[:] = [f for f in sys.meta_path if f is not self]


# ------------------------------------------------------------------ the registry


class _Walk(NamedTuple):
    """Module globals named like ``slot``'s attribute that hold one of ``stale`` get ``new``; their namespaces are
    added to ``slot.rebinds``, which the next walk for the slot visits again (modules that left ``sys.modules`` or a
    walk over the modules of one import miss them)."""

    slot: t.Slot
    stale: tuple[object, ...]
    new: object


class _Batch(NamedTuple):
    """What one apply (or discard) collects: failures, and the rebinding walks to run at its end."""

    failures: list[t.HookFailure]
    walks: list[_Walk]  # stale copies of what was replaced or removed get what replaced it


class Registry:
    """Registrations per target, one slot per patched attribute, and what it takes to undo them.

    Thread-safe: registration, application, undo and introspection share one re-entrant lock.
    """

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.targets: dict[str, t.TargetRecord] = {}
        self.slots: dict[tuple[int, str], t.Slot] = {}  # by (id(owner), name), in the order first patched
        self.applied = False  # whether apply_hooks() ran: later registrations then apply at once
        self._seq = itertools.count()
        self._watcher = ImportWatcher(self._on_module_loaded)

    def register(
        self,
        target: str,
        hook: t.Hook,
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
        _parse_target(target)
        with self.lock:
            record = self.targets.setdefault(target, t.TargetRecord(target))
            new = t.Registration(next(self._seq), hook_type, hook, source or plugin_source.get(), priority)
            self._warn_about_repeats(record, new)
            record.registrations.append(new)
            if self.applied:  # apply_hooks() already ran: apply now (failures are logged, and raised by the
                self._apply([target])  # next apply_hooks(strict=True), which takes the target again)

    def _warn_about_repeats(self, record: t.TargetRecord, new: t.Registration) -> None:
        # Rare paths: the messages are built eagerly.
        twin = next((r for r in record.registrations if r.hook is new.hook and r.hook_type is new.hook_type), None)
        if twin is not None:
            logger.warning(
                f"{t.describe_callable(new.hook)} is registered as a {new.hook_type.name} hook on '{record.target}' a "
                f"second time (first by {t.format_source(twin.source)}, now by {t.format_source(new.source)}): it will "
                "run twice per call. Register it once (a module imported under two names registers it twice)."
            )
        replaces = [r for r in t.ordered(record.slot.records if record.slot else [record]) if r.hook_type is _REPLACE]
        if replaces and new.hook_type is _REPLACE:
            logger.warning(
                f"Multiple REPLACE hooks on '{record.target}': previous ({replaces[-1].label()}) will be overridden "
                f"by ({new.label()}). The last registered REPLACE (highest priority first) takes effect."
            )

    # ------------------------------------------------------------------ applying

    def apply_hooks(self, strict: bool = False) -> None:
        """See :meth:`sglang_plugin_runtime.plugins.hook_registry.HookRegistry.apply_hooks`."""
        with self.lock:
            self.applied = True
            for record in self.targets.values():  # a pending target keeps the strictness of the apply that took it
                if record.status is not _APPLIED and record.status is not _PENDING:
                    record.strict = strict
            self._apply([name for name, record in self.targets.items() if record.status is not _APPLIED])

    def _apply(self, names: list[str], walk: Sequence[object] | None = None) -> None:
        """Take ``names`` and bring every slot up to date, then one rebinding walk (over ``walk``, default every
        module) for all of them; raise the failures of strict targets."""
        batch = _Batch([], [])
        self._finish([self._take(self.targets[name], batch) for name in sorted(names)], batch, walk)
        if strict := [failure for failure in batch.failures if self.targets[failure.target].strict]:
            raise t.HookApplyError(strict)

    def _finish(self, taken: list[t.Slot | None], batch: _Batch, walk: Sequence[object] | None = None) -> None:
        """Bring every slot up to date, twice: in between, targets hooked through a class that a class REPLACE has
        since replaced (or restored) are taken again through what their path names now. Then the walks, the watch
        list and the log."""
        self._update(taken, batch)
        moved = [r for r in self.targets.values() if r.slot is not None and _owner(r) is not r.slot.owner]
        for record in moved:  # its old slot forgets it in the next pass
            record.slot, record.status = None, t.HookStatus.REGISTERED
        self._update([self._take(record, batch) for record in moved], batch)
        _rebind(batch.walks, walk)
        self._watcher.watch({module for r in self.targets.values() if r.status is _PENDING for module in r.watch})
        for failure in batch.failures:
            logger.error("Failed to apply hooks to %s", failure)

    def _update(self, taken: list[t.Slot | None], batch: _Batch) -> None:
        """Build the ``taken`` slots, rebuild those whose hooks or inherited original changed since their last build,
        restore those left without hooks. Base classes first: a subclass wraps its base's method."""
        for slot in sorted(self.slots.values(), key=_depth):
            slot.records = [r for r in slot.records if r.slot is slot and r.registrations]  # moved or discarded
            if not slot.records:
                batch.walks.extend(self._undo(slot))
                del self.slots[id(slot.owner), slot.name]
            elif slot in taken or (slot.current is not None and _changed(slot)):
                self._build(slot, batch)

    def _take(self, record: t.TargetRecord, batch: _Batch) -> t.Slot | None:
        """The slot of ``record``'s attribute (made on first resolution), or ``None`` (failed or pending)."""
        if record.slot is not None:
            return record.slot
        with guarded(f"resolving the hook target {record.target}") as call:
            found = resolve(record.target)
            if isinstance(found, Resolution) and (key := (id(found.owner), found.name)) not in self.slots:
                original = unwrap(found.raw, found.owner)
                other = next((s for s in self.slots.values() if found.owned and s.current is original.func), None)
                if other is not None:  # a module global we rebound earlier (a re-export): hook the real original
                    original = original._replace(func=other.original.func)
                inherited = isinstance(found.owner, type) and not found.owned
                self.slots[key] = t.Slot(found.key, found.owner, found.name, original, inherited)
        if call.error is not None:
            self._fail([record], f"cannot hook {record.target}: {describe_failure(call.error)}", batch)
        elif isinstance(found, Unresolved):
            self._pend(record, found, batch)
        else:
            record.slot, record.resolved = self.slots[id(found.owner), found.name], found.key
            record.slot.records.append(record)
        return record.slot

    def _pend(self, record: t.TargetRecord, found: Unresolved, batch: _Batch) -> None:
        """Leave ``record`` pending until one of ``found.watch`` is imported; fail it if no import can help."""
        if not found.watch:
            return self._fail([record], found.reason, batch)
        record.error, record.watch = found.reason, found.watch
        if not _findable(record.target):
            top = record.target.replace(":", ".").split(".")[0]
            record.error = f"module {top!r} cannot be found (is it installed?)"
            if record.strict:
                return self._fail([record], record.error, batch)
            logger.warning("Hooks on %s stay pending: %s", record.target, record.error)
        record.status = _PENDING

    def _fail(self, records: Iterable[t.TargetRecord], reason: str, batch: _Batch) -> None:
        for record in records:
            record.status, record.error = t.HookStatus.FAILED, reason
            batch.failures.append(t.HookFailure(record.target, reason, tuple(r.label() for r in record.registrations)))

    def _build(self, slot: t.Slot, batch: _Batch) -> None:
        """(Re)build ``slot``'s wrapper from its original and install it; queue the walk for stale copies."""
        regs, old, key = t.ordered(slot.records), slot.current, (id(slot.owner), slot.name)
        slot.built = regs
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
        for record in slot.records:
            record.status, record.error = _APPLIED, None
        sources = ", ".join(sorted({t.format_source(r.source) for r in regs}))
        logger.info("Applied %d hook(s) to %s (from: %s)", len(regs), slot.key, sources)
        if _rebindable(slot):
            batch.walks.append(_Walk(slot, (slot.original.func,) if old is None else (slot.original.func, old), new))

    def _compose(self, slot: t.Slot, regs: list[t.Registration]) -> tuple[object, object]:
        """The callable to install and the raw attribute holding it: may raise, changes nothing."""
        original, target = slot.original, slot.records[0].target
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
        return new, rewrap(original, new)

    def _conflicts(self, slot: t.Slot, regs: list[t.Registration]) -> tuple[tuple[str, str], ...]:
        """A class REPLACE leaves the existing subclasses of the original behind: warn, and keep it as a conflict."""
        if slot.original.kind != "class" or not isinstance(slot.current, type):
            return ()
        subclasses: list[type] = type.__subclasses__(cast(type, slot.original.func))  # not a metaclass's override
        if not (left := [c for c in subclasses if all(c is not r.hook for r in regs)]):
            return ()
        names = ", ".join(f"{c.__module__}.{c.__qualname__}" for c in left)
        message = f"class REPLACE by {regs[-1].label()}: existing subclasses of the original keep inheriting: {names}"
        logger.warning("Class REPLACE on '%s': %s", slot.key, message)
        return (("class_replace_subclasses", message),)

    def _on_module_loaded(self, name: str, before: frozenset[str]) -> None:
        with self.lock:
            if waiting := [n for n, r in self.targets.items() if r.status is _PENDING and name in r.watch]:
                new_modules = [module for key, module in list(sys.modules.items()) if key not in before]
                try:  # each target as strict as the apply that took it
                    self._apply(waiting, new_modules)
                except t.HookApplyError:
                    raise  # strict: the import that made the target resolvable fails, naming it
                except Exception:  # a bug here must not break the user's import
                    logger.exception("Hook registry failed while handling the import of %s", name)

    # ------------------------------------------------------------------ undoing

    def _undo(self, slot: t.Slot) -> list[_Walk]:
        """Put back what ``slot`` changed; the walk that gives the original to copies taken after the patch."""
        if slot.current is None:
            return []
        if own_value(slot.owner, slot.name) is not slot.raw:
            logger.warning("Not restoring %s: it was changed after the hook registry patched it", slot.key)
        elif slot.previous is t.MISSING:
            delattr(slot.owner, slot.name)
        else:
            setattr(slot.owner, slot.name, slot.previous)
        return [_Walk(slot, (slot.current,), slot.original.func)] if _rebindable(slot) else []

    def reset(self) -> None:
        """See :meth:`sglang_plugin_runtime.plugins.hook_registry.HookRegistry.reset`."""
        with self.lock:
            # Modules that imported a target after it was patched hold our wrapper: they get the original too.
            _rebind([walk for slot in reversed(self.slots.values()) for walk in self._undo(slot)])
            self.targets.clear()
            self.slots.clear()
            self.applied = False
            self._watcher.watch(set())

    def discard_source(self, source: t.HookSource) -> int:
        """See :meth:`sglang_plugin_runtime.plugins.hook_registry.HookRegistry.discard_source`."""
        with self.lock:
            before = sum(len(record.registrations) for record in self.targets.values())
            for record in self.targets.values():
                record.registrations = [r for r in record.registrations if r.source != source]
            self.targets = {name: record for name, record in self.targets.items() if record.registrations}
            self._finish([], _Batch([], []))  # a slot left with no target restores its original
            return before - sum(len(record.registrations) for record in self.targets.values())

    def failed_targets(self, distribution: str) -> list[str]:
        """The targets with hooks from ``distribution`` that failed, or wait for a module that cannot be found."""
        with self.lock:
            return [
                name
                for name, record in self.targets.items()
                if any(r.source is not None and r.source.dist_name == distribution for r in record.registrations)
                and (record.status is t.HookStatus.FAILED or (record.status is _PENDING and not _findable(name)))
            ]

    # ------------------------------------------------------------------ introspection

    def _records_for(self, target: str) -> list[t.TargetRecord]:
        """The records of ``target`` in either spelling (``pkg.mod.Class.f`` or ``pkg.mod:Class.f``)."""
        dotted = target.replace(":", ".")
        return [r for r in self.targets.values() if r.target.replace(":", ".") == dotted or r.resolved == target]

    def describe(self, target: str | None = None) -> list[TargetReport]:
        """See :meth:`sglang_plugin_runtime.plugins.hook_registry.HookRegistry.describe`."""
        from ._describe import report  # reports are built only when asked: a serving process never loads them

        with self.lock:
            records = self.targets.values() if target is None else self._records_for(target)
            return [report(record, self.slots.values()) for record in sorted(records, key=lambda r: r.target)]

    def is_hook_applied(self, target: str, hook: t.Hook, hook_type: t.HookType | str | None = None) -> bool:
        """See :meth:`sglang_plugin_runtime.plugins.hook_registry.HookRegistry.is_hook_applied`."""
        wanted = None if hook_type is None else t.HookType(hook_type)
        with self.lock:
            records = [x for r in self._records_for(target) if r.status is _APPLIED and r.slot for x in r.slot.records]
            return any(reg.hook is hook and wanted in (None, reg.hook_type) for r in records for reg in r.registrations)


def _findable(target: str) -> bool:
    """Whether the top-level package of ``target`` is imported or can be found (without importing it)."""
    top = target.replace(":", ".").split(".")[0]
    return top in sys.modules or importlib.util.find_spec(top) is not None


def _depth(slot: t.Slot) -> int:
    """Base classes sort before their subclasses; non-class owners first."""
    return len(slot.owner.__mro__) if isinstance(slot.owner, type) else 0


def _rebindable(slot: t.Slot) -> bool:
    """Whether a module can hold a copy of ``slot``'s callable (``from x import f``; a subclass inherits, a property
    is read through its owner)."""
    return slot.original.kind != "property" and not slot.inherited


def _changed(slot: t.Slot) -> bool:
    """Whether ``slot``'s hooks, or for an inherited slot the method it inherits, changed since its last build."""
    return slot.built != t.ordered(slot.records) or (slot.inherited and _base_raw(slot) is not slot.original.raw)


def _owner(record: t.TargetRecord) -> object:
    """The object ``record``'s attribute belongs to now (``None`` when it does not resolve)."""
    with guarded(f"resolving the hook target {record.target}") as call:
        found = resolve(record.target)
    return found.owner if call.error is None and isinstance(found, Resolution) else None


def _base_raw(slot: t.Slot) -> object:
    """What an inherited slot's class inherits for its name right now (maybe a base's wrapper), or ``MISSING``."""
    assert isinstance(slot.owner, type)
    return next((k.__dict__[slot.name] for k in slot.owner.__mro__[1:] if slot.name in k.__dict__), t.MISSING)


def _rebind(walks: Sequence[_Walk], modules: Iterable[object] | None = None) -> None:
    """Run ``walks`` in one pass over ``modules`` (default: every module in ``sys.modules``) and the namespaces their
    slots rebound before."""
    by_name: dict[str, dict[int, _Walk]] = {}  # by id: ``walks`` keep every stale object alive meanwhile
    for walk in walks:
        by_name.setdefault(walk.slot.name, {}).update((id(old), walk) for old in walk.stale if old is not walk.new)
    if not by_name:
        return
    namespaces = map(module_dict, list(sys.modules.values()) if modules is None else modules)  # None: not a module
    rebound = (namespace for walk in walks for namespace in walk.slot.rebinds.values())
    for namespace in filter(None, [*namespaces, *rebound]):
        for name in namespace.keys() & by_name.keys():  # a C-level intersection: no Python loop over the globals
            if (hit := by_name[name].get(id(namespace[name]))) is not None:
                namespace[name] = hit.new
                hit.slot.rebinds[id(namespace)] = namespace


_default = Registry()
_active = _default


def active_registry() -> Registry:
    """The registry ``HookRegistry`` and ``plugin_hook`` act on."""
    return _active


# Loading reaches the registry through this (it never imports it: plugins that register hooks do). Where a load
# applied hooks before anything imported the registry, hooks registered from now on apply at once.
_default.applied = attach_registry(active_registry)


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


@after_fork_in_child
def _after_fork() -> None:
    # A thread of the parent may have held a lock at fork time; the child has only one thread.
    for registry in (_default, _active):
        registry.lock = threading.RLock()
