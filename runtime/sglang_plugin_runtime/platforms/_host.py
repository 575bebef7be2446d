"""Importing the host (released SGLang) in the middle of a selection, before the class a platform
plugin named.

Only a process where the host is installed but not imported needs this (``sglang-plugins doctor``, a
plugin package's tests), and only once a platform plugin's ``activate()`` named a class: that class
may be built on the host's classes, whose import makes the host select its own platform, calling the
plugins' ``activate()`` again. So the host is imported first, while selection answers for the
``activate()`` calls it already ran and records the ones the host runs first: each plugin's
``activate()`` runs once. In a host process the host is imported already and this module never
loads.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import sys
from collections.abc import Iterator

from .._discovery import discover_entry_points
from .._namespace import PluginNamespace
from .._plugin_code import Gate, describe_failure, guarded, run_plugin_code

logger = logging.getLogger(__name__)


@contextlib.contextmanager
def _answering(namespace: PluginNamespace, runs: dict[str, object], gate: Gate) -> Iterator[None]:
    """While the host's start-up runs, its ``activate()`` calls of the namespace's platform plugins
    (loaded through ``importlib.metadata``, as SGLang loads them) get what selection recorded, or
    run once and are recorded."""
    from importlib.metadata import EntryPoint

    load, ours = (
        EntryPoint.load,
        {ep.name: ep for ep in discover_entry_points().group(namespace.platform_group)},
    )

    def observed_load(entry_point: EntryPoint) -> object:
        func = load(entry_point)
        ep = ours.get(entry_point.name)
        if entry_point.group != namespace.platform_group or ep is None or not callable(func):
            return func

        def activate() -> object:
            if ep.name not in runs:
                try:
                    runs[ep.name] = run_plugin_code(
                        ep, func, step="activate()", policy=None, gate=gate
                    )[0]
                except BaseException as exc:
                    runs[ep.name] = exc
            recorded = runs[ep.name]
            if isinstance(recorded, BaseException):
                raise recorded
            return recorded

        return activate

    EntryPoint.load = observed_load  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        EntryPoint.load = load  # type: ignore[method-assign]


def import_host(
    namespace: PluginNamespace, module: str, runs: dict[str, object], gate: Gate
) -> None:
    """Import the host's platform module, as the host's own start-up does. If it cannot be imported
    (released SGLang refuses a plugin built on this runtime's classes), what that import added to
    ``sys.modules`` is removed again and selection goes on without it."""
    before = set(sys.modules)
    with _answering(namespace, runs, gate), guarded(f"the import of the host's {module}") as call:
        importlib.import_module(module)
    if call.error is not None:
        for name in set(sys.modules) - before:
            del sys.modules[name]
        why = describe_failure(call.error)
        logger.info("The host's %s could not be imported, selecting without it: %s", module, why)
