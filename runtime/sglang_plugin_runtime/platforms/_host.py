"""Importing the host's own platform module before selecting, as the host's start-up does.

Only a process where the host (released SGLang) is installed but not yet imported needs this: ``sglang-plugins
doctor``, a plugin package's tests. In a host process the host is already imported and this module never loads.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import sys
import time
from collections.abc import Iterator
from typing import Any

from .._namespace import NamespaceState, PluginNamespace
from .._plugin_code import describe_failure, guarded, is_plugin_failure, note_interrupt

logger = logging.getLogger(__name__)


@contextlib.contextmanager
def _observing_host_activations(namespace: PluginNamespace, state: NamespaceState) -> Iterator[None]:
    """While the host's start-up runs, record what each of the namespace's platform plugins' ``activate()`` gives
    it (entry points loaded through ``importlib.metadata``, as SGLang loads them): selection then reuses the
    outcome, so a plugin's hardware probe runs once per process."""
    from importlib.metadata import EntryPoint

    load = EntryPoint.load

    def observed_load(ep: EntryPoint) -> Any:
        func = load(ep)
        if ep.group != namespace.platform_group or not callable(func):
            return func

        def activate(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                result = func(*args, **kwargs)
            except BaseException as exc:
                state.host_outcomes[ep.name] = (ep.value, None, exc, time.perf_counter() - start)
                if not is_plugin_failure(exc):
                    note_interrupt(exc, f"activate() of platform plugin {ep.name!r} (by the host's start-up)")
                raise
            state.host_outcomes[ep.name] = (ep.value, result, None, time.perf_counter() - start)
            return result

        return activate

    EntryPoint.load = observed_load  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        EntryPoint.load = load  # type: ignore[method-assign]


def import_host(namespace: PluginNamespace, state: NamespaceState, module: str) -> None:
    """Where the host is installed, import its platform module before selecting, as the host's own start-up
    does: the host may select its platform while it is imported (SGLang does; the activations it ran are
    reused), and a plugin built on the host's classes imports the host. If the host cannot be imported (released
    SGLang refuses a plugin built on this runtime's classes), what that import added to ``sys.modules`` is
    removed again and selection goes on without it."""
    before = set(sys.modules)
    with _observing_host_activations(namespace, state), guarded(f"the import of the host's {module}") as call:
        importlib.import_module(module)
    if call.error is not None:
        for name in set(sys.modules) - before:
            del sys.modules[name]
        logger.info(
            "The host's %s could not be imported, selecting without it: %s", module, describe_failure(call.error)
        )
