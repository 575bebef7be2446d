"""Case 1: cold import of the platform layer plus the first ``current_platform`` access.

Ours: ``from sglang_plugin_runtime.platforms import current_platform``.
SGLang: ``from sglang.srt.platforms import current_platform`` from the released wheel's own modules
(environ, plugins, platforms), with its real dependencies: torch (dev venv), numpy, psutil, msgspec.
No plugins are installed, so both sides scan the installed distributions and fall back to the base
platform. Variant "torch pre-imported": numpy and torch are imported before the clock starts in both
processes, which isolates the cost of the platform layer itself from torch's import.

A third side, "stdlib", imports only the standard-library modules that our side's import brought in
(read from one run of ours, not written by hand): the floor under any platform layer that scans with
``importlib.metadata``, so the row says how much of ours is the runtime's own code.
"""

import sys
import time

SIDES = ["ours", "sglang"]


def measure(side, params):
    if params.get("preimport_torch"):
        import numpy  # noqa: F401
        import torch  # noqa: F401
    modules_before = set(sys.modules)
    t0 = time.perf_counter()
    if side == "stdlib":
        for name in params["modules"]:
            __import__(name)
        return {"seconds": time.perf_counter() - t0}
    if side == "ours":
        from sglang_plugin_runtime.platforms import current_platform
    else:
        from sglang.srt.platforms import current_platform
    elapsed = time.perf_counter() - t0
    platform = type(current_platform).__module__ + "." + type(current_platform).__qualname__
    new = sorted(set(sys.modules) - modules_before)
    return {
        "seconds": elapsed,
        "platform": platform,
        "torch_imported": "torch" in sys.modules,
        "modules_imported": len(new),
        # What the interpreter brought in besides the platform layer's own packages (for the
        # "stdlib" side).
        "other_modules": [
            name
            for name in new
            if name.partition(".")[0] not in ("sglang_plugin_runtime", "sglang")
        ],
    }


def run(ctx):
    import statistics

    from _common import Row, alternate, run_child

    rows = []
    variants = [
        (False, "cold import + first current_platform"),
        (True, "same, torch+numpy pre-imported"),
    ]
    if ctx.quick:
        variants = variants[:1]
    for preimport, label in variants:
        params = {"preimport_torch": preimport}
        params["modules"] = run_child(ctx, "startup", "ours", params)["other_modules"]
        results = alternate(
            ctx,
            ctx.repeats(5, 1),
            [*SIDES, "stdlib"],
            lambda side, params=params: run_child(ctx, "startup", side, params),
            warmup_key="startup",
        )
        ours, sgl = results["ours"], results["sglang"]
        floor = statistics.median(r["seconds"] * 1e3 for r in results["stdlib"])
        note = (
            f"ours -> {ours[0]['platform']} ({ours[0]['modules_imported']} modules, torch "
            f"imported: {ours[0]['torch_imported']}; the {len(params['modules'])} other modules "
            f"they bring in, imported alone, take {floor:.2f} ms); SGLang -> {sgl[0]['platform']} "
            f"({sgl[0]['modules_imported']} modules)"
        )
        ctx.log(f"  1 {label}: {note}")
        rows.append(
            Row(
                "1",
                f"platform layer: {label}",
                "ms",
                [r["seconds"] * 1e3 for r in ours],
                [r["seconds"] * 1e3 for r in sgl],
                goal="" if preimport else "< 30 ms, or <= 10 ms above the stdlib floor",
                goal_check=None if preimport else "abs_below_or_floor_plus:30,10",
                note=note,
                floor=floor,
            )
        )
    return rows
