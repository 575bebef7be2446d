"""``RayEngine`` on a local Ray cluster of logical GPUs, and two spawned children given a
``ServerArgs``: run by the real-server tier in each world (``python ray_engine_probe.py MODEL``).

On a CPU the engine starts, builds its scheduler actor and the Scheduler in it, and then cannot
serve: the actor's ``run_event_loop`` calls ``torch.cuda.set_device``. What matters here is what
each process loaded before that, which the process-kind probe plugin prints. This script waits
until the detokenizer has loaded its plugins (the probe leaves a mark per process in
``SERVE_PROBE_DIR``), runs the children, and prints one JSON line with the pids it knows.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
import time
from pathlib import Path


def unpickle_child(server_args: object) -> None:
    """A ``spawn`` child's target: the ``ServerArgs`` it is given is unpickled before it runs."""


def wait_for_mark(pid: int, timeout: float) -> bool:
    """Whether process ``pid`` loaded its plugins (its mark appeared) within ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if Path(os.environ["SERVE_PROBE_DIR"], str(pid)).exists():
            return True
        time.sleep(0.5)
    return False


def main(model: str) -> dict[str, object]:
    import psutil
    import ray

    ray.init(num_cpus=2, num_gpus=1, include_dashboard=False, log_to_driver=True)
    from sglang.srt.ray.engine import RayEngine

    found: dict[str, object] = {"driver": os.getpid()}
    try:
        engine = RayEngine(
            model_path=model,
            device="cpu",
            mem_fraction_static=0.1,
            max_total_tokens=2048,
            log_level="info",
        )
        found["engine"] = "ready"
        found["actors"] = len(engine._scheduler_init_result.scheduler_actors)
    except Exception as exc:  # reported, and the test says what it expected
        found["engine"] = f"{type(exc).__name__}: {exc}"
    detokenizer = None  # named sglang::detokenizer once it has imported SGLang
    deadline = time.monotonic() + 240
    while detokenizer is None and time.monotonic() < deadline:
        named = [p.pid for p in psutil.Process().children() if "detokenizer" in p.name()]
        if named:
            detokenizer = named[0]
        time.sleep(0.5)
    found["detokenizer"] = detokenizer
    found["detokenizer_loaded"] = detokenizer is not None and wait_for_mark(detokenizer, 240)
    from sglang.srt.server_args import ServerArgs

    child = multiprocessing.get_context("spawn").Process(
        target=unpickle_child, args=(ServerArgs(model_path=model),)
    )
    child.start()
    child.join(240)
    found["server_args_child"] = child.pid
    ray.shutdown()
    return found


if __name__ == "__main__":
    result = main(sys.argv[1])
    print("ray-engine-probe: " + json.dumps(result), file=sys.stderr, flush=True)
    sys.stderr.flush()
    os._exit(0)  # the engine's own processes are ended by the test's process group
