"""The testing kit's stand-in modules: a hook aimed at SGLang's own code, tested where SGLang is not
installed.

``stand_in_module`` (the fixture) and ``StandInModules`` (the class, for use outside pytest) make a
dotted module path importable for one test and leave ``sys.modules`` and every module imported
before exactly as they were.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

import pytest

from sglang_plugin_runtime.testing import StandInModules

pytest_plugins = ["pytester"]

SCHEDULER = "sglang_stand_in_demo.srt.managers.scheduler"


class Scheduler:
    def run_batch(self, batch: list[str]) -> int:
        return len(batch)


def test_a_stand_in_is_importable_with_the_names_given() -> None:
    with StandInModules() as stand_in:
        module = stand_in(SCHEDULER, Scheduler=Scheduler)
        assert importlib.import_module(SCHEDULER) is module
        from sglang_stand_in_demo.srt.managers.scheduler import Scheduler as imported  # type: ignore[import-not-found]

        assert imported is Scheduler


def test_missing_parents_are_packages_bound_to_their_parents() -> None:
    with StandInModules() as stand_in:
        module = stand_in(SCHEDULER)
        root = sys.modules["sglang_stand_in_demo"]
        assert root.srt.managers.scheduler is module
        assert hasattr(root, "__path__") and not hasattr(module, "__path__")


def test_stop_leaves_nothing_in_sys_modules_parents_included() -> None:
    before = set(sys.modules)
    stand_in = StandInModules().start()
    stand_in(SCHEDULER, Scheduler=Scheduler)
    stand_in.stop()
    assert set(sys.modules) - before == set()
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(SCHEDULER)


def test_calling_again_adds_names_to_the_same_stand_in() -> None:
    with StandInModules() as stand_in:
        first = stand_in(SCHEDULER, Scheduler=Scheduler)
        second = stand_in(SCHEDULER, LIMIT=3)
        assert first is second and (first.Scheduler, first.LIMIT) == (Scheduler, 3)


def test_a_module_already_imported_is_set_aside_and_comes_back_unchanged() -> None:
    real = ModuleType("sglang_stand_in_real")
    real.VALUE = "real"
    sys.modules["sglang_stand_in_real"] = real
    try:
        with StandInModules() as stand_in:
            stand_in("sglang_stand_in_real", VALUE="stand-in")
            assert importlib.import_module("sglang_stand_in_real").VALUE == "stand-in"
        assert sys.modules["sglang_stand_in_real"] is real and real.VALUE == "real"
    finally:
        del sys.modules["sglang_stand_in_real"]


def test_a_parent_imported_before_keeps_its_attributes() -> None:
    import xml

    with StandInModules() as stand_in:
        child = stand_in("xml.sglang_stand_in_child")
        assert xml.sglang_stand_in_child is child  # type: ignore[attr-defined]
    assert not hasattr(xml, "sglang_stand_in_child")
    assert "xml" in sys.modules


def test_modules_put_under_a_stand_in_during_the_test_go_with_it() -> None:
    with StandInModules() as stand_in:
        stand_in(SCHEDULER)
        sys.modules["sglang_stand_in_demo.srt.extra"] = ModuleType("sglang_stand_in_demo.srt.extra")
    assert not [name for name in sys.modules if name.startswith("sglang_stand_in_demo")]


@pytest.mark.parametrize("name", ["sglang/srt", "sglang..srt", "", "sglang.srt.1st"])
def test_a_name_that_is_no_dotted_module_name_is_refused(name: str) -> None:
    with StandInModules() as stand_in, pytest.raises(ValueError, match="not a dotted module name"):
        stand_in(name)


def test_adding_before_start_is_refused() -> None:
    with pytest.raises(RuntimeError, match="start"):
        StandInModules()(SCHEDULER)


def test_the_fixture_lets_a_hook_on_sglang_code_apply_strictly_and_leaves_nothing(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        """
        import sys

        from sglang_plugin_runtime.plugins.hook_registry import HookType

        TARGET = "sglang_stand_in_fixture.srt.managers.scheduler:Scheduler.run_batch"
        CALLS = []


        class Scheduler:
            def run_batch(self, batch):
                return len(batch)


        def timer(original, *args, **kwargs):
            CALLS.append(1)
            return original(*args, **kwargs)


        def test_the_hook_fires_on_the_stand_in(stand_in_module, hook_registry, plugin_env):
            plugin_env.strict()
            stand_in_module("sglang_stand_in_fixture.srt.managers.scheduler", Scheduler=Scheduler)
            hook_registry.register(TARGET, timer, HookType.AROUND)
            hook_registry.apply_hooks()
            from sglang_stand_in_fixture.srt.managers.scheduler import Scheduler as patched

            assert patched().run_batch(["a", "b"]) == 2 and CALLS == [1]


        def test_nothing_is_left_afterwards():
            assert not [name for name in sys.modules if name.startswith("sglang_stand_in_fixture")]
            assert Scheduler.__dict__["run_batch"].__name__ == "run_batch"
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist")
    result.assert_outcomes(passed=2)
