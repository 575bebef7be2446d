"""Hook registry: composition order, argument and result flow, exceptions."""

from __future__ import annotations

import importlib
import linecache

import pytest

from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookSource, HookType


def test_composition_order_matches_sglang_nesting(make_module):
    name = make_module("m", "CALLS = []\ndef f(x):\n    CALLS.append('orig')\n    return x\n")
    mod = importlib.import_module(name)
    calls = mod.CALLS

    def before(tag):
        def hook(*a, **k):
            calls.append(f"before:{tag}")

        return hook

    def after(tag):
        def hook(result, *a, **k):
            calls.append(f"after:{tag}")

        return hook

    def around(tag):
        def hook(fn, *a, **k):
            calls.append(f"around-in:{tag}")
            result = fn(*a, **k)
            calls.append(f"around-out:{tag}")
            return result

        return hook

    def replace(*a, **k):
        calls.append("replace")
        return "r"

    target = f"{name}.f"
    HookRegistry.register(target, before("1"), HookType.BEFORE)
    HookRegistry.register(target, after("2"), HookType.AFTER)
    HookRegistry.register(target, replace, HookType.REPLACE)
    HookRegistry.register(target, around("3"), HookType.AROUND)
    HookRegistry.register(target, before("4"), HookType.BEFORE)
    HookRegistry.apply_hooks()
    assert mod.f(1) == "r"
    # SGLang: REPLACE innermost, then B1, A2, R3, B4 nest in registration order, B4 outermost.
    assert calls == ["before:4", "around-in:3", "before:1", "replace", "after:2", "around-out:3"]


def test_last_registered_replace_wins_and_warns_naming_both_sources(make_module, caplog):
    name = make_module("m", "def f():\n    return 'orig'\n")
    mod = importlib.import_module(name)
    HookRegistry.register(
        f"{name}.f", lambda: "first", HookType.REPLACE, source=HookSource("p1", "d1")
    )
    HookRegistry.register(
        f"{name}.f", lambda: "second", HookType.REPLACE, source=HookSource("p2", "d2")
    )
    HookRegistry.apply_hooks()
    assert mod.f() == "second"
    warning = next(m for r in caplog.records if "REPLACE hooks; only" in (m := r.getMessage()))
    assert "plugin=p1, dist=d1" in warning and "plugin=p2, dist=d2" in warning


def test_higher_priority_hook_wraps_lower_priority_ones(make_module):
    name = make_module("m", "def f():\n    return []\n")
    mod = importlib.import_module(name)
    HookRegistry.register(f"{name}.f", lambda r: r.append("outer-by-priority"), priority=10)
    HookRegistry.register(f"{name}.f", lambda r: r.append("registered-last"))
    HookRegistry.apply_hooks()
    # AFTER hooks run innermost first: the higher priority one is outer, so it runs last.
    assert mod.f() == ["registered-last", "outer-by-priority"]


def test_replace_with_higher_priority_wins_over_a_later_one(make_module):
    name = make_module("m", "def f():\n    return 'orig'\n")
    mod = importlib.import_module(name)
    HookRegistry.register(f"{name}.f", lambda: "high", HookType.REPLACE, priority=5)
    HookRegistry.register(f"{name}.f", lambda: "later", HookType.REPLACE)
    HookRegistry.apply_hooks()
    assert mod.f() == "high"


def test_before_hook_replaces_the_arguments(make_module):
    name = make_module("m", "def f(x, y=0):\n    return (x, y)\n")
    mod = importlib.import_module(name)
    HookRegistry.register(f"{name}.f", lambda x, y=0: ((x + 1,), {"y": 5}), HookType.BEFORE)
    HookRegistry.apply_hooks()
    assert mod.f(1) == (2, 5)


def test_before_hook_returning_none_keeps_the_arguments(make_module):
    name = make_module("m", "def f(x, y=0):\n    return (x, y)\n")
    mod = importlib.import_module(name)
    HookRegistry.register(f"{name}.f", lambda *a, **k: None, HookType.BEFORE)
    HookRegistry.apply_hooks()
    assert mod.f(1, y=2) == (1, 2)


def test_after_hook_inside_a_before_sees_the_replaced_arguments(make_module):
    name = make_module("m", "def f(x):\n    return x\n")
    mod = importlib.import_module(name)
    seen = []
    HookRegistry.register(f"{name}.f", lambda r, x: seen.append(x), HookType.AFTER)
    HookRegistry.register(f"{name}.f", lambda x: ((x * 100,), {}), HookType.BEFORE)
    HookRegistry.apply_hooks()
    assert mod.f(1) == 100
    assert seen == [100]


def test_after_hook_outside_a_before_sees_the_callers_arguments(make_module):
    name = make_module("m", "def f(x):\n    return x\n")
    mod = importlib.import_module(name)
    seen = []
    HookRegistry.register(f"{name}.f", lambda x: ((x * 100,), {}), HookType.BEFORE)
    HookRegistry.register(f"{name}.f", lambda r, x: seen.append(x), HookType.AFTER)
    HookRegistry.apply_hooks()
    assert mod.f(1) == 100
    assert seen == [1]


def test_after_hook_replaces_the_result(make_module):
    name = make_module("m", "def f(x):\n    return x\n")
    mod = importlib.import_module(name)
    HookRegistry.register(f"{name}.f", lambda r, x: r + 1)
    HookRegistry.apply_hooks()
    assert mod.f(1) == 2


def test_after_hook_returning_none_keeps_the_result(make_module):
    name = make_module("m", "def f(x):\n    return x\n")
    mod = importlib.import_module(name)
    HookRegistry.register(f"{name}.f", lambda r, x: None)
    HookRegistry.apply_hooks()
    assert mod.f(7) == 7


def test_around_hook_receives_a_callable_running_the_rest_of_the_chain(make_module):
    name = make_module("m", "def f(x):\n    return x\n")
    mod = importlib.import_module(name)
    HookRegistry.register(f"{name}.f", lambda x: ((x + 1,), {}), HookType.BEFORE)
    HookRegistry.register(f"{name}.f", lambda fn, x: ("around", fn(x)), HookType.AROUND)
    HookRegistry.apply_hooks()
    assert mod.f(1) == ("around", 2)


def test_keyword_arguments_reach_hooks_and_the_original(make_module):
    name = make_module("m", "def f(*, a, b):\n    return a - b\n")
    mod = importlib.import_module(name)
    seen = []
    HookRegistry.register(f"{name}.f", lambda r, **k: seen.append(k))
    HookRegistry.apply_hooks()
    assert mod.f(a=5, b=2) == 3
    assert seen == [{"a": 5, "b": 2}]


def test_many_positional_arguments_take_the_generic_path_with_the_same_result(make_module):
    name = make_module("m", "def f(*args):\n    return sum(args)\n")
    mod = importlib.import_module(name)
    HookRegistry.register(f"{name}.f", lambda *a: ((*a, 100), {}), HookType.BEFORE)
    HookRegistry.apply_hooks()
    assert mod.f(1, 2, 3, 4, 5) == 115


def test_exception_from_the_original_reaches_the_caller_unchanged(make_module):
    name = make_module("m", "ERR = KeyError('boom')\ndef f():\n    raise ERR\n")
    mod = importlib.import_module(name)
    HookRegistry.register(f"{name}.f", lambda fn: fn(), HookType.AROUND)
    HookRegistry.register(f"{name}.f", lambda r: r)
    HookRegistry.apply_hooks()
    with pytest.raises(KeyError) as info:
        mod.f()
    assert info.value is mod.ERR


def test_exception_from_a_hook_reaches_the_caller_unchanged(make_module):
    name = make_module("m", "def f():\n    return 1\n")
    mod = importlib.import_module(name)
    error = ValueError("from hook")

    def hook(*a):
        raise error

    HookRegistry.register(f"{name}.f", hook, HookType.BEFORE)
    HookRegistry.apply_hooks()
    with pytest.raises(ValueError) as info:
        mod.f()
    assert info.value is error


def test_wrapper_frames_are_marked_hidden_for_pytest(make_module):
    name = make_module("m", "def f():\n    raise RuntimeError('x')\n")
    mod = importlib.import_module(name)
    HookRegistry.register(f"{name}.f", lambda r: r)
    HookRegistry.apply_hooks()
    with pytest.raises(RuntimeError) as info:
        mod.f()
    tb = info.value.__traceback__
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    ours = [f for f in frames if "sglang-plugin hooks" in f.f_code.co_filename]
    assert ours and all(f.f_locals.get("__tracebackhide__") is True for f in ours)


def test_many_hooks_make_one_wrapper_around_the_original(make_module):
    name = make_module("m", "def f(x):\n    return x\n")
    mod = importlib.import_module(name)
    original = mod.f
    for _ in range(3):
        HookRegistry.register(f"{name}.f", lambda r, x: None)
        HookRegistry.register(f"{name}.f", lambda x: None, HookType.BEFORE)
    HookRegistry.apply_hooks()
    assert mod.f.__wrapped__ is original
    assert mod.f(3) == 3


@pytest.mark.fault(
    "hooks",
    "80 BEFORE hooks registered one by one after apply_hooks() (or 300 in one apply), each "
    "returning new arguments",
    "the generated code grows linearly with the number of hooks: 0.1 s for 80 (was: with its "
    "square, 15 s and 400 MB for 80, 14 s and 2.5 GB for 300)",
)
def test_the_generated_wrapper_code_grows_linearly_with_the_number_of_hooks(make_module):
    mod = importlib.import_module(make_module("m", "def f(x):\n    return x\n"))
    HookRegistry.apply_hooks()

    def generated_lines():
        ours = [entry for name, entry in linecache.cache.items() if "sglang-plugin hooks" in name]
        return sum(len(entry[2]) for entry in ours)

    before = generated_lines()
    for _ in range(80):
        HookRegistry.register(f"{mod.__name__}.f", lambda x: ((x + 1,), {}), HookType.BEFORE)
    assert mod.f(0) == mod.f(x=0) == 80
    assert generated_lines() - before < 80 * 20
