"""The pytest fixtures of the testing kit; pytest loads this module through
``sglang_plugin_runtime.testing``.

Every fixture undoes what it did when the test ends, whether it passed or failed, so tests can run
in any order and in parallel workers without seeing each other's environment, distributions,
platforms or patches.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ._environment import PluginEnv
from ._fake_site import FakeDistributions
from ._platform_override import PlatformOverride
from ._stand_in import StandInModules

if TYPE_CHECKING:
    from ._sglang_server import SGLangServer

#: The marker of tests that start a real SGLang server: skipped unless the run selects it (``-m
#: sglang_server``).
SERVER_MARKER = "sglang_server"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{SERVER_MARKER}: starts a real SGLang server on the CPU "
        f"(opt in: pytest -m {SERVER_MARKER})",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Real-server tests are off by default (deselected, as ``-m "not ..."`` would): they run only
    when ``-m`` names their marker."""
    off = [item for item in items if item.get_closest_marker(SERVER_MARKER)]
    if off and SERVER_MARKER not in (config.getoption("markexpr", "") or ""):
        items[:] = [item for item in items if item not in off]
        config.hook.pytest_deselected(items=off)


@pytest.fixture
def plugin_env() -> Iterator[PluginEnv]:
    """The plugin environment variables, all unset; set them with ``plugin_env.set()`` /
    ``.platform()`` / ``.plugins()`` / ``.strict()``; every one is restored after the test."""
    env = PluginEnv().start()
    yield env  # pytest resumes a fixture after its test, passed or failed
    env.stop()


@pytest.fixture
def hook_registry() -> Iterator[Any]:
    """An empty hook registry for this test; every patch it applied is undone and the previous
    registry state comes back afterwards (SGLang's resolution-step wrappers too), with the
    ``load_plugins()`` state and the current platforms (a load or a selection the test ran is not
    remembered: the session's first one, later, registers the installed plugins' hooks, also those
    their modules register as they are imported). Yields the registry to call ``register()`` /
    ``apply_hooks()`` on."""
    from .._discovery import discover_entry_points
    from .._namespace import known_namespaces
    from .._plugin_code import resolution_wrappers
    from ..plugins._loading import saved_load_state
    from ..plugins.hook_registry import isolated_registry

    restore, before = saved_load_state(), set(sys.modules)
    platforms = PlatformOverride().start()
    steps = {name: list(wrappers) for name, wrappers in resolution_wrappers().items()}
    try:
        with isolated_registry() as registry:
            yield registry
    finally:
        platforms.stop()
        restore()
        # The modules of installed plugins imported during the test are forgotten: the next load or
        # selection imports them again, so the hooks they register at import land in the session's
        # registry.
        found = discover_entry_points()
        packages = {
            ep.module.split(".")[0]
            for namespace in known_namespaces()
            for group in (namespace.platform_group, namespace.plugin_group, namespace.startup_group)
            if group
            for ep in found.group(group)
        }
        for name in set(sys.modules) - before:
            if name.split(".")[0] in packages:
                sys.modules.pop(name, None)
        wrappers = resolution_wrappers()  # SGLang's resolution-step wrappers, as they were
        wrappers.clear()
        wrappers.update(steps)


@pytest.fixture
def platform_override() -> Iterator[PlatformOverride]:
    """Set (``.set(cls_or_instance)``), forget (``.reset()``) or re-select (``.select()``) the
    current platform; the platform of every namespace is exactly what it was before the test
    afterwards."""
    override = PlatformOverride().start()
    yield override
    override.stop()


@pytest.fixture
def fake_distributions(
    tmp_path: Path, hook_registry: Any, platform_override: PlatformOverride
) -> Iterator[FakeDistributions]:
    """A factory writing fake installed distributions into a folder on ``sys.path``:
    ``fake_distributions("my-dist", entry_points={...}, modules={...})``. Discovery,
    ``load_plugins()`` state, hooks registered by the fake plugins, their imported modules and the
    path entry are all gone afterwards."""
    site = FakeDistributions(tmp_path / "fake-site").start()
    yield site
    site.stop()


@pytest.fixture
def simulated_device() -> Iterator[Callable[..., Any]]:
    """A factory for simulated torch device modules: ``sim = simulated_device("npu",
    device_count=2)`` installs ``torch.npu`` now; every one started is stopped (in reverse order)
    after the test. Needs torch."""
    from .._simulated_device import SimulatedDevice

    with contextlib.ExitStack() as started:  # stopped in reverse order
        yield lambda *args, **options: started.enter_context(SimulatedDevice(*args, **options))


@pytest.fixture
def stand_in_module() -> Iterator[StandInModules]:
    """A factory for stand-in modules: ``stand_in_module("sglang.srt.managers.scheduler",
    Scheduler=MyScheduler)`` makes that dotted path importable for this test (missing parents
    created empty), so a hook aimed at SGLang's code applies without SGLang. Put it in place before
    ``apply_hooks()``. Every stand-in, and whatever was imported under it, leaves ``sys.modules``
    afterwards; modules it set aside come back."""
    with StandInModules() as stand_ins:
        yield stand_ins


#: Where the ``sglang_server`` fixture keeps its server's log, below the project's root folder.
SERVER_LOG = Path(".sglang-server") / "server.log"


@pytest.fixture(scope="session")
def sglang_server(request: pytest.FixtureRequest) -> Iterator[SGLangServer]:
    """A real SGLang server on the CPU (``python -m sglang.launch_server`` with a tiny model built
    offline) with the project under test installed; one per test session, always stopped. Where
    this Python has no SGLang server, the serving venv is built once and cached
    (``sglang_plugin_runtime.testing.serving``) and the project is installed for it. Its log
    is ``.sglang-server/server.log`` in the project, shown with every failed test that used it.
    Yields its ``.url`` and ``.log`` (``.generate()``, ``.log_text()``, ``.hook_first_calls()``).
    ``SGLANG_SERVER_ARGS`` adds server options; ``SGLANG_SERVER_LAUNCHER=1`` runs it under
    ``sglang-plugins run``; ``SGLANG_SERVER_PYTHON`` names the Python that runs it."""
    from ._sglang_server import running_sglang_server
    from .serving import server_options

    plugins = request.config.pluginmanager
    reporter, capture = plugins.get_plugin("terminalreporter"), plugins.get_plugin("capturemanager")

    def report(line: str) -> None:  # shown as it happens: building the venv takes minutes
        if reporter is not None and capture is not None:
            with capture.global_and_fixture_disabled():
                reporter.write_line(f"sglang_server: {line}")

    root, launcher = request.config.rootpath, os.environ.get("SGLANG_SERVER_LAUNCHER") == "1"
    log = request.config.stash[_LOG] = root / SERVER_LOG
    report(f"the server's log: {log}")
    with running_sglang_server(
        log=log,
        launcher=launcher,
        extra_args=shlex.split(os.environ.get("SGLANG_SERVER_ARGS", "")),
        **server_options(root, report, launcher),
    ) as server:
        yield server


_LOG = pytest.StashKey[Path]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item) -> Generator[None, Any, None]:
    """A failed test that used the ``sglang_server`` fixture shows the end of the server's log."""
    report = (yield).get_result()
    log = item.config.stash.get(_LOG, None)
    if report.failed and log and "sglang_server" in getattr(item, "fixturenames", ()):
        tail = log.read_text(encoding="utf-8", errors="replace")[-6000:]
        report.sections.append((f"SGLang server log (the end of {log})", tail))
