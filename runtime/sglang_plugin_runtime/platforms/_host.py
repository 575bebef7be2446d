"""Importing the host (released SGLang) before a selection imports the platform plugins.

Only a process where the host is installed but not imported needs this (``sglang-plugins doctor``,
a plugin package's tests), and only when a platform plugin is installed: a plugin may be built on
the host's classes, and the host's import makes it select its own platform, calling the plugins'
``activate()``. Importing the plugin first would make the host's selection re-enter the
half-imported plugin, so the host goes first, and selection then answers the ``activate()`` calls
the host made with what they returned: each plugin's ``activate()`` runs once. Without a platform
plugin nothing needs the host, and selection never imports it (nor torch). In a host process the
host is imported already and this module never loads.
"""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import Callable
from functools import partial
from importlib.metadata import EntryPoint

from .._discovery import discover_entry_points
from .._namespace import PluginNamespace
from .._plugin_code import describe_failure, guarded, run_plugin_code

logger = logging.getLogger(__name__)


def _replay(recorded: object) -> object:
    if isinstance(recorded, BaseException):
        raise recorded
    return recorded


def import_host(namespace: PluginNamespace, module: str) -> dict[str, Callable[[], object]]:
    """Import the host's platform module, as the host's own start-up does; for each platform
    plugin whose ``activate()`` its start-up ran, a function that does it again (returns the value,
    or raises the exception, that the host's start-up got). If it cannot be
    imported (released SGLang refuses a plugin built on this runtime's classes), the host package's
    modules that import added to ``sys.modules`` are removed again and selection goes on without
    it.

    While the host's start-up runs, the namespace's platform plugins it loads (through
    ``importlib.metadata``, as SGLang loads them) run as their own code (the hooks their modules
    register are theirs), and their ``activate()`` runs once, recorded in the answer. The host's
    import may select the platform itself (an SGLang that adopted the runtime does): that selection
    is the real one."""
    load, group, runs = EntryPoint.load, namespace.platform_group, dict[str, object]()
    ours = {ep.name: ep for ep in discover_entry_points().group(group)}

    def observed_load(entry_point: EntryPoint) -> object:
        if entry_point.group != group or (ep := ours.get(entry_point.name)) is None:
            return load(entry_point)
        func = run_plugin_code(ep, partial(load, entry_point), step="import", policy=None)[0]
        if not callable(func):
            return func

        def activate() -> object:
            if ep.name not in runs:
                try:
                    runs[ep.name] = run_plugin_code(ep, func, step="activate()", policy=None)[0]
                except BaseException as exc:
                    runs[ep.name] = exc
            return _replay(runs[ep.name])

        return activate

    before = set(sys.modules)
    EntryPoint.load = observed_load  # type: ignore[method-assign,assignment]
    try:
        with guarded(f"the import of the host's {module}") as call:
            importlib.import_module(module)
    finally:
        EntryPoint.load = load  # type: ignore[method-assign]
    if call.error is not None:
        # The host package's own modules, half set up, go; what it imported from elsewhere stays:
        # an extension module such as torch cannot be imported twice in one process.
        top = module.partition(".")[0]
        for name in set(sys.modules) - before:
            if name.partition(".")[0] == top:
                del sys.modules[name]
        why = describe_failure(call.error)
        logger.info("The host's %s could not be imported, selecting without it: %s", module, why)
    return {name: partial(_replay, recorded) for name, recorded in runs.items()}
