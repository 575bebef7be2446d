"""``sglang-plugins doctor`` in real subprocesses over fake installed distributions: each scenario, its report,
its exit status, and its ``--json`` output validated against the published schema."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import jsonschema
import pytest

from _plugin_site import RUNTIME_SRC, PluginSite

SCHEMA = json.loads((RUNTIME_SRC / "sglang_plugin_runtime" / "cli-schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
PLUGIN_VARS = ("SGLANG_PLATFORM", "SGLANG_PLUGINS", "SGLANG_PLUGINS_STRICT", "SGLANG_DIFFUSION_PLATFORM_OVERRIDE")


@dataclass
class Cli:
    code: int
    out: str
    err: str

    @property
    def json(self) -> Any:
        data = json.loads(self.out)
        VALIDATOR.validate(data)
        return data


def cli(site: PluginSite, *args: str, **env: str) -> Cli:
    full_env = {k: v for k, v in os.environ.items() if k not in PLUGIN_VARS}
    full_env["PYTHONPATH"] = os.pathsep.join([str(site.root), str(RUNTIME_SRC)])
    full_env.update(env)
    result = subprocess.run(
        [sys.executable, "-m", "sglang_plugin_runtime", *args],
        capture_output=True, text=True, env=full_env, cwd=site.root, timeout=120,
    )
    assert "Traceback" not in result.stderr, result.stderr
    return Cli(result.returncode, result.stdout, result.stderr)


def add_general(site: PluginSite, dist: str, name: str, body: str = "pass", at_import: str = "") -> None:
    module = f"{name}_plugin"
    source = (
        "from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookType\n"
        f"{at_import}\n"
        "def register():\n"
        + "".join(f"    {line}\n" for line in body.splitlines())
    )
    site.add(dist, entry_points={"sglang.srt.plugins": {name: f"{module}:register"}}, modules={f"{module}.py": source})


def messages(report: dict[str, Any], severity: str = "error") -> str:
    return "\n".join(p["message"] for p in report["problems"] if p["severity"] == severity)


# --- healthy and empty ------------------------------------------------------------------------------------------


def test_healthy_platform_and_plugin_exit_zero_with_provenance(site: PluginSite) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu")
    add_general(site, "timer-dist", "timer")
    result = cli(site, "doctor", "--json")
    report = result.json
    assert result.code == 0 and report["healthy"] and report["problems"] == []
    platform = report["platform"]
    assert (platform["status"], platform["platform_class"], platform["rule"]) == (
        "selected", "acme_platform.AcmePlatform", "single-activated"
    )
    assert (platform["plugin"], platform["distribution"], platform["version"]) == ("acme", "acme-npu", "1.0")
    assert [(a["plugin"], a["status"]) for a in platform["activations"]] == [("acme", "activated")]
    assert [(p["plugin"], p["status"]) for p in report["plugins"]["plugins"]] == [("timer", "loaded")]


def test_healthy_human_output_names_platform_rule_and_verdict(site: PluginSite) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu")
    result = cli(site, "doctor")
    assert result.code == 0
    assert "acme_platform.AcmePlatform" in result.out
    assert "single-activated" in result.out
    assert "Result: OK" in result.out
    assert "SIMULATED" not in result.out


def test_no_plugin_installed_is_healthy_and_reports_the_fallback(site: PluginSite) -> None:
    result = cli(site, "doctor", "--json")
    report = result.json
    assert result.code == 0
    assert report["platform"]["rule"] == "fallback"
    assert report["platform"]["platform_class"] == "sglang_plugin_runtime.platforms.interface.SRTPlatform"
    assert "no platform plugin is installed" in report["platform"]["reason"]
    assert report["platform"]["activations"] == []


# --- selection failures -------------------------------------------------------------------------------------


def test_two_activated_platforms_fail_and_both_activations_are_listed(site: PluginSite) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu")
    site.add_platform("zeta-gpu", "zeta", "zetagpu")
    result = cli(site, "doctor", "--json")
    report = result.json
    assert result.code == 1 and not report["healthy"]
    assert report["platform"]["status"] == "failed"
    assert report["platform"]["error_type"] == "AmbiguousPlatformError"
    assert [(a["plugin"], a["status"]) for a in report["platform"]["activations"]] == [
        ("acme", "activated"), ("zeta", "activated")
    ]
    assert "SGLANG_PLATFORM" in messages(report)


def test_platform_import_error_is_reported_with_plugin_and_distribution(site: PluginSite) -> None:
    site.add("broken-npu", entry_points={"sglang.srt.platforms": {"broken": "broken_platform:activate"}},
             modules={"broken_platform.py": "import no_such_vendor_module\n"})
    result = cli(site, "doctor", "--json")
    report = result.json
    assert result.code == 1
    activation = report["platform"]["activations"][0]
    assert activation["status"] == "failed"
    assert "ModuleNotFoundError" in activation["error"] and "no_such_vendor_module" in activation["error"]
    problem = next(p for p in report["problems"] if p["plugin"] == "broken")
    assert (problem["severity"], problem["step"], problem["distribution"]) == ("error", "selection", "broken-npu")


def test_activate_raising_is_an_error_even_when_another_platform_was_selected(site: PluginSite) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu")
    site.add_platform("zeta-gpu", "zeta", "zetagpu", "raise RuntimeError('driver 1.2 is too old')")
    result = cli(site, "doctor", "--json")
    report = result.json
    assert result.code == 1
    assert report["platform"]["status"] == "selected" and report["platform"]["plugin"] == "acme"
    zeta = next(a for a in report["platform"]["activations"] if a["plugin"] == "zeta")
    assert zeta["status"] == "failed" and "driver 1.2 is too old" in zeta["error"]


def test_activate_raising_in_human_output_has_message_and_no_traceback(site: PluginSite) -> None:
    site.add_platform("zeta-gpu", "zeta", "zetagpu", "raise RuntimeError('driver 1.2 is too old')")
    result = cli(site, "doctor")
    assert result.code == 1
    assert "activate() raised RuntimeError: driver 1.2 is too old" in result.out
    assert "PROBLEMS FOUND" in result.out


def test_unknown_sglang_platform_fails_listing_the_available_names(site: PluginSite) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu")
    result = cli(site, "doctor", "--json", SGLANG_PLATFORM="nosuch")
    report = result.json
    assert result.code == 1
    assert report["platform"]["error_type"] == "PlatformNotFoundError"
    assert "'acme'" in report["platform"]["error"]
    assert report["environment"]["SGLANG_PLATFORM"] == "nosuch"


def test_strict_env_turns_a_skipped_plugin_into_a_failed_selection(site: PluginSite) -> None:
    site.add_platform("zeta-gpu", "zeta", "zetagpu", "raise RuntimeError('boom')")
    report = cli(site, "doctor", "--json", SGLANG_PLUGINS_STRICT="1").json
    assert report["platform"]["status"] == "failed"
    assert report["platform"]["error_type"] == "PluginLoadError"
    assert report["platform"]["activations"][0]["status"] == "failed"


# --- general plugins --------------------------------------------------------------------------------------------


def test_general_plugin_import_error_fails_doctor_and_others_still_load(site: PluginSite) -> None:
    add_general(site, "bad-dist", "bad", at_import="import no_such_dependency")
    add_general(site, "good-dist", "good")
    result = cli(site, "doctor", "--json")
    report = result.json
    assert result.code == 1
    statuses = {p["plugin"]: p["status"] for p in report["plugins"]["plugins"]}
    assert statuses == {"bad": "failed-import", "good": "loaded"}
    assert "no_such_dependency" in messages(report)


def test_general_plugin_skipped_by_allowlist_is_healthy_and_says_why(site: PluginSite) -> None:
    add_general(site, "one-dist", "one")
    add_general(site, "two-dist", "two")
    result = cli(site, "doctor", "--json", SGLANG_PLUGINS="one")
    report = result.json
    assert result.code == 0
    records = {p["plugin"]: (p["status"], p["reason"]) for p in report["plugins"]["plugins"]}
    assert records["one"][0] == "loaded"
    assert records["two"] == ("skipped-allowlist", "not in SGLANG_PLUGINS")


# --- hooks --------------------------------------------------------------------------------------------------


def test_hook_on_a_missing_module_is_an_error_naming_target_and_plugin(site: PluginSite) -> None:
    add_general(site, "hooks-dist", "hooks", body=(
        "def around(original, *a, **k):\n    return original(*a, **k)\n"
        "HookRegistry.register('no_such_pkg.mod.func', around, HookType.AROUND)"
    ))
    result = cli(site, "doctor", "--json")
    report = result.json
    assert result.code == 1
    target = next(t for t in report["hooks"]["targets"] if t["target"] == "no_such_pkg.mod.func")
    assert target["status"] == "failed"
    problem = next(p for p in report["problems"] if p["target"] == "no_such_pkg.mod.func")
    assert problem["severity"] == "error" and problem["plugin"] == "hooks"


def test_pending_hook_is_a_warning_and_strict_flag_fails_it(site: PluginSite) -> None:
    site.add("target", modules={"target_mod.py": "def work(x):\n    return x\n"})
    add_general(site, "hooks-dist", "hooks", body=(
        "def after(result, *a, **k):\n    return result\n"
        "HookRegistry.register('target_mod.work', after, HookType.AFTER)"
    ))
    relaxed = cli(site, "doctor", "--json")
    report = relaxed.json
    assert relaxed.code == 0
    target = next(t for t in report["hooks"]["targets"] if t["target"] == "target_mod.work")
    assert target["status"] == "pending"
    assert target["hooks"][0]["source"] == {"plugin": "hooks", "distribution": "hooks-dist"}
    assert "pending" in messages(report, "warning")
    assert cli(site, "doctor", "--json", "--strict").code == 1


def test_import_targets_applies_pending_hooks(site: PluginSite) -> None:
    site.add("target", modules={"target_mod.py": "def work(x):\n    return x\n"})
    add_general(site, "hooks-dist", "hooks", body=(
        "def after(result, *a, **k):\n    return result\n"
        "HookRegistry.register('target_mod.work', after, HookType.AFTER)"
    ))
    result = cli(site, "doctor", "--json", "--import-targets")
    report = result.json
    assert result.code == 0, report["problems"]
    target = next(t for t in report["hooks"]["targets"] if t["target"] == "target_mod.work")
    assert target["status"] == "applied"


def test_hook_on_a_missing_attribute_fails_when_its_module_is_imported(site: PluginSite) -> None:
    site.add("target", modules={"target_mod.py": "def work(x):\n    return x\n"})
    add_general(site, "hooks-dist", "hooks", body=(
        "def after(result, *a, **k):\n    return result\n"
        "HookRegistry.register('target_mod:wrok', after, HookType.AFTER)"
    ))
    result = cli(site, "doctor", "--json", "--import-targets")
    report = result.json
    assert result.code == 1
    target = next(t for t in report["hooks"]["targets"] if t["target"].endswith("wrok"))
    assert target["status"] == "failed" and target["error"]


# --- simulation -------------------------------------------------------------------------------------------------

SIMULATED_PLATFORM = """
import torch

def activate():
    device = getattr(torch, "simnpu", None)
    return __name__ + ".SimPlatform" if device is not None and device.is_available() else None

from sglang_plugin_runtime.platforms.device_mixin import PlatformEnum
from sglang_plugin_runtime.platforms.interface import SRTPlatform

class SimPlatform(SRTPlatform):
    _enum = PlatformEnum.OOT
    device_name = "simnpu"
    device_type = "simnpu"
"""


def test_simulate_activates_a_platform_without_hardware_and_labels_it(site: PluginSite) -> None:
    site.add("sim-npu", entry_points={"sglang.srt.platforms": {"sim": "sim_platform:activate"}},
             modules={"sim_platform.py": SIMULATED_PLATFORM})
    without = cli(site, "doctor", "--json").json
    assert without["platform"]["activations"][0]["status"] == "unavailable"
    assert without["simulated"] is False
    result = cli(site, "doctor", "--json", "--simulate", "simnpu")
    report = result.json
    assert report["simulated"] is True
    assert report["simulation"] == {"device_type": "simnpu", "device_count": 1, "backend_module": None}
    assert report["platform"]["platform_class"] == "sim_platform.SimPlatform"
    human = cli(site, "doctor", "--simulate", "simnpu").out
    assert "SIMULATED device: torch.simnpu" in human
    assert "Result: OK [SIMULATED]" in human


def test_plugin_printing_to_stdout_does_not_corrupt_json(site: PluginSite) -> None:
    add_general(site, "noisy-dist", "noisy", body="print('hello from a plugin')")
    result = cli(site, "doctor", "--json")
    assert result.json["healthy"]
    assert "hello from a plugin" in result.err
