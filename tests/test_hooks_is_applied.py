"""``HookRegistry.is_hook_applied(target, hook, hook_type=None)``, as SGLang main defines it.

True only once that very hook (and type, when given) is installed on the target; false after
``reset()`` and for a failed target until a retry succeeds; either spelling of the target works.
"""

from __future__ import annotations

import importlib
import inspect
import logging

from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookType


def add_one(result, value):
    return result + 1


def test_signature_matches_sglang_main() -> None:
    params = inspect.signature(HookRegistry.is_hook_applied).parameters
    assert list(params) == ["target", "hook", "hook_type"]
    assert params["hook_type"].default is None


def test_false_until_applied_then_true(make_module) -> None:
    mod = importlib.import_module(make_module("m", "def f(value):\n    return value * 2\n"))
    target = f"{mod.__name__}.f"
    assert not HookRegistry.is_hook_applied(target, add_one)
    HookRegistry.register(target, add_one, HookType.AFTER)
    assert not HookRegistry.is_hook_applied(target, add_one)
    HookRegistry.apply_hooks()
    assert mod.f(3) == 7
    assert HookRegistry.is_hook_applied(target, add_one)


def test_identity_and_type_must_match(make_module) -> None:
    mod = importlib.import_module(make_module("m", "def f(value):\n    return value * 2\n"))
    target = f"{mod.__name__}.f"
    HookRegistry.register(target, add_one, HookType.AFTER)
    HookRegistry.apply_hooks()
    assert HookRegistry.is_hook_applied(target, add_one, HookType.AFTER)
    assert HookRegistry.is_hook_applied(target, add_one, "after")
    assert not HookRegistry.is_hook_applied(target, add_one, HookType.BEFORE)
    assert not HookRegistry.is_hook_applied(target, lambda result, value: result + 1)
    assert not HookRegistry.is_hook_applied(target + "_other", add_one)


def test_either_target_spelling_works(make_module) -> None:
    mod = importlib.import_module(
        make_module("m", "class C:\n    def m(self, value):\n        return value\n")
    )
    HookRegistry.register(f"{mod.__name__}:C.m", add_one, HookType.AFTER)
    HookRegistry.apply_hooks()
    assert HookRegistry.is_hook_applied(f"{mod.__name__}.C.m", add_one)
    assert HookRegistry.is_hook_applied(f"{mod.__name__}:C.m", add_one)


def test_false_after_reset(make_module) -> None:
    mod = importlib.import_module(make_module("m", "def f(value):\n    return value * 2\n"))
    target = f"{mod.__name__}.f"
    HookRegistry.register(target, add_one)
    HookRegistry.apply_hooks()
    HookRegistry.reset()
    assert not HookRegistry.is_hook_applied(target, add_one)


def test_false_while_the_target_is_pending(make_module) -> None:
    name = make_module("lazy", "def f(value):\n    return value * 2\n")
    HookRegistry.register(f"{name}.f", add_one)
    HookRegistry.apply_hooks()
    assert not HookRegistry.is_hook_applied(f"{name}.f", add_one)
    assert importlib.import_module(name).f(3) == 7
    assert HookRegistry.is_hook_applied(f"{name}.f", add_one)


def test_failed_target_is_false_until_a_retry_succeeds(make_module, caplog) -> None:
    mod = importlib.import_module(make_module("m", "def f(value):\n    return value * 2\n"))
    target = f"{mod.__name__}.missing"
    HookRegistry.register(target, add_one)
    with caplog.at_level(logging.ERROR):
        HookRegistry.apply_hooks()
    assert not HookRegistry.is_hook_applied(target, add_one)
    mod.missing = lambda value: value * 2
    HookRegistry.apply_hooks()
    assert mod.missing(3) == 7
    assert HookRegistry.is_hook_applied(target, add_one)


def test_a_hook_registered_after_apply_is_applied_at_once(make_module) -> None:
    """SGLang main drops a late hook (and answers False); the runtime rebuilds the target and
    answers True."""
    mod = importlib.import_module(make_module("m", "def f(value):\n    return value * 2\n"))
    target = f"{mod.__name__}.f"

    def late(result, value):
        return result + 100

    HookRegistry.register(target, add_one)
    HookRegistry.apply_hooks()
    HookRegistry.register(target, late)
    assert mod.f(3) == 107
    assert HookRegistry.is_hook_applied(target, add_one)
    assert HookRegistry.is_hook_applied(target, late)


def test_discarded_hook_is_no_longer_applied(make_module) -> None:
    from sglang_plugin_runtime.plugins.hook_registry import HookSource

    mod = importlib.import_module(make_module("m", "def f(value):\n    return value * 2\n"))
    target = f"{mod.__name__}.f"

    def keep(result, value):
        return result

    HookRegistry.register(target, keep, source=HookSource("good", None))
    HookRegistry.register(target, add_one, source=HookSource("bad", None))
    HookRegistry.apply_hooks()
    HookRegistry.discard_source(HookSource("bad", None))
    assert HookRegistry.is_hook_applied(target, keep)
    assert not HookRegistry.is_hook_applied(target, add_one)
