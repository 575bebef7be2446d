"""The pytest fixtures of the testing kit; pytest loads this module through
``sglang_plugin_runtime.testing``.

Every fixture undoes what it did when the test ends, whether it passed or failed, so tests can run
in any order and in parallel workers without seeing each other's environment, distributions,
platforms or patches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ._environment import PluginEnv
from ._fake_site import FakeDistributions
from ._platform_override import PlatformOverride
from ._stand_in import StandInModules


@pytest.fixture
def plugin_env() -> Iterator[PluginEnv]:
    """The plugin environment variables, all unset; set them with ``plugin_env.set()`` /
    ``.platform()`` / ``.plugins()`` / ``.strict()``; every one is restored after the test."""
    env = PluginEnv().start()
    try:
        yield env
    finally:
        env.stop()


@pytest.fixture
def hook_registry() -> Iterator[Any]:
    """An empty hook registry for this test; every patch it applied is undone and the previous
    registry state comes back afterwards. Yields the registry to call ``register()`` /
    ``apply_hooks()`` on."""
    from ..plugins.hook_registry import isolated_registry

    with isolated_registry() as registry:
        yield registry


@pytest.fixture
def platform_override() -> Iterator[PlatformOverride]:
    """Set (``.set(cls_or_instance)``), forget (``.reset()``) or re-select (``.select()``) the
    current platform; the platform of every namespace is exactly what it was before the test
    afterwards."""
    override = PlatformOverride().start()
    try:
        yield override
    finally:
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
    try:
        yield site
    finally:
        site.stop()


@pytest.fixture
def simulated_device() -> Iterator[Callable[..., Any]]:
    """A factory for simulated torch device modules: ``sim = simulated_device("npu",
    device_count=2)`` installs ``torch.npu`` now; every one started is stopped (in reverse order)
    after the test. Needs torch."""
    from .._simulated_device import SimulatedDevice
    from .._simulated_device import simulated_device as make

    started: list[SimulatedDevice] = []

    def factory(device_type: str = "npu", **options: Any) -> SimulatedDevice:
        device = make(device_type, **options).start()
        started.append(device)
        return device

    try:
        yield factory
    finally:
        for device in reversed(started):
            device.stop()


@pytest.fixture
def stand_in_module() -> Iterator[StandInModules]:
    """A factory for stand-in modules: ``stand_in_module("sglang.srt.managers.scheduler",
    Scheduler=MyScheduler)`` makes that dotted path importable for this test (missing parents
    created empty), so a hook aimed at SGLang's code applies without SGLang. Put it in place before
    ``apply_hooks()``. Every stand-in, and whatever was imported under it, leaves ``sys.modules``
    afterwards; modules it set aside come back."""
    stand_ins = StandInModules().start()
    try:
        yield stand_ins
    finally:
        stand_ins.stop()
