"""Hook registry: failures, strict mode and introspection reports."""

from __future__ import annotations

import functools
import importlib
import json
import logging
import pickle
import uuid

import pytest

from sglang_plugin_runtime.plugins.hook_registry import (
    HookApplyError,
    HookRegistry,
    HookSource,
    HookType,
    _current_plugin_source,
)


@pytest.mark.fault(
    "hooks",
    "a hook on an attribute that does not exist in an imported module",
    "the target is failed; the ERROR names target, hook and plugin",
)
def test_missing_attribute_fails_the_target_naming_target_hook_and_source(make_module, caplog):
    name = make_module("m", "def f():\n    return 1\n")
    importlib.import_module(name)

    def my_hook(r):
        return r

    HookRegistry.register(f"{name}.missing", my_hook, source=HookSource("plug", "plug-dist"))
    HookRegistry.apply_hooks()
    report = HookRegistry.describe(f"{name}.missing")[0]
    assert report.status == "failed" and "missing" in report.error
    logged = " ".join(r.getMessage() for r in caplog.records if r.levelname == "ERROR")
    assert (
        f"{name}.missing" in logged
        and "my_hook" in logged
        and "plugin=plug, dist=plug-dist" in logged
    )


@pytest.mark.fault(
    "hooks",
    "several targets fail to apply in strict mode",
    "one HookApplyError listing every failure",
)
def test_strict_apply_raises_listing_every_failure(make_module):
    name = make_module("m", "def f():\n    return 1\n")
    importlib.import_module(name)
    HookRegistry.register(f"{name}.missing1", lambda r: r)
    HookRegistry.register(f"{name}.missing2", lambda r: r)
    with pytest.raises(HookApplyError) as info:
        HookRegistry.apply_hooks(strict=True)
    assert isinstance(info.value, RuntimeError)
    assert sorted(f.target for f in info.value.failures) == [f"{name}.missing1", f"{name}.missing2"]


@pytest.mark.fault(
    "hooks",
    "a HookApplyError is pickled (a worker process reports it to its parent)",
    "it unpickles with the same failures and message (was: its message spread one character per "
    "line, '- 1 - h - o ...')",
)
def test_a_hook_apply_error_survives_pickling(make_module):
    name = make_module("m", "def f():\n    return 1\n")
    importlib.import_module(name)
    HookRegistry.register(f"{name}.missing", lambda r: r)
    with pytest.raises(HookApplyError) as info:
        HookRegistry.apply_hooks(strict=True)
    copy = pickle.loads(pickle.dumps(info.value))
    assert (str(copy), copy.failures) == (str(info.value), info.value.failures)


@pytest.mark.fault(
    "hooks",
    "HookRegistry.apply_hooks() called with no argument while SGLANG_PLUGINS_STRICT=1 is set",
    "not strict: strictness is passed, never read from a variable by the registry (load_plugins() "
    "passes its namespace's own variable)",
)
def test_apply_hooks_is_strict_only_when_asked(make_module, monkeypatch):
    monkeypatch.setenv("SGLANG_PLUGINS_STRICT", "1")
    name = make_module("m", "def f():\n    return 1\n")
    importlib.import_module(name)
    HookRegistry.register(f"{name}.missing", lambda r: r)
    HookRegistry.apply_hooks()
    assert HookRegistry.describe(f"{name}.missing")[0].status == "failed"
    with pytest.raises(HookApplyError):
        HookRegistry.apply_hooks(strict=True)


@pytest.mark.fault(
    "hooks",
    "a hook on an attribute that cannot carry hooks (a module constant, a property without a "
    "getter)",
    "the target is failed with 'cannot hook <target>: TypeError: ...' and the other targets are "
    "applied (was: apply_hooks() raised UnboundLocalError)",
)
def test_a_target_that_cannot_carry_hooks_fails_with_the_reason(make_module):
    source = "def f():\n    return 1\nLIMIT = 5\nclass C:\n    p = property(None, print)\n"
    mod = importlib.import_module(make_module("m", source))
    HookRegistry.register(f"{mod.__name__}.LIMIT", lambda r: r)
    HookRegistry.register(f"{mod.__name__}.C.p", lambda r, self: r)
    HookRegistry.register(f"{mod.__name__}.f", lambda r: r + 1)
    with pytest.raises(HookApplyError) as info:
        HookRegistry.apply_hooks(strict=True)
    assert [str(f).split(" (hooks:")[0] for f in info.value.failures] == [
        f"{mod.__name__}.LIMIT: cannot hook {mod.__name__}.LIMIT: TypeError: not callable (a int)",
        f"{mod.__name__}.C.p: cannot hook {mod.__name__}.C.p: TypeError: property has no getter "
        "to hook",
    ]
    assert mod.f() == 2 and mod.LIMIT == 5
    assert [r.status for r in HookRegistry.describe()] == ["failed", "failed", "applied"]


@pytest.mark.fault(
    "hooks",
    "one target fails to apply",
    "the other targets of the batch are applied",
)
def test_a_failing_target_does_not_block_the_others(make_module):
    name = make_module("m", "def f():\n    return 1\n")
    mod = importlib.import_module(name)
    HookRegistry.register(f"{name}.missing", lambda r: r)
    HookRegistry.register(f"{name}.f", lambda r: r + 1)
    HookRegistry.apply_hooks()
    assert mod.f() == 2


@pytest.mark.fault(
    "hooks",
    "a hook on a module that is not installed",
    "the target stays pending, with the reason in describe()",
)
def test_target_in_a_module_that_is_not_installed_stays_pending_with_a_reason(make_module):
    missing = f"no_such_module_{uuid.uuid4().hex[:8]}"
    HookRegistry.register(f"{missing}.f", lambda r: r)
    HookRegistry.apply_hooks()
    report = HookRegistry.describe(f"{missing}.f")[0]
    assert report.status == "pending" and "cannot be found" in report.error


@pytest.mark.fault(
    "hooks",
    "strict mode, a hook on a package that is not installed here (sglang.* in a plugin's own "
    "tests)",
    "the target stays pending with the reason: the package may be installed where the hooks run "
    "(it failed: doctor --strict failed a correct plugin's own environment without SGLang)",
)
def test_strict_mode_keeps_a_target_of_a_package_not_installed_pending(make_module):
    missing = f"no_such_module_{uuid.uuid4().hex[:8]}"
    HookRegistry.register(f"{missing}.f", lambda r: r)
    HookRegistry.apply_hooks(strict=True)
    report = HookRegistry.describe(f"{missing}.f")[0]
    assert report.status == "pending" and "cannot be found (is it installed?)" in report.error


@pytest.mark.fault(
    "hooks",
    "a hook on a misspelled submodule of an imported package (sglang.srt.managers.schedular)",
    "a WARNING names the target, the module that cannot be found and the hook's plugin; the target "
    "stays pending (was: pending in silence, while SGLang 0.5.23 logs an error)",
)
def test_a_misspelled_submodule_of_an_imported_package_is_named_in_a_warning(make_module, caplog):
    target = "json.decodr.JSONDecoder.decode"  # json is imported, json.decodr does not exist
    HookRegistry.register(target, lambda original, *a, **k: original(*a, **k), HookType.AROUND)
    with caplog.at_level(logging.WARNING):
        HookRegistry.apply_hooks()
    report = HookRegistry.describe(target)[0]
    assert report.status == "pending" and "'json.decodr' cannot be found" in report.error
    assert any(
        "json.decodr" in r.getMessage() and "<lambda>" in r.getMessage() for r in caplog.records
    )


def test_strict_mode_fails_a_target_in_a_misspelled_submodule(make_module):
    HookRegistry.register("json.decodr.JSONDecoder.decode", lambda r: r)
    with pytest.raises(HookApplyError):
        HookRegistry.apply_hooks(strict=True)


@pytest.mark.fault(
    "hooks",
    "setting the patched attribute raises",
    "the target is left exactly as it was and marked failed (no partial patch)",
)
def test_a_setattr_that_fails_leaves_the_target_untouched_and_failed(make_module):
    name = make_module(
        "m",
        """
        class Frozen(type):
            def __setattr__(cls, name, value):
                raise AttributeError("frozen")

        class C(metaclass=Frozen):
            def m(self):
                return 1
        """,
    )
    mod = importlib.import_module(name)
    raw = mod.C.__dict__["m"]
    HookRegistry.register(f"{name}.C.m", lambda r, self: r + 1)
    HookRegistry.apply_hooks()
    assert mod.C.__dict__["m"] is raw
    assert HookRegistry.describe(f"{name}.C.m")[0].status == "failed"


def test_describe_reports_hooks_outermost_first_with_sources(make_module):
    name = make_module("m", "def f():\n    return 1\n")
    importlib.import_module(name)

    def inner(r):
        return r

    def outer(r):
        return r

    def repl():
        return 0

    HookRegistry.register(f"{name}.f", repl, HookType.REPLACE, source=HookSource("p", "d"))
    HookRegistry.register(f"{name}.f", inner, source=HookSource("p", "d"))
    HookRegistry.register(f"{name}.f", outer, source=HookSource("q", None))
    HookRegistry.apply_hooks()
    report = HookRegistry.describe(f"{name}.f")[0]
    assert [(h.hook.rsplit(".", 1)[-1], h.type, h.plugin) for h in report.hooks] == [
        ("outer", "after", "q"),
        ("inner", "after", "p"),
        ("repl", "replace", "p"),
    ]
    assert report.status == "applied" and report.resolved == f"{name}:f"


def test_describe_reports_multiple_around_hooks_as_a_conflict(make_module):
    name = make_module("m", "def f():\n    return 1\n")
    importlib.import_module(name)
    HookRegistry.register(f"{name}.f", lambda fn: fn(), HookType.AROUND)
    HookRegistry.register(f"{name}.f", lambda fn: fn(), HookType.AROUND)
    HookRegistry.apply_hooks()
    assert [c.kind for c in HookRegistry.describe(f"{name}.f")[0].conflicts] == ["multiple_around"]


def test_describe_reports_overridden_replace_as_inactive(make_module):
    HookRegistry.register("a.b.f", lambda: 1, HookType.REPLACE)
    HookRegistry.register("a.b.f", lambda: 2, HookType.REPLACE)
    report = HookRegistry.describe("a.b.f")[0]
    assert [h.active for h in report.hooks] == [True, False]
    assert [c.kind for c in report.conflicts] == ["multiple_replace"]


def test_describe_reports_the_same_hook_registered_twice_as_a_conflict(make_module):
    def once(result):
        return result

    HookRegistry.register("a.b.f", once, source=HookSource("p", "p-dist"))
    HookRegistry.register("a.b.f", once, source=HookSource("q", "q-dist"))
    (conflict,) = HookRegistry.describe("a.b.f")[0].conflicts
    assert conflict.kind == "same_hook_twice"
    assert "first by plugin=p, dist=p-dist, again by plugin=q, dist=q-dist" in conflict.message


def test_reports_serialise_to_json(make_module):
    name = make_module("m", "def f():\n    return 1\n")
    importlib.import_module(name)
    HookRegistry.register(f"{name}.f", lambda r: r, source=HookSource("p", "d"))
    HookRegistry.apply_hooks()
    data = json.loads(json.dumps([r.to_dict() for r in HookRegistry.describe()]))
    assert data[0]["status"] == "applied" and data[0]["hooks"][0]["plugin"] == "p"


def test_method_replace_over_a_class_replace_is_reported(make_module):
    name = make_module("m", "class C:\n    def m(self):\n        return 1\n")
    mod = importlib.import_module(name)

    class Replacement(mod.C):
        def m(self):
            return 2

    HookRegistry.register(f"{name}.C", Replacement, HookType.REPLACE)
    HookRegistry.register(f"{name}.C.m", lambda self: 3, HookType.REPLACE)
    HookRegistry.apply_hooks()
    assert mod.C().m() == 3
    kinds = [c.kind for c in HookRegistry.describe(f"{name}.C.m")[0].conflicts]
    assert kinds == ["method_replace_overrides_class_replace"]


@pytest.mark.fault(
    "hooks",
    "a BEFORE hook returns 5 instead of None or (args, kwargs)",
    "TypeError naming the hook, the target and what a BEFORE hook must return (was: 'cannot unpack "
    "non-iterable int object')",
)
def test_before_hook_returning_a_non_pair_is_an_error_naming_the_hook(make_module):
    name = make_module("m", "def f(x):\n    return x\n")
    module = importlib.import_module(name)

    def bad_before(x):
        return 5

    HookRegistry.register(f"{name}.f", bad_before, HookType.BEFORE)
    HookRegistry.apply_hooks()
    with pytest.raises(TypeError) as info:
        module.f(1)
    message = str(info.value)
    assert "bad_before" in message and f"{name}:f" in message and "returned 5 (int)" in message
    assert "(args, kwargs)" in message


def test_before_hook_returning_a_wrong_length_tuple_keeps_the_error_type(make_module):
    name = make_module("m", "def f(x):\n    return x\n")
    module = importlib.import_module(name)

    def bad_before(x):
        return ((x,), {}, "extra")

    HookRegistry.register(f"{name}.f", bad_before, HookType.BEFORE)
    HookRegistry.apply_hooks()
    with pytest.raises(ValueError, match="bad_before"):
        module.f(1, **{})
    with pytest.raises(ValueError, match="bad_before"):
        module.f(x=1)


def test_before_hook_returning_a_list_pair_works_as_in_sglang(make_module):
    name = make_module("m", "def f(x):\n    return x\n")
    module = importlib.import_module(name)
    HookRegistry.register(f"{name}.f", lambda x: [(x + 1,), {}], HookType.BEFORE)
    HookRegistry.apply_hooks()
    assert module.f(1) == 2


@pytest.mark.fault(
    "hooks",
    "the same hook registered twice on one target",
    "it runs twice, as in SGLang, and a WARNING names the hook, the target and both sources",
)
def test_same_hook_registered_twice_is_warned(make_module, caplog):
    name = make_module("m", "def f(x):\n    return [x]\n")
    module = importlib.import_module(name)

    def once(result, x):
        return [*result, "after"]

    HookRegistry.register(f"{name}.f", once, HookType.AFTER, source=HookSource("p", "p-dist"))
    HookRegistry.register(f"{name}.f", once, HookType.AFTER, source=HookSource("q", "q-dist"))
    HookRegistry.apply_hooks()
    assert module.f(1) == [1, "after", "after"]
    warning = " ".join(r.getMessage() for r in caplog.records if r.levelname == "WARNING")
    assert (
        "once" in warning
        and "a second time" in warning
        and "plugin=p" in warning
        and "plugin=q" in warning
    )


@pytest.mark.fault(
    "hooks",
    "code run while a hook is applied calls sys.exit() (a property subclass whose getter() exits)",
    "the target is failed with SystemExit in its error; the process and the other targets go on",
)
def test_sys_exit_while_applying_a_hook_fails_only_that_target(make_module):
    name = make_module(
        "m",
        """
import sys

class exiting_property(property):
    def getter(self, fget):
        sys.exit(4)

class Config:
    @exiting_property
    def size(self):
        return 1

def g():
    return 1
""",
    )
    module = importlib.import_module(name)
    HookRegistry.register(f"{name}.Config.size", lambda result, self: result + 1)
    HookRegistry.register(f"{name}.g", lambda result: result + 1)
    HookRegistry.apply_hooks()
    report = HookRegistry.describe(f"{name}.Config.size")[0]
    assert report.status == "failed" and "SystemExit(4)" in report.error
    assert module.g() == 2


@pytest.mark.fault(
    "hooks",
    "apply_hooks(strict=True) once, then a failing target applied by a plain apply_hooks()",
    "the plain apply logs the failure and does not raise: strictness belongs to one call (was: "
    "strict for good)",
)
def test_a_strict_apply_does_not_make_later_applies_strict(make_module, monkeypatch):
    monkeypatch.delenv("SGLANG_PLUGINS_STRICT", raising=False)
    name = make_module("m", "def f():\n    return 1\n")
    importlib.import_module(name)
    HookRegistry.register(f"{name}.f", lambda r: r)
    HookRegistry.apply_hooks(strict=True)
    HookRegistry.register(f"{name}.missing", lambda r: r)
    HookRegistry.apply_hooks()
    assert HookRegistry.describe(f"{name}.missing")[0].status == "failed"


@pytest.mark.fault(
    "hooks",
    "a target left pending by a strict apply fails when its module is imported, after strictness "
    "was turned off",
    "the import raises HookApplyError: a pending target keeps the strictness of the apply that "
    "took it",
)
def test_a_pending_target_keeps_the_strictness_of_its_apply(make_module):
    strict_name = make_module("strict_later", "def f():\n    return 1\n")
    lenient_name = make_module("lenient_later", "def f():\n    return 1\n")

    async def cannot_hook_a_sync_function(result):
        return result

    HookRegistry.register(f"{strict_name}.f", cannot_hook_a_sync_function)
    HookRegistry.apply_hooks(strict=True)
    HookRegistry.register(f"{lenient_name}.f", cannot_hook_a_sync_function)
    HookRegistry.apply_hooks()
    importlib.import_module(lenient_name)
    assert HookRegistry.describe(f"{lenient_name}.f")[0].status == "failed"
    with pytest.raises(HookApplyError):
        importlib.import_module(strict_name)


@pytest.mark.fault(
    "hooks",
    "a plugin registers a failing hook after a strict apply_hooks() ran (late, from a thread or a "
    "later import)",
    "logged and kept as failed at once, never raised into the registering code; the next strict "
    "apply raises it",
)
def test_a_late_hook_is_applied_at_once_and_its_failure_raised_by_the_next_strict_apply(
    make_module,
):
    name = make_module("m", "def f():\n    return 1\n")
    importlib.import_module(name)
    HookRegistry.apply_hooks(strict=True)
    token = _current_plugin_source.set(HookSource("late_plugin", "dist"))
    try:
        HookRegistry.register(f"{name}.missing", lambda r: r)
    finally:
        _current_plugin_source.reset(token)
    report = HookRegistry.describe(f"{name}.missing")[0]
    assert report.status == "failed" and report.hooks[0].plugin == "late_plugin"
    with pytest.raises(HookApplyError):
        HookRegistry.apply_hooks(strict=True)


@pytest.mark.parametrize("returned", ["((x,), [1])", "(5, {})", "((x,), 'keywords')"])
@pytest.mark.fault(
    "hooks",
    "a BEFORE hook returns a pair of the wrong shape (keywords not a mapping, arguments not a "
    "sequence)",
    "TypeError naming the hook, its plugin and the shape it must return (was: 'argument after ** "
    "must be a mapping', naming no hook)",
)
def test_before_hook_returning_a_pair_of_the_wrong_shape_is_an_error_naming_the_hook(
    make_module,
    returned,
):
    name = make_module("m", "def f(x):\n    return x\n")
    module = importlib.import_module(name)
    namespace = {}
    exec(f"def bad_before(x):\n    return {returned}\n", namespace)
    source = HookSource("p", "p-dist")
    HookRegistry.register(f"{name}.f", namespace["bad_before"], HookType.BEFORE, source=source)
    HookRegistry.apply_hooks()
    for call in (lambda: module.f(1), lambda: module.f(x=1)):
        with pytest.raises((TypeError, ValueError)) as info:
            call()
        message = str(info.value)
        assert "bad_before" in message and f"{name}:f" in message
        assert "plugin=p, dist=p-dist" in message
        assert "(args, kwargs)" in message and "dict of keyword arguments" in message


@pytest.mark.fault(
    "hooks",
    "an AFTER hook on a class's __init__ returns a value",
    "TypeError naming the hook, its plugin and that an AFTER hook on __init__ must return None "
    "(was: '__init__() should return None', naming no hook)",
)
def test_after_hook_on_init_returning_a_value_is_an_error_naming_the_hook(make_module):
    name = make_module("m", "class C:\n    def __init__(self, x):\n        self.x = x\n")
    module = importlib.import_module(name)

    def returns_self(result, self, x):
        return self

    HookRegistry.register(f"{name}.C.__init__", returns_self, source=HookSource("p", "p-dist"))
    HookRegistry.apply_hooks()
    with pytest.raises(TypeError) as info:
        module.C(1)
    message = str(info.value)
    assert "returns_self" in message and "must return None" in message
    assert "plugin=p, dist=p-dist" in message


@pytest.mark.fault(
    "hooks",
    "a functools.partial hook, as describe(), sglang-plugins explain and the fingerprint name it",
    "named by its function's module and name and the names it binds, "
    "functools.partial(pkg.mod.hook, ..., rank=...) (was: functools.partial(<function hook at "
    "0x...>, 2, rank=3), without the module)",
)
def test_a_partial_hook_is_named_by_its_functions_module_and_name(make_module):
    name = make_module("m", "def f(x):\n    return x\n")
    scale = "def scale(result, factor, x, rank):\n    return result\n"
    hooks = importlib.import_module(make_module("hooks", scale))
    HookRegistry.register(f"{name}.f", functools.partial(hooks.scale, 2, rank=3))
    (hook,) = HookRegistry.describe(f"{name}.f")[0].hooks
    assert hook.hook == f"functools.partial({hooks.__name__}.scale, ..., rank=...)"
