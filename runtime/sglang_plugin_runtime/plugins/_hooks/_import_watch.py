"""The post-import hook: patch a target right after its module executes, never earlier.

One finder sits at the front of ``sys.meta_path``. For a module name that is not watched it does a single set
membership test and steps aside, so unrelated imports stay cheap. For a watched name it asks the finders behind it
for the spec and wraps the spec's loader, whose ``exec_module`` runs the real one and then reports the fresh
module. The real loader is put back on the module and its spec before the module's code runs, so ``__loader__``
and ``__spec__.loader`` are never the proxy.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
import types
from collections.abc import Callable, Sequence
from importlib.machinery import ModuleSpec
from typing import Any

#: Called as ``on_loaded(name, module_names_before_exec)`` after a watched module executed.
LoadedCallback = Callable[[str, frozenset[str]], None]


class _NotifyingLoader:
    """Delegates everything to the real loader (``create_module`` too); reports after ``exec_module``."""

    def __init__(self, loader: object, on_loaded: LoadedCallback) -> None:
        self._loader, self._on_loaded = loader, on_loaded

    def __getattr__(self, name: str) -> object:
        return getattr(self._loader, name)

    def exec_module(self, module: types.ModuleType) -> None:
        __tracebackhide__ = True
        spec: Any = module.__spec__
        if spec is not None and spec.loader is self:
            spec.loader = self._loader
        if getattr(module, "__loader__", None) is self:
            module.__loader__ = self._loader
        before = frozenset(sys.modules)
        self._loader.exec_module(module)  # type: ignore[attr-defined]
        self._on_loaded(module.__name__, before)


class ImportWatcher:
    """A ``sys.meta_path`` finder that reports when one of the ``watched`` modules finishes executing."""

    def __init__(self, on_loaded: LoadedCallback) -> None:
        self.watched: set[str] = set()
        self._on_loaded, self._finding = on_loaded, threading.local()

    # The import system calls this for every module not imported yet: keep the unwatched path short.
    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: types.ModuleType | None = None
    ) -> ModuleSpec | None:
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
