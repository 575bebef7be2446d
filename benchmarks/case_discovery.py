"""Case 2: discovery + platform selection + ``load_plugins()`` with many installed distributions.

The site folder holds N filler distributions (a third with console scripts, a tenth with pytest11
entry points) plus five plugin distributions: two platform plugins ("alpha" finds its hardware,
"beta" returns None), each also shipping a general plugin, and three general-only plugins. Every
general plugin registers one AROUND hook on a function of an already-imported module.

Both sides import numpy and torch (SGLang's platform layer needs it; a serving process has it
anyway) before the clock starts. The clock covers the whole start-up path of a process: importing
the platform and plugin modules, the first ``current_platform`` access (discovery, activation, class
loading, instantiation) and ``load_plugins()`` (discovery, import and run of the general plugins,
``apply_hooks()``). Our runtime imports its platform classes lazily, SGLang's at module import, so
timing the imports too is the only like-for-like window. SGLang's side is SGLang's own code path
from the wheel: its ``entry_points()`` scans and ``ep.dist.name`` look-ups, with its real
``sglang.srt.environ``.

Both sides scan the installed distributions in every process: nothing is saved on disk (our runtime
keeps its one scan in memory, SGLang calls ``entry_points()`` up to three times).
"""

import os
import sys
import time

SIDES = ["ours", "sglang"]


def measure(side, params):
    if params.get("preimport_torch", True):
        import numpy  # noqa: F401
        import torch  # noqa: F401
    import bench_targets

    t0 = time.perf_counter()
    if side == "ours":
        import sglang_plugin_runtime.platforms as platforms
        import sglang_plugin_runtime.plugins as plugins
    else:
        import sglang.srt.platforms as platforms
        import sglang.srt.plugins as plugins
    t1 = time.perf_counter()
    platform = platforms.current_platform
    t2 = time.perf_counter()
    plugins.load_plugins()
    t3 = time.perf_counter()
    hooked = sorted(
        name
        for name in ("work_alpha", "work_beta", "work_one", "work_two", "work_three")
        if hasattr(getattr(bench_targets, name), "__wrapped__")
    )
    return {
        "seconds": t3 - t0,
        "import_seconds": t1 - t0,
        "select_seconds": t2 - t1,
        "load_seconds": t3 - t2,
        "platform": type(platform).__qualname__,
        "hooked": hooked,
        "platform_env": os.environ.get("SGLANG_PLATFORM"),
        "modules": len(sys.modules),
    }


def run(ctx):
    from _common import Row, alternate, run_child
    from _prepare import ensure_fake_dists

    rows = []
    counts = [0, 300] if ctx.quick else [0, 300, 1000]
    # (distributions, whether the five plugins are installed, SGLANG_PLATFORM): the last, with no
    # plugin at all, is what every SGLang process without plugins pays.
    runs = [(count, True, env) for count in counts for env in ("alpha", None)] + [
        (300, False, None)
    ]
    for count, with_plugins, platform_env in runs:
        folder = ensure_fake_dists(count, ctx.log, plugins=with_plugins)
        env = {"SGLANG_PLATFORM": platform_env} if platform_env else {}
        # Six: the goal rows' medians decide a goal, and this path's runs spread by +-15 % on a
        # shared machine.
        repeats = ctx.repeats(6, 1)
        results = alternate(
            ctx,
            repeats,
            SIDES,
            lambda side, folder=folder, env=env: run_child(
                ctx, "discovery", side, {}, path=[str(folder)], env=env
            ),
            warmup_key=f"discovery-{count}",
        )
        ours, sgl = results["ours"], results["sglang"]
        expected = "AlphaPlatform" if with_plugins else "SRTPlatform"
        for side, rs in results.items():
            if rs[0]["platform"] != expected:
                raise RuntimeError(
                    f"case 2 {side}: selected {rs[0]['platform']}, expected {expected}"
                )
        note = f"hooked: ours {ours[0]['hooked']}, SGLang {sgl[0]['hooked']}"
        label_env = f"SGLANG_PLATFORM={platform_env}" if platform_env else "SGLANG_PLATFORM unset"
        goal = goal_check = ""
        if count == 300 or not with_plugins:
            goal, goal_check = "<= 0.5x SGLang", "ratio_max:0.5"
        split = (
            "; import/select/load ms: ours "
            f"{_ms(ours, 'import_seconds')}/{_ms(ours, 'select_seconds')}/"
            f"{_ms(ours, 'load_seconds')}, SGLang "
            f"{_ms(sgl, 'import_seconds')}/{_ms(sgl, 'select_seconds')}/{_ms(sgl, 'load_seconds')}"
        )
        ctx.log(f"  2 N={count} {label_env}: {note}{split}")
        rows.append(
            Row(
                "2",
                f"startup path, {count} dists + {5 if with_plugins else 'no'} plugins, {label_env}",
                "ms",
                [r["seconds"] * 1e3 for r in ours],
                [r["seconds"] * 1e3 for r in sgl],
                goal=goal,
                goal_check=goal_check or None,
                note=note + split,
            )
        )
    return rows


def _ms(results, key):
    import statistics

    return f"{statistics.median(r[key] for r in results) * 1e3:.2f}"
