"""Every process SGLang 0.5.23 starts, per world: which of startup plugins, platform selection,
general plugins and their hooks ran in it (docs/processes.md's table is written from this run).

Two layouts, one run of each per world:

- a server with ``--dp 2 --tokenizer-worker-num 2``: the server, its two tokenizer workers (spawned
  by uvicorn), the data-parallel controller, one scheduler per data-parallel rank and the
  detokenizer (seven processes); it must serve;
- ``RayEngine`` on a local Ray cluster of one logical GPU (``tests_serve/ray_engine_probe.py``):
  the engine's process, its ``ray::SchedulerActor``, its detokenizer, and a ``spawn`` child given a
  ``ServerArgs``. On a CPU the engine starts and builds the Scheduler in its actor, then cannot
  serve (the actor's ``run_event_loop`` calls ``torch.cuda.set_device``), so loading is checked at
  engine start.

The plugins: the generated CPU platform (with its startup plugin) and a generated general plugin
whose ``register()`` says where it runs and whose AROUND hooks on the class each kind of process
builds say where they fire (conftest.py's ``PROCESS_PROBE``).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import (
    ACTOR_INIT_TARGET,
    HOOK_LINE,
    REGISTER_LINE,
    REPO_ROOT,
    STARTUP_LINE,
    WORLDS,
    Plugins,
    python_of,
    sglang_processes,
)
from matrix import ROWS, record, record_process

from sglang_plugin_runtime.testing._sglang_server import (
    _OFFLINE,
    TAG_ENV,
    SGLangServer,
    _tagged_pids,
    running_sglang_server,
    tiny_model,
    vllm_placeholder,
)

pytestmark = pytest.mark.serve

#: Two scheduler ranks on one NUMA node need their cores named; uvicorn's default 10 s for a worker
#: to come up is shorter than importing SGLang on a busy 2-core machine.
LAYOUT_ENV = {
    "SGLANG_CPU_OMP_THREADS_BIND": "0|1",
    "SGLANG_UVICORN_WORKER_HEALTHCHECK_TIMEOUT": "600",
}
PLATFORM_LINE = r"serve-cpu-platform: activate\(\) -> \S+\.ServeCpuSRTPlatform \(pid (\d+)\)"


def steps_by_pid(text: str) -> dict[int, list[str]]:
    """For each process that printed a probe line: the steps it ran, in the order they run."""
    patterns = {
        "startup plugins": re.escape(STARTUP_LINE) + r" \(pid (\d+)\)",
        "platform": PLATFORM_LINE,
        "plugins": re.escape(REGISTER_LINE) + r" \(pid (\d+)\)",
        "hooks": re.escape(HOOK_LINE) + r" \w+ \(pid (\d+)\)",
    }
    steps: dict[int, list[str]] = {}
    for step, pattern in patterns.items():
        for pid in dict.fromkeys(int(m[1]) for m in re.finditer(pattern, text)):
            steps.setdefault(pid, []).append(step)
    return steps


@pytest.fixture(scope="module")
def layouts(world: str, plugins: Plugins, logs_dir: Path) -> Iterator[SGLangServer]:
    with running_sglang_server(
        python=python_of(world),
        paths=[plugins.processes, plugins.platform],
        launcher=WORLDS[world][1],
        attention_backend=None,
        env=LAYOUT_ENV,
        extra_args=["--dp", "2", "--tokenizer-worker-num", "2"],
        log=logs_dir / f"{world}-layouts.log",
        timeout=600,
    ) as server:
        yield server


def test_every_process_of_a_data_parallel_multi_tokenizer_server_loads_its_plugins(
    layouts: SGLangServer, world: str
) -> None:
    assert layouts.generate()["status"] == 200
    # a tokenizer worker names itself sglang::tokenizer_worker once its own start-up is done
    deadline = time.monotonic() + 120
    while sum("tokenizer_worker" in n for n in sglang_processes(layouts).values()) < 2:
        assert time.monotonic() < deadline, sglang_processes(layouts)
        time.sleep(1)
    processes = sglang_processes(layouts)
    kinds = {
        "server": [p for p, n in processes.items() if "sglang.launch_server" in n],
        "tokenizer_worker": [p for p, n in processes.items() if "tokenizer_worker" in n],
        "dp_controller": [p for p, n in processes.items() if "data_parallel_controller" in n],
        "scheduler": [p for p, n in processes.items() if n.startswith("sglang::scheduler")],
        "detokenizer": [p for p, n in processes.items() if n.startswith("sglang::detokenizer")],
    }
    assert [len(pids) for pids in kinds.values()] == [1, 2, 1, 2, 1], processes
    steps = steps_by_pid(layouts.log_text())
    for kind, pids in kinds.items():
        seen = {tuple(steps.get(pid, ())) for pid in pids}
        assert len(seen) == 1, (kind, seen)  # both workers, both schedulers alike
        record_process(kind, world, list(seen.pop()))
    loading = sum(1 for pids in kinds.values() for pid in pids if "plugins" in steps.get(pid, ()))
    gap = "" if loading == 7 else ": not the 2 tokenizer workers"
    record("layouts", world, f"{loading} of 7{gap}")


@pytest.fixture(scope="module")
def ray_engine(
    world: str, plugins: Plugins, logs_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[dict[str, object], str]:
    """Run ``ray_engine_probe.py`` in ``world``: its JSON report and its log."""
    python = python_of(world)
    marks = tmp_path_factory.mktemp(f"marks-{world}")
    script = REPO_ROOT / "tests_serve" / "ray_engine_probe.py"
    command = [python, str(script), str(tiny_model(python))]
    if WORLDS[world][1]:
        command = [python, "-m", "sglang_plugin_runtime", "run", "--", *command]
    paths = [plugins.processes, plugins.platform, vllm_placeholder()]
    env = {
        **_OFFLINE,
        "PATH": "/usr/bin:/bin",
        "HOME": str(Path.home()),
        "PYTHONPATH": ":".join(map(str, paths)),
        "SGLANG_USE_CPU_ENGINE": "0",
        "SERVE_PROBE_DIR": str(marks),
        "RAY_USAGE_STATS_ENABLED": "0",
        TAG_ENV: f"ray-{world}",
    }
    log = logs_dir / f"{world}-ray.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            command, env=env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        status = process.wait(timeout=600)
    finally:  # the engine's detokenizer and Ray's own processes are in its session
        for pid in _tagged_pids({process.pid}, env[TAG_ENV]):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        process.wait()
    text = log.read_text(encoding="utf-8", errors="replace")
    report = re.search(r"ray-engine-probe: (\{.*\})", text)
    assert status == 0 and report, text[-4000:]
    return json.loads(report[1]), text


def test_every_process_of_a_ray_engine_loads_its_plugins(
    ray_engine: tuple[dict[str, object], str], world: str
) -> None:
    report, text = ray_engine
    assert report["engine"] == "ready" and report["actors"] == 1, report
    assert report["detokenizer_loaded"], report  # SGLang's detokenizer loads them in every world
    assert "run_event_loop" in text or "_cuda_setDevice" in text  # the actor cannot serve on a CPU
    (actor,) = {int(pid) for pid in re.findall(r"\(SchedulerActor pid=(\d+)\)", text)}
    steps = steps_by_pid(text)
    assert "plugins" in steps.get(int(str(report["detokenizer"])), []), report
    for kind, pid in (
        ("ray_driver", report["driver"]),
        ("ray_actor", actor),
        ("server_args_child", report["server_args_child"]),
    ):
        record_process(kind, world, steps.get(int(str(pid)), []))
    loaded = "plugins" in steps.get(actor, [])
    outcome = ROWS["ray_actor"].runtime if loaded else ROWS["ray_actor"].released
    record("ray_actor", world, outcome)


@pytest.mark.fault(
    "hooks",
    "a hook on a Ray actor class's attribute (SchedulerActor.__init__, in a real RayEngine)",
    "the target fails in every process that imports it, saying Ray runs a copy of the class and "
    "to hook what the actor calls; never reported applied",
)
def test_a_hook_on_the_ray_actor_class_is_refused_where_the_runtime_loads(
    ray_engine: tuple[dict[str, object], str], world: str
) -> None:
    _, text = ray_engine
    refused = f"Failed to apply hooks to {ACTOR_INIT_TARGET}"
    assert "hook fired on SchedulerActor" not in text
    if refused not in text:
        record("actor_hook", world, ROWS["actor_hook"].released)
        return
    line = next(line for line in text.splitlines() if refused in line)
    assert "never runs" in line and "Ray actor class" in line and "serve_processes" in line, line
    record("actor_hook", world, ROWS["actor_hook"].runtime)
