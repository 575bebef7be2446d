"""``sglang-plugins explain TARGET``: the hooks on one target in the order they run, with their
sources."""

from __future__ import annotations

import pytest
from _plugin_site import PluginSite
from test_cli_doctor import add_general, cli

TARGET = "def work(x):\n    return x\n"
HOOKS = """
def outer_around(original, *a, **k):
    return original(*a, **k)
def log_before(*a, **k):
    return None
def swap(*a, **k):
    return 0
def add_one(result, *a, **k):
    return result + 1
HookRegistry.register('target_mod.work', swap, HookType.REPLACE)
HookRegistry.register('target_mod.work', add_one, HookType.AFTER)
HookRegistry.register('target_mod.work', log_before, HookType.BEFORE)
"""


def test_explain_lists_hooks_outermost_first_with_sources(site: PluginSite) -> None:
    site.add("target", modules={"target_mod.py": TARGET})
    add_general(site, "alpha-dist", "alpha", body=HOOKS)
    add_general(
        site,
        "beta-dist",
        "beta",
        body=(
            "def outer_around(original, *a, **k):\n    return original(*a, **k)\n"
            "HookRegistry.register('target_mod.work', outer_around, HookType.AROUND)"
        ),
    )
    result = cli(site, "explain", "target_mod.work", "--json")
    report = result.json
    assert result.code == 0 and report["found"]
    hooks = report["report"]["hooks"]
    assert [(h["type"], h["source"]["plugin"]) for h in hooks] == [
        ("around", "beta"),
        ("before", "alpha"),
        ("after", "alpha"),
        ("replace", "alpha"),
    ]
    assert hooks[0]["source"]["distribution"] == "beta-dist"
    flow = [(step["phase"], step["type"]) for step in report["report"]["call_flow"]]
    assert flow == [
        ("enter", "around"),
        ("enter", "before"),
        ("call", "replace"),
        ("exit", "after"),
    ]


def test_explain_accepts_the_colon_spelling(site: PluginSite) -> None:
    site.add("target", modules={"target_mod.py": TARGET})
    add_general(site, "alpha-dist", "alpha", body=HOOKS)
    report = cli(site, "explain", "target_mod:work", "--json").json
    assert report["found"] and len(report["report"]["hooks"]) == 3


def test_explain_import_targets_shows_the_target_applied(site: PluginSite) -> None:
    site.add("target", modules={"target_mod.py": TARGET})
    add_general(site, "alpha-dist", "alpha", body=HOOKS)
    assert cli(site, "explain", "target_mod.work", "--json").json["report"]["status"] == "pending"
    report = cli(site, "explain", "target_mod.work", "--json", "--import-targets").json
    assert report["report"]["status"] == "applied"
    assert report["report"]["resolved"] == "target_mod:work"


def test_explain_human_output_shows_order_and_call_flow(site: PluginSite) -> None:
    site.add("target", modules={"target_mod.py": TARGET})
    add_general(site, "alpha-dist", "alpha", body=HOOKS)
    out = cli(site, "explain", "target_mod.work").out
    assert "Hooks, outermost first" in out
    assert "One call, step by step" in out
    assert out.index("log_before") < out.index("add_one") < out.index("swap")


def test_explain_of_a_target_without_hooks_says_so(site: PluginSite) -> None:
    add_general(site, "alpha-dist", "alpha")
    result = cli(site, "explain", "target_mod.nothing_here", "--json")
    report = result.json
    assert result.code == 0
    assert report["found"] is False and report["report"] is None
    assert "no hook is registered" in report["problems"][0]["message"]


def test_explain_of_a_malformed_target_is_a_usage_error(site: PluginSite) -> None:
    result = cli(site, "explain", "not a target!")
    assert result.code == 2
    assert "is not a hook target" in result.err
    assert result.out == ""


@pytest.mark.fault(
    "cli",
    "message: sglang-plugins explain sglang.srt.managers.scheduler.Scheduler.run-batch",
    "a usage error naming the part that is no identifier and the likely one: 'run-batch' is not a "
    "Python identifier (did you mean 'run_batch'?) (was: 'need at least module.attr', for a "
    "target of six parts)",
)
def test_explain_of_a_target_with_a_non_identifier_part_names_that_part(site: PluginSite) -> None:
    result = cli(site, "explain", "sglang.srt.managers.scheduler.Scheduler.run-batch")
    assert result.code == 2
    assert "'run-batch' is not a Python identifier (did you mean 'run_batch'?)" in result.err
    assert "need at least" not in result.err
