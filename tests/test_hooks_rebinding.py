"""Hook registry: stale 'from x import f' copies are rebound by name, aliases are left alone."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
import uuid

import pytest

from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookType


def test_from_import_copy_made_before_apply_is_rebound(make_module):
    name = make_module("m", "def f():\n    return 1\n")
    user = make_module("user", "from .m import f\n")
    user_mod = importlib.import_module(user)
    HookRegistry.register(f"{name}.f", lambda r: r + 1)
    HookRegistry.apply_hooks()
    assert user_mod.f() == 2
    assert HookRegistry.describe(f"{name}.f")[0].rebound == 1


def test_copy_under_another_name_keeps_the_original(make_module):
    name = make_module("m", "def f():\n    return 1\n")
    hooks = make_module("hooks", "from .m import f as _orig\n")
    hooks_mod = importlib.import_module(hooks)
    original = sys.modules[name].f
    HookRegistry.register(f"{name}.f", lambda r: r + 1)
    HookRegistry.apply_hooks()
    assert hooks_mod._orig is original


def test_replace_delegating_to_its_own_alias_of_the_original_does_not_recurse(make_module):
    name = make_module("m", "def f(x):\n    return x\n")
    hooks = make_module(
        "hooks",
        "from .m import f as _orig\n\ndef replacement(x):\n    return _orig(x) + 100\n",
    )
    hooks_mod = importlib.import_module(hooks)
    HookRegistry.register(f"{name}.f", hooks_mod.replacement, HookType.REPLACE)
    HookRegistry.apply_hooks()
    assert sys.modules[name].f(1) == 101


def test_class_replace_rebinds_copies_of_the_class(make_module):
    name = make_module("m", "class C:\n    pass\n")
    user = make_module("user", "from .m import C\n")
    user_mod = importlib.import_module(user)

    class Replacement(sys.modules[name].C):
        pass

    HookRegistry.register(f"{name}.C", Replacement, HookType.REPLACE)
    HookRegistry.apply_hooks()
    assert user_mod.C is Replacement


def test_one_apply_rebinds_copies_for_every_target(make_module):
    name = make_module("m", "def f():\n    return 1\ndef g():\n    return 2\n")
    user = make_module("user", "from .m import f, g\n")
    user_mod = importlib.import_module(user)
    HookRegistry.register(f"{name}.f", lambda r: r + 10)
    HookRegistry.register(f"{name}.g", lambda r: r + 20)
    HookRegistry.apply_hooks()
    assert (user_mod.f(), user_mod.g()) == (11, 22)


def test_target_spelled_through_a_reexporting_module_wraps_the_original_not_our_wrapper(make_module):
    name = make_module("m", "def f():\n    return []\n")
    reexport = make_module("api", "from .m import f\n")
    importlib.import_module(reexport)
    original = sys.modules[name].f
    HookRegistry.register(f"{name}.f", lambda r: r + ["core"])
    HookRegistry.apply_hooks()
    HookRegistry.register(f"{reexport}.f", lambda r: r + ["api"])
    assert sys.modules[reexport].f.__wrapped__ is original
    # The re-export is its own target: built from the original, never on top of our wrapper.
    assert sys.modules[reexport].f() == ["api"]
    assert sys.modules[name].f() == ["core"]


def test_a_list_entry_holding_the_original_is_left_alone(make_module):
    name = make_module("m", "def f():\n    return 1\n\nTABLE = [f]\n")
    module = importlib.import_module(name)
    HookRegistry.register(f"{name}.f", lambda r: r + 1)
    HookRegistry.apply_hooks()
    assert module.f() == 2 and module.TABLE[0]() == 1  # a list entry is not a global: left alone


def test_a_copy_made_by_a_later_import_is_rebound_on_rebuild(make_module):
    name = make_module("m", "def f():\n    return 1\n")
    module = importlib.import_module(name)
    HookRegistry.register(f"{name}.f", lambda r: r + 1)
    HookRegistry.apply_hooks()
    user = importlib.import_module(make_module("user", "from .m import f\n"))
    HookRegistry.register(f"{name}.f", lambda r: r * 10)
    HookRegistry.apply_hooks()
    assert module.f() == user.f() == 20


def lazy_module(folder, name: str, source: str):
    """``name`` in sys.modules through ``importlib.util.LazyLoader``: its code runs on first attribute access."""
    path = folder / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.fault(
    "hooks",
    "a module deferred by importlib.util.LazyLoader sits in sys.modules (its code would fail) during the "
    "stale-reference walk",
    "the walk never executes it: the apply succeeds and the module stays deferred (was: the walk ran it and its "
    "ImportError escaped load_plugins())",
)
def test_the_walk_never_executes_a_lazily_loaded_module(make_module, tmp_path):
    name = make_module("m", "def f():\n    return 1\n")
    module = importlib.import_module(name)
    lazy_name = f"lazy_{uuid.uuid4().hex[:8]}"
    lazy = lazy_module(tmp_path, lazy_name, "raise ImportError('executed by the hook registry')\n")
    try:
        HookRegistry.register(f"{name}.f", lambda r: r + 1)
        HookRegistry.apply_hooks()
        assert module.f() == 2
        assert type(lazy) is not types.ModuleType  # still deferred: LazyLoader's class until first access
    finally:
        del sys.modules[lazy_name]
