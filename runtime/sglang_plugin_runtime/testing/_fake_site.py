"""A folder of fake installed distributions on ``sys.path``, cleaned up completely afterwards."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._fake_distributions import write_fake_distribution


class FakeDistributions:
    """Write fake distributions into ``root`` and make the runtime see them, as if ``pip
    install``-ed.

    Call the object to add one distribution. :meth:`stop` discards the hooks its plugins
    registered, removes ``root`` from ``sys.path``, forgets every module imported from it, drops the
    runtime's cached discovery and any platform selected from it, and brings back the load state
    :meth:`start` found, so nothing leaks into the next test (and the installed plugins are not
    loaded again).
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._entry = str(self.root)
        #: What the paths of files in ``root`` start with.
        self._prefix = os.path.join(os.path.realpath(self._entry), "")
        #: Brings back the load state start() found; None while not started.
        self._restore_loads: Callable[[], None] | None = None

    def start(self) -> FakeDistributions:
        if self._restore_loads is None:
            from ..plugins._loading import saved_load_state

            self._restore_loads = saved_load_state()
            sys.path.insert(0, self._entry)
            self.refresh()
        return self

    def __call__(self, name: str, version: str = "1.0", **details: Any) -> Path:
        """Write distribution ``name`` and return its ``.dist-info`` folder; discovery sees it
        immediately. ``details``: ``entry_points`` (``{group: {name: "module:attr"}}``), ``modules``
        (``{"pkg/__init__.py": source}``), ``entry_points_text``, as
        :func:`~sglang_plugin_runtime.testing.write_fake_distribution` takes them."""
        if self._restore_loads is None:
            raise RuntimeError(
                "FakeDistributions.start() must be called before adding distributions"
            )
        dist_info = write_fake_distribution(self.root, name, version, **details)
        self.refresh()
        return dist_info

    add = __call__

    def refresh(self) -> None:
        """Make new files visible: the import system's directory caches and the runtime's discovery
        scan."""
        from .._discovery import refresh_discovery
        from ..plugins._loading import reset_load_state

        importlib.invalidate_caches()
        refresh_discovery()
        reset_load_state()

    def imported_modules(self) -> list[str]:
        """Names of the modules in ``sys.modules`` that were imported from ``root``."""
        return [
            name
            for name, module in list(sys.modules.items())
            if any(
                isinstance(p, str) and os.path.realpath(p).startswith(self._prefix)
                for p in [
                    getattr(module, "__file__", None),
                    *(getattr(module, "__path__", None) or []),
                ]
            )
        ]

    def stop(self) -> None:
        restore_loads, self._restore_loads = self._restore_loads, None
        if restore_loads is None:
            return
        from .._discovery import discover_entry_points
        from .._namespace import known_namespaces
        from .._plugin_code import discard_hooks
        from ..platforms import _selection

        # the hooks of the plugins written here go with them (found while the folder is on the path)
        for eps in discover_entry_points().entry_points.values():
            for ep in eps:
                if os.path.realpath(ep.path).startswith(self._prefix):
                    discard_hooks(ep)
        removed = set(self.imported_modules())
        for name in removed:
            sys.modules.pop(name, None)
        while self._entry in sys.path:
            sys.path.remove(self._entry)
        sys.path_importer_cache.pop(self._entry, None)
        for namespace in known_namespaces():
            selection = _selection.platform_state(namespace).selection
            if selection is not None and selection.platform_class.__module__ in removed:
                _selection.reset_current_platform(namespace)
        self.refresh()
        restore_loads()
