"""Case 4: per-call overhead of hooked functions and methods, minus the bare call.

A module ``bench_percall`` (built in memory and put in ``sys.modules``) holds ``f_around``,
``f_three`` and a class ``C`` with methods ``m_around`` and ``m_three``; all are ``return x``.
"around": one AROUND hook (``return original_fn(*args, **kwargs)``). "three": BEFORE (returns None),
AROUND, AFTER (returns None), registered in that order. Bare calls are timed before
``apply_hooks()``, hooked calls after, in the same process, with ``timeit`` (best of ``repeat`` runs
of ``number`` calls). Overhead = hooked - bare, in nanoseconds per call.
"""

import sys

SIDES = ["ours", "sglang"]

_SOURCE = """
def f_around(x):
    return x


def f_three(x):
    return x


class C:
    def m_around(self, x):
        return x

    def m_three(self, x):
        return x
"""


def _best(stmt, namespace, number, repeat):
    import timeit

    timer = timeit.Timer(stmt, globals=namespace)
    return min(timer.repeat(repeat=repeat, number=number)) / number * 1e9


def measure(side, params):
    import types

    module = types.ModuleType("bench_percall")
    module.__file__ = "<bench_percall>"
    exec(compile(_SOURCE, "<bench_percall>", "exec"), module.__dict__)
    sys.modules["bench_percall"] = module
    if side == "ours":
        from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookType
    else:
        from sglang.srt.plugins.hook_registry import HookRegistry, HookType

    def before(*args, **kwargs):
        return None

    def around(original_fn, *args, **kwargs):
        return original_fn(*args, **kwargs)

    def after(result, *args, **kwargs):
        return None

    number, repeat = params["number"], params["repeat"]
    cases = {
        "function/around": "f_around(1)",
        "function/three": "f_three(1)",
        "method/around": "o.m_around(1)",
        "method/three": "o.m_three(1)",
    }

    def time_all():
        # Looked up afresh each time, so the hooked run sees the patched attributes.
        namespace = {"f_around": module.f_around, "f_three": module.f_three, "o": module.C()}
        return {key: _best(stmt, namespace, number, repeat) for key, stmt in cases.items()}

    bare = time_all()
    HookRegistry.register("bench_percall.f_around", around, HookType.AROUND)
    HookRegistry.register("bench_percall.C.m_around", around, HookType.AROUND)
    for target in ("bench_percall.f_three", "bench_percall.C.m_three"):
        HookRegistry.register(target, before, HookType.BEFORE)
        HookRegistry.register(target, around, HookType.AROUND)
        HookRegistry.register(target, after, HookType.AFTER)
    HookRegistry.apply_hooks()
    for name in ("f_around", "f_three"):
        assert hasattr(getattr(module, name), "__wrapped__"), name
    for name in ("m_around", "m_three"):
        assert hasattr(module.C.__dict__[name], "__wrapped__"), name
    assert module.f_three(7) == 7 and module.C().m_three(7) == 7
    hooked = time_all()
    return {"bare_ns": bare, "hooked_ns": hooked}


def run(ctx):
    from _common import Row, alternate, run_child

    params = {"number": 20000, "repeat": 3} if ctx.quick else {"number": 100000, "repeat": 7}
    results = alternate(
        ctx,
        ctx.repeats(5, 1),
        SIDES,
        lambda side: run_child(ctx, "percall", side, params),
        warmup_key="percall",
    )
    rows = []
    for kind in ("function", "method"):
        for hooks, label in (("around", "AROUND only"), ("three", "BEFORE+AROUND+AFTER")):
            key = f"{kind}/{hooks}"
            values = {
                side: [r["hooked_ns"][key] - r["bare_ns"][key] for r in rs]
                for side, rs in results.items()
            }
            bare = results["ours"][0]["bare_ns"][key]
            goal, check = ("", None)
            if hooks == "three":
                goal, check = "<= 0.65x SGLang", "ratio_max:0.65"
            rows.append(
                Row(
                    "4",
                    f"per-call overhead, {label}, on a {kind} (bare call {bare:.0f} ns)",
                    "ns",
                    values["ours"],
                    values["sglang"],
                    goal=goal,
                    goal_check=check,
                )
            )
    return rows
