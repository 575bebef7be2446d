"""Hook registry: reset() undoes every patch exactly; isolated_registry()."""

from __future__ import annotations

import importlib
import sys

import pytest

from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookType, isolated_registry

CLASSES = """
class Base:
    @classmethod
    def make(cls):
        return cls.__name__

    @property
    def value(self):
        return 1


class Sub(Base):
    pass
"""


def test_reset_restores_module_function_identity(make_module):
    name = make_module("m", "def f():\n    return 1\n")
    mod = importlib.import_module(name)
    original = mod.f
    HookRegistry.register(f"{name}.f", lambda r: r + 1)
    HookRegistry.apply_hooks()
    HookRegistry.reset()
    assert mod.f is original


def test_reset_restores_every_rebound_copy(make_module):
    name = make_module("m", "def f():\n    return 1\n")
    users = [make_module(f"user{i}", "from .m import f\n") for i in range(3)]
    user_mods = [importlib.import_module(u) for u in users]
    original = sys.modules[name].f
    HookRegistry.register(f"{name}.f", lambda r: r + 1)
    HookRegistry.apply_hooks()
    HookRegistry.reset()
    assert all(u.f is original for u in user_mods)


@pytest.mark.fault(
    "hooks",
    "a module imports a patched function by name after the patch, then reset()",
    "that copy gets the original back too",
)
def test_reset_restores_copies_imported_after_the_patch(make_module):
    name = make_module("m", "def f():\n    return 1\n")
    user = make_module("user", "from .m import f\n")
    original = importlib.import_module(name).f
    HookRegistry.register(f"{name}.f", lambda r: r + 1)
    HookRegistry.apply_hooks()
    user_mod = importlib.import_module(user)
    HookRegistry.reset()
    assert user_mod.f is original


def test_reset_restores_the_exact_classmethod_descriptor(make_module):
    name = make_module("m", CLASSES)
    mod = importlib.import_module(name)
    descriptor = mod.Base.__dict__["make"]
    HookRegistry.register(f"{name}.Base.make", lambda r, cls: r + "!")
    HookRegistry.apply_hooks()
    HookRegistry.reset()
    assert mod.Base.__dict__["make"] is descriptor


def test_reset_removes_the_shadowing_attribute_from_the_subclass(make_module):
    name = make_module("m", CLASSES)
    mod = importlib.import_module(name)
    HookRegistry.register(f"{name}.Sub.make", lambda r, cls: r + "!")
    HookRegistry.apply_hooks()
    assert "make" in mod.Sub.__dict__
    HookRegistry.reset()
    assert "make" not in mod.Sub.__dict__
    assert mod.Sub.make() == "Sub"


def test_reset_restores_the_exact_property(make_module):
    name = make_module("m", CLASSES)
    mod = importlib.import_module(name)
    prop = mod.Base.__dict__["value"]
    HookRegistry.register(f"{name}.Base.value", lambda r, self: r + 1)
    HookRegistry.apply_hooks()
    HookRegistry.reset()
    assert mod.Base.__dict__["value"] is prop


def test_reset_restores_a_replaced_class_and_its_copies(make_module):
    name = make_module("m", "class C:\n    pass\n")
    user = make_module("user", "from .m import C\n")
    user_mod = importlib.import_module(user)
    original = sys.modules[name].C

    class Replacement(original):
        pass

    HookRegistry.register(f"{name}.C", Replacement, HookType.REPLACE)
    HookRegistry.apply_hooks()
    HookRegistry.reset()
    assert sys.modules[name].C is original and user_mod.C is original


def test_reset_after_a_late_rebuild_restores_the_original(make_module):
    name = make_module("m", "def f():\n    return 1\n")
    mod = importlib.import_module(name)
    original = mod.f
    HookRegistry.register(f"{name}.f", lambda r: r + 1)
    HookRegistry.apply_hooks()
    HookRegistry.register(f"{name}.f", lambda r: r + 1)
    HookRegistry.reset()
    assert mod.f is original


def test_reset_uninstalls_the_import_watcher(make_module):
    name = make_module("never", "def f():\n    return 1\n")
    before = list(sys.meta_path)
    HookRegistry.register(f"{name}.f", lambda r: r + 1)
    HookRegistry.apply_hooks()
    HookRegistry.reset()
    assert sys.meta_path == before


def test_reset_forgets_registrations(make_module):
    HookRegistry.register("a.b.c", lambda r: r)
    HookRegistry.reset()
    assert HookRegistry.describe() == []


def test_reset_twice_is_harmless(make_module):
    name = make_module("m", "def f():\n    return 1\n")
    mod = importlib.import_module(name)
    original = mod.f
    HookRegistry.register(f"{name}.f", lambda r: r + 1)
    HookRegistry.apply_hooks()
    HookRegistry.reset()
    HookRegistry.reset()
    assert mod.f is original


@pytest.mark.fault(
    "hooks",
    "someone else replaces a patched attribute, then reset()",
    "their value is kept (never clobbered), with a WARNING",
)
def test_reset_leaves_an_attribute_someone_else_changed_after_the_patch(make_module):
    name = make_module("m", "def f():\n    return 1\n")
    mod = importlib.import_module(name)
    HookRegistry.register(f"{name}.f", lambda r: r + 1)
    HookRegistry.apply_hooks()

    def theirs():
        return "theirs"

    mod.f = theirs
    HookRegistry.reset()
    assert mod.f is theirs


def test_isolated_registry_undoes_inner_patches_and_keeps_outer_ones(make_module):
    name = make_module("m", "def f():\n    return 1\ndef g():\n    return 1\n")
    mod = importlib.import_module(name)
    original_g = mod.g
    HookRegistry.register(f"{name}.f", lambda r: r + 1)
    HookRegistry.apply_hooks()
    with isolated_registry():
        assert HookRegistry.describe() == []
        HookRegistry.register(f"{name}.g", lambda r: r + 1)
        HookRegistry.apply_hooks()
        assert mod.g() == 2
    assert mod.g is original_g
    assert mod.f() == 2
    assert [r.target for r in HookRegistry.describe()] == [f"{name}.f"]
