"""Startup plugins (entry-point group ``sglang.srt.startup_plugins``): run first, before the general
plugins and before the host's own imports, with the same attribution and failure policy; each
scenario in a fresh process."""

from __future__ import annotations

import pytest
from _plugin_site import PluginSite

TARGET = {"late_target.py": "def greet():\n    return 'hello'\n"}

SHIM = """
from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookType
ORDER = []
def upper(result):
    return result.upper()
def register():
    ORDER.append("startup")
    HookRegistry.register("late_target.greet", upper, HookType.AFTER)
"""

GENERAL = """
import shim
def register():
    shim.ORDER.append("general")
"""


def _site(site: PluginSite, shim: str = SHIM) -> None:
    site.add("target", modules=TARGET)
    site.add(
        "vendor-shim",
        entry_points={"sglang.srt.startup_plugins": {"shim": "shim:register"}},
        modules={"shim.py": shim},
    )
    site.add(
        "vendor-ops",
        entry_points={"sglang.srt.plugins": {"ops": "ops:register"}},
        modules={"ops.py": GENERAL},
    )


def test_startup_plugins_run_before_the_general_plugins(site: PluginSite) -> None:
    _site(site)
    out = site.run_json(
        """
        import json, shim
        from sglang_plugin_runtime.plugins import (
            STARTUP_PLUGINS_GROUP, load_plugins, plugin_load_report)
        general = load_plugins()
        startup = plugin_load_report(group=STARTUP_PLUGINS_GROUP)
        print(json.dumps([shim.ORDER, [[o.plugin, o.status] for o in startup.outcomes],
                          [[o.plugin, o.status] for o in general.outcomes]]))
        """
    )
    assert out == [["startup", "general"], [["shim", "loaded"]], [["ops", "loaded"]]]


def test_a_startup_hook_waits_for_its_module_and_applies_when_it_is_imported(
    site: PluginSite,
) -> None:
    _site(site)
    out = site.run_json(
        """
        import json, sys
        from sglang_plugin_runtime.plugins import load_startup_plugins
        from sglang_plugin_runtime.plugins.hook_registry import HookRegistry
        load_startup_plugins()
        before = "late_target" in sys.modules
        import late_target
        report = HookRegistry.describe("late_target.greet")[0]
        print(json.dumps([before, late_target.greet(), report.status, report.hooks[0].plugin]))
        """
    )
    assert out == [False, "HELLO", "applied", "shim"]


def test_load_plugins_after_load_startup_plugins_runs_each_startup_plugin_once(
    site: PluginSite,
) -> None:
    _site(site)
    out = site.run_json(
        """
        import json, shim
        from sglang_plugin_runtime.plugins import load_plugins, load_startup_plugins
        load_startup_plugins()
        load_startup_plugins()
        load_plugins()
        print(json.dumps(shim.ORDER))
        """
    )
    assert out == ["startup", "general"]


@pytest.mark.fault(
    "plugins",
    "a startup plugin's function raises after registering a hook",
    "failed-call, its hook discarded, the general plugins still load; with SGLANG_PLUGINS_STRICT=1 "
    "PluginLoadError",
)
def test_a_failing_startup_plugin_is_skipped_and_its_hooks_discarded(site: PluginSite) -> None:
    _site(site, SHIM + "    raise RuntimeError('shim broke')\n")
    code = """
        import json, shim
        from sglang_plugin_runtime.plugins import (
            STARTUP_PLUGINS_GROUP, load_plugins, plugin_load_report)
        try:
            load_plugins()
        except Exception as exc:
            print(json.dumps([type(exc).__name__, str(exc)]))
            raise SystemExit(0)
        import late_target
        [outcome] = plugin_load_report(group=STARTUP_PLUGINS_GROUP).outcomes
        print(json.dumps([shim.ORDER, outcome.status, outcome.reason, late_target.greet()]))
        """
    order, status, reason, greeting = site.run_json(code)
    assert order == ["startup", "general"] and status == "failed-call" and "shim broke" in reason
    assert greeting == "hello"
    error, message = site.run_json(code, {"SGLANG_PLUGINS_STRICT": "1"})
    assert error == "PluginLoadError" and "'shim'" in message and "shim broke" in message


def test_the_allowlist_and_sglang_platform_filter_startup_plugins_too(site: PluginSite) -> None:
    _site(site)
    site.add(
        "other-npu",
        entry_points={
            "sglang.srt.platforms": {"other": "other_platform:activate"},
            "sglang.srt.startup_plugins": {"other_shim": "other_platform:register"},
        },
        modules={
            "other_platform.py": "def activate():\n    return None\ndef register():\n    pass\n"
        },
    )
    code = """
        import json
        from sglang_plugin_runtime.plugins import STARTUP_PLUGINS_GROUP, load_startup_plugins
        print(json.dumps({o.plugin: o.status for o in load_startup_plugins().outcomes}))
        """
    assert site.run_json(code, {"SGLANG_PLUGINS": "ops"}) == {
        "other_shim": "skipped-allowlist",
        "shim": "skipped-allowlist",
    }
    site.add_platform("acme-npu", "acme", "acmenpu")
    assert site.run_json(code, {"SGLANG_PLATFORM": "acme"}) == {
        "other_shim": "skipped-unselected-platform",
        "shim": "loaded",
    }
