"""What the hook registry talks about and remembers: hook types and sources, registrations, targets and slots.

Shared by the registry (``_registry``), which owns every instance, and the reports (``_describe``), which read them.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from ..._plugin_code import HookSource as HookSource  # the registry's records name their source with it

#: A hook, or what it hooks.
Hook = Callable[..., object]

#: No such attribute (as the value an attribute had before a patch: there is nothing to restore but a deletion).
MISSING = object()

class HookType(enum.Enum):
    """How a hook is combined with its target (values match SGLang's)."""

    BEFORE = "before"
    AFTER = "after"
    AROUND = "around"
    REPLACE = "replace"


class HookStatus(str, enum.Enum):
    """Where a target stands; the values are part of the CLI's JSON schema."""

    REGISTERED = "registered"  # hooks registered, apply_hooks() not called since
    APPLIED = "applied"
    PENDING = "pending"  # waiting for its module to be imported (patched right after it is)
    FAILED = "failed"

    __str__ = str.__str__  # "applied", not "HookStatus.APPLIED"


# Documented (and pickled) under the public module.
HookType.__module__ = HookStatus.__module__ = "sglang_plugin_runtime.plugins.hook_registry"


@dataclass(frozen=True, slots=True)
class HookFailure:
    """Why one target could not be patched."""

    target: str
    message: str
    hooks: tuple[str, ...]  # "hook qualname [plugin=..., dist=...]" for each hook concerned

    def __str__(self) -> str:
        return f"{self.target}: {self.message} (hooks: {'; '.join(self.hooks) or 'no hooks'})"


class HookApplyError(RuntimeError):
    """Strict mode: one or more targets could not be patched (``failures`` lists them all)."""

    def __init__(self, failures: Iterable[HookFailure]) -> None:
        self.failures: tuple[HookFailure, ...] = tuple(failures)
        lines = "".join(f"\n  - {failure}" for failure in self.failures)
        super().__init__(f"{len(self.failures)} hook target(s) could not be applied:{lines}")


def format_source(source: HookSource | None) -> str:
    """A source for log lines and reports (SGLang's wording)."""
    if source is None:
        return "unknown"
    return f"plugin={source.plugin_name}" + (f", dist={source.dist_name}" if source.dist_name else "")


def describe_callable(obj: object) -> str:
    """A stable, human-readable name for a hook: ``module.qualname`` when available."""
    qualname, module = getattr(obj, "__qualname__", None), getattr(obj, "__module__", None)
    if not isinstance(qualname, str):
        return repr(obj)
    return f"{module}.{qualname}" if isinstance(module, str) and module else qualname


class Unwrapped(NamedTuple):
    """The callable in a raw attribute; ``kind``: "class", "function", "classmethod", "staticmethod", "property",
    "cached_property" or "nonbinding" (a callable class attribute that does not bind, e.g. a builtin)."""

    kind: str
    func: object
    raw: object


class Registration(NamedTuple):
    """One ``register()`` call; ``seq`` orders registrations of equal priority."""

    seq: int
    hook_type: HookType
    hook: Hook
    source: HookSource | None
    priority: int

    def label(self) -> str:
        return f"{describe_callable(self.hook)} [{format_source(self.source)}]"


@dataclass(slots=True, eq=False)
class TargetRecord:
    """One target *string*: its registrations and where it stands."""

    target: str
    registrations: list[Registration] = field(default_factory=list)
    status: HookStatus = HookStatus.REGISTERED
    error: str | None = None
    strict: bool = False  # the strictness of the apply that took it (also when its module is imported later)
    resolved: str | None = None  # the canonical module:attr.path once resolved
    watch: tuple[str, ...] = ()  # while pending: the modules whose import may make it resolvable
    slot: Slot | None = None


@dataclass(slots=True, eq=False)
class Slot:
    """One attribute (an owner object and a name): what was there, what is installed, for every target naming it."""

    key: str  # the canonical spelling it was first resolved through, for messages
    owner: object
    name: str
    original: Unwrapped
    # Inherited from a base class: the original is what the base provides *now*, read again at every build, so
    # the base's hooks run for the subclass too.
    inherited: bool
    records: list[TargetRecord] = field(default_factory=list)
    built: list[Registration] = field(default_factory=list)  # the registrations of its last build, failed or not
    previous: object = None  # the raw value before the first patch (MISSING: none of its own, the patch shadows)
    raw: object = None  # the raw value installed (the callable, or a descriptor around it); None: not patched
    current: object = None  # the callable installed
    rebinds: dict[int, dict[str, object]] = field(default_factory=dict)  # namespaces whose global `name` we rebound
    conflicts: tuple[tuple[str, str], ...] = ()  # (kind, message) seen when it was built


def ordered(records: Iterable[TargetRecord]) -> list[Registration]:
    """The registrations of ``records``, innermost first: by priority, then registration order."""
    return sorted((r for record in records for r in record.registrations), key=lambda r: (r.priority, r.seq))
