"""``--tp 2`` on the CPU (gloo): the hooks fire in both ranks, and under the runtime (the launcher,
the adopted SGLang) the ranks compare their plugins by themselves at start-up.

SGLang 0.5.23 runs two scheduler ranks on one CPU when ``SGLANG_CPU_OMP_THREADS_BIND`` gives each
its cores (``0|1``); without it ``sglang/srt/utils/numa_utils.py`` fails on a machine with one NUMA
node. The adoption patch calls ``check_plugin_consistency()`` in ``init_parallel_runtime`` right
after SGLang's process groups exist, over SGLang's own world group. The generated
``serve-rank-check`` plugin has an AFTER hook on the groups' set-up (``_init_parallel_groups``)
that, on the rank ``SERVE_DIVERGENT_RANK`` names, registers one more hook, naming its plugin: a
plugin that registers a hook on rank 1 only.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import (
    SCHEDULER_LINE,
    WORLDS,
    Plugins,
    failed_server_log,
    python_of,
    sglang_processes,
)
from matrix import ROWS, record

from sglang_plugin_runtime.testing._sglang_server import running_sglang_server

pytestmark = pytest.mark.serve

TP2 = {"SGLANG_CPU_OMP_THREADS_BIND": "0|1"}


def test_two_ranks_run_the_hooks_and_agree_on_their_plugins_by_themselves(
    plugins: Plugins, logs_dir: Path
) -> None:
    with running_sglang_server(
        python=python_of("launcher"),
        paths=[plugins.hooks, plugins.rank_check],
        launcher=True,
        env=TP2,
        extra_args=["--tp", "2"],
        log=logs_dir / "launcher-tp2.log",
        timeout=600,
    ) as server:
        text = server.log_text()
        fired = {
            int(pid)
            for pid in re.findall(re.escape(SCHEDULER_LINE) + r" \(hooked in pid (\d+)\)", text)
        }
        schedulers = {
            p
            for p, name in sglang_processes(server).items()
            if name.startswith("sglang::scheduler")
        }
        assert len(fired) == 2 and fired == schedulers, (fired, schedulers)
        assert sorted(re.findall(r"rank (\d): process groups ready", text)) == ["0", "1"]
        agreed = re.findall(r"Plugin fingerprint (\w+) is the same on all 2 ranks", text)
        assert len(agreed) == 2 and len(set(agreed)) == 1, text[-3000:]
        assert server.generate()["status"] == 200


@pytest.mark.fault(
    "processes",
    "a plugin registers a hook on rank 1 only, in a real --tp 2 server (launcher, adopted)",
    "start-up stops in init_parallel_runtime: PluginConsistencyError naming rank 1, the plugin "
    "and the hook, before the model loads",
)
@pytest.mark.parametrize("world_name", list(WORLDS))
def test_a_plugin_that_hooks_one_rank_only_stops_start_up_naming_rank_plugin_and_hook(
    world_name: str, plugins: Plugins, logs_dir: Path
) -> None:
    options = dict(
        python=python_of(world_name),
        paths=[plugins.hooks, plugins.rank_check],
        launcher=WORLDS[world_name][1],
        env={**TP2, "SERVE_DIVERGENT_RANK": "1"},
        extra_args=["--tp", "2"],
        log=logs_dir / f"{world_name}-tp2-divergent.log",
        timeout=600,
    )
    if world_name == "released":
        with running_sglang_server(**options) as server:  # type: ignore[arg-type]
            assert server.generate()["status"] == 200
            assert "PluginConsistencyError" not in server.log_text()
        record("rank_check", world_name, ROWS["rank_check"].released)
        return
    text = failed_server_log(**options)
    error = next(line for line in text.splitlines() if "PluginConsistencyError:" in line)
    assert "rank 1" in text and "json.dumps" in text, text[-4000:]
    assert "serve_rank_check from serve-rank-check" in text, text[-4000:]
    assert "Scheduler initialized!" not in text, error  # stopped before the model loads
    record("rank_check", world_name, ROWS["rank_check"].runtime)
