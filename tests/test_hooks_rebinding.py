"""Hook registry: stale 'from x import f' copies are rebound by name, aliases are left alone."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
import uuid

import pytest

from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookSource, HookType


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


def test_a_target_spelled_through_a_reexport_joins_the_one_chain_of_its_function(make_module):
    name = make_module("m", "def f():\n    return []\n")
    reexport = make_module("api", "from .m import f\n")
    importlib.import_module(reexport)
    original = sys.modules[name].f
    HookRegistry.register(f"{name}.f", lambda r: r + ["core"])
    HookRegistry.apply_hooks()
    HookRegistry.register(f"{reexport}.f", lambda r: r + ["api"])
    # One function, one chain: built from the original, never on our wrapper, run by both bindings.
    assert sys.modules[reexport].f is sys.modules[name].f
    assert sys.modules[reexport].f.__wrapped__ is original
    assert sys.modules[reexport].f() == sys.modules[name].f() == ["core", "api"]


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
    """``name`` in sys.modules through ``importlib.util.LazyLoader``: its code runs on first
    attribute access."""
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
    "a module deferred by importlib.util.LazyLoader sits in sys.modules (its code would fail) "
    "during the stale-reference walk",
    "the walk never executes it: the apply succeeds and the module stays deferred (was: the walk "
    "ran it and its ImportError escaped load_plugins())",
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
        # still deferred: LazyLoader's class until first access
        assert type(lazy) is not types.ModuleType
    finally:
        del sys.modules[lazy_name]


def tag(label):
    def hook(result, *args, **kwargs):
        return [*result, label]

    hook.__qualname__ = f"tag_{label}"
    return hook


@pytest.mark.fault(
    "hooks",
    "pkg.api re-exports pkg.core.f; a hook applied on core, then more hooks on api and core, then "
    "discard_source() and reset()",
    "every binding of the function (core.f, api.f, a from-import copy) runs the one live chain "
    "after each step, and reset() puts the original back in all of them (was: a stale wrapper "
    "left in api.f for good)",
)
def test_a_function_and_its_reexport_run_one_live_chain_through_discard_and_reset(make_module):
    core = importlib.import_module(make_module("core", "def f(x):\n    return [x]\n"))
    api = importlib.import_module(make_module("api", "from .core import f\n"))
    user = importlib.import_module(make_module("user", "from .api import f\n"))
    original = core.f
    one, two = HookSource("one", None), HookSource("two", None)
    HookRegistry.register(f"{core.__name__}.f", tag("c1"), source=one)
    HookRegistry.apply_hooks()
    HookRegistry.register(f"{api.__name__}.f", tag("a2"), source=two)
    HookRegistry.register(f"{core.__name__}:f", tag("c3"), source=two)
    assert [m.f(0) for m in (core, api, user)] == [[0, "c1", "a2", "c3"]] * 3
    HookRegistry.discard_source(one)
    assert [m.f(0) for m in (core, api, user)] == [[0, "a2", "c3"]] * 3
    HookRegistry.reset()
    assert core.f is original and api.f is original and user.f is original


@pytest.mark.fault(
    "hooks",
    "a hook on pkg.api.f applied before one on pkg.core.f (api re-exports f), then "
    "discard_source() of the core hook and reset()",
    "core.f never keeps the re-export's wrapper: both run the live chain, then the original",
)
def test_a_reexport_hooked_first_never_leaves_its_wrapper_in_the_defining_module(make_module):
    core = importlib.import_module(make_module("core", "def f(x):\n    return [x]\n"))
    api = importlib.import_module(make_module("api", "from .core import f\n"))
    original = core.f
    HookRegistry.register(f"{api.__name__}.f", tag("a1"), source=HookSource("one", None))
    HookRegistry.apply_hooks()
    HookRegistry.register(f"{core.__name__}.f", tag("c2"), source=HookSource("two", None))
    HookRegistry.register(f"{api.__name__}.f", tag("a3"), source=HookSource("three", None))
    assert core.f(0) == api.f(0) == [0, "a1", "c2", "a3"]
    HookRegistry.discard_source(HookSource("two", None))
    assert core.f(0) == api.f(0) == [0, "a1", "a3"]
    HookRegistry.reset()
    assert core.f is original and api.f is original


CORE_CLASS = """
class Sub:
    def m(self):
        return ["m", type(self).__name__]

    @classmethod
    def cm(cls):
        return ["cm", cls.__name__]
"""


@pytest.mark.parametrize("applies", ["one apply", "an apply per registration"])
@pytest.mark.parametrize("spelling", ["{api}.Sub.m", "{api}:Sub.cm"])
@pytest.mark.fault(
    "hooks",
    "a method hook spelled through a module that re-exports its class (pkg.api.Sub.m, "
    "pkg.api:Sub.cm), with two class REPLACEs of pkg.core.Sub",
    "the method hook runs on the winning replacement class, whatever the batching; the original "
    "class and the losing replacement keep no wrapper (was: left on the original class until the "
    "next register)",
)
def test_a_method_hook_through_a_reexported_class_follows_the_class_replace(
    make_module,
    spelling,
    applies,
):
    core = importlib.import_module(make_module("core", CORE_CLASS))
    api = importlib.import_module(make_module("api", "from .core import Sub\n"))
    original, target = core.Sub, spelling.format(api=api.__name__)
    attribute = target.rpartition(".")[2]
    raw = original.__dict__[attribute]

    class Lost(original):
        pass

    class Won(original):
        pass

    registrations = [
        (f"{core.__name__}.Sub", Lost, HookType.REPLACE),
        (target, tag("hooked"), HookType.AFTER),
        (f"{core.__name__}:Sub", Won, HookType.REPLACE),
    ]
    for registration in registrations:
        HookRegistry.register(*registration)
        if applies == "an apply per registration":
            HookRegistry.apply_hooks()
    HookRegistry.apply_hooks()
    assert core.Sub is Won and api.Sub is Won
    call = getattr(Won() if attribute == "m" else Won, attribute)
    assert call() == [attribute, "Won", "hooked"]
    assert original.__dict__[attribute] is raw and attribute not in Lost.__dict__
    HookRegistry.reset()
    assert core.Sub is original and api.Sub is original and attribute not in Won.__dict__
