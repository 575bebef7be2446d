"""Plugins inside SGLang's real server (``python -m sglang.launch_server`` on the CPU), in each world.

One server per world (``served``) carries the generated hooks plugin, the CPU platform plugin and two failing
general plugins; each check below reads that server's log or asks it a request. The servers that must fail
(a platform that cannot serve SGLang's calls, a scheduler that cannot be imported) are started on their own
and fail fast. What each world promises for each failure is on docs/real-server.md.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import (
    MISSPELLED_TARGET,
    SCHEDULER_LINE,
    WORLDS,
    Plugins,
    log_lines,
    python_of,
    server_processes,
)

from sglang_plugin_runtime.testing._sglang_server import (
    SGLangServer,
    SGLangServerError,
    running_sglang_server,
)

pytestmark = pytest.mark.serve


def test_the_generated_hook_fires_in_the_scheduler_subprocess(served: SGLangServer) -> None:
    fired = [int(m[1]) for m in log_lines(served, re.escape(SCHEDULER_LINE) + r" \(hooked in pid (\d+)\)")]
    processes = server_processes(served)
    assert len(fired) == 1, served.log_text()[-3000:]
    assert fired[0] != served.pid
    assert processes.get(fired[0], "").startswith("sglang::scheduler"), processes


def test_generate_returns_200_with_the_plugins_loaded(served: SGLangServer) -> None:
    answer = served.generate("Hello", max_new_tokens=4)
    assert answer["status"] == 200, answer
    assert answer["meta_info"]["completion_tokens"] == 4


def test_the_platform_plugin_is_selected_in_every_server_process(served: SGLangServer) -> None:
    selected = {int(m[1]) for m in log_lines(served, r"serve-cpu-platform: activate\(\) -> \S+ \(pid (\d+)\)")}
    processes = server_processes(served)
    print("selected", selected, "processes", processes)
    assert set(processes) <= selected, (processes, selected)


def test_sglang_calls_the_platforms_methods(served: SGLangServer) -> None:
    called = {m[1] for m in log_lines(served, r"serve-cpu-platform: SGLang called (\w+)")}
    print("called", sorted(called))
    assert "get_device" in called


def test_a_register_that_raises_is_reported_naming_the_plugin(served: SGLangServer, world: str) -> None:
    text = served.log_text()
    print([line for line in text.splitlines() if "broken" in line][:20])
    assert "serve_broken_register" in text
    assert "RuntimeError: serve-broken-register: register() failed on purpose" in text


def test_a_misspelled_hook_target_is_reported_naming_the_plugin(served: SGLangServer, world: str) -> None:
    text = served.log_text()
    print([line for line in text.splitlines() if "schedular" in line][:20])
    assert MISSPELLED_TARGET in text


@pytest.mark.parametrize("world_name", list(WORLDS))
def test_a_platform_that_cannot_serve_sglangs_calls_fails_the_server_naming_it(
    world_name: str, plugins: Plugins, logs_dir: Path
) -> None:
    with pytest.raises(SGLangServerError) as failed:
        with running_sglang_server(
            python=python_of(world_name),
            paths=[plugins.broken_platform],
            launcher=WORLDS[world_name][1],
            attention_backend=None,
            device=None,
            log=logs_dir / f"{world_name}-broken-platform.log",
            timeout=180,
        ):
            pass
    text = str(failed.value)
    print(text[-3000:])
    assert "serve_broken_platform" in text
