"""Reports about registered hooks: a stable, JSON-friendly API for ``sglang-plugins doctor`` and
``explain``.

Imported only when a report is asked for, never by a serving process. Reports are frozen dataclasses
built from a snapshot of the registry; holding one never keeps the registry locked and never changes
when the registry does.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from types import MappingProxyType
from typing import Any

from ..._lazy_exports import old_attribute
from ..._plugin_code import resolution_sources, resolution_wrappers
from ._missing import missing_module
from ._types import (
    MISSING,
    HookStatus,
    HookType,
    Registration,
    Slot,
    TargetRecord,
    describe_callable,
    format_source,
    ordered,
)


class _Report:
    def to_dict(self) -> dict[str, Any]:
        """The fields, for JSON: the reports a report holds as lists of dicts."""
        fields = asdict(self)  # type: ignore[call-overload]  # every subclass is a dataclass
        return {k: list(v) if isinstance(v, tuple) else v for k, v in fields.items()}


@dataclass(frozen=True)
class HookReport(_Report):
    """One registered hook, as it takes part in its target's chain."""

    type: str
    """``before``, ``after``, ``around`` or ``replace``."""
    hook: str
    plugin: str | None
    distribution: str | None
    priority: int
    active: bool
    """False for a REPLACE hook that a later (or higher-priority) REPLACE overrides."""
    target: str = ""
    """The target it was registered on: another one than the report's when both name one function (a
    re-export) or one attribute (a module under two names)."""


# old attribute names, deprecated
HookReport.__getattr__ = old_attribute  # type: ignore[attr-defined]


@dataclass(frozen=True)
class ResolutionHookReport(_Report):
    """One wrapper of one of SGLang's named resolution steps (``register_resolution_hook``)."""

    step: str
    position: int
    """1 for the outermost: the last registered runs first."""
    hook: str
    plugin: str | None
    distribution: str | None


@dataclass(frozen=True)
class Conflict(_Report):
    """A combination of hooks that works but deserves a look."""

    kind: str
    """"multiple_replace", "multiple_around", "class_replace_subclasses",
    "method_replace_overrides_class_replace" or "same_hook_twice"."""
    message: str


@dataclass(frozen=True)
class TargetReport(_Report):
    """Everything known about one target string."""

    target: str
    status: str
    """A :class:`~sglang_plugin_runtime.plugins.hook_registry.HookStatus` value."""
    error: str | None
    resolved: str | None
    """Canonical ``module:attr.path`` once resolved, else ``None``."""
    hooks: tuple[HookReport, ...]
    """Hooks in nesting order, outermost first (the order BEFORE/AROUND hooks run on the way in;
    AFTER hooks run in reverse on the way out), REPLACE last; overridden REPLACEs flagged."""
    conflicts: tuple[Conflict, ...]
    rebound: int
    """How many stale module globals currently point at the patched object through rebinding."""


def report(record: TargetRecord, slots: Iterable[Slot]) -> TargetReport:
    """The report of one target; ``slots``: all of its registry's (the caller holds its lock).

    Its hooks: in nesting order, outermost first, then the winning REPLACE and overridden ones. Its
    conflicts: combinations that work but deserve a look."""
    slot = record.slot
    records = slot.records if slot else [record]
    regs = ordered(records)
    # Outermost first, REPLACEs last; the first of them is the one that runs.
    nesting = sorted(reversed(regs), key=lambda r: r.hook_type is HookType.REPLACE)
    winner = next((r for r in nesting if r.hook_type is HookType.REPLACE), None)
    conflicts = [Conflict(*found) for found in find_conflicts(regs, slot, slots)]
    rebound = 0
    if slot and slot.raw is not None:
        resolved_in = {id(vars(r.found.owner)) for r in slot.records if r.found}
        rebound = sum(
            ns.get(slot.name) is slot.raw
            for key, ns in slot.modules.items()
            if key not in resolved_in
        )
    targets = {id(reg): str(r.target) for r in records for reg in r.registrations}
    hooks = (
        HookReport(
            r.hook_type.value,
            describe_callable(r.hook),
            r.source and r.source.plugin_name,
            r.source and r.source.dist_name,
            r.priority,
            active=r.hook_type is not HookType.REPLACE or r is winner,
            target=targets[id(r)],
        )
        for r in nesting
    )
    return TargetReport(
        str(record.target),
        record.status.value,
        record.error,
        record.found and record.found.key,
        tuple(hooks),
        tuple(conflicts),
        rebound,
    )


def find_conflicts(
    regs: list[Registration], slot: Slot | None, slots: Iterable[Slot]
) -> list[tuple[str, str]]:
    """``(kind, message)`` for each combination of ``regs`` (the hooks of one slot, or of one
    target that has none, in :func:`ordered` order) that works but deserves a look; ``slots``: all
    of the registry's. The one analysis behind the registry's warnings and the reports."""
    replaces = [r for r in regs if r.hook_type is HookType.REPLACE]
    arounds = [r for r in regs if r.hook_type is HookType.AROUND]
    found = []
    if len(replaces) > 1:
        message = f"{len(replaces)} REPLACE hooks; only {replaces[-1].label()} runs, overriding "
        found.append(("multiple_replace", message + ", ".join(r.label() for r in replaces[:-1])))
    if len(arounds) > 1:
        labels = ", ".join(r.label() for r in arounds)
        message = f"{len(arounds)} AROUND hooks ({labels}); if one skips original_fn, "
        found.append(("multiple_around", message + "the hooks inside it are bypassed"))
    if slot is not None and slot.raw is not None:
        original, hooks = slot.original.func, [r.hook for r in slot.built]
        # A class is installed as itself: ``raw`` is the class that replaced it; the subclasses
        # made before keep inheriting from the original (``type``'s method: not a metaclass's).
        if isinstance(original, type) and slot.raw is not original:
            subclasses: list[type] = type.__subclasses__(original)
            if left := [f"{c.__module__}.{c.__qualname__}" for c in subclasses if c not in hooks]:
                message = f"class REPLACE by {regs[-1].label()}: existing subclasses of the "
                message += f"original keep inheriting: {', '.join(left)}"
                found.append(("class_replace_subclasses", message))
        owner = next(
            (s for s in slots if s.raw is slot.owner and isinstance(s.original.raw, type)), None
        )
        if owner and replaces and slot.previous is not MISSING:  # its own method
            message = (
                f"method REPLACE ({replaces[-1].label()}) overrides the class REPLACE's own "
                f"implementation of '{slot.name}' on {owner.key}"
            )
            found.append(("method_replace_overrides_class_replace", message))
    for index, reg in enumerate(regs):
        if first := next(
            (r for r in regs[:index] if r.hook is reg.hook and r.hook_type is reg.hook_type), None
        ):
            message = (
                f"{describe_callable(reg.hook)} is registered as a {reg.hook_type.name} hook a "
                f"second time (first by {format_source(first.source)}, again by "
                f"{format_source(reg.source)}): it runs twice per call. Register it once (a module "
                "imported under two names registers it twice)"
            )
            found.append(("same_hook_twice", message))
    return found


# ---- SGLang's private ``HookRegistry._hooks`` and ``._patched`` (hook_registry._SGLangStateView)


def sglang_hooks(records: Iterable[TargetRecord]) -> object:
    """``{target: [(hook type, hook, source), ...]}`` in registration order, each target spelled as
    first registered; a missing target reads as ``[]``, as in SGLang's ``defaultdict``."""
    # A record's registrations are kept in registration order (appended, filtered by a discard).
    hooks = {
        record.target.text: [(r.hook_type, r.hook, r.source) for r in record.registrations]
        for record in records
    }
    return MappingProxyType(defaultdict(list, hooks))


def sglang_patched(records: Iterable[TargetRecord]) -> object:
    """The targets SGLang's ``apply_hooks()`` would have patched by now: those applied, and those
    waiting for their module's first import, which can be found (SGLang imports it at once, this
    registry patches it when the host does), each spelled as first registered."""
    return frozenset(
        r.target.text
        for r in records
        if r.status is HookStatus.APPLIED
        or (
            r.status is HookStatus.PENDING
            and missing_module(r.target.dotted, imported_only=True) is None
        )
    )


def describe_resolution_hooks(step: str | None = None) -> list[ResolutionHookReport]:
    """The wrappers plugins registered on SGLang's named server-argument resolution steps
    (``sglang.srt.arg_groups.resolution_hooks.register_resolution_hook(name)``, SGLang 0.5.23 on),
    by step name (all steps, or ``step``), each with the plugin whose code registered it; the last
    registered of a step runs outermost. Empty where SGLang's module is not imported."""
    wrappers = resolution_wrappers()
    return [
        ResolutionHookReport(
            name,
            position,
            describe_callable(wrapper),
            getattr(source, "plugin_name", None),
            getattr(source, "dist_name", None),
        )
        for name in sorted(wrappers)
        if step in (None, name)
        for position, wrapper in enumerate(reversed(wrappers[name]), start=1)
        for source in [resolution_sources.get(id(wrapper))]
    ]
