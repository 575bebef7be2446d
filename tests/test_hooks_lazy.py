"""Hook registry: lazy application on first import, late registration, idempotence."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
import uuid

import pytest

from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookSource, isolated_registry


def test_apply_hooks_does_not_import_a_target_module(make_module):
    name = make_module("never", "def f():\n    return 1\n")
    HookRegistry.register(f"{name}.f", lambda r: r + 1)
    HookRegistry.apply_hooks()
    assert name not in sys.modules
    assert HookRegistry.describe(f"{name}.f")[0].status == "pending"


def test_pending_target_is_patched_on_first_import(make_module):
    name = make_module("later", "def f():\n    return 1\n")
    HookRegistry.register(f"{name}.f", lambda r: r + 1)
    HookRegistry.apply_hooks()
    mod = importlib.import_module(name)
    assert mod.f() == 2
    assert HookRegistry.describe(f"{name}.f")[0].status == "applied"


def test_pending_colon_target_is_patched_on_first_import(make_module):
    name = make_module("later", "class C:\n    def m(self):\n        return 1\n")
    HookRegistry.register(f"{name}:C.m", lambda r, self: r + 1)
    HookRegistry.apply_hooks()
    mod = importlib.import_module(name)
    assert mod.C().m() == 2


def test_module_importing_a_pending_target_gets_the_patched_function(make_module):
    target = make_module("target", "def f():\n    return 1\n")
    user = make_module("user", "from .target import f\n")
    HookRegistry.register(f"{target}.f", lambda r: r + 1)
    HookRegistry.apply_hooks()
    assert importlib.import_module(user).f() == 2


def test_circular_import_copy_made_during_target_execution_is_rebound(make_module):
    target = make_module("target", "def f():\n    return 1\nfrom . import user\n")
    user = make_module("user", "from .target import f\n")
    HookRegistry.register(f"{target}.f", lambda r: r + 1)
    HookRegistry.apply_hooks()
    importlib.import_module(target)
    assert sys.modules[user].f() == 2


def test_watched_module_keeps_its_real_loader(make_module):
    name = make_module("later", "def f():\n    return 1\nLOADER = __loader__\n")
    HookRegistry.register(f"{name}.f", lambda r: r + 1)
    HookRegistry.apply_hooks()
    mod = importlib.import_module(name)
    assert type(mod.LOADER).__name__ == "SourceFileLoader"
    assert mod.__loader__ is mod.__spec__.loader is mod.LOADER


def test_import_watcher_stays_while_hooks_are_applied_and_leaves_once_none_is(make_module):
    name = make_module("later", "def f():\n    return 1\n")
    before = list(sys.meta_path)
    HookRegistry.register(f"{name}.f", lambda r: r + 1, source=HookSource("p", None))
    HookRegistry.apply_hooks()
    assert len(sys.meta_path) == len(before) + 1
    importlib.import_module(name)
    assert len(sys.meta_path) == len(before) + 1  # a reload of the patched module is seen
    HookRegistry.discard_source(HookSource("p", None))
    assert sys.meta_path == before


def test_registration_before_apply_hooks_is_not_applied_yet(make_module):
    name = make_module("m", "def f():\n    return 1\n")
    mod = importlib.import_module(name)
    HookRegistry.register(f"{name}.f", lambda r: r + 1)
    assert mod.f() == 1
    assert HookRegistry.describe(f"{name}.f")[0].status == "registered"


def test_late_registration_is_applied_immediately_after_apply_hooks_ran(make_module):
    name = make_module("m", "def f():\n    return 1\n")
    mod = importlib.import_module(name)
    HookRegistry.apply_hooks()
    HookRegistry.register(f"{name}.f", lambda r: r + 1)
    assert mod.f() == 2


def test_late_hook_on_a_patched_target_rebuilds_from_the_original(make_module):
    name = make_module("m", "def f():\n    return 1\n")
    mod = importlib.import_module(name)
    original = mod.f
    HookRegistry.register(f"{name}.f", lambda r: r + 1)
    HookRegistry.apply_hooks()
    HookRegistry.register(f"{name}.f", lambda r: r * 10)
    assert mod.f() == 20
    assert mod.f.__wrapped__ is original


def test_late_hook_reaches_modules_that_imported_the_first_wrapper(make_module):
    name = make_module("m", "def f():\n    return 1\n")
    user = make_module("user", "from .m import f\n")
    mod = importlib.import_module(name)
    HookRegistry.register(f"{name}.f", lambda r: r + 1)
    HookRegistry.apply_hooks()
    user_mod = importlib.import_module(user)
    HookRegistry.register(f"{name}.f", lambda r: r * 10)
    assert user_mod.f is mod.f
    assert user_mod.f() == 20


def test_second_apply_hooks_does_not_wrap_again(make_module):
    name = make_module("m", "def f():\n    return 1\n")
    mod = importlib.import_module(name)
    HookRegistry.register(f"{name}.f", lambda r: r + 1)
    HookRegistry.apply_hooks()
    wrapper = mod.f
    HookRegistry.apply_hooks()
    assert mod.f is wrapper and mod.f() == 2


def test_dotted_target_in_a_submodule_not_yet_imported_waits_for_it(make_module):
    name = make_module("inner", "def f():\n    return 1\n")
    package = name.rpartition(".")[0]
    importlib.import_module(package)
    HookRegistry.register(f"{name}.f", lambda r: r + 1)
    HookRegistry.apply_hooks()
    assert HookRegistry.describe(f"{name}.f")[0].status == "pending"
    assert importlib.import_module(name).f() == 2


@pytest.mark.fault(
    "hooks",
    "a hook on a module that importlib.util.LazyLoader has put in sys.modules without executing it",
    "resolution never executes it: the target stays pending until the module has run, then the "
    "next apply patches it",
)
def test_a_lazily_loaded_target_module_is_not_executed_by_apply_hooks(tmp_path):
    name = f"lazy_{uuid.uuid4().hex[:8]}"
    path = tmp_path / f"{name}.py"
    path.write_text("RAN = True\n\ndef f():\n    return 1\n")
    spec = importlib.util.spec_from_file_location(name, path)
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    try:
        with isolated_registry():
            HookRegistry.register(f"{name}.f", lambda r: r + 1)
            HookRegistry.apply_hooks()
            assert type(module) is not types.ModuleType  # not executed
            assert HookRegistry.describe(f"{name}.f")[0].status == "pending"
            assert module.RAN  # the program's own first access runs it
            HookRegistry.apply_hooks()
            assert module.f() == 2
    finally:
        del sys.modules[name]


@pytest.mark.fault(
    "hooks",
    "importlib.reload() of a module whose function and method are hooked",
    "the reload is seen and the hooks are applied to the new objects at once; describe() stays "
    "true and a later hook on the module applies (was: hooks silently gone while describe() said "
    "applied; a later hook failed)",
)
def test_reloading_a_hooked_module_applies_its_hooks_again(make_module):
    source = "def f():\n    return [1]\n\nclass C:\n    def m(self):\n        return [2]\n"
    name = make_module("m", source)
    mod = importlib.import_module(name)
    old_class = mod.C
    HookRegistry.register(f"{name}.f", lambda result: [*result, "hooked"])
    HookRegistry.register(f"{name}.C.m", lambda result, self: [*result, "hooked"])
    HookRegistry.apply_hooks()
    importlib.reload(mod)
    assert mod.C is not old_class and "m" in old_class.__dict__
    assert mod.f() == [1, "hooked"] and mod.C().m() == [2, "hooked"]
    HookRegistry.register(f"{name}.f", lambda result: [*result, "later"])
    assert mod.f() == [1, "hooked", "later"]
    assert [r.status for r in HookRegistry.describe()] == ["applied", "applied"]
    HookRegistry.reset()
    assert mod.f() == [1] and mod.C().m() == [2] and not hasattr(mod.f, "__wrapped__")
