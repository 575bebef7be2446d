"""Stand-in modules: a dotted module path (``sglang.srt.managers.scheduler``) importable for one
test, without the package that really provides it, and gone afterwards.

A hook aimed at SGLang's own code (``sglang.srt.managers.scheduler:Scheduler.run_batch``) can then
be applied and exercised where SGLang is not installed: the test puts in the names the hook needs,
shaped like SGLang's.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import MutableMapping
from types import ModuleType
from typing import Any

_MISSING: Any = object()


def _real_package(name: str) -> ModuleType | None:
    """The real package ``name``, imported, where it is installed (its parents are imported by now):
    a stand-in below it then leaves its other submodules importable. ``None`` where there is none,
    or it fails to import."""
    try:
        spec = importlib.util.find_spec(name)
        return (
            importlib.import_module(name)
            if spec and spec.submodule_search_locations is not None
            else None
        )
    except Exception:
        return None


class StandInModules:
    """Put stand-in modules into ``sys.modules`` (call the object); :meth:`stop` takes every one out
    again.

    ``stand_in("sglang.srt.managers.scheduler", Scheduler=MyScheduler)`` makes ``import
    sglang.srt.managers.scheduler`` give a module holding ``Scheduler``: parents that are installed
    are imported (their other submodules stay importable); missing ones (``sglang``,
    ``sglang.srt``, ... without SGLang) are created as empty packages, each bound as an attribute
    of its parent. A module already in ``sys.modules`` under that name (SGLang's own, where it is
    installed) is set aside for the test, not changed. Calling again with the same name adds names
    to the same stand-in. After :meth:`stop`, ``sys.modules`` and every parent module are as they
    were, but for the installed parents it imported, which stay imported.

    Put the stand-in in place before ``apply_hooks()``: the hooks are then applied to it like to any
    imported module.
    """

    def __init__(self) -> None:
        self._created: dict[str, ModuleType] = {}
        # What start-up found, in order: each replaced sys.modules entry, and each attribute set on
        # a module it did not make (``_MISSING``: none).
        self._saved: list[tuple[MutableMapping[str, Any], str, Any]] = []
        #: What ``sys.modules`` held at start (``None``: not started).
        self._imported_before: set[str] | None = None

    def start(self) -> StandInModules:
        if self._imported_before is None:
            self._imported_before = set(sys.modules)
        return self

    __enter__ = start

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __call__(self, name: str, /, **attributes: Any) -> ModuleType:
        """The stand-in for module ``name`` (created now, or the one made earlier), with
        ``attributes`` set on it."""
        if self._imported_before is None:
            raise RuntimeError(
                "StandInModules.start() must be called before adding stand-in modules"
            )
        from ..plugins.hook_registry import Target

        try:
            parts = Target.names_of(name)  # the names a hook target's module part is made of
        except ValueError:
            raise ValueError(
                f"{name!r} is not a dotted module name (such as 'sglang.srt.managers.scheduler')"
            ) from None
        for depth in range(1, len(parts) + 1):
            module = self._module(".".join(parts[:depth]), package=depth < len(parts))
        vars(module).update(attributes)
        return module

    add = __call__

    def target(self, target: str, value: Any) -> ModuleType:
        """Stand ``value`` in for what a hook ``target`` starts with, in a stand-in of the target's
        module: the function of ``pkg.module.function``, the class of ``pkg.module:Class.method``.
        """
        module, colon, path = target.partition(":")
        if not colon:  # pkg.module.name: the module and one name
            module, _, path = target.rpartition(".")
        return self(module, **{path.split(".")[0]: value})

    def _module(self, name: str, *, package: bool) -> ModuleType:
        """The module ``name`` as the test sees it: a stand-in made here, or a parent already
        imported."""
        module = self._created.get(name)
        if module is None:
            existing = sys.modules.get(name)
            if package and existing is None:
                existing = _real_package(name)
            if package and existing is not None:
                # a parent that really exists (SGLang's own package, say) stays as it is
                return existing
            module = ModuleType(
                name, "A stand-in module of sglang_plugin_runtime.testing (StandInModules)."
            )
            self._saved.append((sys.modules, name, _MISSING if existing is None else existing))
            self._created[name] = sys.modules[name] = module
            parent_name, _, child = name.rpartition(".")
            if parent_name:
                parent = self._created.get(parent_name) or sys.modules[parent_name]
                if parent_name not in self._created:
                    self._saved.append((vars(parent), child, vars(parent).get(child, _MISSING)))
                setattr(parent, child, module)
        if package and not hasattr(module, "__path__"):
            module.__path__ = []  # a package with nothing importable inside but other stand-ins
        return module

    @property
    def names(self) -> list[str]:
        """The stand-in modules in ``sys.modules`` now, parents first."""
        return list(self._created)

    def stop(self) -> None:
        """Take every stand-in out of ``sys.modules`` (with whatever was imported under it) and put
        back what was there; the parents imported before the test lose the attributes added to
        them."""
        prefixes = tuple(f"{name}." for name in self._created)
        imported_since = set(sys.modules) - (self._imported_before or set()) - set(self._created)
        for name in [n for n in imported_since if n.startswith(prefixes)]:
            del sys.modules[name]  # imported under a stand-in package during the test
        for namespace, name, value in reversed(self._saved):
            if value is _MISSING:
                namespace.pop(name, None)
            else:
                namespace[name] = value
        self.__init__()  # type: ignore[misc]
