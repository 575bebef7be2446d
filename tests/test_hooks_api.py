"""Hook registry: the public API is call-compatible with SGLang's and validates its input."""

from __future__ import annotations

import importlib
import inspect
import sys

import pytest

from sglang_plugin_runtime.plugins import hook_registry as hr
from sglang_plugin_runtime.plugins.hook_registry import (
    HookRegistry,
    HookSource,
    HookType,
    _current_plugin_source,
    plugin_hook,
)


def test_hook_type_values_match_sglang():
    assert [(t.name, t.value) for t in HookType] == [
        ("BEFORE", "before"),
        ("AFTER", "after"),
        ("AROUND", "around"),
        ("REPLACE", "replace"),
    ]


def test_hook_source_is_a_named_tuple_with_sglang_fields():
    source = HookSource("xpu_hooks", "sglang-xpu")
    assert source._fields == ("plugin_name", "dist_name")
    assert tuple(source) == ("xpu_hooks", "sglang-xpu")


def test_register_signature_matches_sglang():
    params = inspect.signature(HookRegistry.register).parameters
    assert list(params)[:4] == ["target", "hook", "hook_type", "source"]
    assert params["hook_type"].default is HookType.AFTER
    assert params["source"].kind is inspect.Parameter.KEYWORD_ONLY
    assert params["source"].default is None
    assert params["priority"].kind is inspect.Parameter.KEYWORD_ONLY


def test_plugin_hook_signature_matches_sglang():
    params = inspect.signature(plugin_hook).parameters
    assert list(params)[:2] == ["target", "type"]
    assert params["type"].default is HookType.AFTER


def test_current_plugin_source_is_a_module_level_context_variable():
    assert _current_plugin_source.get() is None
    assert hr._current_plugin_source is _current_plugin_source


def test_plugin_hook_returns_the_hook_unchanged(make_module):
    def hook(result, *args, **kwargs):
        return None

    assert plugin_hook("a.b.c")(hook) is hook
    assert [h.type for h in HookRegistry.describe("a.b.c")[0].hooks] == ["after"]


def test_registering_a_class_with_a_non_replace_type_raises_type_error(make_module):
    class Replacement:
        pass

    with pytest.raises(TypeError, match="HookType.REPLACE"):
        HookRegistry.register("a.b.C", Replacement, HookType.AROUND)


def test_target_without_a_dot_raises_value_error(make_module):
    with pytest.raises(ValueError, match="need at least module.attr"):
        HookRegistry.register("nodots", lambda *a: None)


def test_malformed_target_raises_value_error(make_module):
    with pytest.raises(ValueError):
        HookRegistry.register("pkg.mod:Class:method", lambda *a: None)


def test_non_callable_hook_raises_type_error(make_module):
    with pytest.raises(TypeError, match="callable"):
        HookRegistry.register("a.b.c", 42)  # type: ignore[arg-type]


def test_hook_type_may_be_given_by_value(make_module):
    HookRegistry.register("a.b.c", lambda fn, *a: fn(*a), "around")  # type: ignore[arg-type]
    assert HookRegistry.describe("a.b.c")[0].hooks[0].type == "around"


def test_register_reads_the_current_plugin_source(make_module):
    token = _current_plugin_source.set(HookSource("timer", "timer-dist"))
    try:
        HookRegistry.register("a.b.c", lambda r, *a: None)
    finally:
        _current_plugin_source.reset(token)
    hook = HookRegistry.describe("a.b.c")[0].hooks[0]
    assert (hook.plugin, hook.distribution) == ("timer", "timer-dist")


def test_explicit_source_wins_over_the_context_variable(make_module):
    token = _current_plugin_source.set(HookSource("ctx", None))
    try:
        HookRegistry.register("a.b.c", lambda r, *a: None, source=HookSource("explicit", "d"))
    finally:
        _current_plugin_source.reset(token)
    assert HookRegistry.describe("a.b.c")[0].hooks[0].plugin == "explicit"


def test_describe_matches_both_spellings_of_a_target(make_module):
    HookRegistry.register("a.b.C.m", lambda r, *a: None)
    assert [r.target for r in HookRegistry.describe("a.b:C.m")] == ["a.b.C.m"]


def test_importing_hook_registry_does_not_import_torch():
    import subprocess

    code = (
        "import sys; import sglang_plugin_runtime.plugins.hook_registry as h; "
        "h.HookRegistry.register('x.y.z', lambda *a: None); h.HookRegistry.apply_hooks(); "
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_discard_source_restores_a_target_whose_only_hooks_it_registered(make_module):
    name = make_module("m", "def f(x):\n    return x\n")
    mod = importlib.import_module(name)
    original = mod.f
    HookRegistry.register(f"{name}.f", lambda r, x: r + 1, source=HookSource("bad", None))
    HookRegistry.apply_hooks()
    assert HookRegistry.discard_source(HookSource("bad", None)) == 1
    assert mod.f is original
    assert HookRegistry.describe() == []


def test_discard_source_rebuilds_a_target_without_its_hooks(make_module):
    name = make_module("m", "def f(x):\n    return x\n")
    mod = importlib.import_module(name)
    HookRegistry.register(f"{name}.f", lambda r, x: r + 1, source=HookSource("good", None))
    HookRegistry.register(f"{name}.f", lambda r, x: r * 10, source=HookSource("bad", None))
    HookRegistry.apply_hooks()
    HookRegistry.discard_source(HookSource("bad", None))
    assert mod.f(1) == 2


def test_sglangs_private_hooks_attribute_lists_each_target_as_registered(make_module):
    mod = make_module("viewed", "def f(x):\n    return x\n")
    source = HookSource("timer", "timer-dist")

    def before(*args, **kwargs):
        return None

    HookRegistry.register(f"{mod}:f", before, HookType.BEFORE, source=source)
    HookRegistry.register(f"{mod}.f", len, HookType.AFTER)
    assert dict(HookRegistry._hooks) == {
        f"{mod}:f": [(HookType.BEFORE, before, source), (HookType.AFTER, len, None)]
    }
    assert HookRegistry._hooks["no.such:target"] == []  # SGLang's is a defaultdict
    with pytest.raises(TypeError):
        HookRegistry._hooks["x.y"] = []


def test_sglangs_private_patched_attribute_holds_the_targets_apply_hooks_took(make_module):
    """SGLang imports a target's module in apply_hooks(); this registry waits for the host's import:
    a target whose module can be found counts as patched, as it would on SGLang."""
    mod = make_module("patched_view", "def f(x):\n    return x\n")
    late = make_module("patched_later", "def g(x):\n    return x\n")
    importlib.import_module(mod)
    HookRegistry.register(f"{mod}.f", lambda result, *a, **k: result, HookType.AFTER)
    HookRegistry.register(f"{late}:g", len, HookType.AFTER)
    HookRegistry.register("not_installed_pkg_xyz.mod.f", len, HookType.AFTER)
    assert HookRegistry._patched == frozenset()
    HookRegistry.apply_hooks()
    assert HookRegistry._patched == {f"{mod}.f", f"{late}:g"}
    assert late not in sys.modules
    HookRegistry.reset()
    assert not HookRegistry._patched and not HookRegistry._hooks
