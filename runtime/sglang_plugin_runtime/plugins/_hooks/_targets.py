"""Target strings: parsing them, and finding the attribute they name without importing anything.

Two spellings are accepted: ``pkg.mod.Class.method`` (dotted) and ``pkg.mod:Class.method``
(entry-point style). With the dotted spelling the module part is not known up front; it is the
longest prefix that is present in ``sys.modules``. Resolution reads ``__dict__`` entries only, so a
module-level ``__getattr__`` (lazy submodule loading) is never triggered and nothing is imported.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Mapping
from dataclasses import dataclass

_MISSING = object()


class TargetNotFound(LookupError):
    """The target's module is imported but the attribute path does not exist."""


@dataclass(frozen=True, slots=True)
class TargetSpec:
    """A parsed target string."""

    text: str
    module: str | None
    """The module for the ``module:attr`` spelling; ``None`` for the dotted spelling."""
    parts: tuple[str, ...]
    """Every dotted component (dotted spelling) or the attribute path (colon spelling)."""

    @property
    def dotted(self) -> str:
        """The target in dotted form, used to match both spellings of one target."""
        return self.text.replace(":", ".")

    @property
    def attribute(self) -> str:
        """The name of the attribute that gets patched (also the name used for rebinding)."""
        return self.parts[-1]

    def candidate_modules(self) -> tuple[str, ...]:
        """Module names whose import may make this target resolvable, shortest first."""
        if self.module is not None:
            return (self.module,)
        return tuple(".".join(self.parts[:i]) for i in range(1, len(self.parts)))


@dataclass(frozen=True, slots=True)
class Resolution:
    """Where a target lives right now."""

    module_name: str
    attr_path: tuple[str, ...]
    owner: object
    """The object whose attribute is patched (a module, a class, or any other object)."""
    raw: object
    """The raw value (``__dict__`` entry, descriptors not invoked) found for the attribute."""
    owned: bool
    """Whether ``raw`` is in ``owner.__dict__`` itself (False: inherited from a base class)."""

    @property
    def key(self) -> str:
        """The canonical spelling, ``module:attr.path``; two spellings of one target share it."""
        return f"{self.module_name}:{'.'.join(self.attr_path)}"


@dataclass(frozen=True, slots=True)
class Unresolved:
    """The target cannot be resolved yet: its module (or a submodule on the path) is not imported."""

    reason: str
    watch: tuple[str, ...]
    """Module names to watch for: when one of them finishes importing, try again."""


def parse_target(target: object) -> TargetSpec:
    """Validate a target string; raise ``ValueError`` (``TypeError`` for a non-string) when bad."""
    if not isinstance(target, str):
        raise TypeError(f"Hook target must be a string, got {type(target).__name__}: {target!r}")
    if target.count(":") > 1:
        raise ValueError(f"Invalid target path (at most one ':' allowed): {target}")
    if ":" in target:
        module, _, attr = target.partition(":")
        module_parts = module.split(".")
        attr_parts = attr.split(".")
        if not all(p.isidentifier() for p in module_parts + attr_parts):
            raise ValueError(f"Invalid target path (expected 'pkg.module:Attr.path' of identifiers): {target}")
        return TargetSpec(target, module, tuple(attr_parts))
    parts = target.split(".")
    if len(parts) < 2:
        raise ValueError(f"Invalid target path (need at least module.attr): {target}")
    if not all(p.isidentifier() for p in parts):
        raise ValueError(f"Invalid target path (expected dotted identifiers): {target}")
    return TargetSpec(target, None, tuple(parts))


def _module_dict(module: object) -> Mapping[str, object] | None:
    d = getattr(module, "__dict__", None) if isinstance(module, types.ModuleType) else None
    return d if isinstance(d, dict) else None


def _is_initializing(module: object) -> bool:
    spec = getattr(module, "__spec__", None)
    return bool(getattr(spec, "_initializing", False))


def _static_lookup(obj: object, name: str) -> tuple[object, bool]:
    """Find ``name`` on ``obj`` without running descriptors or ``__getattr__``.

    Returns ``(raw, owned)``; ``raw`` is ``_MISSING`` when absent.
    """
    if isinstance(obj, type):
        for klass in obj.__mro__:
            if name in klass.__dict__:
                return klass.__dict__[name], klass is obj
        return _MISSING, False
    module_dict = _module_dict(obj)
    if module_dict is not None:
        return module_dict.get(name, _MISSING), True
    own: object = getattr(obj, "__dict__", None)
    if isinstance(own, dict) and name in own:
        return own[name], True
    try:
        return getattr(obj, name), False
    except AttributeError:
        return _MISSING, False


def resolve(spec: TargetSpec, modules: Mapping[str, object] | None = None) -> Resolution | Unresolved:
    """Locate ``spec`` among already-imported modules.

    Returns :class:`Unresolved` while the answer could still change by importing a module, and
    raises :class:`TargetNotFound` when the module is fully imported and the path does not exist.
    """
    if modules is None:
        modules = sys.modules
    if spec.module is not None:
        module_name = spec.module
        module = modules.get(module_name)
        if module is None:
            return Unresolved(f"module {module_name!r} is not imported yet", (module_name,))
        path = spec.parts
    else:
        for i in range(len(spec.parts) - 1, 0, -1):
            candidate = ".".join(spec.parts[:i])
            module = modules.get(candidate)
            if module is not None:
                module_name = candidate
                path = spec.parts[i:]
                break
        else:
            return Unresolved(f"module {spec.parts[0]!r} is not imported yet", spec.candidate_modules())
    return _walk(spec, module_name, module, path, modules)


def _walk(
    spec: TargetSpec,
    module_name: str,
    module: object,
    path: tuple[str, ...],
    modules: Mapping[str, object],
) -> Resolution | Unresolved:
    owner: object = module
    owner_name = module_name
    for index, name in enumerate(path):
        raw, owned = _static_lookup(owner, name)
        if raw is _MISSING and isinstance(owner, types.ModuleType):
            sub = modules.get(f"{owner_name}.{name}")
            if sub is not None:
                raw, owned = sub, True
        if raw is _MISSING:
            if isinstance(owner, types.ModuleType) and (hasattr(owner, "__path__") or _is_initializing(owner)):
                # A package may gain the name when a submodule is imported; a module that is
                # still executing may define it further down.
                rest = ".".join(path[index:])
                watch = tuple(f"{owner_name}.{'.'.join(path[index:j])}" for j in range(index + 1, len(path))) or (
                    owner_name,
                )
                return Unresolved(f"{owner_name!r} has no attribute {rest!r} yet", watch)
            kind = "module" if isinstance(owner, types.ModuleType) else type(owner).__name__
            raise TargetNotFound(f"{kind} {owner_name!r} has no attribute {name!r}")
        if index == len(path) - 1:
            return Resolution(module_name, path, owner, raw, owned)
        if isinstance(raw, (staticmethod, classmethod)):
            raw = raw.__func__
        owner = raw
        owner_name = f"{owner_name}.{name}"
    raise AssertionError("unreachable: empty attribute path")  # pragma: no cover
