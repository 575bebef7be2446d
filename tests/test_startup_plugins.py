"""Startup plugins (entry-point group ``sglang.srt.startup_plugins``): run first, before the general
plugins and before the host's own imports, with the same attribution and filters; as in SGLang's
open proposal for the phase, a failure stops start-up, a failed load is retried by the next call,
and the phase applies no hooks. Each scenario in a fresh process."""

from __future__ import annotations

import pytest
from _plugin_site import PluginSite, platform_module

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


def test_the_startup_phase_applies_no_hooks_load_plugins_applies_them(site: PluginSite) -> None:
    _site(site)
    out = site.run_json(
        """
        import json, sys
        from sglang_plugin_runtime.plugins import load_plugins, load_startup_plugins
        from sglang_plugin_runtime.plugins.hook_registry import HookRegistry
        load_startup_plugins()
        import late_target
        from late_target import greet  # a copy taken before the hooks apply
        seen = [late_target.greet(), HookRegistry.describe("late_target.greet")[0].status]
        load_plugins()
        report = HookRegistry.describe("late_target.greet")[0]
        print(json.dumps([*seen, greet(), report.status, report.hooks[0].plugin]))
        """
    )
    assert out == ["hello", "registered", "HELLO", "applied", "shim"]


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
    "PluginLoadError naming the plugin: start-up stops before the general plugins, its hook "
    "discarded (also without SGLANG_PLUGINS_STRICT)",
)
def test_a_failing_startup_plugin_stops_start_up_and_its_hooks_are_discarded(
    site: PluginSite,
) -> None:
    _site(site, SHIM + "    raise RuntimeError('shim broke')\n")
    error, message, order, hooks = site.run_json(
        """
        import json, shim
        from sglang_plugin_runtime.plugins import load_plugins
        from sglang_plugin_runtime.plugins.hook_registry import HookRegistry
        try:
            load_plugins()
        except Exception as exc:
            print(json.dumps([type(exc).__name__, str(exc), shim.ORDER,
                              len(HookRegistry.describe())]))
        """
    )
    assert error == "PluginLoadError" and order == ["startup"] and hooks == 0
    assert "'shim'" in message and "shim broke" in message and "stops start-up" in message


@pytest.mark.fault(
    "plugins",
    "a startup plugin's module fails to import",
    "PluginLoadError naming the plugin and the import error: start-up stops",
)
def test_a_startup_plugin_that_fails_to_import_stops_start_up(site: PluginSite) -> None:
    _site(site, "raise ImportError('no vendor runtime')\n")
    error, message = site.run_json(
        """
        import json
        from sglang_plugin_runtime.plugins import load_startup_plugins
        try:
            load_startup_plugins()
        except Exception as exc:
            print(json.dumps([type(exc).__name__, str(exc)]))
        """
    )
    assert error == "PluginLoadError" and "'shim'" in message and "no vendor runtime" in message


FLAKY = """
ORDER = []
def register():
    ORDER.append("startup")
    if len(ORDER) == 1:
        raise RuntimeError("not yet")
"""


@pytest.mark.fault(
    "plugins",
    "a startup plugin fails once, then the host calls the loader again",
    "the next call runs it again; once it completes, the phase is done and runs no more",
)
def test_a_failed_startup_load_is_retried_by_the_next_call(site: PluginSite) -> None:
    _site(site, FLAKY)
    out = site.run_json(
        """
        import json, shim
        from sglang_plugin_runtime.plugins import (
            STARTUP_PLUGINS_GROUP, load_plugins, load_startup_plugins, plugin_load_report)
        try:
            load_startup_plugins()
        except Exception as exc:
            first = type(exc).__name__
        load_startup_plugins()
        load_plugins()
        [outcome] = plugin_load_report(group=STARTUP_PLUGINS_GROUP).outcomes
        print(json.dumps([first, shim.ORDER, outcome.status]))
        """
    )
    assert out == ["PluginLoadError", ["startup", "startup", "general"], "loaded"]


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


def _platform_with_startup_plugin(site: PluginSite, startup: str) -> None:
    """acme-npu: a platform plugin whose activate() finds its device, and a startup plugin."""
    site.add(
        "acme-npu",
        entry_points={
            "sglang.srt.platforms": {"acme": "acme_platform:activate"},
            "sglang.srt.startup_plugins": {"acme_boot": "acme_platform:boot"},
        },
        modules={
            "acme_platform.py": platform_module("AcmePlatform", "acmenpu", extra=startup),
        },
    )


#: An adopted SGLang's order: the startup phase when ``sglang`` is imported, then the platform is
#: selected, then launch_server's load_plugins().
STARTUP_SELECT_LOAD = """
    import json
    from sglang_plugin_runtime.platforms import current_platform_selection
    from sglang_plugin_runtime.plugins import load_plugins, load_startup_plugins
    plugin = None
    try:
        load_startup_plugins()
        plugin = current_platform_selection().plugin
        load_plugins()
        print(json.dumps([plugin, None, None]))
    except Exception as exc:
        print(json.dumps([plugin, type(exc).__name__, str(exc)]))
    """


@pytest.mark.parametrize("platform_env", [{}, {"SGLANG_PLATFORM": "acme"}])
@pytest.mark.fault(
    "plugins",
    "the startup plugin of the platform that is then selected fails, SGLANG_PLATFORM unset "
    "(the startup phase runs before selection)",
    "the startup phase raises PluginLoadError naming the startup plugin and its distribution, "
    "before selection, as with SGLANG_PLATFORM set (was: a WARNING, and load_plugins() succeeded)",
)
def test_a_failing_startup_plugin_of_the_selected_platform_stops_start_up_however_it_was_chosen(
    site: PluginSite, platform_env: dict[str, str]
) -> None:
    _platform_with_startup_plugin(site, "def boot():\n    raise RuntimeError('no firmware')\n")
    plugin, error, message = site.run_json(STARTUP_SELECT_LOAD, platform_env)
    # however the platform is chosen, the startup phase itself stops, before selection
    assert (plugin, error) == (None, "PluginLoadError")
    assert "'acme_boot'" in message and "acme-npu" in message and "no firmware" in message
