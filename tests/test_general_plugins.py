"""load_plugins() and load_plugins_by_group(), each scenario in a fresh process over fake installed
distributions."""

from __future__ import annotations

import json

import pytest
from _plugin_site import PluginSite

# A module with a function to hook, and a general plugin that counts its register() calls and hooks
# it.
TARGET_MODULE = """
CALLS = []

def work(x):
    CALLS.append(x)
    return x * 2
"""


def general_plugin(name: str, *, at_import: str = "", in_register: str = "") -> str:
    return f"""
import os
from sglang_plugin_runtime.plugins.hook_registry import (
    HookRegistry, HookType, _current_plugin_source)
IMPORT_SOURCE = _current_plugin_source.get()
REGISTER_SOURCES = []
{at_import}

def register():
    REGISTER_SOURCES.append(_current_plugin_source.get())
    with open(os.path.join(os.path.dirname(__file__), "{name}.registered"), "a") as f:
        f.write("x")
{in_register}
"""


AROUND_HOOK = """
    def around(original, x):
        return original(x) + 1000
    HookRegistry.register("target_mod.work", around, HookType.AROUND)
"""


def add_general(site: PluginSite, dist: str, name: str, **kwargs: str) -> None:
    module = f"{name}_plugin"
    site.add(
        dist,
        entry_points={"sglang.srt.plugins": {name: f"{module}:register"}},
        modules={f"{module}.py": general_plugin(name, **kwargs)},
    )


def registered_count(site: PluginSite, name: str) -> int:
    marker = site.root / f"{name}.registered"
    return len(marker.read_text()) if marker.exists() else 0


LOAD = """
import json, logging, sys
logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
from sglang_plugin_runtime.plugins import load_plugins
report = load_plugins()
print(json.dumps({r.plugin: [r.status, r.reason] for r in report.outcomes}))
"""


def test_load_plugins_runs_every_plugin_and_reports_it(site: PluginSite) -> None:
    add_general(site, "alpha-dist", "alpha")
    add_general(site, "beta-dist", "beta")
    out = site.run_json(LOAD)
    assert out == {"alpha": ["loaded", ""], "beta": ["loaded", ""]}
    assert registered_count(site, "alpha") == registered_count(site, "beta") == 1


def test_registered_hooks_are_applied_after_loading(site: PluginSite) -> None:
    site.add("target", modules={"target_mod.py": TARGET_MODULE})
    add_general(site, "alpha-dist", "alpha", in_register=AROUND_HOOK)
    out = site.run_json(
        """
        import json
        import target_mod
        from sglang_plugin_runtime.plugins import load_plugins
        load_plugins()
        print(json.dumps(target_mod.work(1)))
        """
    )
    assert out == 1002


def test_allowlist_loads_only_named_plugins_and_tolerates_whitespace(site: PluginSite) -> None:
    for name in ("alpha", "beta", "gamma"):
        add_general(site, f"{name}-dist", name)
    out = site.run_json(LOAD, {"SGLANG_PLUGINS": " alpha , gamma,, "})
    assert out["alpha"][0] == out["gamma"][0] == "loaded"
    assert out["beta"][0] == "skipped-allowlist"
    assert registered_count(site, "beta") == 0


@pytest.mark.fault(
    "plugins",
    "SGLANG_PLUGINS lists a plugin that is not installed",
    "WARNING naming it; the listed plugins that exist load",
)
def test_allowlisted_name_that_is_not_installed_is_warned(site: PluginSite) -> None:
    add_general(site, "alpha-dist", "alpha")
    result = site.run(LOAD, {"SGLANG_PLUGINS": "alpha,missing"})
    assert (
        "WARNING" in result.stderr
        and "'missing'" in result.stderr
        and "not installed" in result.stderr
    )


def test_allowlist_does_not_filter_platform_plugins(site: PluginSite) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu")
    out = site.run_json(
        """
        import json
        from sglang_plugin_runtime.platforms import current_platform_selection
        from sglang_plugin_runtime.plugins import load_plugins_by_group
        print(json.dumps([current_platform_selection().plugin,
                          sorted(load_plugins_by_group("sglang.srt.platforms"))]))
        """,
        {"SGLANG_PLUGINS": "something-else"},
    )
    assert out == ["acme", ["acme"]]


def test_plugins_of_distributions_offering_only_other_platforms_are_not_imported(
    site: PluginSite,
) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu")
    marker = site.root / "zeta-general-imported"
    site.add(
        "zeta-mlu",
        entry_points={
            "sglang.srt.platforms": {"zeta": "zeta_platform:activate"},
            "sglang.srt.plugins": {"zeta_hooks": "zeta_general:register"},
        },
        modules={
            "zeta_platform.py": "def activate():\n    return None\n",
            "zeta_general.py": f"open({str(marker)!r}, 'w').close()\ndef register():\n    pass\n",
        },
    )
    out = site.run_json(LOAD, {"SGLANG_PLATFORM": "acme"})
    assert out["zeta_hooks"][0] == "skipped-unselected-platform"
    assert not marker.exists()


def test_distribution_offering_the_selected_platform_is_never_skipped(site: PluginSite) -> None:
    site.add(
        "multi-vendor",
        entry_points={
            "sglang.srt.platforms": {
                "acme": "acme_platform:activate",
                "zeta": "zeta_platform:activate",
            },
            "sglang.srt.plugins": {"vendor_hooks": "vendor_plugin:register"},
        },
        modules={"vendor_plugin.py": general_plugin("vendor")},
    )
    out = site.run_json(LOAD, {"SGLANG_PLATFORM": "acme"})
    assert out["vendor_hooks"][0] == "loaded"


def test_plugin_source_is_current_during_import_and_during_register(site: PluginSite) -> None:
    add_general(site, "Alpha.Dist", "alpha")
    out = site.run_json(
        """
        import json
        from sglang_plugin_runtime.plugins import load_plugins
        load_plugins()
        import alpha_plugin
        print(json.dumps([list(alpha_plugin.IMPORT_SOURCE),
                          [list(s) for s in alpha_plugin.REGISTER_SOURCES]]))
        """
    )
    assert out == [["alpha", "alpha-dist"], [["alpha", "alpha-dist"]]]


@pytest.mark.fault(
    "plugins",
    "a general plugin's module raises at import",
    "failed-import with the exception, an ERROR with its traceback naming its distribution (as "
    "SGLang logs it); the others load",
)
def test_plugin_that_fails_to_import_leaves_the_others_loaded(site: PluginSite) -> None:
    add_general(site, "alpha-dist", "alpha")
    site.add(
        "broken-dist",
        entry_points={"sglang.srt.plugins": {"broken": "broken_plugin:register"}},
        modules={"broken_plugin.py": "raise RuntimeError('boom at import')\n"},
    )
    add_general(site, "gamma-dist", "gamma")
    result = site.run(LOAD)
    out = __import__("json").loads(result.stdout.splitlines()[-1])
    assert out["alpha"][0] == out["gamma"][0] == "loaded"
    assert out["broken"][0] == "failed-import" and "boom at import" in out["broken"][1]
    assert (
        "ERROR" in result.stderr and "broken-dist" in result.stderr and "Traceback" in result.stderr
    )


@pytest.mark.fault(
    "plugins",
    "register() registers a hook, then raises",
    "failed-call; the hook it registered is discarded, never applied; the others load",
)
def test_plugin_whose_register_raises_leaves_the_others_loaded_and_its_hooks_discarded(
    site: PluginSite,
) -> None:
    site.add("target", modules={"target_mod.py": TARGET_MODULE})
    add_general(
        site, "alpha-dist", "alpha", in_register=AROUND_HOOK + "    raise ValueError('half-way')\n"
    )
    add_general(site, "beta-dist", "beta")
    out = site.run_json(
        """
        import json
        import target_mod
        from sglang_plugin_runtime.plugins import load_plugins
        report = load_plugins()
        print(json.dumps([{r.plugin: r.status for r in report.outcomes}, target_mod.work(1)]))
        """
    )
    assert out == [{"alpha": "failed-call", "beta": "loaded"}, 2]


@pytest.mark.fault(
    "plugins",
    "register() raises with SGLANG_PLUGINS_STRICT=1",
    "PluginLoadError naming the plugin and its distribution",
)
def test_strict_mode_raises_on_a_failing_plugin(site: PluginSite) -> None:
    site.add(
        "broken-dist",
        entry_points={"sglang.srt.plugins": {"broken": "broken_plugin:register"}},
        modules={"broken_plugin.py": "def register():\n    raise ValueError('nope')\n"},
    )
    result = site.run(LOAD, {"SGLANG_PLUGINS_STRICT": "1"})
    assert result.returncode != 0
    assert (
        "PluginLoadError" in result.stderr
        and "'broken'" in result.stderr
        and "broken-dist" in result.stderr
    )


@pytest.mark.fault(
    "plugins",
    "one general plugin name offered by two distributions",
    "failed-duplicate naming both distributions with their versions",
)
def test_same_plugin_name_from_two_distributions_fails_naming_both(site: PluginSite) -> None:
    add_general(site, "alpha-dist", "alpha")
    site.add(
        "alpha-fork",
        "3.0",
        entry_points={"sglang.srt.plugins": {"alpha": "alpha_fork:register"}},
        modules={"alpha_fork.py": "def register():\n    pass\n"},
    )
    out = site.run_json(LOAD)
    assert out["alpha"][0] == "failed-duplicate"
    assert "alpha-dist 1.0" in out["alpha"][1] and "alpha-fork 3.0" in out["alpha"][1]


def test_load_plugins_is_idempotent_within_a_process(site: PluginSite) -> None:
    add_general(site, "alpha-dist", "alpha")
    site.run(
        "from sglang_plugin_runtime.plugins import load_plugins\nload_plugins(); load_plugins(); "
        "load_plugins()",
        check=True,
    )
    assert registered_count(site, "alpha") == 1


@pytest.mark.fault(
    "plugins",
    "discovery raises during load_plugins()",
    "the error propagates; the next load_plugins() loads normally",
)
def test_a_discovery_failure_does_not_poison_later_calls(site: PluginSite) -> None:
    add_general(site, "alpha-dist", "alpha")
    out = site.run_json(
        """
        import json
        import sglang_plugin_runtime.plugins._loading as loading
        real = loading.discover_entry_points
        def failing(*a, **k):
            raise OSError("site-packages unreadable")
        loading.discover_entry_points = failing
        from sglang_plugin_runtime.plugins import load_plugins
        try:
            load_plugins()
            first = "no error"
        except OSError as exc:
            first = str(exc)
        loading.discover_entry_points = real
        print(json.dumps([first, [r.status for r in load_plugins().outcomes]]))
        """
    )
    assert out == ["site-packages unreadable", ["loaded"]]


def test_load_plugins_by_group_returns_callables_with_their_distribution(site: PluginSite) -> None:
    add_general(site, "Alpha_Dist", "alpha")
    out = site.run_json(
        """
        import json
        from sglang_plugin_runtime.plugins import load_plugins_by_group
        plugins = load_plugins_by_group("sglang.srt.plugins")
        print(json.dumps({name: [fn.__name__, dist] for name, (fn, dist) in plugins.items()}))
        """
    )
    assert out == {"alpha": ["register", "alpha-dist"]}


def test_load_plugins_by_group_skips_excluded_distributions_without_importing(
    site: PluginSite,
) -> None:
    add_general(site, "alpha-dist", "alpha")
    out = site.run_json(
        """
        import json, sys
        from sglang_plugin_runtime.plugins import load_plugins_by_group
        plugins = load_plugins_by_group("sglang.srt.plugins", excluded_dists={"Alpha_Dist"})
        print(json.dumps([sorted(plugins), "alpha_plugin" in sys.modules]))
        """
    )
    assert out == [[], False]


@pytest.mark.parametrize("method", ["spawn", "forkserver", "fork"])
@pytest.mark.fault(
    "processes",
    "load_plugins() in spawned and forked children after the parent loaded",
    "each child ends with every hook applied exactly once",
)
def test_children_end_with_hooks_applied_exactly_once(site: PluginSite, method: str) -> None:
    site.add("target", modules={"target_mod.py": TARGET_MODULE})
    add_general(site, "alpha-dist", "alpha", in_register=AROUND_HOOK)
    site.add(
        "child",
        modules={
            "child_main.py": """
            def child(queue):
                import target_mod
                from sglang_plugin_runtime.plugins import load_plugins
                load_plugins()
                load_plugins()
                queue.put(target_mod.work(1))
            """
        },
    )
    out = site.run_json(
        f"""
        import json, multiprocessing as mp
        import target_mod, child_main
        from sglang_plugin_runtime.plugins import load_plugins
        load_plugins()
        parent = target_mod.work(1)
        ctx = mp.get_context({method!r})
        queue = ctx.Queue()
        proc = ctx.Process(target=child_main.child, args=(queue,))
        proc.start(); result = queue.get(timeout=60); proc.join(60)
        print(json.dumps([parent, result, proc.exitcode]))
        """
    )
    assert out == [1002, 1002, 0]
    # The fork child inherits the loaded state; spawn and forkserver children load afresh, once
    # each.
    assert registered_count(site, "alpha") == (1 if method == "fork" else 2)


def test_load_report_reads_well_when_printed(site: PluginSite) -> None:
    add_general(site, "alpha-dist", "alpha")
    site.add(
        "broken-dist",
        entry_points={"sglang.srt.plugins": {"broken": "broken_plugin:register"}},
        modules={"broken_plugin.py": "raise RuntimeError('boom')\n"},
    )
    out = site.run(
        "from sglang_plugin_runtime.plugins import load_plugins\nprint(load_plugins())", check=True
    )
    # Records follow what happened: imports first (where broken failed), then the register() calls.
    assert (
        out.stdout.strip()
        == "LoadReport(srt sglang.srt.plugins: broken: failed-import, alpha: loaded)"
    )


# --- plugin code that misbehaves ------------------------------------------------------------------


# A host that sees the SystemExit a plugin raised: what stopped and which hooks were left
# registered.
LOAD_UNTIL_EXIT = """
import json, logging
logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
from sglang_plugin_runtime.plugins import load_plugins
from sglang_plugin_runtime.plugins.hook_registry import HookRegistry
try:
    load_plugins()
except SystemExit as exc:
    hooks = [h.plugin for t in HookRegistry.describe() for h in t.hooks]
    print(json.dumps({"code": exc.code, "hooks": hooks}))
    raise
"""


@pytest.mark.fault(
    "plugins",
    "a general plugin's module calls sys.exit(4) while it is imported (a host process)",
    "start-up stops, as in SGLang: one ERROR naming the plugin and its distribution, then the "
    "SystemExit (exit status 4); the plugins after it are not loaded",
)
def test_general_plugin_calling_sys_exit_at_import_stops_start_up(site: PluginSite) -> None:
    site.add(
        "exit-dist",
        entry_points={"sglang.srt.plugins": {"quitter": "quitter_plugin:register"}},
        modules={"quitter_plugin.py": "import sys\nsys.exit(4)\n"},
    )
    add_general(site, "zeta-dist", "zeta")
    result = site.run(LOAD)
    assert result.returncode == 4 and result.stdout == ""
    errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1 and "'quitter'" in errors[0] and "exit-dist 1.0" in errors[0]
    assert "sys.exit(4)" in errors[0] and "start-up stops" in errors[0]
    assert registered_count(site, "zeta") == 0


@pytest.mark.fault(
    "plugins",
    "register() registers a hook, then calls sys.exit(1) (a host process)",
    "start-up stops with exit status 1 after one ERROR naming the plugin and its distribution; "
    "the hook it registered is discarded first (as SGLang stops; the SystemExit is not swallowed)",
)
def test_register_calling_sys_exit_stops_start_up_without_its_hooks(site: PluginSite) -> None:
    site.add("target", modules={"target_mod.py": TARGET_MODULE})
    exits = AROUND_HOOK + "    import sys; sys.exit(1)\n"
    add_general(site, "alpha-dist", "alpha", in_register=exits)
    result = site.run(LOAD_UNTIL_EXIT)
    assert result.returncode == 1
    assert json.loads(result.stdout) == {"code": 1, "hooks": []}
    errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1 and "'alpha'" in errors[0] and "alpha-dist 1.0" in errors[0]
    assert "register() of plugin" in errors[0] and "called sys.exit(1)" in errors[0]


@pytest.mark.fault(
    "plugins",
    "SGLANG_PLUGINS_STRICT=1, plugin b fails once, the host calls load_plugins() again",
    "the retry loads b; plugin a is not run again and its AFTER hook runs once per call",
)
def test_strict_retry_registers_each_hook_once(site: PluginSite) -> None:
    site.add("target", modules={"target_mod.py": TARGET_MODULE})
    add_general(site, "alpha-dist", "alpha", in_register=AROUND_HOOK)
    flaky = """
import os
FLAG = os.path.join(os.path.dirname(__file__), "failed-once")

def register():
    if not os.path.exists(FLAG):
        open(FLAG, "w").close()
        raise RuntimeError("transient")
"""
    site.add(
        "beta-dist",
        entry_points={"sglang.srt.plugins": {"beta": "beta_plugin:register"}},
        modules={"beta_plugin.py": flaky},
    )
    out = site.run_json(
        """
        import json
        import target_mod
        from sglang_plugin_runtime.plugins import load_plugins
        try:
            load_plugins()
            first = "no error"
        except RuntimeError as exc:
            first = type(exc).__name__
        report = load_plugins()
        print(json.dumps([first, {r.plugin: r.status for r in report.outcomes},
                          target_mod.work(1)]))
        """,
        {"SGLANG_PLUGINS_STRICT": "1"},
    )
    assert out == ["PluginLoadError", {"alpha": "loaded", "beta": "loaded"}, 1002]
    assert registered_count(site, "alpha") == 1


@pytest.mark.fault(
    "plugins",
    "SGLANG_PLUGINS=',' (set, but naming no plugin)",
    "no general plugin loads, as in SGLang, with a WARNING that says so and how to load them",
)
def test_allowlist_naming_no_plugin_is_warned(site: PluginSite) -> None:
    add_general(site, "alpha-dist", "alpha")
    result = site.run(LOAD, {"SGLANG_PLUGINS": ","})
    out = __import__("json").loads(result.stdout.splitlines()[-1])
    assert out["alpha"][0] == "skipped-allowlist"
    assert (
        "SGLANG_PLUGINS=',' names no plugin" in result.stderr
        and "Unset SGLANG_PLUGINS" in result.stderr
    )


@pytest.mark.fault(
    "plugins",
    "a general entry point that names a module attribute that is not a function",
    "failed-import: 'the entry point ... names int 3, not a function'",
)
def test_general_entry_point_naming_a_non_callable_is_an_import_failure(site: PluginSite) -> None:
    site.add(
        "odd-dist",
        entry_points={"sglang.srt.plugins": {"odd": "odd_plugin:VALUE"}},
        modules={"odd_plugin.py": "VALUE = 3\n"},
    )
    out = site.run_json(LOAD)
    assert out["odd"][0] == "failed-import" and "names int 3, not a function" in out["odd"][1]


def test_a_host_namespaces_own_strict_variable_makes_hook_failures_raise(site: PluginSite) -> None:
    site.add("target", modules={"target_mod.py": TARGET_MODULE})
    site.add(
        "host-hooks",
        entry_points={"myhost.plugins": {"hooks": "host_hooks:register"}},
        modules={
            "host_hooks.py": (
                "from sglang_plugin_runtime.plugins.hook_registry import HookRegistry\n"
                "def register():\n"
                "    HookRegistry.register('target_mod.missing', lambda result: result)\n"
            )
        },
    )
    code = """
        import json
        import target_mod
        from sglang_plugin_runtime.platforms import PluginNamespace, register_namespace
        from sglang_plugin_runtime.plugins import load_plugins
        ns = register_namespace(PluginNamespace(
            name="myhost", platform_group="myhost.platforms", plugin_group="myhost.plugins",
            base_class="sglang_plugin_runtime.platforms.interface:SRTPlatform",
            platform_env="MYHOST_PLATFORM", plugins_env="MYHOST_PLUGINS",
            strict_env="MYHOST_STRICT",
        ))
        try:
            load_plugins(ns)
            print(json.dumps("no error"))
        except Exception as exc:
            print(json.dumps(type(exc).__name__))
        """
    assert site.run_json(code) == "no error"
    assert site.run_json(code, {"MYHOST_STRICT": "1"}) == "HookApplyError"


@pytest.mark.parametrize(
    ("definition", "kind"),
    [
        ("def register():\n    yield\n", "a generator"),
        ("async def register():\n    pass\n", "an async"),
    ],
)
@pytest.mark.fault(
    "plugins",
    "register() written as a generator function or as `async def` (its body would never run)",
    "failed-call naming the plugin and saying to make it a plain function; no 'never awaited' "
    "warning",
)
def test_register_that_is_a_generator_or_async_function_fails_naming_the_plugin(
    site: PluginSite, definition: str, kind: str
) -> None:
    site.add(
        "lazy-dist",
        entry_points={"sglang.srt.plugins": {"lazy": "lazy_plugin:register"}},
        modules={"lazy_plugin.py": definition},
    )
    result = site.run("import warnings\nwarnings.simplefilter('error')\n" + LOAD)
    out = __import__("json").loads(result.stdout.splitlines()[-1])
    assert out["lazy"][0] == "failed-call"
    assert f"is {kind} function" in out["lazy"][1] and "plain function" in out["lazy"][1]
    assert "never awaited" not in result.stderr


FORK_WHILE_LOADING = """
import json, os, threading, time
import target_mod
from sglang_plugin_runtime.plugins import load_plugins
import beta_plugin
loader = threading.Thread(target=load_plugins)
loader.start()
beta_plugin.STARTED.wait(30)
pid = os.fork()
if pid == 0:
    load_plugins()
    target_mod.work(1)
    with open(os.environ["CHILD_OUT"], "w") as out:
        out.write(json.dumps(len(target_mod.CALLS)))
    os._exit(0)
os.waitpid(pid, 0)
beta_plugin.RELEASE.set()
loader.join(30)
print(open(os.environ["CHILD_OUT"]).read())
"""

COUNTING_HOOK = """
    import target_mod
    def count(result, x):
        target_mod.CALLS.append("hook")
    HookRegistry.register("target_mod.work", count, HookType.AFTER)
"""

BLOCKING_REGISTER = """
import os, threading
from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookType
STARTED, RELEASE, PARENT = threading.Event(), threading.Event(), os.getpid()

def register():
    STARTED.set()
    if os.getpid() == PARENT:
        RELEASE.wait(30)
"""


@pytest.mark.fault(
    "plugins",
    "the process forks while another thread is inside load_plugins() (one plugin's register() "
    "done, one running)",
    "the child's load_plugins() runs only the unfinished plugins again: each hook is registered "
    "and runs once",
)
def test_fork_while_another_thread_loads_runs_each_hook_once_in_the_child(
    site: PluginSite, tmp_path
) -> None:
    site.add("target", modules={"target_mod.py": TARGET_MODULE})
    add_general(site, "alpha-dist", "alpha", in_register=COUNTING_HOOK)
    site.add(
        "beta-dist",
        entry_points={"sglang.srt.plugins": {"beta": "beta_plugin:register"}},
        modules={"beta_plugin.py": BLOCKING_REGISTER},
    )
    out = site.run_json(FORK_WHILE_LOADING, {"CHILD_OUT": str(tmp_path / "child.json")})
    assert out == 2  # the call itself and the hook, once


def test_a_hook_registered_after_a_load_without_plugins_applies_at_once(site: PluginSite) -> None:
    site.add("target", modules={"target_mod.py": TARGET_MODULE})
    out = site.run_json(
        """
        import json, sys
        import target_mod
        from sglang_plugin_runtime.plugins import load_plugins
        load_plugins()  # no plugin installed: the hook registry is not even imported
        registry_imported = "sglang_plugin_runtime.plugins.hook_registry" in sys.modules
        from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookType
        HookRegistry.register("target_mod.work", lambda result, x: result + 1, HookType.AFTER)
        print(json.dumps([registry_imported, target_mod.work(1)]))
        """
    )
    assert out == [False, 3]


@pytest.mark.parametrize("listed", ["timer", "TIMER", "timer-dist"])
@pytest.mark.fault(
    "plugins",
    "SGLANG_PLUGINS=timer when the entry point is Timer (or names its distribution, timer-dist)",
    "not-installed, with a WARNING saying: did you mean SGLANG_PLUGINS='alpha,Timer'? (the "
    "platforms' suggestion; it said only 'listed but not installed')",
)
def test_allowlisted_name_of_other_case_or_a_distribution_suggests_the_entry_point(
    site: PluginSite, listed: str
) -> None:
    add_general(site, "alpha-dist", "alpha")
    add_general(site, "timer-dist", "Timer")
    result = site.run(LOAD, {"SGLANG_PLUGINS": f"alpha, {listed}"}, check=True)
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["alpha"][0] == "loaded" and out[listed][0] == "not-installed"
    assert "did you mean SGLANG_PLUGINS='alpha,Timer'?" in out[listed][1]
    assert f"Plugin '{listed}'" in result.stderr and "SGLANG_PLUGINS='alpha,Timer'" in result.stderr


@pytest.mark.fault(
    "plugins",
    "message: SGLANG_PLUGINS=acme where acme is an installed platform plugin (its distribution "
    "ships a startup plugin acme_boot)",
    "not-installed, saying acme is a platform plugin (with its distribution), that SGLANG_PLUGINS "
    "filters general and startup plugins only and SGLANG_PLATFORM=acme selects it (was: 'not "
    "installed; did you mean acme_boot?')",
)
def test_allowlisting_a_platform_plugin_says_it_is_one(site: PluginSite) -> None:
    site.add(
        "acme-npu",
        entry_points={
            "sglang.srt.platforms": {"acme": "acme_platform:activate"},
            "sglang.srt.startup_plugins": {"acme_boot": "acme_platform:boot"},
        },
        modules={"acme_platform.py": "def activate():\n    return None\ndef boot():\n    pass\n"},
    )
    add_general(site, "alpha-dist", "alpha")
    out = site.run_json(LOAD, {"SGLANG_PLUGINS": "alpha,acme"})
    status, reason = out["acme"]
    assert status == "not-installed" and "acme_boot" not in reason
    assert "'acme' is a platform plugin (acme-npu 1.0)" in reason
    assert "SGLANG_PLATFORM=acme" in reason and "SGLANG_PLUGINS='alpha'" in reason
