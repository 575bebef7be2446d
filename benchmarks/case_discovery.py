"""Case 2: discovery + platform selection + ``load_plugins()`` with many installed distributions.

The site folder holds N filler distributions (a third with console scripts, a tenth with pytest11
entry points) plus five plugin distributions: two platform plugins ("alpha" finds its hardware,
"beta" returns None), each also shipping a general plugin, and three general-only plugins. Every
general plugin registers one AROUND hook on a function of an already-imported module.

Both sides import numpy and torch (SGLang's platform layer needs it; a serving process has it anyway)
before the clock starts. The clock covers the whole start-up path of a process: importing the platform
and plugin modules, the first ``current_platform`` access (discovery, activation, class loading,
instantiation) and ``load_plugins()`` (discovery, import and run of the general plugins,
``apply_hooks()``). Our runtime imports its platform classes and hook registry lazily, SGLang's at
module import, so timing the imports too is the only like-for-like window. SGLang's side is SGLang's own code path from the wheel: its
``entry_points()`` scans and ``ep.dist.name`` look-ups, with its real ``sglang.srt.environ``.

Our runtime saves its discovery scan on disk and every later process reuses it while nothing it read has
changed (see docs/concepts.md); SGLang scans in every process. The main rows show that steady state (the
saved scan written by the discarded warm-up run, as the ``.pyc`` files are); the "no saved scan" rows
(``SGLANG_PLUGIN_NO_CACHE=1``) show the first start after an install, when our runtime scans too. Each
result records where our discovery came from, and the run fails if a row did not measure what it says.
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
    if side == "ours":
        from sglang_plugin_runtime._discovery import discover_entry_points

        discovery = "scan" if discover_entry_points().origin == "scan" else "saved scan"
    else:
        discovery = "scan"
    hooked = sorted(
        name for name in ("work_alpha", "work_beta", "work_one", "work_two", "work_three")
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
        "discovery": discovery,
    }


def run(ctx):
    import shutil

    from _common import DISCOVERY_CACHE, Row, alternate, run_child
    from _prepare import ensure_fake_dists

    rows = []
    counts = [0, 300] if ctx.quick else [0, 300, 1000]
    scenarios = [(platform_env, saved) for saved in (True, False) for platform_env in ("alpha", None)]
    for count in counts:
        folder = ensure_fake_dists(count, ctx.log)
        # A fresh start; the priming runs write the saved scan (and .pyc files) that the later runs read.
        shutil.rmtree(DISCOVERY_CACHE, ignore_errors=True)
        if not ctx.quick:
            _prime_saved_scan(ctx, folder)
        for platform_env, saved in scenarios:
            if not saved and count == 0:
                continue
            env = {"SGLANG_PLATFORM": platform_env} if platform_env else {}
            if not saved:
                env["SGLANG_PLUGIN_NO_CACHE"] = "1"
            # Six: the goal rows' medians decide a goal, and this path's runs spread by +-15 % on a shared machine.
            repeats = ctx.repeats(6, 1)
            results = alternate(
                ctx,
                repeats,
                SIDES,
                lambda side, folder=folder, env=env: run_child(ctx, "discovery", side, {}, path=[str(folder)], env=env),
                warmup_key=f"discovery-{count}",
            )
            ours, sgl = results["ours"], results["sglang"]
            for side, rs in results.items():
                if rs[0]["platform"] != "AlphaPlatform":
                    raise RuntimeError(f"case 2 {side}: selected {rs[0]['platform']}, expected AlphaPlatform")
            expected = "saved scan" if saved else "scan"
            origins = sorted({r["discovery"] for r in ours})
            if not ctx.quick and origins != [expected]:
                raise RuntimeError(f"case 2 N={count}: our discovery came from {origins}, expected {expected!r}")
            note = f"hooked: ours {ours[0]['hooked']}, SGLang {sgl[0]['hooked']}"
            label_env = f"SGLANG_PLATFORM={platform_env}" if platform_env else "SGLANG_PLATFORM unset"
            if not saved:
                label_env += ", no saved scan"
            goal = goal_check = ""
            if count == 300 and saved:
                goal, goal_check = ">= 6x faster", "ratio_max:0.1667"
            split = (
                f"; import/select/load ms: ours {_ms(ours, 'import_seconds')}/{_ms(ours, 'select_seconds')}/"
                f"{_ms(ours, 'load_seconds')}, SGLang {_ms(sgl, 'import_seconds')}/{_ms(sgl, 'select_seconds')}/"
                f"{_ms(sgl, 'load_seconds')}"
            )
            note += f"; our discovery: {', '.join(origins)}"
            ctx.log(f"  2 N={count} {label_env}: {note}{split}")
            rows.append(
                Row(
                    "2",
                    f"startup path, {count} dists + 5 plugins, {label_env}",
                    "ms",
                    [r["seconds"] * 1e3 for r in ours],
                    [r["seconds"] * 1e3 for r in sgl],
                    goal=goal,
                    goal_check=goal_check or None,
                    note=note + split,
                )
            )
    return rows


def _prime_saved_scan(ctx, folder):
    """Run our side until a process reads the saved scan.

    A scan is not saved while a folder it read changed less than two seconds earlier (the first run writes
    ``__pycache__`` folders), so this may take a few runs.
    """
    from _common import run_child

    for _ in range(5):
        result = run_child(ctx, "discovery", "ours", {}, path=[str(folder)])
        if result["discovery"] == "saved scan":
            return
        time.sleep(1.0)
    raise RuntimeError(f"case 2: no process read a saved discovery scan for {folder}")


def _ms(results, key):
    import statistics

    return f"{statistics.median(r[key] for r in results) * 1e3:.2f}"
