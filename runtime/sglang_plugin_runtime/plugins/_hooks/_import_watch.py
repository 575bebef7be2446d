"""The post-import hook: patch a target right after its module executes, never earlier.

One finder sits at the front of ``sys.meta_path``. For a module name that is not watched it does a
single set membership test and steps aside, so unrelated imports stay cheap. For a watched name it
asks the finders behind it for the spec and wraps the spec's loader, whose ``exec_module`` runs the
real one and then reports the fresh module. The real loader is put back on the module and its spec
before the module's code runs, so ``__loader__`` and ``__spec__.loader`` are never the proxy.
"""

from __future__ import annotations

import logging
import sys
import threading
import types
from collections.abc import Callable, Collection, Sequence
from importlib.machinery import ModuleSpec

logger = logging.getLogger(__name__)

#: Called as ``on_loaded(name, module_names_before_exec)`` after a watched module executed.
LoadedCallback = Callable[[str, frozenset[str]], None]


class _NotifyingLoader:
    """Delegates everything to the real loader; reports after ``exec_module``."""

    def __init__(self, loader: object, on_loaded: LoadedCallback) -> None:
        self._loader = loader
        self._on_loaded = on_loaded

    def __getattr__(self, name: str) -> object:
        return getattr(self._loader, name)

    def create_module(self, spec: object) -> types.ModuleType | None:
        create = getattr(self._loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module: types.ModuleType) -> None:
        __tracebackhide__ = True
        spec = getattr(module, "__spec__", None)
        if spec is not None and spec.loader is self:
            spec.loader = self._loader
        if getattr(module, "__loader__", None) is self:
            module.__loader__ = self._loader
        before = frozenset(sys.modules)
        self._loader.exec_module(module)  # type: ignore[attr-defined]
        self._on_loaded(module.__name__, before)


class ImportWatcher:
    """A ``sys.meta_path`` finder that reports when watched modules finish executing."""

    def __init__(self, on_loaded: LoadedCallback) -> None:
        self.watched: Collection[str] = frozenset()
        self._on_loaded = on_loaded
        self._busy = threading.local()

    # The import system's entry point: keep the unwatched path as short as possible.
    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: types.ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname not in self.watched:
            return None
        return self._find_and_wrap(fullname, path, target)

    def _find_and_wrap(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None
    ) -> ModuleSpec | None:
        busy = getattr(self._busy, "names", None)
        if busy is None:
            busy = self._busy.names = set()
        if fullname in busy:
            return None
        busy.add(fullname)
        try:
            spec: ModuleSpec | None = None
            finders: list[object] = list(sys.meta_path)
            index = next((i for i, f in enumerate(finders) if f is self), -1)
            for finder in finders[index + 1 :]:
                find_spec = getattr(finder, "find_spec", None)
                if find_spec is None:
                    continue
                spec = find_spec(fullname, path, target)
                if spec is not None:
                    break
        finally:
            busy.discard(fullname)
        if spec is None:
            return None
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module") or isinstance(loader, _NotifyingLoader):
            logger.debug("Cannot watch the import of %s (loader %r)", fullname, loader)
            return spec
        spec.loader = _NotifyingLoader(loader, self._on_loaded)  # type: ignore[assignment]
        return spec

    @property
    def installed(self) -> bool:
        return any(f is self for f in sys.meta_path)

    def install(self) -> None:
        """Put the finder at the front of ``sys.meta_path`` (once)."""
        if not self.installed:
            sys.meta_path.insert(0, self)

    def uninstall(self) -> None:
        """Remove the finder; modules already being imported still report."""
        sys.meta_path[:] = [f for f in sys.meta_path if f is not self]
