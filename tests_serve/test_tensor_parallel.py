"""``--tp 2`` on the CPU (gloo): the hooks fire in both ranks, and the rank consistency check runs
inside them.

SGLang 0.5.23 runs two scheduler ranks on one CPU when ``SGLANG_CPU_OMP_THREADS_BIND`` gives each
its cores (``0|1``); without it ``sglang/srt/utils/numa_utils.py`` fails on a machine with one NUMA
node. The generated ``serve-rank-check`` plugin calls ``check_plugin_consistency()`` after SGLang's
process groups exist (an AFTER hook on ``sglang.srt.distributed.bootstrap.init_parallel_runtime``).
Runs under the launcher: there the runtime is SGLang's plugin layer, so the fingerprint holds what
SGLang loaded.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import SCHEDULER_LINE, Plugins, failed_server_log, python_of, sglang_processes

from sglang_plugin_runtime.testing._sglang_server import running_sglang_server

pytestmark = pytest.mark.serve

TP2 = {"SGLANG_CPU_OMP_THREADS_BIND": "0|1"}


def test_two_ranks_run_the_hooks_and_agree_on_their_plugins(
    plugins: Plugins, logs_dir: Path
) -> None:
    with running_sglang_server(
        python=python_of("launcher"),
        paths=[plugins.hooks, plugins.rank_check],
        launcher=True,
        env=TP2,
        extra_args=["--tp", "2"],
        log=logs_dir / "launcher-tp2.log",
        timeout=300,
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
        agreed = re.findall(r"rank (\d): plugin fingerprint (\w+) agrees on 2 ranks", text)
        assert sorted(rank for rank, _ in agreed) == ["0", "1"], text[-3000:]
        assert len({digest for _, digest in agreed}) == 1
        assert server.generate()["status"] == 200


def test_a_rank_with_another_plugin_set_is_refused_naming_it(
    plugins: Plugins, logs_dir: Path
) -> None:
    text = failed_server_log(
        python=python_of("launcher"),
        paths=[plugins.hooks, plugins.rank_check],
        launcher=True,
        env={**TP2, "SERVE_DIVERGENT_RANK": "1"},
        extra_args=["--tp", "2"],
        log=logs_dir / "launcher-tp2-divergent.log",
        timeout=300,
    )
    assert "PluginConsistencyError" in text
    assert "json.dumps" in text
