"""The testing kit's pytest fixtures, exercised through pytester in inner pytest runs: each fixture
works, and nothing it does (env vars, sys.path, modules, patches, platform, simulated device) leaks
into the next test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sglang_plugin_runtime.testing import write_fake_distribution

pytest_plugins = ["pytester"]


def run(pytester: pytest.Pytester, source: str, *args: str) -> pytest.RunResult:
    pytester.makepyfile(source)
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist", *args)


def test_fixtures_are_available_without_any_conftest(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
        def test_all(plugin_env, fake_distributions, hook_registry, platform_override,
                     simulated_device):
            pass
    """,
    )
    result.assert_outcomes(passed=1)


def test_plugin_env_clears_and_restores_variables(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SGLANG_PLATFORM", "outer")
    monkeypatch.setenv("SGLANG_PLUGINS", "outer-a,outer-b")
    result = run(
        pytester,
        """
        import os

        def test_cleared_then_set(plugin_env):
            assert "SGLANG_PLATFORM" not in os.environ and "SGLANG_PLUGINS" not in os.environ
            plugin_env.platform("acme")
            plugin_env.plugins("one", "two")
            plugin_env.strict()
            assert (os.environ["SGLANG_PLATFORM"], os.environ["SGLANG_PLUGINS"]) == (
                "acme", "one,two")
            assert os.environ["SGLANG_PLUGINS_STRICT"] == "1"

        def test_restored_afterwards():
            assert os.environ["SGLANG_PLATFORM"] == "outer"
            assert os.environ["SGLANG_PLUGINS"] == "outer-a,outer-b"
            assert "SGLANG_PLUGINS_STRICT" not in os.environ
    """,
    )
    result.assert_outcomes(passed=2)


def test_plugin_env_restores_other_variables_the_test_set_through_it(
    pytester: pytest.Pytester,
) -> None:
    result = run(
        pytester,
        """
        import os

        def test_set(plugin_env):
            plugin_env["MY_VENDOR_FLAG"] = "1"

        def test_gone():
            assert "MY_VENDOR_FLAG" not in os.environ
    """,
    )
    result.assert_outcomes(passed=2)


def test_fake_distributions_are_discovered_and_loaded(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
        from sglang_plugin_runtime.plugins import load_plugins

        def test_load(fake_distributions, tmp_path):
            fake_distributions(
                "acme-tools",
                entry_points={"sglang.srt.plugins": {"acme": "acme_tools:register"}},
                modules={"acme_tools/__init__.py":
                         "CALLS = []\\ndef register():\\n    CALLS.append(1)\\n"},
            )
            report = load_plugins()
            assert [(r.plugin, r.status, r.distribution) for r in report.outcomes] == [
                ("acme", "loaded", "acme-tools")]
            import acme_tools
            assert acme_tools.CALLS == [1]
    """,
    )
    result.assert_outcomes(passed=1)


def test_fake_distributions_leave_no_path_modules_or_load_state(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
        import sys
        from sglang_plugin_runtime._discovery import discover_entry_points
        from sglang_plugin_runtime.plugins import load_plugins

        STATE = {}

        def test_first(fake_distributions):
            fake_distributions("one-dist",
                               entry_points={"sglang.srt.plugins": {"one": "one_mod:register"}},
                               modules={"one_mod.py": "def register():\\n    pass\\n"})
            assert [r.plugin for r in load_plugins().outcomes] == ["one"]
            STATE["root"] = str(fake_distributions.root)

        def test_second_sees_nothing_of_the_first(fake_distributions):
            assert STATE["root"] not in sys.path
            assert "one_mod" not in sys.modules
            assert discover_entry_points().group("sglang.srt.plugins") == ()
            fake_distributions("two-dist",
                               entry_points={"sglang.srt.plugins": {"two": "two_mod:register"}},
                               modules={"two_mod.py": "def register():\\n    pass\\n"})
            assert [r.plugin for r in load_plugins().outcomes] == ["two"]
    """,
    )
    result.assert_outcomes(passed=2)


def test_hook_registry_patches_never_leak_between_tests(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(target_mod="def work(x):\n    return x\n")
    result = run(
        pytester,
        """
        import target_mod
        from sglang_plugin_runtime.plugins.hook_registry import HookType

        ORIGINAL = target_mod.work

        def test_patch(hook_registry):
            hook_registry.register("target_mod.work", lambda result, x: result * 10, HookType.AFTER)
            hook_registry.apply_hooks()
            assert target_mod.work(2) == 20

        def test_unpatched_afterwards():
            assert target_mod.work is ORIGINAL
            assert target_mod.work(2) == 2

        def test_registry_empty_afterwards(hook_registry):
            assert hook_registry.describe() == []
    """,
    )
    result.assert_outcomes(passed=3)


def test_hooks_registered_by_fake_plugins_are_undone(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(target_mod="def work(x):\n    return x\n")
    result = run(
        pytester,
        """
        import target_mod
        from sglang_plugin_runtime.plugins import load_plugins

        ORIGINAL = target_mod.work
        PLUGIN = '''
        from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookType
        def register():
            HookRegistry.register("target_mod.work", lambda original, x: original(x) + 1,
                                  HookType.AROUND)
        '''

        def test_plugin_hooks(fake_distributions):
            fake_distributions("hooker",
                               entry_points={"sglang.srt.plugins": {"hooker": "hooker:register"}},
                               modules={"hooker.py": PLUGIN})
            load_plugins()
            assert target_mod.work(1) == 2

        def test_clean_afterwards():
            assert target_mod.work is ORIGINAL
    """,
    )
    result.assert_outcomes(passed=2)


def test_platform_override_sets_and_restores_the_current_platform(
    pytester: pytest.Pytester,
) -> None:
    result = run(
        pytester,
        """
        from sglang_plugin_runtime.platforms import current_platform_selection, get_current_platform
        from sglang_plugin_runtime.platforms.device_mixin import PlatformEnum
        from sglang_plugin_runtime.platforms.interface import SRTPlatform

        class FakePlatform(SRTPlatform):
            _enum = PlatformEnum.OOT
            device_name = "fake"
            device_type = "fake"

        BEFORE = {}

        def test_a_before():
            BEFORE["platform"] = get_current_platform()

        def test_b_override(platform_override):
            instance = platform_override.set(FakePlatform)
            assert get_current_platform() is instance
            assert current_platform_selection().rule == "override"

        def test_c_restored():
            assert get_current_platform() is BEFORE["platform"]
            assert type(get_current_platform()) is SRTPlatform
    """,
    )
    result.assert_outcomes(passed=3)


def test_platform_override_select_runs_the_real_selection_on_fake_distributions(
    pytester: pytest.Pytester,
) -> None:
    result = run(
        pytester,
        """
        PLATFORM = '''
        from sglang_plugin_runtime.platforms.device_mixin import PlatformEnum
        from sglang_plugin_runtime.platforms.interface import SRTPlatform
        class AcmePlatform(SRTPlatform):
            _enum = PlatformEnum.OOT
            device_name = "acme"
            device_type = "acme"
        def activate():
            return __name__ + ".AcmePlatform"
        '''

        def test_select(fake_distributions, platform_override, plugin_env):
            fake_distributions("acme-npu",
                               entry_points={"sglang.srt.platforms":
                                             {"acme": "acme_platform:activate"}},
                               modules={"acme_platform.py": PLATFORM})
            plugin_env.platform("acme")
            selection = platform_override.select()
            assert (selection.plugin, selection.rule, selection.distribution) == (
                "acme", "explicit", "acme-npu")
            assert type(platform_override.current()).__name__ == "AcmePlatform"
    """,
    )
    result.assert_outcomes(passed=1)


def test_simulated_device_fixture_installs_and_removes_the_module(
    pytester: pytest.Pytester,
) -> None:
    pytest.importorskip("torch")
    result = run(
        pytester,
        """
        import torch

        def test_simulated(simulated_device):
            sim = simulated_device("kitnpu", device_count=2)
            assert torch.kitnpu.device_count() == 2
            torch.kitnpu.set_device(1)
            assert sim.current_index == 1 and sim.called("set_device")

        def test_gone():
            assert not hasattr(torch, "kitnpu")
    """,
    )
    result.assert_outcomes(passed=2)


def test_importing_the_kit_does_not_import_pytest_or_torch() -> None:
    import subprocess
    import sys

    code = (
        "import sys, sglang_plugin_runtime.testing; "
        "print('pytest' in sys.modules, 'torch' in sys.modules)"
    )
    env = {k: v for k, v in os.environ.items()}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout
    assert out.split() == ["False", "False"]


# ---- a session's installed plugins, whatever order the kit's fixtures run in

INSTALLED_PLUGIN = """
from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookType, plugin_hook
REGISTERED = []

@plugin_hook("target_mod.work", HookType.AFTER)
def plus_ten(result, x):  # registered as the module is imported
    return result + 10

def register():
    REGISTERED.append(1)
    HookRegistry.register(
        "target_mod.work", lambda original, x: original(x) + 1000, HookType.AROUND
    )
"""

ORDERED_TESTS_HEADER = """
import sys, target_mod
from sglang_plugin_runtime.plugins import load_plugins
from sglang_plugin_runtime.plugins.hook_registry import HookRegistry

LOADS = []

def session_load():
    before = len(getattr(sys.modules.get("installed_timer"), "REGISTERED", []))
    report = load_plugins()
    installed_timer = sys.modules["installed_timer"]
    assert [(o.plugin, o.status) for o in report.outcomes] == [("timer", "loaded")]
    assert target_mod.work(1) == 1011  # the installed plugin's two hooks, applied, each run once
    assert [h.plugin for t in HookRegistry.describe() for h in t.hooks] == ["timer", "timer"]
    if LOADS:  # loaded once per session: register() does not run again
        assert len(installed_timer.REGISTERED) == before
    LOADS.append(1)
"""

ORDERED_TESTS = {
    "load": "def test_load_{n}():\n    session_load()\n",
    "fake": (
        "def test_fake_{n}(fake_distributions):\n    fake_distributions('other-dist', "
        "entry_points={'sglang.srt.plugins': {'other': 'other:r'}},\n                       "
        "modules={'other.py': 'def r():\\n    pass\\n'})\n    assert 'other' in [o.plugin for o in "
        "load_plugins().outcomes]\n"
    ),
    "isolated": """
def test_isolated_{n}(hook_registry):
    load_plugins()
    assert target_mod.work(1) == 1011
""",
}


def install(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    entry_points: dict[str, dict[str, str]],
    modules: dict[str, str],
) -> None:
    """Distribution ``name`` installed for the inner session (on ``PYTHONPATH``, not written by the
    kit), with module ``target_mod`` (``work(x)`` returns ``x``) beside the tests."""
    site = Path(pytester.path) / "installed"
    write_fake_distribution(site, name, entry_points=entry_points, modules=modules)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    pytester.makepyfile(target_mod="def work(x):\n    return x\n")


def run_in_order(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, order: list[str]
) -> None:
    """Run, in one inner session, the tests ``order`` names, with a general plugin installed (on
    ``PYTHONPATH``, not written by the kit); every test must pass."""
    install(
        pytester,
        monkeypatch,
        "timer-dist",
        {"sglang.srt.plugins": {"timer": "installed_timer:register"}},
        {"installed_timer.py": INSTALLED_PLUGIN},
    )
    tests = [ORDERED_TESTS[kind].replace("{n}", str(n)) for n, kind in enumerate(order)]
    result = run(pytester, ORDERED_TESTS_HEADER + "\n\n".join(tests), "-p", "no:randomly")
    result.assert_outcomes(passed=len(order))


@pytest.mark.parametrize("order", [["load", "fake", "load"], ["fake", "load", "fake", "load"]])
@pytest.mark.fault(
    "testing",
    "a test using fake_distributions runs load_plugins(), after or before the session's own load",
    "the fixture brings back the load state it found: the session's next load_plugins() does not "
    "run the installed plugins' register() again, and their hooks run once (they ran twice)",
)
def test_fake_distributions_restore_the_sessions_load_state(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, order: list[str]
) -> None:
    run_in_order(pytester, monkeypatch, order)


@pytest.mark.parametrize("order", [["isolated", "load"], ["load", "isolated", "load"]])
@pytest.mark.fault(
    "testing",
    "a session's first load_plugins() runs inside the hook_registry fixture",
    "the fixture brings back the load state it found: the next load_plugins() registers the "
    "installed plugins' hooks in the session's registry, the same result in any test order (they "
    "were gone for the rest of the session)",
)
def test_hook_registry_restores_the_sessions_load_state(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, order: list[str]
) -> None:
    run_in_order(pytester, monkeypatch, order)


INSTALLED_PLATFORM = """
from sglang_plugin_runtime.platforms.device_mixin import PlatformEnum
from sglang_plugin_runtime.platforms.interface import SRTPlatform
from sglang_plugin_runtime.plugins.hook_registry import HookType, plugin_hook

@plugin_hook("target_mod.work", HookType.AFTER)
def plus_ten(result, x):  # registered as the module is imported
    return result + 10

class AcmePlatform(SRTPlatform):
    _enum = PlatformEnum.OOT
    device_name = device_type = "acme"

def activate():
    return __name__ + ".AcmePlatform"
"""

PLATFORM_TESTS = """
import target_mod
from sglang_plugin_runtime.platforms import current_platform_selection
from sglang_plugin_runtime.plugins import load_plugins

def test_isolated(hook_registry):
    assert current_platform_selection().plugin == "acme"
    load_plugins()
    assert target_mod.work(1) == 11

def test_session():
    assert current_platform_selection().plugin == "acme"
    load_plugins()
    assert target_mod.work(1) == 11  # the platform module's import-time hook
"""


@pytest.mark.parametrize("order", [["isolated", "session"], ["session", "isolated", "session"]])
@pytest.mark.fault(
    "testing",
    "the session's first test to read current_platform uses the hook_registry fixture (the "
    "platform plugin registers hooks as its module is imported)",
    "the fixture leaves the platform as it found it (unselected) and forgets the plugin's modules: "
    "the session's next selection registers the plugin's import-time hooks in the session's "
    "registry, the same result in any test order (they were gone for the rest of the session)",
)
def test_hook_registry_leaves_the_sessions_platform_as_it_found_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, order: list[str]
) -> None:
    install(
        pytester,
        monkeypatch,
        "acme-npu",
        {"sglang.srt.platforms": {"acme": "installed_acme:activate"}},
        {"installed_acme.py": INSTALLED_PLATFORM},
    )
    header, isolated, session = PLATFORM_TESTS.split("\n\n")
    tests = [
        (isolated if kind == "isolated" else session).replace(f"test_{kind}", f"test_{kind}_{n}")
        for n, kind in enumerate(order)
    ]
    result = run(pytester, "\n\n".join([header, *tests]), "-p", "no:randomly")
    result.assert_outcomes(passed=len(order))


@pytest.mark.fault(
    "testing",
    "FakeDistributions used without the fixtures: a fake plugin's register() hooks a function of "
    "the session, then stop()",
    "stop() discards the hooks the fake plugins registered, as its docstring promises: the "
    "function is unpatched (was: its modules were gone, their hooks still applied)",
)
def test_fake_distributions_stop_discards_the_hooks_of_their_plugins(tmp_path: Path) -> None:
    (tmp_path / "target_mod.py").write_text("def work(x):\n    return x\n")
    code = f"""
        import json, sys
        sys.path.insert(0, {str(tmp_path)!r})
        import target_mod
        from sglang_plugin_runtime.plugins import load_plugins
        from sglang_plugin_runtime.testing import FakeDistributions
        fake = FakeDistributions({str(tmp_path / "fake-site")!r}).start()
        fake("plus-dist", entry_points={{"sglang.srt.plugins": {{"plus": "plus_mod:register"}}}},
             modules={{"plus_mod.py": PLUGIN}})
        load_plugins()
        patched = target_mod.work(1)
        fake.stop()
        print(json.dumps([patched, target_mod.work(1)]))
        """
    plugin = (
        "from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookType\n"
        "def register():\n"
        "    HookRegistry.register('target_mod.work', lambda r, x: r + 10, HookType.AFTER)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", f"PLUGIN = {plugin!r}\n" + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(result.stdout) == [11, 1]
