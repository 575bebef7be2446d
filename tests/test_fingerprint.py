"""The plugin fingerprint: what it records of a process's plugins, and that nothing per process or
host is in it.

Each scenario builds the fingerprint in a fresh process over fake installed distributions
(``_plugin_site``).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from _plugin_site import PluginSite

TARGET_MODULE = "def work(x):\n    return x + 1\n"

TIMER_PLUGIN = """
import functools
from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookType

def timed(original, *args, **kwargs):
    return original(*args, **kwargs)

def scale(result, factor, *args, **kwargs):
    return result * factor

def register():
    HookRegistry.register("demo_target.work", timed, HookType.AROUND)
    # A partial's name is its repr, which holds a memory address: different in every process.
    HookRegistry.register("demo_target.work", functools.partial(scale, 2), HookType.AFTER,
                          priority=5)
"""

FINGERPRINT = """
import json
from sglang_plugin_runtime.distributed import plugin_fingerprint
from sglang_plugin_runtime.plugins import load_plugins
{before}
fingerprint = plugin_fingerprint()
print(json.dumps({{"digest": fingerprint.digest, "data": fingerprint.to_dict()}}))
"""


def populate(site: PluginSite, timer_version: str = "1.0") -> None:
    site.add_platform("acme-npu", "acme", "acmenpu")
    site.add_platform("bolt-accel", "bolt", "bolt", "return None")
    site.add(
        "acme-timer",
        timer_version,
        {"sglang.srt.plugins": {"timer": "acme_timer:register"}},
        {"acme_timer.py": TIMER_PLUGIN, "demo_target.py": TARGET_MODULE},
    )


def fingerprint(site: PluginSite, before: str = "load_plugins()", **env: str) -> dict:
    return site.run_json(FINGERPRINT.format(before=before), env=env)


def test_records_the_selected_platform_with_its_provenance_and_every_activation(
    site: PluginSite,
) -> None:
    populate(site)
    platform = fingerprint(site)["data"]["platform"]
    assert platform == {
        "status": "selected",
        "class": "acme_platform.AcmePlatform",
        "plugin": "acme",
        "distribution": "acme-npu",
        "version": "1.0",
        "rule": "single-activated",
        "error_type": None,
        "activations": [
            {"plugin": "acme", "distribution": "acme-npu", "version": "1.0", "status": "activated"},
            {
                "plugin": "bolt",
                "distribution": "bolt-accel",
                "version": "1.0",
                "status": "unavailable",
            },
        ],
    }


def test_records_a_failed_selection_instead_of_raising(site: PluginSite) -> None:
    populate(site)
    platform = fingerprint(site, SGLANG_PLATFORM="bolt")["data"]["platform"]
    assert (platform["status"], platform["class"], platform["error_type"]) == (
        "failed",
        None,
        "PlatformUnavailableError",
    )
    assert (platform["plugin"], platform["distribution"], platform["version"]) == (
        "bolt",
        "bolt-accel",
        "1.0",
    )
    assert platform["activations"] == [
        {"plugin": "bolt", "distribution": "bolt-accel", "version": "1.0", "status": "unavailable"}
    ]


def test_records_the_general_plugins_with_status_distribution_and_version(site: PluginSite) -> None:
    populate(site, timer_version="2.3")
    site.add(
        "idle-dist",
        "0.1",
        {"sglang.srt.plugins": {"idle": "idle_mod:register"}},
        {"idle_mod.py": "def register(): pass\n"},
    )
    plugins = fingerprint(site, SGLANG_PLUGINS="timer,ghost")["data"]["general_plugins"]
    assert plugins == [
        {"plugin": "ghost", "status": "not-installed", "distribution": None, "version": None},
        {
            "plugin": "idle",
            "status": "skipped-allowlist",
            "distribution": "idle-dist",
            "version": "0.1",
        },
        {"plugin": "timer", "status": "loaded", "distribution": "acme-timer", "version": "2.3"},
    ]


def test_general_plugins_are_none_until_load_plugins_runs(site: PluginSite) -> None:
    populate(site)
    assert fingerprint(site, before="")["data"]["general_plugins"] is None


def test_records_each_hook_with_type_source_and_priority_outermost_first(site: PluginSite) -> None:
    populate(site)
    (target,) = fingerprint(site)["data"]["hooks"]
    assert target["target"] == "demo_target.work"
    assert target["failed"] is False
    assert target["hooks"] == [
        {
            "type": "after",
            "hook": "functools.partial(acme_timer.scale, ...)",
            "plugin": "timer",
            "distribution": "acme-timer",
            "priority": 5,
            "active": True,
        },
        {
            "type": "around",
            "hook": "acme_timer.timed",
            "plugin": "timer",
            "distribution": "acme-timer",
            "priority": 0,
            "active": True,
        },
    ]


def test_both_spellings_of_a_target_are_one_target_pending_or_applied(site: PluginSite) -> None:
    site.add(
        "two-spellings",
        "1.0",
        {"sglang.srt.plugins": {"both": "both_plugin:register"}},
        {
            "both_plugin.py": (
                "from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookType\n"
                "def around(original, *a, **k):\n    return original(*a, **k)\n"
                "def after(result, *a, **k):\n    return result\n"
                "def register():\n"
                "    HookRegistry.register('demo_target.work', around, HookType.AROUND)\n"
                "    HookRegistry.register('demo_target:work', after, HookType.AFTER)\n"
            ),
            "demo_target.py": TARGET_MODULE,
        },
    )
    pending = fingerprint(site)
    applied = fingerprint(site, before="load_plugins()\nimport demo_target")
    assert [t["target"] for t in pending["data"]["hooks"]] == ["demo_target.work"]
    assert sorted(h["hook"] for h in pending["data"]["hooks"][0]["hooks"]) == [
        "both_plugin.after",
        "both_plugin.around",
    ]
    assert applied["digest"] == pending["digest"]


def test_a_target_that_failed_to_apply_is_marked_failed(site: PluginSite) -> None:
    populate(site)
    before = (
        "from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookType\nimport "
        "demo_target\nHookRegistry.register('demo_target.no_such_function', lambda r, *a, **k: r, "
        "HookType.AFTER)\nload_plugins()"
    )
    targets = {t["target"]: t["failed"] for t in fingerprint(site, before=before)["data"]["hooks"]}
    assert targets == {"demo_target.no_such_function": True, "demo_target.work": False}


def test_applied_and_pending_targets_give_the_same_digest(site: PluginSite) -> None:
    populate(site)
    pending = fingerprint(site)
    applied = fingerprint(
        site, before="load_plugins()\nimport demo_target\nassert demo_target.work(1) == 4"
    )
    assert applied["digest"] == pending["digest"]


def test_digest_is_the_sha256_of_the_canonical_json(site: PluginSite) -> None:
    populate(site)
    result = fingerprint(site)
    canonical = json.dumps(result["data"], sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    assert result["digest"] == hashlib.sha256(canonical.encode("ascii")).hexdigest()


def test_runtime_version_and_namespace_are_recorded(site: PluginSite) -> None:
    from sglang_plugin_runtime import __version__

    data = fingerprint(site)["data"]
    assert (data["format"], data["runtime_version"], data["namespace"]) == (2, __version__, "srt")


def test_same_plugins_installed_at_different_paths_give_the_same_digest(tmp_path: Path) -> None:
    """Two hosts never share install paths, pids or addresses; the digest must not see them."""
    first, second = (
        PluginSite(tmp_path / "a" / "site-packages"),
        PluginSite(tmp_path / "node-b" / "lib" / "site"),
    )
    for site in (first, second):
        site.root.mkdir(parents=True)
        populate(site)
    one, other = fingerprint(first), fingerprint(second)
    assert one["data"] == other["data"]
    assert one["digest"] == other["digest"]
    assert str(tmp_path) not in json.dumps(one["data"])


def test_a_different_plugin_version_changes_the_digest(tmp_path: Path) -> None:
    first, second = PluginSite(tmp_path / "a"), PluginSite(tmp_path / "b")
    for site, version in ((first, "1.0"), (second, "1.1")):
        site.root.mkdir()
        populate(site, timer_version=version)
    assert fingerprint(first)["digest"] != fingerprint(second)["digest"]


def test_importing_the_distributed_module_does_not_import_torch(site: PluginSite) -> None:
    result = site.run_json(
        """
        import json, sys
        import sglang_plugin_runtime.distributed as d
        d.plugin_fingerprint()
        print(json.dumps("torch" in sys.modules))
        """
    )
    assert result is False


def test_consistency_off_returns_none_without_importing_torch(site: PluginSite) -> None:
    result = site.run_json(
        """
        import json, sys
        from sglang_plugin_runtime.distributed import check_plugin_consistency
        print(json.dumps([check_plugin_consistency(), "torch" in sys.modules]))
        """,
        env={"SGLANG_PLUGINS_CONSISTENCY": "off"},
    )
    assert result == [None, False]


RANKED_PLUGIN = """
import functools, os
from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookType

def shard(result, *args, rank, **kwargs):
    return result

def register():
    hook = functools.partial(shard, rank=int(os.environ["RANK"]))
    HookRegistry.register("demo_target.work", hook, HookType.AFTER)
"""


@pytest.mark.fault(
    "hooks",
    "a plugin registers functools.partial(hook, rank=r), bound to each rank's own number",
    "every rank gives the same fingerprint: it names the partial's function and the names it "
    "binds, never the per-rank values (was: a different digest per rank, so "
    "check_plugin_consistency() failed on every rank)",
)
def test_a_partial_hook_bound_to_the_rank_gives_one_fingerprint_on_every_rank(
    site: PluginSite,
) -> None:
    site.add(
        "ranked",
        "1.0",
        {"sglang.srt.plugins": {"ranked": "ranked_plugin:register"}},
        {"ranked_plugin.py": RANKED_PLUGIN, "demo_target.py": TARGET_MODULE},
    )
    first, second = fingerprint(site, RANK="0"), fingerprint(site, RANK="1")
    assert first["digest"] == second["digest"]
    (hook,) = first["data"]["hooks"][0]["hooks"]
    assert hook["hook"] == "functools.partial(ranked_plugin.shard, rank=...)"


SCALE_PLUGIN = """
import os
from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookType

class Scale:
    def __init__(self, rank):
        self.rank = rank

    def __repr__(self):
        return f"Scale(rank={self.rank})"

    def __call__(self, result, *args, **kwargs):
        return result

def register():
    HookRegistry.register("demo_target.work", Scale(int(os.environ["RANK"])), HookType.AFTER)
"""


@pytest.mark.fault(
    "hooks",
    "a plugin registers a callable object as a hook, whose repr() holds the rank (Scale(rank=0))",
    "every rank gives the same fingerprint: the hook is named by its class, never its repr() (was: "
    "a different digest per rank)",
)
def test_a_callable_object_hook_gives_one_fingerprint_on_every_rank(site: PluginSite) -> None:
    site.add(
        "scaled",
        "1.0",
        {"sglang.srt.plugins": {"scaled": "scaled_plugin:register"}},
        {"scaled_plugin.py": SCALE_PLUGIN, "demo_target.py": TARGET_MODULE},
    )
    first, second = fingerprint(site, RANK="0"), fingerprint(site, RANK="1")
    assert first["digest"] == second["digest"]
    (hook,) = first["data"]["hooks"][0]["hooks"]
    assert hook["hook"] == "scaled_plugin.Scale(...)"


REEXPORT_PLUGIN = """
from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookType

def core(result, *args, **kwargs):
    return result

def api(result, *args, **kwargs):
    return result

def register():
    HookRegistry.register("demo_target.work", core, HookType.AFTER)
    HookRegistry.register("demo_api.work", api, HookType.AFTER)
"""


def test_a_function_hooked_through_its_reexport_gives_the_same_digest_pending_or_applied(
    site: PluginSite,
) -> None:
    site.add(
        "reexport",
        "1.0",
        {"sglang.srt.plugins": {"reexport": "reexport_plugin:register"}},
        {
            "reexport_plugin.py": REEXPORT_PLUGIN,
            "demo_target.py": TARGET_MODULE,
            "demo_api.py": "from demo_target import work\n",
        },
    )
    pending = fingerprint(site)
    applied = fingerprint(
        site, before="load_plugins()\nimport demo_api\nassert demo_api.work(1) == 2"
    )
    assert applied["digest"] == pending["digest"]
    hooks = {t["target"]: [h["hook"] for h in t["hooks"]] for t in applied["data"]["hooks"]}
    assert hooks == {
        "demo_api.work": ["reexport_plugin.api"],
        "demo_target.work": ["reexport_plugin.core"],
    }
