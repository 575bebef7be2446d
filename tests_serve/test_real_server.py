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
    sglang_processes,
)

from sglang_plugin_runtime.testing._sglang_server import (
    SGLangServer,
    SGLangServerError,
    running_sglang_server,
)

pytestmark = pytest.mark.serve


def test_the_generated_hook_fires_in_the_scheduler_subprocess(served: SGLangServer) -> None:
    fired = [int(m[1]) for m in log_lines(served, re.escape(SCHEDULER_LINE) + r" \(hooked in pid (\d+)\)")]
    processes = sglang_processes(served)
    assert len(fired) == 1, served.log_text()[-3000:]
    assert processes.get(fired[0], "").startswith("sglang::scheduler"), (fired, processes)
    main = [pid for pid, name in processes.items() if not name.startswith("sglang::")]
    assert len(main) == 1 and fired[0] != main[0] and fired[0] != served.pid


def test_generate_returns_200_with_the_plugins_loaded(served: SGLangServer) -> None:
    answer = served.generate("Hello", max_new_tokens=4)
    assert answer["status"] == 200, answer
    assert answer["meta_info"]["completion_tokens"] == 4


def test_the_platform_plugin_is_selected_in_every_server_process(served: SGLangServer) -> None:
    selected = {int(m[1]) for m in log_lines(served, r"serve-cpu-platform: activate\(\) -> \S+ \(pid (\d+)\)")}
    processes = sglang_processes(served)
    assert len(processes) >= 3, processes  # the server, its scheduler and its detokenizer
    assert set(processes) <= selected, (processes, selected)


#: What SGLang 0.5.23 asks a platform in a CPU server's life (the probe logs each once per process).
CALLED = {
    "get_device",
    "get_device_total_memory",
    "get_group_coordinator_device",
    "get_torch_distributed_backend_str",
    "init_backend",
    "post_load_model",
    "get_kv_pool_cls",
}


def test_sglang_calls_the_platforms_methods(served: SGLangServer) -> None:
    called = {m[1] for m in log_lines(served, r"serve-cpu-platform: SGLang called (\w+)")}
    assert called >= CALLED, sorted(called)


def test_a_cpu_platforms_attention_backend_is_not_asked_sglang_picks_it_first(served: SGLangServer) -> None:
    """For ``--device cpu`` SGLang picks the attention backend itself (sglang/srt/arg_groups/platform_hook.py:
    158-166: ``intel_amx``, then its fallback to ``torch_native`` in overrides.py:1301-1310) before it would ask
    an out-of-tree platform (model_override_base.py:292-294), so the platform's choice is never consulted."""
    called = {m[1] for m in log_lines(served, r"serve-cpu-platform: SGLang called (\w+)")}
    text = served.log_text()
    assert "get_default_attention_backend" not in called
    assert "does not support Intel AMX, will fallback to torch_native backend" in text
    assert "'attention_backend': 'torch_native'" in text


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
    with pytest.raises(SGLangServerError) as failed, running_sglang_server(
        python=python_of(world_name),
        paths=[plugins.broken_platform],
        launcher=WORLDS[world_name][1],
        attention_backend=None,
        log=logs_dir / f"{world_name}-broken-platform.log",
        timeout=180,
    ):
        pass
    text = str(failed.value)
    print(text[-3000:])
    assert "serve_broken_platform" in text
