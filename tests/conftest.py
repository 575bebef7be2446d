"""Shared fixtures: a folder of fake installed distributions, and throw-away modules for hook
tests."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from _plugin_site import PluginSite

from sglang_plugin_runtime.plugins.hook_registry import isolated_registry


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Where torch is not installed (make test-pythons: the CPU build here is for Python 3.11 only),
    tests that attach a simulated torch device skip, saying why; every other test runs."""
    if importlib.util.find_spec("torch") is not None:
        return
    for item in items:
        function = getattr(item, "function", None)
        if function is not None and (
            "simulated_device" in (source := inspect.getsource(function)) or "--simulate" in source
        ):
            item.add_marker(
                pytest.mark.skip(
                    reason="needs torch for a simulated device; torch is not installed"
                )
            )


@pytest.fixture
def site(tmp_path: Path) -> PluginSite:
    root = tmp_path / "site"
    root.mkdir()
    return PluginSite(root)


@pytest.fixture
def make_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Write modules into a fresh package on sys.path; isolated registry; modules removed after."""
    monkeypatch.syspath_prepend(str(tmp_path))
    pkg = f"hk_{uuid.uuid4().hex[:10]}"
    (tmp_path / pkg).mkdir()
    (tmp_path / pkg / "__init__.py").write_text("")
    importlib.invalidate_caches()

    def make(name: str, source: str) -> str:
        (tmp_path / pkg / f"{name}.py").write_text(textwrap.dedent(source))
        importlib.invalidate_caches()
        return f"{pkg}.{name}"

    with isolated_registry():
        yield make
    for name in [m for m in sys.modules if m == pkg or m.startswith(pkg + ".")]:
        del sys.modules[name]
