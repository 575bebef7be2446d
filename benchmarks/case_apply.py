"""Case 3: ``apply_hooks()`` for 1, 20 and 50 targets in a process with a large ``sys.modules``.

The process imports numpy and torch, then modules of a synthetic package (``benchsynth``, generated
under ``.cache/bench/synth``: 16 constants, 8 strings, 8 functions and 3 classes each; every 20th
module holds a stale ``from benchsynth.targets import t_K`` copy of a target) until ``sys.modules``
holds the requested number of modules. Then it registers one AROUND hook on each of N module-level
functions of ``benchsynth.targets`` and times ``HookRegistry.apply_hooks()`` alone. Each side uses
its own registry (SGLang's ``hook_registry.py`` from the wheel, loaded as
``sglang.srt.plugins.hook_registry``).
"""

import sys
import time

SIDES = ["ours", "sglang"]


def measure(side, params):
    import importlib

    if params["torch"]:
        import numpy
        import torch  # noqa: F401
    else:
        import numpy  # noqa: F401
    with open(params["names_file"]) as handle:
        names = handle.read().split()
    want = params["modules"]
    import benchsynth.targets as targets

    for name in names:
        if len(sys.modules) >= want:
            break
        importlib.import_module(name)
    if side == "ours":
        from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookType
    else:
        from sglang.srt.plugins.hook_registry import HookRegistry, HookType

    def around(original_fn, *args, **kwargs):
        return original_fn(*args, **kwargs)

    count = params["targets"]
    for k in range(count):
        HookRegistry.register(f"benchsynth.targets.t_{k}", around, HookType.AROUND)
    modules = len(sys.modules)
    t0 = time.perf_counter()
    HookRegistry.apply_hooks()
    elapsed = time.perf_counter() - t0
    # Correctness: the defining module and a stale ``from x import t_0`` copy both see the wrapper.
    stale = sys.modules.get("benchsynth.p0.m0")
    return {
        "seconds": elapsed,
        "modules": modules,
        "patched": hasattr(targets.t_0, "__wrapped__"),
        "stale_rebound": bool(stale is not None and getattr(stale, "t_0", None) is targets.t_0),
    }


def run(ctx):
    from _common import Row, alternate, run_child
    from _prepare import ensure_synthetic

    rows = []
    total = 1500 if ctx.quick else 6000
    use_torch = not ctx.quick
    folder = ensure_synthetic(5200 if not ctx.quick else 1400, ctx.log)
    names_file = str(folder / "benchsynth_names.txt")
    for count in [1, 20] if ctx.quick else [1, 20, 50]:
        params = {"torch": use_torch, "modules": total, "targets": count, "names_file": names_file}
        results = alternate(
            ctx,
            ctx.repeats(4, 1),
            SIDES,
            lambda side, params=params: run_child(ctx, "apply", side, params, path=[str(folder)]),
            warmup_key="apply",
        )
        ours, sgl = results["ours"], results["sglang"]
        for side, rs in results.items():
            if not rs[0]["patched"]:
                raise RuntimeError(f"case 3 {side}: benchsynth.targets.t_0 was not patched")
        note = (
            f"{ours[0]['modules']} modules in sys.modules; stale copy rebound: ours "
            f"{ours[0]['stale_rebound']}, SGLang {sgl[0]['stale_rebound']}"
        )
        ctx.log(f"  3 targets={count}: {note}")
        goal, check = ("", None)
        if count == 20 and not ctx.quick:
            goal, check = ">= 30x faster", "ratio_max:0.0333"
        rows.append(
            Row(
                "3",
                f"apply_hooks(), {count} target{'s' if count > 1 else ''}, ~{ours[0]['modules']} "
                "modules",
                "ms",
                [r["seconds"] * 1e3 for r in ours],
                [r["seconds"] * 1e3 for r in sgl],
                goal=goal,
                goal_check=check,
                note=note,
            )
        )
    return rows
