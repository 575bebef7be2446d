"""Servers that must fail, started on their own in each world, failing fast: what the log says.

A platform class that cannot serve SGLang's calls, a module a hook targets that cannot be
imported, and a failing plugin of the selected platform's own distribution (released SGLang
goes on starting). What each world promises for each failure is on docs/real-server.md.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import WORLDS, Plugins, failed_server_log, python_of
from matrix import ROWS, record

from sglang_plugin_runtime.testing._sglang_server import SGLangServer, start_sglang_server

pytestmark = pytest.mark.serve


@pytest.mark.parametrize("world_name", list(WORLDS))
def test_a_platform_that_cannot_serve_sglangs_calls_fails_the_server_naming_it(
    world_name: str, plugins: Plugins, logs_dir: Path
) -> None:
    text = failed_server_log(
        python=python_of(world_name),
        paths=[plugins.broken_platform],
        launcher=WORLDS[world_name][1],
        attention_backend=None,
        log=logs_dir / f"{world_name}-broken-platform.log",
        timeout=180,
    )
    assert "serve_broken_platform/device.py" in text, text[-3000:]
    assert "in get_device_total_memory" in text
    assert "AttributeError: module 'torch.cpu' has no attribute 'get_device_properties'" in text
    outcome = "exits: the plugin's `get_device_total_memory` raises `AttributeError`"
    record("broken_platform", world_name, outcome)


#: A dependency that SGLang's scheduler module imports (and ``launch_server``'s own imports do
#: not), broken.
BROKEN_DEPENDENCY = 'raise ImportError("partial_json_parser here is broken on purpose")\n'
#: What SGLang 0.5.23's registry says when the import of a hook's module fails:
#: ``pkgutil.resolve_name`` falls back to ``getattr`` and hides the ImportError
#: (sglang/srt/plugins/hook_registry.py:191).
MISLEADING = "AttributeError: module 'sglang.srt.managers' has no attribute 'scheduler'"


@pytest.mark.parametrize("world_name", list(WORLDS))
def test_a_scheduler_module_that_cannot_be_imported_is_named_with_its_real_import_error(
    world_name: str, plugins: Plugins, logs_dir: Path, tmp_path: Path
) -> None:
    (tmp_path / "partial_json_parser").mkdir()
    (tmp_path / "partial_json_parser" / "__init__.py").write_text(BROKEN_DEPENDENCY)
    text = failed_server_log(
        python=python_of(world_name),
        paths=[tmp_path, plugins.hooks],
        launcher=WORLDS[world_name][1],
        log=logs_dir / f"{world_name}-broken-scheduler-import.log",
        timeout=180,
    )
    assert "ImportError: partial_json_parser here is broken on purpose" in text
    first = "misleading `AttributeError` first, then " if MISLEADING in text else ""
    only = "" if first else " only"
    record("import", world_name, f"{first}the real `ImportError`{only}; exits")


#: What the runtime raises when the selected platform's own distribution fails (SGLang's diffusion
#: loader's rule), and what SGLang 0.5.23 logs instead.
REQUIRED_FAILED = (
    "Plugin 'serve_required_general' (distribution serve-required-platform 0.1.0) failed: "
    "serve_required_platform:register_general() raised RuntimeError: serve-required-platform: "
    "its general plugin failed on purpose (the selected platform's distribution: the process "
    "cannot run without it)"
)
RELEASED_REQUIRED_FAILED = "Failed to execute general plugin: serve_required_general"
#: What SGLang 0.5.23's server logs once it parsed its arguments, after it loaded the plugins
#: (launch_server.py:79-81).
ARGUMENTS_PARSED = "server_args={"


def _log_until(server: SGLangServer, line: str, timeout: float = 180) -> str:
    """The server's log once it has printed ``line`` (asserted, within ``timeout``); the server is
    ended either way."""
    deadline = time.monotonic() + timeout
    try:
        while line not in server.log_text() and server.process.poll() is None:
            assert time.monotonic() < deadline, f"no {line!r} after {timeout:.0f} s"
            time.sleep(0.5)
        text = server.log_text()
    finally:
        server.stop()
    assert line in text, text[-3000:]
    return text


@pytest.mark.parametrize("world_name", list(WORLDS))
def test_a_failing_plugin_of_the_selected_platforms_distribution_stops_start_up(
    world_name: str, plugins: Plugins, logs_dir: Path
) -> None:
    """Where the runtime loads plugins the server exits non-zero at once, in the process that
    loads them first (before any scheduler); released SGLang logs the failure and goes on."""
    options: dict[str, Any] = dict(
        python=python_of(world_name),
        paths=[plugins.required_platform],
        launcher=WORLDS[world_name][1],
        env={"SGLANG_PLATFORM": "serve_required"},
        log=logs_dir / f"{world_name}-required-platform.log",
    )
    if world_name == "released":
        text = _log_until(start_sglang_server(**options), ARGUMENTS_PARSED)
        assert text.index(RELEASED_REQUIRED_FAILED) < text.index(ARGUMENTS_PARSED), text[-3000:]
        record("required", world_name, ROWS["required"].released)
        return
    began = time.monotonic()
    text = failed_server_log(**options, timeout=180)
    seconds = time.monotonic() - began
    status = re.search(r"\) exited with status (-?\d+);", text)
    assert status is not None and int(status[1]) > 0, text[-3000:]
    assert REQUIRED_FAILED in text, text[-3000:]
    # raised by load_plugins() in launch_server's main, before the server arguments are parsed
    assert "sglang/launch_server.py" in text and "'attention_backend'" not in text, text[-3000:]
    print(f"{world_name}: exited with status {status[1]} after {seconds:.0f} s")
    record("required", world_name, ROWS["required"].runtime)
