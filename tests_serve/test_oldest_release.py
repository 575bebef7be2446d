"""The oldest SGLang release whose server starts on this CPU machine, released and under
``sglang-plugins run``.

``scripts/test-serve.sh`` builds its venv (``SGLANG_SERVE_OLDEST_VENV``): a hard-linked copy of the
serving venv with that release's wheel and the few pins it needs instead of 0.5.23's
(``scripts/serve-oldest-release.txt``). docs/real-server.md says why the releases before it do not
serve here. One server per world carries the generated hooks plugin and the CPU platform plugin, as
the serving venv's servers do (the platform with the two methods 0.5.13 asks that 0.5.23 retired);
the release has no adoption patch, so there is no adopted world.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO_ROOT, SCHEDULER_LINE, Plugins, log_lines, sglang_processes

from sglang_plugin_runtime.testing._sglang_server import SGLangServer, running_sglang_server

pytestmark = pytest.mark.serve

VENV = os.environ.get("SGLANG_SERVE_OLDEST_VENV")
#: The release's own server options for a CPU: its piecewise CUDA graph runner (on by default from
#: 0.5.13) calls torch.cpu.graph_pool_handle(), which does not exist.
SERVER_ARGS = ("--disable-piecewise-cuda-graph",)


def _release() -> str:
    pins = (REPO_ROOT / "scripts/serve-oldest-release.txt").read_text(encoding="utf-8")
    found = re.search(r"(?m)^sglang==(\S+)$", pins)
    assert found, "scripts/serve-oldest-release.txt names no sglang release"
    return found[1]


@pytest.fixture(scope="module")
def oldest_venv() -> Path:
    if not VENV:
        pytest.skip("SGLANG_SERVE_OLDEST_VENV is not set (scripts/test-serve.sh sets it)")
    return Path(VENV)


@pytest.fixture(scope="module", params=["released", "launcher"])
def oldest_world(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def oldest(
    oldest_venv: Path, oldest_world: str, plugins: Plugins, logs_dir: Path
) -> Iterator[SGLangServer]:
    """One server of the oldest release per world, with the generated hooks and CPU platform."""
    with running_sglang_server(
        python=str(oldest_venv / "bin" / "python"),
        paths=[plugins.hooks, plugins.oldest_release_platform],
        launcher=oldest_world == "launcher",
        attention_backend=None,
        device=None,
        extra_args=SERVER_ARGS,
        log=logs_dir / f"oldest-{oldest_world}.log",
    ) as server:
        yield server


def test_the_venv_holds_the_oldest_release(oldest_venv: Path) -> None:
    site = next((oldest_venv / "lib").glob("python3*/site-packages"))
    versions = [d.name for d in site.glob("sglang-*.dist-info")]
    assert versions == [f"sglang-{_release()}.dist-info"], versions


def test_the_generated_hook_fires_in_the_oldest_releases_scheduler(oldest: SGLangServer) -> None:
    fired = [
        int(m[1])
        for m in log_lines(oldest, re.escape(SCHEDULER_LINE) + r" \(hooked in pid (\d+)\)")
    ]
    processes = sglang_processes(oldest)
    assert len(fired) == 1, oldest.log_text()[-3000:]
    assert processes.get(fired[0], "").startswith("sglang::scheduler"), (fired, processes)


def test_the_oldest_release_serves_with_the_plugins_loaded(oldest: SGLangServer) -> None:
    answer = oldest.generate("Hello", max_new_tokens=4)
    assert answer["meta_info"]["completion_tokens"] == 4, answer


def test_the_platform_plugin_is_selected_in_every_process_of_the_oldest_release(
    oldest: SGLangServer,
) -> None:
    selected = {
        int(m[1])
        for m in log_lines(oldest, r"serve-cpu-platform: activate\(\) -> \S+ \(pid (\d+)\)")
    }
    processes = sglang_processes(oldest)
    assert len(processes) >= 3 and set(processes) <= selected, (processes, selected)


def test_only_the_launcher_says_it_adopted_the_oldest_release(
    oldest: SGLangServer, oldest_world: str
) -> None:
    adopted = f"sglang-plugins run: SGLang {_release()} runs with sglang_plugin_runtime"
    assert (adopted in oldest.log_text()) == (oldest_world == "launcher")
