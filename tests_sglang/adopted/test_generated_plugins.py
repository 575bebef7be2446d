"""Generated plugins of every answer combination, run by the adopted SGLang through SGLang's own
import paths.

Platform packages are selected by ``sglang.srt.platforms.current_platform`` (on a simulated device),
automatically and with ``SGLANG_PLATFORM``; general packages are loaded by
``sglang.srt.plugins.load_plugins()`` and every example hook they ship fires. All packages of every
combination are installed together, so each scenario also proves that the others stay out of the
way. Each scenario is a fresh process of the adopted venv.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from adopted_kit import Combination, Installed, Outcome, clean_env, run_python

pytestmark = pytest.mark.subprocess


# --------------------------------------------------------------------------------------------------
# Platform plugins
# --------------------------------------------------------------------------------------------------

SELECT_PLATFORM = """
from sglang_plugin_runtime.testing import simulated_device
_sim = simulated_device({device!r}, backend_module={backend!r}, privateuse1=True).start()

from sglang.srt.platforms import current_platform as p        # SGLang's own import path
import sglang.srt.platforms
import sglang_plugin_runtime.platforms as runtime
selection = runtime.current_platform_selection()
from sglang.srt.platforms.interface import SRTPlatform
report({{
    "class": f"{{type(p).__module__}}.{{type(p).__qualname__}}",
    "same_object": p is runtime.current_platform is sglang.srt.platforms.current_platform,
    "is_sglang_platform": isinstance(p, SRTPlatform),
    "out_of_tree": p.is_out_of_tree(),
    "device": [p.device_name, p.device_type, str(p.get_device(0))],
    "total_memory": p.get_device_total_memory(0),
    "rule": selection.rule,
    "plugin": selection.plugin,
    "distribution": selection.distribution,
}})
"""


def select(installed: Installed, combination: Combination, **env: str) -> Outcome:
    code = SELECT_PLATFORM.format(device=combination.device, backend=f"torch_{combination.device}")
    return run_python(code, paths=[installed.site], env=env)


def selection_problems(out: Outcome, combination: Combination, rule: str) -> list[str]:
    expected = {
        "class": f"{combination.package}.platform.{combination.device.title()}SRTPlatform",
        "same_object": True,
        "is_sglang_platform": True,
        "out_of_tree": True,
        "device": [combination.device, combination.device, f"{combination.device}:0"],
        "total_memory": 16 * 1024**3,  # served by the simulated torch device
        "rule": rule,
        "plugin": combination.entry_point,
        "distribution": f"adopt-plat-{combination.index}",
    }
    return [
        f"{combination.label} ({rule}): {key} is {out[key]!r}, expected {value!r}"
        for key, value in expected.items()
        if out[key] != value
    ]


def test_the_combinations_cover_every_kind_host_and_example_option(
    template_dir: Path, installed: Installed
) -> None:
    seen: dict[str, set[str]] = {}
    for combination in installed.combinations:
        for key, value in combination.answers:
            for item in value if isinstance(value, list) else [value]:
                seen.setdefault(key, set()).add(str(item))
    questions = yaml.safe_load((template_dir / "copier.yml").read_text(encoding="utf-8"))
    for key in ("plugin_kind", "host_api", "example_hooks"):
        if key in questions:
            choices = questions[key]["choices"]
            values = set(map(str, choices.values() if isinstance(choices, dict) else choices))
            assert seen.get(key) == values, (
                f"{key}: rendered {seen.get(key)}, the template offers {values}"
            )
    assert installed.of_kind("platform") and installed.of_kind("general")


def test_auto_selects_each_generated_platform_when_its_device_is_present(
    installed: Installed,
) -> None:
    problems = [
        p
        for c in installed.of_kind("platform")
        for p in selection_problems(select(installed, c), c, "single-activated")
    ]
    assert problems == []


def test_sglang_platform_selects_each_generated_platform(installed: Installed) -> None:
    problems = [
        p
        for c in installed.of_kind("platform")
        for p in selection_problems(
            select(installed, c, SGLANG_PLATFORM=c.entry_point), c, "explicit"
        )
    ]
    assert problems == []


# --------------------------------------------------------------------------------------------------
# General plugins
# --------------------------------------------------------------------------------------------------

#: Stand-ins for the SGLang code the example hooks target (this venv lacks what some of those
#: modules import), put in place before SGLang's load_plugins() applies the hooks, as the generated
#: tests do.
LOAD_GENERAL = """
import importlib
from sglang_plugin_runtime.testing import StandInModules, resolve_target, target_owner

class LRUEvictionPolicy:
    def __init__(self):
        self.access_order = {}
    def mark_used(self, uid):
        self.access_order.pop(uid, None)
        self.access_order[uid] = None
    def select_victim(self, candidates):
        return next((uid for uid in self.access_order if uid in candidates),
                    sorted(candidates, key=str)[0])

class Scheduler:
    def run_batch(self, batch):
        return len(batch)

stand_in = StandInModules().start()
stand_in("sglang.srt.parser.code_completion_parser",
         generate_completion_prompt=lambda prompt: prompt)
stand_in("sglang.srt.multimodal.evs.evs_core",
         compute_retained_tokens_count=lambda per_frame, frames, q: per_frame * frames)
stand_in("sglang.srt.managers.scheduler", Scheduler=Scheduler)
stand_in("sglang.srt.lora.eviction_policy", LRUEvictionPolicy=LRUEvictionPolicy)
from sglang.srt.plugins import load_plugins                    # SGLang's own import path
load_plugins()
from sglang.srt.plugins.hook_registry import HookRegistry
hooks = importlib.import_module(PACKAGE + ".hooks")
out = {}
if hasattr(hooks, "PROMPT_TARGET"):
    out["normalize"] = resolve_target(hooks.PROMPT_TARGET)("  hi  ")
if hasattr(hooks, "COUNT_TARGET"):
    out["count"] = resolve_target(hooks.COUNT_TARGET)(1, 2, 0.0)
if hasattr(hooks, "EVICTION_TARGET"):
    policy = resolve_target(hooks.EVICTION_TARGET)()
    policy.mark_used(None)
    policy.mark_used("adapter")
    out["policy_class"] = type(policy).__name__
    out["victim"] = policy.select_victim({None, "adapter"})
if hasattr(hooks, "TIMER_TARGET"):
    target_owner(hooks.TIMER_TARGET)().run_batch(["x"])
    out["timed_calls"] = sum(t.calls for t in hooks.TIMINGS.values())
out["targets"] = sorted((r.target.rsplit(".", 1)[-1].rsplit(":", 1)[-1], r.status,
                         sorted({h.plugin for h in r.hooks})) for r in HookRegistry.describe())
report(out)
"""

# What each example hook does to its stand-in, as (key, value with the hook applied): the variant
# that changes what SGLang does, and the one that only observes (the default).
HOOK_EFFECTS: dict[tuple[str, bool], list[tuple[str, Any]]] = {
    ("before", True): [("normalize", "hi")],
    ("after", True): [("count", 3)],
    ("around_timer", True): [("timed_calls", 1)],
    ("replace_class", True): [
        ("policy_class", "KeepBaseModelEvictionPolicy"),
        ("victim", "adapter"),
    ],
    ("before", False): [("normalize", "  hi  ")],
    ("after", False): [("count", 2)],
    ("around_timer", False): [("timed_calls", 1)],
    ("replace_class", False): [("policy_class", "CountingLRUEvictionPolicy"), ("victim", None)],
}


@pytest.fixture(scope="module")
def loaded(installed: Installed) -> dict[str, Any]:
    """Each general package loaded alone (``SGLANG_PLUGINS``): they all hook the same SGLang
    targets."""
    return {
        c.package: run_python(
            f"PACKAGE = {c.package!r}\n" + LOAD_GENERAL,
            paths=[installed.site],
            env={"SGLANG_PLUGINS": c.entry_point},
        ).result
        for c in installed.of_kind("general")
    }


def test_each_generated_general_plugins_hooks_fire_under_sglangs_load_plugins(
    installed: Installed, loaded: dict[str, Any]
) -> None:
    problems = []
    for combination in installed.of_kind("general"):
        options = dict(combination.answers).get("example_hooks", [])
        change = bool(dict(combination.answers).get("example_hooks_change_behaviour"))
        out = loaded[combination.package]
        expected = {k: v for option in options for k, v in HOOK_EFFECTS[option, change]}
        problems += [
            f"{combination.label}: {key} is {out.get(key)!r}, expected {value!r}"
            for key, value in expected.items()
            if out.get(key) != value
        ]
        # Every target the plugin hooked is applied and attributed to the plugin's entry point.
        if len(out["targets"]) != len(options) or any(
            status != "applied" or plugins != [combination.entry_point]
            for _, status, plugins in out["targets"]
        ):
            problems.append(f"{combination.label}: hooked targets {out['targets']}")
    assert problems == []


# --------------------------------------------------------------------------------------------------
# The runtime's tool sees what SGLang runs
# --------------------------------------------------------------------------------------------------


def test_doctor_reports_every_generated_plugin_and_hook_whichever_module_path_it_imports(
    installed: Installed,
) -> None:
    """With SGLang adopted there is one registry: hooks registered through
    ``sglang.srt.plugins.hook_registry`` (host_api=sglang) are the runtime's, so ``sglang-plugins
    doctor`` shows and checks them all."""
    platform = installed.of_kind("platform")[0]
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "sglang_plugin_runtime",
            "doctor",
            "--json",
            "--simulate",
            platform.device,
            "--simulate-backend",
            f"torch_{platform.device}",
        ],
        env=clean_env([installed.site]),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.stdout, completed.stderr[-4000:]
    report = json.loads(completed.stdout)
    # Every package hooks the same SGLang targets (several class REPLACEs on one: warnings), whose
    # modules this venv cannot all import (--import-targets would say so): each is found, so it
    # waits for its import (information).
    assert completed.returncode == 0, report["problems"]
    assert [p for p in report["problems"] if p["severity"] == "error"] == []
    assert report["platform"]["plugin"] == platform.entry_point
    loaded = {p["plugin"]: p["status"] for p in report["plugins"]["plugins"]}
    generals = installed.of_kind("general")
    assert loaded == {c.entry_point: "loaded" for c in generals}
    hooked: dict[str, set[str]] = {}
    for target in report["hooks"]["targets"]:
        assert target["status"] in ("applied", "pending"), target
        for hook in target["hooks"]:
            hooked.setdefault(hook["source"]["plugin"], set()).add(target["target"])
    expected = {c.entry_point: len(dict(c.answers).get("example_hooks", [])) for c in generals}
    assert {plugin: len(targets) for plugin, targets in hooked.items()} == {
        k: v for k, v in expected.items() if v
    }
