"""The failure policy (SGLang's diffusion loader's, for every namespace): what a plugin's failure
stops, what it discards, and how it is told; each scenario in a fresh process over fake installed
distributions."""

from __future__ import annotations

from typing import Any

import pytest
from _plugin_site import PluginSite, platform_module

TARGET = {"target_mod.py": "def greet():\n    return 'hello'\n"}

#: A hook the module (or a class's __init__) registers on target_mod.greet, attributed to whoever's
#: code runs.
UPPER = """
from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookType
def upper(result):
    return result.upper()
"""

REPORT = """
import json
from sglang_plugin_runtime.platforms import current_platform_selection
from sglang_plugin_runtime.plugins import load_plugins
from sglang_plugin_runtime.plugins.hook_registry import HookRegistry
try:
    selection = current_platform_selection()
    out = {"plugin": selection.plugin,
           "activations": [[a.status, a.reason] for a in selection.activations]}
except Exception as exc:
    out = {"error": type(exc).__name__, "message": str(exc), "plugin": getattr(exc, "plugin", None),
           "outcomes": [o.status for o in getattr(exc, "outcomes", ())]}
try:
    report = load_plugins()
    out["plugins"] = {o.plugin: [o.status, o.reason] for o in report.outcomes}
except Exception as exc:
    out["load_error"] = [type(exc).__name__, str(exc)]
import target_mod
out["greet"] = target_mod.greet()
out["hooks"] = [[h.plugin, h.distribution] for t in HookRegistry.describe() for h in t.hooks]
print(json.dumps(out))
"""


def _platform_with_hooking_constructor(site: PluginSite, constructor: str) -> None:
    extra = UPPER + "\n".join(
        [
            "class InitHookPlatform(AcmePlatform):",
            "    def __init__(self):",
            "        HookRegistry.register('target_mod.greet', upper, HookType.AFTER)",
            f"        {constructor}",
        ]
    )
    body = "return __name__ + '.InitHookPlatform'"
    site.add(
        "acme-npu",
        entry_points={"sglang.srt.platforms": {"acme": "acme_platform:activate"}},
        modules={
            "acme_platform.py": platform_module(
                "AcmePlatform", "acmenpu", body, extra="\n" + extra
            ),
            **TARGET,
        },
    )


@pytest.mark.fault(
    "selection",
    "the selected platform class's __init__ registers a hook, then raises",
    "the hook is attributed to the platform plugin and discarded; selection fails with "
    "PluginLoadError naming the plugin (was: attributed to no plugin and left applied)",
)
def test_a_hook_registered_by_a_failing_platform_constructor_is_discarded(site: PluginSite) -> None:
    _platform_with_hooking_constructor(site, "raise RuntimeError('device lost')")
    out = site.run_json(REPORT)
    assert out["error"] == "PluginLoadError" and out["plugin"] == "acme"
    assert "device lost" in out["message"] and "constructor" in out["message"]
    assert out["greet"] == "hello" and out["hooks"] == []


def test_a_hook_registered_by_the_platform_constructor_belongs_to_the_platform_plugin(
    site: PluginSite,
) -> None:
    _platform_with_hooking_constructor(site, "pass")
    out = site.run_json(REPORT)
    assert out["plugin"] == "acme"
    assert out["greet"] == "HELLO" and out["hooks"] == [["acme", "acme-npu"]]


UNPRINTABLE = """
class Unprintable(Exception):
    def __str__(self):
        raise ValueError("no text for you")
"""


@pytest.mark.fault(
    "plugins",
    "register() raises an exception whose __str__ itself raises",
    "that plugin's failure (failed-call) with a description of the exception, the other plugins "
    "load; load_plugins() returns (was: the error escaped load_plugins())",
)
def test_a_register_exception_whose_str_raises_is_that_plugins_failure(site: PluginSite) -> None:
    site.add("target", modules=TARGET)
    site.add(
        "bad-dist",
        entry_points={"sglang.srt.plugins": {"bad": "bad_plugin:register"}},
        modules={"bad_plugin.py": UNPRINTABLE + "def register():\n    raise Unprintable()\n"},
    )
    site.add(
        "good-dist",
        entry_points={"sglang.srt.plugins": {"good": "good_plugin:register"}},
        modules={"good_plugin.py": "def register():\n    pass\n"},
    )
    out = site.run_json(REPORT)
    status, reason = out["plugins"]["bad"]
    assert (
        status == "failed-call" and "Unprintable" in reason and "str() raised ValueError" in reason
    )
    assert out["plugins"]["good"] == ["loaded", ""]


@pytest.mark.fault(
    "selection",
    "a platform plugin's activate() raises an exception whose __str__ itself raises, auto mode",
    "that plugin is skipped with a WARNING describing the exception; the fallback is selected "
    "(was: ImportError: cannot import name 'current_platform', naming no plugin)",
)
def test_an_activate_exception_whose_str_raises_is_that_plugins_failure(site: PluginSite) -> None:
    site.add(
        "acme-npu",
        entry_points={"sglang.srt.platforms": {"acme": "acme_platform:activate"}},
        modules={
            "acme_platform.py": UNPRINTABLE + "def activate():\n    raise Unprintable()\n",
            **TARGET,
        },
    )
    out = site.run_json(REPORT)
    assert out["plugin"] is None
    [[status, reason]] = out["activations"]
    assert status == "failed-call" and "Unprintable" in reason and "str() raised" in reason


@pytest.mark.fault(
    "plugins",
    "register() waits for a helper thread that calls load_plugins() (a join, a future's result)",
    "no hang: the helper gets ReentrantLoadError naming the plugin, and the plugin fails "
    "(failed-call), its hooks discarded; the other plugins load",
)
@pytest.mark.parametrize(
    "wait",
    [
        "helper = threading.Thread(target=peek); helper.start(); helper.join(20)",
        "concurrent.futures.ThreadPoolExecutor(1).submit(peek).result(20)",
    ],
    ids=["join", "future"],
)
def test_register_waiting_on_a_thread_that_loads_plugins_is_refused_not_deadlocked(
    site: PluginSite, wait: str
) -> None:
    site.add("target", modules=TARGET)
    site.add(
        "waiting-dist",
        entry_points={"sglang.srt.plugins": {"waiting": "waiting_plugin:register"}},
        modules={
            "waiting_plugin.py": UPPER
            + "\n".join(
                [
                    "import concurrent.futures, threading",
                    "SEEN = []",
                    "def peek():",
                    "    from sglang_plugin_runtime.plugins import load_plugins",
                    "    try:",
                    "        load_plugins()",
                    "    except Exception as exc:",
                    "        SEEN.append(f'{type(exc).__name__}: {exc}')",
                    "def register():",
                    "    HookRegistry.register('target_mod.greet', upper, HookType.AFTER)",
                    f"    {wait}",
                    "    print('helper saw:', SEEN)",
                ]
            )
        },
    )
    site.add(
        "good-dist",
        entry_points={"sglang.srt.plugins": {"good": "good_plugin:register"}},
        modules={"good_plugin.py": "def register():\n    pass\n"},
    )
    result = site.run(REPORT, check=True)
    assert "ReentrantLoadError" in result.stdout and "'waiting'" in result.stdout
    out = __import__("json").loads(result.stdout.strip().splitlines()[-1])
    status, reason = out["plugins"]["waiting"]
    assert status == "failed-call" and "load_plugins()" in reason
    assert out["plugins"]["good"] == ["loaded", ""]
    assert out["greet"] == "hello" and out["hooks"] == []


def test_load_plugins_from_a_plugins_own_thread_returns_the_load_in_progress(
    site: PluginSite,
) -> None:
    site.add(
        "nested-dist",
        entry_points={"sglang.srt.plugins": {"nested": "nested_plugin:register"}},
        modules={
            "nested_plugin.py": (
                "def register():\n"
                "    from sglang_plugin_runtime.plugins import load_plugins\n"
                "    assert not load_plugins().completed\n"
            ),
            **TARGET,
        },
    )
    out = site.run_json(REPORT)
    assert out["plugins"]["nested"] == ["loaded", ""]


GENERAL_OF_PLATFORM = {
    "acme_platform.py": platform_module("AcmePlatform", "acmenpu"),
    "acme_ops.py": "def register():\n    raise RuntimeError('kernels missing')\n",
    **TARGET,
}


@pytest.mark.fault(
    "plugins",
    "a general plugin shipped by the selected platform's distribution fails (import or register())",
    "PluginLoadError naming the plugin and saying it belongs to the selected platform's "
    "distribution: start-up stops (SGLang's diffusion loader's rule; 0.5.23's srt loader logs and "
    "goes on)",
)
def test_a_failing_general_plugin_of_the_selected_platform_stops_loading(site: PluginSite) -> None:
    site.add(
        "acme-npu",
        entry_points={
            "sglang.srt.platforms": {"acme": "acme_platform:activate"},
            "sglang.srt.plugins": {"acme_ops": "acme_ops:register"},
        },
        modules=GENERAL_OF_PLATFORM,
    )
    out = site.run_json(REPORT)
    assert out["plugin"] == "acme"
    error, message = out["load_error"]
    assert error == "PluginLoadError" and "'acme_ops'" in message and "kernels missing" in message
    assert "selected platform's distribution" in message


def test_a_failing_general_plugin_of_an_unselected_platform_is_skipped(site: PluginSite) -> None:
    site.add(
        "acme-npu",
        entry_points={
            "sglang.srt.platforms": {"acme": "acme_platform:activate"},
            "sglang.srt.plugins": {"acme_ops": "acme_ops:register"},
        },
        modules={
            **GENERAL_OF_PLATFORM,
            "acme_platform.py": platform_module("AcmePlatform", "acmenpu", "return None"),
        },
    )
    out = site.run_json(REPORT)
    assert out["plugin"] is None and out["plugins"]["acme_ops"][0] == "failed-call"


@pytest.mark.fault(
    "plugins",
    "the selected platform's distribution registers a hook on a module that cannot be found",
    "load_plugins() raises PluginLoadError naming the distribution and the target: its hooks must "
    "apply",
)
def test_hooks_of_the_selected_platform_that_cannot_apply_stop_loading(site: PluginSite) -> None:
    extra = UPPER + "HookRegistry.register('no_such_vendor_module.f', upper, HookType.AFTER)\n"
    site.add(
        "acme-npu",
        entry_points={"sglang.srt.platforms": {"acme": "acme_platform:activate"}},
        modules={
            "acme_platform.py": platform_module("AcmePlatform", "acmenpu", extra=extra),
            **TARGET,
        },
    )
    out = site.run_json(REPORT)
    error, message = out["load_error"]
    assert (
        error == "PluginLoadError"
        and "acme-npu" in message
        and "no_such_vendor_module.f" in message
    )


SGLANG_HOOK = UPPER + (
    "HookRegistry.register('sglang.srt.managers.scheduler.Scheduler.__init__', upper, "
    "HookType.AFTER)\n"
)


@pytest.mark.parametrize("strict", ["", "1"])
@pytest.mark.fault(
    "plugins",
    "the selected platform registers a hook on sglang.* where SGLang is not installed (its own "
    "tests, doctor on a build machine)",
    "load_plugins() succeeds, also with SGLANG_PLUGINS_STRICT=1: the hook stays pending, as the "
    "docs say (was: PluginLoadError, the selected platform's hooks 'cannot be applied')",
)
def test_a_selected_platforms_hook_on_sglang_where_sglang_is_not_installed_stays_pending(
    site: PluginSite, strict: str
) -> None:
    site.add(
        "acme-npu",
        entry_points={"sglang.srt.platforms": {"acme": "acme_platform:activate"}},
        modules={
            "acme_platform.py": platform_module("AcmePlatform", "acmenpu", extra=SGLANG_HOOK),
            **TARGET,
        },
    )
    code = REPORT + "print(json.dumps([out, HookRegistry.describe()[0].status]))\n"
    out, status = site.run_json(code, {"SGLANG_PLUGINS_STRICT": strict})
    assert out["plugin"] == "acme" and "load_error" not in out and status == "pending"


def _general(site: PluginSite, name: str, body: str, *, at_import: str = "") -> None:
    """A general plugin ``name`` (distribution ``<name>-dist``) whose register() runs ``body``."""
    lines = "".join(f"    {line}\n" for line in body.splitlines())
    site.add(
        f"{name}-dist",
        entry_points={"sglang.srt.plugins": {name: f"{name}_plugin:register"}},
        modules={f"{name}_plugin.py": f"{UPPER}{at_import}\ndef register():\n{lines}"},
    )


def _hook_from_a_helper_thread(site: PluginSite, then: str = "") -> dict[str, Any]:
    """REPORT over plugin 'threaded', whose register() registers an AFTER hook on target_mod.greet
    from a thread it starts and joins, then runs ``then``."""
    site.add("target", modules=TARGET)
    _general(
        site,
        "threaded",
        "helper = threading.Thread(target=lambda: HookRegistry.register("
        "'target_mod.greet', upper, HookType.AFTER))\n"
        f"helper.start(); helper.join()\n{then}",
        at_import="import threading",
    )
    return site.run_json(REPORT)


@pytest.mark.fault(
    "plugins",
    "register() registers a hook from a helper thread it starts and joins, then raises",
    "the hook is attributed to the plugin and discarded with it (was: no source, so it stayed "
    "applied)",
)
def test_a_hook_registered_from_a_helper_thread_of_a_failing_register_is_discarded(
    site: PluginSite,
) -> None:
    out = _hook_from_a_helper_thread(site, then="raise RuntimeError('half set up')")
    assert out["plugins"]["threaded"][0] == "failed-call"
    assert out["greet"] == "hello" and out["hooks"] == []


def test_a_hook_registered_from_a_helper_thread_of_register_belongs_to_the_plugin(
    site: PluginSite,
) -> None:
    out = _hook_from_a_helper_thread(site)
    assert out["greet"] == "HELLO" and out["hooks"] == [["threaded", "threaded-dist"]]


@pytest.mark.fault(
    "plugins",
    "Ctrl-C (KeyboardInterrupt) while register() runs, after it registered a hook; the host calls "
    "load_plugins() again",
    "the interrupt propagates and the hooks register() had registered are discarded first, as for "
    "sys.exit(): the second load_plugins() registers the hook once, it runs once per call (was: "
    "twice)",
)
def test_hooks_of_a_register_interrupted_by_ctrl_c_are_discarded_before_it_runs_again(
    site: PluginSite,
) -> None:
    site.add("target", modules=TARGET)
    _general(
        site,
        "slow",
        "HookRegistry.register('target_mod.greet', exclaim, HookType.AFTER)\n"
        "if not RUNS:\n"
        "    RUNS.append(1)\n"
        "    raise KeyboardInterrupt",
        at_import="RUNS = []\ndef exclaim(result):\n    return result + '!'",
    )
    out = site.run_json(
        """
        import json
        from sglang_plugin_runtime.plugins import load_plugins
        try:
            load_plugins()
        except KeyboardInterrupt:
            pass
        load_plugins()
        import target_mod
        print(json.dumps(target_mod.greet()))
        """
    )
    assert out == "hello!"


@pytest.mark.fault(
    "plugins",
    "register() raises asyncio.CancelledError (a BaseException, e.g. from a cancelled task it "
    "waited on)",
    "that plugin's failure (failed-call), the later plugins load (was: the error escaped "
    "load_plugins(), and doctor --json printed a traceback)",
)
def test_a_cancelled_error_from_register_is_that_plugins_failure(site: PluginSite) -> None:
    site.add("target", modules=TARGET)
    _general(site, "cancelled", "raise asyncio.CancelledError()", at_import="import asyncio")
    _general(site, "later", "pass")
    out = site.run_json(REPORT)
    status, reason = out["plugins"]["cancelled"]
    assert status == "failed-call" and "CancelledError" in reason
    assert out["plugins"]["later"] == ["loaded", ""]


@pytest.mark.fault(
    "plugins",
    "register() raises the plugin's own BaseException subclass to fail closed (qsa-hisparse's "
    "PluginActivationError)",
    "it propagates out of load_plugins() and start-up stops, as in SGLang (whose except Exception "
    "lets it through); its hooks are discarded first",
)
def test_a_plugins_own_base_exception_stops_start_up(site: PluginSite) -> None:
    site.add("target", modules=TARGET)
    _general(
        site,
        "closed",
        "HookRegistry.register('target_mod.greet', upper, HookType.AFTER)\nraise FailClosed('off')",
        at_import="class FailClosed(BaseException):\n    pass",
    )
    out = site.run_json(
        """
        import json
        from sglang_plugin_runtime.plugins import load_plugins
        from sglang_plugin_runtime.plugins.hook_registry import HookRegistry
        try:
            load_plugins()
        except BaseException as exc:
            print(json.dumps([type(exc).__name__, len(HookRegistry.describe())]))
        """
    )
    assert out == ["FailClosed", 0]
