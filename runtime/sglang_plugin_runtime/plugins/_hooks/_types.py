"""What the hook registry talks about and remembers: hook types and sources, targets, registrations
and slots.

Shared by the registry (``_registry``), which owns every instance, and the reports (``_describe``),
which read them.
"""

from __future__ import annotations

import enum
import functools
import operator
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from ..._plugin_code import (
    HookSource as HookSource,
)  # the registry's records name their source with it

#: A hook, or what it hooks.
Hook = Callable[..., object]

#: ``ModuleType``'s attribute access: a module class that overrides it (``LazyLoader``'s) runs code.
_MODULE_GETATTR = types.ModuleType.__getattribute__


def module_dict(obj: object) -> dict[str, object] | None:
    """A module's namespace, read without running code: ``None`` for anything else, and for a
    module whose class intercepts attribute access (``LazyLoader``'s, until it has executed)."""
    kind = type(obj)
    if issubclass(kind, types.ModuleType) and kind.__getattribute__ is _MODULE_GETATTR:
        return vars(obj)
    return None


#: No such attribute (the value an attribute had before a patch: nothing to restore but a deletion).
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

    def __reduce__(self) -> tuple[type[HookApplyError], tuple[tuple[HookFailure, ...]]]:
        return HookApplyError, (self.failures,)  # pickled with its failures, not its message


def format_source(source: HookSource | None) -> str:
    """A source for log lines and reports (SGLang's wording)."""
    if source is None:
        return "unknown"
    return f"plugin={source.plugin_name}" + (
        f", dist={source.dist_name}" if source.dist_name else ""
    )


def describe_callable(obj: object) -> str:
    """A stable, human-readable name for a hook: ``module.qualname`` when available. A
    ``functools.partial`` is named by its function and the names it binds, a callable object by its
    class (``mod.Scale(...)``), never by their values or ``repr()`` (a rank's own number differs per
    rank)."""
    if isinstance(obj, functools.partial):
        bound = ["..."] * len(obj.args) + [f"{key}=..." for key in obj.keywords]
        return f"functools.partial({', '.join([describe_callable(obj.func), *bound])})"
    qualname, module = getattr(obj, "__qualname__", None), getattr(obj, "__module__", None)
    if not isinstance(qualname, str):
        return f"{describe_callable(type(obj))}(...)"
    return f"{module}.{qualname}" if isinstance(module, str) and module else qualname


@dataclass(frozen=True, slots=True)
class Target:
    """A hook target, parsed once. Its two spellings, ``pkg.mod.Class.m`` and ``pkg.mod:Class.m``,
    are one target: equal, with one hash (``dotted``). ``text``: the spelling as given."""

    dotted: str
    text: str = field(default="", compare=False)

    @classmethod
    def parse(cls, text: object) -> Target:
        """``ValueError`` for a malformed target (``TypeError`` for a non-string)."""
        if not isinstance(text, str):
            raise TypeError(f"Hook target must be a string, got {type(text).__name__}: {text!r}")
        dotted = text.replace(":", ".")
        if text.count(":") > 1:
            raise ValueError(_INVALID.format(text, "it has more than one ':'"))
        if len(cls.names_of(dotted, text)) < 2:
            raise ValueError(_INVALID.format(text, "need at least module.attr"))
        return cls(dotted, text)

    @staticmethod
    def names_of(path: str, text: str | None = None) -> list[str]:
        """The names of a dotted path (a target's, or a module's); ``ValueError`` unless each is
        an identifier (``text``: the path as written, for the message)."""
        names = path.split(".")
        bad = next((name for name in names if not name.isidentifier()), None)
        if bad is not None:
            meant = bad.replace("-", "_")
            hint = f" (did you mean {meant!r}?)" if meant.isidentifier() else ""
            why = f"{bad!r} is not a Python identifier{hint}" if bad else "it has an empty part"
            raise ValueError(_INVALID.format(text or path, why))
        return names

    def splits(self) -> list[tuple[str, list[str]]]:
        """Where the module may end, longest module first: ``(module, attribute names)``."""
        module, colon, attributes = self.text.rpartition(":")
        if colon:
            return [(module, attributes.split("."))]
        names = self.dotted.split(".")
        return [(".".join(names[:cut]), names[cut:]) for cut in range(len(names) - 1, 0, -1)]

    def __str__(self) -> str:
        return self.text or self.dotted


_INVALID = "{!r} is not a hook target: {}; write pkg.module.attr or pkg.module:Attr.path"


class Unwrapped(NamedTuple):
    """The callable in a raw attribute (a class's attribute may be a descriptor around it), and
    the function that puts a wrapper of it back in the same kind of attribute."""

    func: Hook
    raw: object
    put_back: Callable[[Hook], object]


class Resolution(NamedTuple):
    """Where a target lives now: ``owner.name`` holds ``raw`` (``owned``: in ``owner.__dict__``);
    ``key``: the canonical spelling, ``module:attr.path``."""

    key: str
    owner: object
    name: str
    raw: object
    owned: bool


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
    """One target (both spellings): its registrations and where it stands."""

    target: Target
    registrations: list[Registration] = field(default_factory=list)
    status: HookStatus = HookStatus.REGISTERED
    error: str | None = None
    strict: bool = False  # the strictness of the apply that took it (also for a later import)
    watch: tuple[str, ...] = ()  # while pending: the modules whose import may resolve it
    slot: Slot | None = None
    found: Resolution | None = None  # where it resolved when it joined its slot


@dataclass(slots=True, eq=False)
class Slot:
    """What the targets naming one thing share: its original, its wrapper, where it is installed.

    A module-level object (a function, a class) is one slot per object and name, wherever it is
    bound: the module defining it and every module holding it under that name (a re-export,
    ``from x import f``) get the wrapper, and ``modules`` holds their namespaces. A class's (or
    another object's) attribute is one slot per owner and name, set with ``setattr``."""

    key: str  # the canonical spelling it was first resolved through, for messages
    owner: object  # whose attribute it is; for a module-level object, the first module found
    name: str
    original: Unwrapped
    # Inherited from a base class: the original is what the base provides *now*, read again at
    # every build, so the base's hooks run for the subclass too.
    inherited: bool
    module_level: bool
    modules: dict[int, dict[str, object]] = field(default_factory=dict)
    records: list[TargetRecord] = field(default_factory=list)
    built: list[Registration] = field(default_factory=list)  # of its last build, failed or not
    previous: object = None  # an attribute's raw value before the first patch (MISSING: none)
    raw: object = None  # the raw value installed (the callable, or a descriptor around it)


def ordered(records: Iterable[TargetRecord]) -> list[Registration]:
    """The registrations of ``records``, innermost first: by priority, then registration order."""
    return sorted(
        (r for record in records for r in record.registrations),
        key=operator.attrgetter("priority", "seq"),
    )
