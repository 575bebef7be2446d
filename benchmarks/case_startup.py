"""Case 1: cold import of the platform layer plus the first ``current_platform`` access.

Ours: ``from sglang_plugin_runtime.platforms import current_platform``.
SGLang: ``from sglang.srt.platforms import current_platform`` from the released wheel's own modules
(environ, plugins, platforms), with its real dependencies: torch (dev venv), numpy, psutil, msgspec.
No plugins are installed, so both sides scan the installed distributions and fall back to the base
platform. Variant "torch pre-imported": numpy and torch are imported before the clock starts in both
processes, which isolates the cost of the platform layer itself from torch's import.
"""

import sys
import time

SIDES = ["ours", "sglang"]


def measure(side, params):
    if params.get("preimport_torch"):
        import numpy  # noqa: F401
        import torch  # noqa: F401
    modules_before = len(sys.modules)
    t0 = time.perf_counter()
    if side == "ours":
        from sglang_plugin_runtime.platforms import current_platform
    else:
        from sglang.srt.platforms import current_platform
    elapsed = time.perf_counter() - t0
    return {
        "seconds": elapsed,
        "platform": type(current_platform).__module__ + "." + type(current_platform).__qualname__,
        "torch_imported": "torch" in sys.modules,
        "modules_imported": len(sys.modules) - modules_before,
    }


def run(ctx):
    from _common import Row, alternate, run_child

    rows = []
    variants = [(False, "cold import + first current_platform"), (True, "same, torch+numpy pre-imported")]
    if ctx.quick:
        variants = variants[:1]
    for preimport, label in variants:
        results = alternate(
            ctx,
            ctx.repeats(5, 1),
            SIDES,
            lambda side, preimport=preimport: run_child(ctx, "startup", side, {"preimport_torch": preimport}),
            warmup_key="startup",
        )
        ours, sgl = results["ours"], results["sglang"]
        note = (
            f"ours -> {ours[0]['platform']} ({ours[0]['modules_imported']} modules, torch imported: "
            f"{ours[0]['torch_imported']}); SGLang -> {sgl[0]['platform']} ({sgl[0]['modules_imported']} modules)"
        )
        ctx.log(f"  1 {label}: {note}")
        rows.append(
            Row(
                "1",
                f"platform layer: {label}",
                "ms",
                [r["seconds"] * 1e3 for r in ours],
                [r["seconds"] * 1e3 for r in sgl],
                goal="" if preimport else "< 30 ms",
                goal_check=None if preimport else "abs_below:30",
                note=note,
            )
        )
    return rows
