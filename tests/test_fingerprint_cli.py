"""``sglang-plugins fingerprint`` in real subprocesses: the digest an operator compares across
nodes, its JSON (validated against the published schema), and ``--compare`` against another node's
file or digest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _plugin_site import PluginSite
from test_cli_doctor import cli

TIMER = """
from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookType

def timed(original, *args, **kwargs):
    return original(*args, **kwargs)

def register():
    HookRegistry.register("demo_target.work", timed, HookType.AROUND)
"""


def populate(site: PluginSite, timer_version: str = "1.0") -> None:
    site.add_platform("acme-npu", "acme", "acmenpu")
    site.add(
        "acme-timer",
        timer_version,
        {"sglang.srt.plugins": {"timer": "acme_timer:register"}},
        {"acme_timer.py": TIMER, "demo_target.py": "def work(x):\n    return x\n"},
    )


def node(tmp_path: Path, name: str, timer_version: str = "1.0") -> PluginSite:
    site = PluginSite(tmp_path / name / "site-packages")
    site.root.mkdir(parents=True)
    populate(site, timer_version)
    return site


def test_json_output_validates_and_holds_the_fingerprint_and_its_digest(site: PluginSite) -> None:
    populate(site)
    result = cli(site, "fingerprint", "--json")
    report = result.json
    assert result.code == 0 and report["healthy"] and report["compared_with"] is None
    assert report["command"] == "fingerprint" and len(report["digest"]) == 64
    fingerprint = report["fingerprint"]
    assert fingerprint["platform"]["class"] == "acme_platform.AcmePlatform"
    assert [(p["plugin"], p["status"], p["version"]) for p in fingerprint["general_plugins"]] == [
        ("timer", "loaded", "1.0")
    ]
    assert [t["target"] for t in fingerprint["hooks"]] == ["demo_target.work"]


def test_digest_is_the_one_plugin_fingerprint_computes_in_a_process_that_loaded_the_plugins(
    site: PluginSite,
) -> None:
    populate(site)
    in_process = site.run_json(
        """
        import json
        from sglang_plugin_runtime.distributed import plugin_fingerprint
        from sglang_plugin_runtime.plugins import load_plugins
        load_plugins()
        import demo_target  # applied here, pending in the CLI: the digest does not care
        print(json.dumps(plugin_fingerprint().digest))
        """
    )
    assert cli(site, "fingerprint", "--json").json["digest"] == in_process


def test_two_nodes_with_the_same_plugins_at_different_paths_print_the_same_digest(
    tmp_path: Path,
) -> None:
    one, other = node(tmp_path, "node-a"), node(tmp_path, "node-b")
    assert (
        cli(one, "fingerprint", "--json").json["digest"]
        == cli(other, "fingerprint", "--json").json["digest"]
    )


def test_human_output_shows_digest_platform_plugins_and_hooks(site: PluginSite) -> None:
    populate(site)
    result = cli(site, "fingerprint")
    digest = cli(site, "fingerprint", "--json").json["digest"]
    assert result.code == 0
    assert f"Digest: {digest}" in result.out
    # The items ranks compare, in the words check_plugin_consistency() reports their differences in.
    lines = [" ".join(line.split()) for line in result.out.splitlines()]
    assert "platform acme_platform.AcmePlatform (plugin 'acme', acme-npu 1.0)" in lines
    assert "platform selection rule single-activated" in lines
    assert "general plugin 'timer' loaded, acme-timer 1.0" in lines
    assert "hooks on 'demo_target.work' around acme_timer.timed [timer from acme-timer]" in lines


def test_compare_with_a_node_that_has_the_same_plugins_exits_zero(tmp_path: Path) -> None:
    one, other = node(tmp_path, "node-a"), node(tmp_path, "node-b")
    saved = tmp_path / "node-a.json"
    saved.write_text(cli(one, "fingerprint", "--json").out)
    result = cli(other, "fingerprint", "--compare", str(saved))
    assert result.code == 0
    assert "Compared with" in result.out and ": SAME" in result.out


def test_compare_lists_each_item_that_differs_and_exits_one(tmp_path: Path) -> None:
    one, other = node(tmp_path, "node-a"), node(tmp_path, "node-b", timer_version="1.1")
    saved = tmp_path / "node-a.json"
    saved.write_text(cli(one, "fingerprint", "--json").out)
    result = cli(other, "fingerprint", "--json", "--compare", str(saved))
    report = result.json
    assert result.code == 1 and not report["healthy"]
    compared = report["compared_with"]
    assert compared["same"] is False and compared["source"] == str(saved)
    assert compared["differences"] == [
        {
            "kind": "plugin",
            "item": "general plugin 'timer'",
            "severity": "error",
            "here": "loaded, acme-timer 1.1",
            "there": "loaded, acme-timer 1.0",
        },
    ]
    assert [(p["severity"], p["step"]) for p in report["problems"]] == [("error", "compare")]
    human = cli(other, "fingerprint", "--compare", str(saved))
    assert (
        "DIFFERENT" in human.out
        and "general plugin 'timer'  loaded, acme-timer 1.1  loaded, acme-timer 1.0" in human.out
    )


def test_compare_with_only_warnings_exits_zero_unless_strict(tmp_path: Path) -> None:
    one = node(tmp_path, "node-a")
    saved = tmp_path / "node-a.json"
    saved.write_text(cli(one, "fingerprint", "--json").out)
    relaxed = cli(one, "fingerprint", "--json", "--compare", str(saved), SGLANG_PLATFORM="acme")
    assert relaxed.code == 0
    assert [d["item"] for d in relaxed.json["compared_with"]["differences"]] == [
        "platform selection rule"
    ]
    assert (
        cli(one, "fingerprint", "--compare", str(saved), "--strict", SGLANG_PLATFORM="acme").code
        == 1
    )


def test_compare_with_a_digest_prefix(tmp_path: Path) -> None:
    one, other = node(tmp_path, "node-a"), node(tmp_path, "node-b", timer_version="1.1")
    digest = cli(one, "fingerprint", "--json").json["digest"]
    assert cli(one, "fingerprint", "--compare", digest[:12]).code == 0
    different = cli(other, "fingerprint", "--json", "--compare", digest[:12])
    assert different.code == 1
    assert "differs from" in different.json["problems"][0]["message"]


def test_compare_with_a_file_that_is_not_a_fingerprint_is_a_usage_error(site: PluginSite) -> None:
    populate(site)
    (site.root / "other.json").write_text(json.dumps({"command": "doctor"}))
    result = cli(site, "fingerprint", "--compare", "other.json")
    assert result.code == 2 and "not a fingerprint" in result.err
    missing = cli(site, "fingerprint", "--compare", "no-such-file.json")
    assert missing.code == 2 and "cannot read it" in missing.err


def test_a_failed_platform_selection_is_in_the_fingerprint_not_a_crash(site: PluginSite) -> None:
    populate(site)
    result = cli(site, "fingerprint", "--json", SGLANG_PLATFORM="nope")
    platform = result.json["fingerprint"]["platform"]
    assert result.code == 0
    assert (platform["status"], platform["error_type"]) == ("failed", "PlatformNotFoundError")


def test_namespace_option_fingerprints_the_diffusion_side(site: PluginSite) -> None:
    populate(site)
    report = cli(site, "fingerprint", "--json", "--namespace", "multimodal_gen").json
    fingerprint = report["fingerprint"]
    assert report["namespace"] == fingerprint["namespace"] == "multimodal_gen"
    assert (
        fingerprint["platform"]["class"] == "sglang_plugin_runtime.platforms.multimodal.MMPlatform"
    )
    assert fingerprint["platform"]["rule"] == "fallback"


DAMAGED = {
    "inner structure damaged": json.dumps(
        {
            "format": 1,
            "platform": {"activations": [1, 2]},
            "general_plugins": "timer",
            "hooks": [{"no": "target"}],
        }
    ),
    "hook chain damaged": json.dumps(
        {
            "format": 1,
            "platform": {},
            "general_plugins": None,
            "hooks": [{"target": "t", "hooks": [["around"]]}],
        }
    ),
    "nested very deep": '{"format": 1, "platform": {}, "hooks": '
    + "[" * 100_000
    + "]" * 100_000
    + "}",
}


@pytest.mark.fault(
    "cli",
    "fingerprint --compare FILE whose JSON is valid but damaged inside (wrong types, missing "
    "keys), or nested deep",
    "exit 2 and 'not a fingerprint' naming the file (it was exit 3, 'this is a bug in "
    "sglang-plugins')",
)
@pytest.mark.parametrize("content", DAMAGED.values(), ids=DAMAGED.keys())
def test_compare_with_a_damaged_or_deeply_nested_file_is_a_usage_error(
    site: PluginSite, content: str
) -> None:
    populate(site)
    (site.root / "damaged.json").write_text(content)
    result = cli(site, "fingerprint", "--compare", "damaged.json")
    assert result.code == 2 and result.out == ""
    assert "--compare 'damaged.json': not a fingerprint" in result.err
    assert "internal error" not in result.err


@pytest.mark.fault(
    "cli",
    "fingerprint --json on a node where a general plugin failed to import, another's register() "
    "raised and a platform plugin's activate() raised",
    "the document validates against the shipped schema (failed-import, failed-call) (was: "
    "rejected: the schema allowed failed-register only)",
)
def test_fingerprint_json_of_a_node_where_plugins_failed_validates(site: PluginSite) -> None:
    site.add(
        "broken-plugins",
        entry_points={
            "sglang.srt.plugins": {"raises": "broken_a:register", "missing": "broken_b:register"}
        },
        modules={
            "broken_a.py": "def register():\n    raise RuntimeError('no')\n",
            "broken_b.py": "import no_such_dependency\n",
        },
    )
    site.add_platform("acme-npu", "acme", "acmenpu", "raise RuntimeError('no driver')")
    fingerprint = cli(site, "fingerprint", "--json").json["fingerprint"]
    statuses = {p["plugin"]: p["status"] for p in fingerprint["general_plugins"]}
    assert statuses == {"missing": "failed-import", "raises": "failed-call"}
    assert [a["status"] for a in fingerprint["platform"]["activations"]] == ["failed-call"]


@pytest.mark.fault(
    "cli",
    "message: sglang-plugins fingerprint --compare 3f2a9c01 (a digest of 8 hex digits)",
    "a usage error saying a digest needs at least its first 12 hex digits (was: 'cannot read it "
    "(No such file or directory)')",
)
def test_compare_with_a_digest_too_short_says_how_many_digits_it_needs(site: PluginSite) -> None:
    result = cli(site, "fingerprint", "--compare", "3f2a9c01")
    assert result.code == 2
    assert "'3f2a9c01' is 8 hex digits" in result.err and "at least its first 12" in result.err
    assert "No such file" not in result.err
