"""Hooks on a base class and on a subclass that inherits the method: the subclass runs both,
whatever the order."""

from __future__ import annotations

import importlib

import pytest

from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookSource, HookType

CLASSES = """
class Base:
    def make(self, x):
        return [x]

    @classmethod
    def build(cls, x):
        return [cls.__name__, x]


class Sub(Base):
    pass


class Leaf(Sub):
    pass
"""


def tag(label):
    def hook(result, *args, **kwargs):
        return [*result, label]

    hook.__qualname__ = f"tag_{label}"
    return hook


@pytest.fixture
def classes(make_module):
    return importlib.import_module(make_module("inherit", CLASSES))


@pytest.mark.fault(
    "hooks",
    "Base.make and Sub.make (inherited) hooked, then one apply_hooks()",
    "Sub().make() runs Base's hook inside Sub's, exactly as with an apply in between",
)
def test_base_and_subclass_hooked_in_one_apply_both_run(classes):
    HookRegistry.register(f"{classes.__name__}.Base.make", tag("base"), HookType.AFTER)
    HookRegistry.register(f"{classes.__name__}.Sub.make", tag("sub"), HookType.AFTER)
    HookRegistry.apply_hooks()
    assert classes.Sub().make(1) == [1, "base", "sub"]
    assert classes.Base().make(1) == [1, "base"]


def test_base_and_subclass_compose_the_same_in_one_apply_as_in_two(make_module):
    one = importlib.import_module(make_module("one", CLASSES))
    two = importlib.import_module(make_module("two", CLASSES))
    HookRegistry.register(f"{one.__name__}.Base.make", tag("base"), HookType.AFTER)
    HookRegistry.register(f"{one.__name__}.Sub.make", tag("sub"), HookType.AFTER)
    HookRegistry.register(f"{two.__name__}.Base.make", tag("base"), HookType.AFTER)
    HookRegistry.apply_hooks()
    HookRegistry.register(f"{two.__name__}.Sub.make", tag("sub"), HookType.AFTER)
    HookRegistry.apply_hooks()
    assert one.Sub().make(1) == two.Sub().make(1) == [1, "base", "sub"]


@pytest.mark.fault(
    "hooks",
    "Sub.make (inherited) hooked and applied first, Base.make hooked later",
    "Sub's wrapper is rebuilt over Base's new one: Sub().make() runs both hooks",
)
def test_base_hooked_after_the_subclass_still_runs_for_the_subclass(classes):
    HookRegistry.register(f"{classes.__name__}.Sub.make", tag("sub"), HookType.AFTER)
    HookRegistry.apply_hooks()
    HookRegistry.register(f"{classes.__name__}.Base.make", tag("base"), HookType.AFTER)
    assert classes.Sub().make(1) == [1, "base", "sub"]
    assert classes.Leaf().make(1) == [1, "base", "sub"]


@pytest.mark.fault(
    "hooks",
    "the plugin that hooked Base.make is discarded while Sub.make stays hooked",
    "Sub().make() stops running the discarded hook (no stale copy of Base's old wrapper)",
)
def test_discarding_the_base_hook_removes_it_from_the_subclass_too(classes):
    HookRegistry.register(
        f"{classes.__name__}.Base.make", tag("base"), HookType.AFTER, source=HookSource("b", None)
    )
    HookRegistry.register(
        f"{classes.__name__}.Sub.make", tag("sub"), HookType.AFTER, source=HookSource("s", None)
    )
    HookRegistry.apply_hooks()
    HookRegistry.discard_source(HookSource("b", None))
    assert classes.Sub().make(1) == [1, "sub"]
    assert classes.Base().make(1) == [1]


def test_inherited_classmethod_hooks_see_the_subclass(classes):
    HookRegistry.register(f"{classes.__name__}.Base.build", tag("base"), HookType.AFTER)
    HookRegistry.register(f"{classes.__name__}.Sub.build", tag("sub"), HookType.AFTER)
    HookRegistry.apply_hooks()
    assert classes.Sub.build(2) == ["Sub", 2, "base", "sub"]
    assert classes.Leaf.build(2) == ["Leaf", 2, "base", "sub"]


def test_reset_restores_base_and_subclass(classes):
    original = classes.Base.__dict__["make"]
    HookRegistry.register(f"{classes.__name__}.Sub.make", tag("sub"), HookType.AFTER)
    HookRegistry.register(f"{classes.__name__}.Base.make", tag("base"), HookType.AFTER)
    HookRegistry.apply_hooks()
    HookRegistry.reset()
    assert "make" not in classes.Sub.__dict__ and classes.Base.__dict__["make"] is original
    assert classes.Sub().make(1) == [1]
