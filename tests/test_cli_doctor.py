"""``sglang-plugins doctor`` in real subprocesses over fake installed distributions: each scenario,
its report, its exit status, and its ``--json`` output validated against the published schema."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from _plugin_site import RUNTIME_SRC, PluginSite, platform_module

SCHEMA = json.loads((RUNTIME_SRC / "sglang_plugin_runtime" / "cli-schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
PLATFORMS = "sglang.srt.platforms"
PLUGIN_VARS = (
    "SGLANG_PLATFORM",
    "SGLANG_PLUGINS",
    "SGLANG_PLUGINS_STRICT",
    "SGLANG_DIFFUSION_PLATFORM_OVERRIDE",
)


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
        capture_output=True,
        text=True,
        env=full_env,
        cwd=site.root,
        timeout=120,
    )
    assert "Traceback" not in result.stderr, result.stderr
    return Cli(result.returncode, result.stdout, result.stderr)


def add_general(
    site: PluginSite, dist: str, name: str, body: str = "pass", at_import: str = ""
) -> None:
    module = f"{name}_plugin"
    source = (
        "from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookType\n"
        f"{at_import}\n"
        "def register():\n" + "".join(f"    {line}\n" for line in body.splitlines())
    )
    site.add(
        dist,
        entry_points={"sglang.srt.plugins": {name: f"{module}:register"}},
        modules={f"{module}.py": source},
    )


def messages(report: dict[str, Any], severity: str = "error") -> str:
    return "\n".join(p["message"] for p in report["problems"] if p["severity"] == severity)


# --- healthy and empty ----------------------------------------------------------------------------


def test_healthy_platform_and_plugin_exit_zero_with_provenance(site: PluginSite) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu")
    add_general(site, "timer-dist", "timer")
    result = cli(site, "doctor", "--json")
    report = result.json
    assert result.code == 0 and report["healthy"] and report["problems"] == []
    platform = report["platform"]
    assert (platform["status"], platform["platform_class"], platform["rule"]) == (
        "selected",
        "acme_platform.AcmePlatform",
        "single-activated",
    )
    assert (platform["plugin"], platform["distribution"], platform["version"]) == (
        "acme",
        "acme-npu",
        "1.0",
    )
    assert [(a["plugin"], a["status"]) for a in platform["activations"]] == [("acme", "activated")]
    assert [(p["plugin"], p["status"]) for p in report["plugins"]["plugins"]] == [
        ("timer", "loaded")
    ]


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
    assert (
        report["platform"]["platform_class"]
        == "sglang_plugin_runtime.platforms.interface.SRTPlatform"
    )
    assert "no platform plugin is installed" in report["platform"]["reason"]
    assert report["platform"]["activations"] == []


# --- selection failures ---------------------------------------------------------------------------


def test_two_activated_platforms_fail_and_both_activations_are_listed(site: PluginSite) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu")
    site.add_platform("zeta-gpu", "zeta", "zetagpu")
    result = cli(site, "doctor", "--json")
    report = result.json
    assert result.code == 1 and not report["healthy"]
    assert report["platform"]["status"] == "failed"
    assert report["platform"]["error_type"] == "AmbiguousPlatformError"
    assert [(a["plugin"], a["status"]) for a in report["platform"]["activations"]] == [
        ("acme", "activated"),
        ("zeta", "activated"),
    ]
    assert "SGLANG_PLATFORM" in messages(report)


def test_platform_import_error_is_reported_with_plugin_and_distribution(site: PluginSite) -> None:
    site.add(
        "broken-npu",
        entry_points={"sglang.srt.platforms": {"broken": "broken_platform:activate"}},
        modules={"broken_platform.py": "import no_such_vendor_module\n"},
    )
    result = cli(site, "doctor", "--json")
    report = result.json
    assert result.code == 1
    activation = report["platform"]["activations"][0]
    assert activation["status"] == "failed-import"
    assert (
        "ModuleNotFoundError" in activation["reason"]
        and "no_such_vendor_module" in activation["reason"]
    )
    problem = next(p for p in report["problems"] if p["plugin"] == "broken")
    assert (problem["severity"], problem["step"], problem["distribution"]) == (
        "error",
        "selection",
        "broken-npu",
    )


def test_activate_raising_is_an_error_even_when_another_platform_was_selected(
    site: PluginSite,
) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu")
    site.add_platform("zeta-gpu", "zeta", "zetagpu", "raise RuntimeError('driver 1.2 is too old')")
    result = cli(site, "doctor", "--json")
    report = result.json
    assert result.code == 1
    assert report["platform"]["status"] == "selected" and report["platform"]["plugin"] == "acme"
    zeta = next(a for a in report["platform"]["activations"] if a["plugin"] == "zeta")
    assert zeta["status"] == "failed-call" and "driver 1.2 is too old" in zeta["reason"]


@pytest.mark.fault(
    "cli",
    "activate() raises in auto mode (the plugin is skipped)",
    "doctor shows the message and the plugin's traceback (its own frames only), in the JSON and "
    "the text",
)
def test_activate_raising_in_auto_mode_shows_the_plugins_traceback(site: PluginSite) -> None:
    site.add_platform("zeta-gpu", "zeta", "zetagpu", "raise RuntimeError('driver 1.2 is too old')")
    result = cli(site, "doctor")
    assert result.code == 1
    assert "activate() raised RuntimeError: driver 1.2 is too old" in result.out
    assert "Traceback of platform plugin 'zeta'" in result.out and "zeta_platform.py" in result.out
    assert (
        "sglang_plugin_runtime"
        not in result.out.split("Traceback of platform plugin")[1].split("Selected platform")[0]
    )
    assert "PROBLEMS FOUND" in result.out
    trace = cli(site, "doctor", "--json").json["platform"]["activations"][0]["traceback"]
    assert "zeta_platform.py" in trace and trace.rstrip().endswith(
        "RuntimeError: driver 1.2 is too old"
    )


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
    assert report["platform"]["activations"][0]["status"] == "failed-call"


# --- general plugins ------------------------------------------------------------------------------


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


# --- hooks ----------------------------------------------------------------------------------------


def _hooked(site: PluginSite, target: str) -> None:
    """A general plugin ``hooks`` (distribution ``hooks-dist``), an AROUND hook on ``target``."""
    around = "def around(original, *a, **k):\n    return original(*a, **k)\n"
    register = f"HookRegistry.register({target!r}, around, HookType.AROUND)"
    add_general(site, "hooks-dist", "hooks", body=around + register)


@pytest.mark.fault(
    "cli",
    "a hook targets a module of a package that is not installed (no_such_pkg.mod.func)",
    "an error naming the module that cannot be found, the target and the plugin (exit 1)",
)
def test_hook_on_a_package_not_installed_is_an_error_naming_the_module(site: PluginSite) -> None:
    _hooked(site, "no_such_pkg.mod.func")
    result = cli(site, "doctor", "--json")
    report = result.json
    assert result.code == 1
    (problem,) = [p for p in report["problems"] if p["target"] == "no_such_pkg.mod.func"]
    assert problem["severity"] == "error" and problem["plugin"] == "hooks"
    assert "module 'no_such_pkg' cannot be found" in problem["message"]


@pytest.mark.fault(
    "cli",
    "doctor --strict where SGLang is not installed, with hooks on SGLang's code (sglang.srt...)",
    "information: the hooks table says pending, --strict passes (gate where SGLang is installed)",
)
def test_hook_on_sglang_where_it_is_not_installed_is_information(site: PluginSite) -> None:
    _hooked(site, "sglang.srt.managers.scheduler:Scheduler.run_batch")
    result = cli(site, "doctor", "--json", "--strict")
    report = result.json
    assert result.code == 0, report["problems"]
    (target,) = report["hooks"]["targets"]
    assert target["status"] == "pending" and report["problems"] == []


@pytest.mark.fault(
    "cli",
    "doctor --strict, a hook whose module is installed but not imported yet (the gate failed it)",
    "information, not a warning: --strict passes; the module is not imported",
)
def test_pending_hook_on_a_module_found_passes_the_strict_gate(site: PluginSite) -> None:
    marker = site.root / "imported.txt"
    module = f"open({str(marker)!r}, 'w').close()\ndef work(x):\n    return x\n"
    site.add("target", modules={"target_mod.py": module})
    _hooked(site, "target_mod.work")
    result = cli(site, "doctor", "--json", "--strict")
    report = result.json
    assert result.code == 0, report["problems"]
    target = next(t for t in report["hooks"]["targets"] if t["target"] == "target_mod.work")
    assert target["status"] == "pending"
    assert target["hooks"][0]["source"] == {"plugin": "hooks", "distribution": "hooks-dist"}
    assert not marker.exists()  # found without importing it
    assert "pending" in cli(site, "doctor").out


@pytest.mark.fault(
    "cli",
    "a hook's module misspelled below an installed package (pkg.workr.run, pkg.workr:run)",
    "an error naming the missing module and the target; nothing is imported to find out",
)
@pytest.mark.parametrize(
    ("target", "missing"),
    [
        ("target_pkg.workr.run", "target_pkg.workr"),
        ("target_pkg.workr:run", "target_pkg.workr"),
        ("target_pkg.sub.workr:Cls.run", "target_pkg.sub.workr"),
        # below a namespace package (no __init__.py, as sglang.srt.managers): only submodules are
        # names
        ("target_pkg.space.workr.Scheduler.run", "target_pkg.space.workr"),
    ],
)
def test_a_misspelled_hook_module_is_an_error(site: PluginSite, target: str, missing: str) -> None:
    marker = site.root / "imported.txt"
    modules = {
        "target_pkg/__init__.py": f"open({str(marker)!r}, 'w').close()\n",
        "target_pkg/work.py": "def run():\n    pass\n",
        "target_pkg/sub/__init__.py": "",
        "target_pkg/space/work.py": "class Scheduler:\n    def run(self):\n        pass\n",
    }
    site.add("target", modules=modules)
    _hooked(site, target)
    result = cli(site, "doctor", "--json")
    assert result.code == 1
    (problem,) = [p for p in result.json["problems"] if p["target"] == target]
    assert problem["severity"] == "error" and problem["plugin"] == "hooks"
    assert f"module {missing!r} cannot be found" in problem["message"]
    assert not marker.exists()


@pytest.mark.fault(
    "cli",
    "doctor --import-targets with a misspelled submodule (issue 30, defect 16: a warning, exit 0, "
    "advising "
    "--import-targets)",
    "an error naming the module that cannot be found (exit 1), not advising --import-targets",
)
def test_import_targets_with_a_misspelled_submodule_is_an_error(site: PluginSite) -> None:
    modules = {"target_pkg/__init__.py": "", "target_pkg/work.py": "def run():\n    pass\n"}
    site.add("target", modules=modules)
    _hooked(site, "target_pkg.workr.run")
    result = cli(site, "doctor", "--json", "--import-targets")
    assert result.code == 1
    (problem,) = [p for p in result.json["problems"] if p["target"] == "target_pkg.workr.run"]
    assert problem["severity"] == "error"
    assert "module 'target_pkg.workr' cannot be found" in problem["message"]
    assert "--import-targets" not in problem["message"]


def test_import_targets_applies_pending_hooks(site: PluginSite) -> None:
    site.add("target", modules={"target_mod.py": "def work(x):\n    return x\n"})
    add_general(
        site,
        "hooks-dist",
        "hooks",
        body=(
            "def after(result, *a, **k):\n    return result\n"
            "HookRegistry.register('target_mod.work', after, HookType.AFTER)"
        ),
    )
    result = cli(site, "doctor", "--json", "--import-targets")
    report = result.json
    assert result.code == 0, report["problems"]
    target = next(t for t in report["hooks"]["targets"] if t["target"] == "target_mod.work")
    assert target["status"] == "applied"


def test_hook_on_a_missing_attribute_fails_when_its_module_is_imported(site: PluginSite) -> None:
    site.add("target", modules={"target_mod.py": "def work(x):\n    return x\n"})
    add_general(
        site,
        "hooks-dist",
        "hooks",
        body=(
            "def after(result, *a, **k):\n    return result\n"
            "HookRegistry.register('target_mod:wrok', after, HookType.AFTER)"
        ),
    )
    result = cli(site, "doctor", "--json", "--import-targets")
    report = result.json
    assert result.code == 1
    target = next(t for t in report["hooks"]["targets"] if t["target"].endswith("wrok"))
    assert target["status"] == "failed" and target["error"]


# --- simulation -----------------------------------------------------------------------------------

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
    site.add(
        "sim-npu",
        entry_points={"sglang.srt.platforms": {"sim": "sim_platform:activate"}},
        modules={"sim_platform.py": SIMULATED_PLATFORM},
    )
    without = cli(site, "doctor", "--json").json
    assert without["platform"]["activations"][0]["status"] == "unavailable"
    assert without["simulated"] is False
    result = cli(site, "doctor", "--json", "--simulate", "simnpu")
    report = result.json
    assert report["simulated"] is True
    assert report["simulation"] == {
        "device_type": "simnpu",
        "device_count": 1,
        "backend_module": None,
    }
    assert report["platform"]["platform_class"] == "sim_platform.SimPlatform"
    human = cli(site, "doctor", "--simulate", "simnpu").out
    assert "SIMULATED device: torch.simnpu" in human
    assert "Result: OK [SIMULATED]" in human


@pytest.mark.fault(
    "cli",
    "a plugin prints to sys.stdout while doctor --json runs",
    "the text goes to stderr; stdout holds only the JSON document",
)
def test_plugin_printing_to_stdout_does_not_corrupt_json(site: PluginSite) -> None:
    add_general(site, "noisy-dist", "noisy", body="print('hello from a plugin')")
    result = cli(site, "doctor", "--json")
    assert result.json["healthy"]
    assert "hello from a plugin" in result.err


# --- plugin code that misbehaves under doctor -----------------------------------------------------


@pytest.mark.fault(
    "cli",
    "activate() calls sys.exit(0) under doctor --json",
    "valid JSON on stdout, exit status 1, a problem naming the plugin and SystemExit (it printed "
    "nothing and exited 0)",
)
def test_doctor_reports_activate_calling_sys_exit(site: PluginSite) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu", "import sys; sys.exit(0)")
    result = cli(site, "doctor", "--json")
    report = result.json
    assert result.code == 1 and not report["healthy"]
    problem = next(p for p in report["problems"] if p["plugin"] == "acme")
    assert "SystemExit(0)" in problem["message"] and problem["distribution"] == "acme-npu"


@pytest.mark.fault(
    "cli",
    "a general plugin calls sys.exit(0) at import under doctor --json",
    "valid JSON, exit status 1, the plugin failed-import; the other plugins load",
)
def test_doctor_reports_general_plugin_calling_sys_exit(site: PluginSite) -> None:
    add_general(site, "quit-dist", "quitter", at_import="import sys; sys.exit(0)")
    add_general(site, "good-dist", "good")
    result = cli(site, "doctor", "--json")
    statuses = {p["plugin"]: p["status"] for p in result.json["plugins"]["plugins"]}
    assert result.code == 1 and statuses == {"quitter": "failed-import", "good": "loaded"}


@pytest.mark.fault(
    "cli",
    "plugin code writes to file descriptor 1 directly (os.write, C printf from a vendor library)",
    "the bytes go to stderr; doctor --json's stdout is exactly one JSON document",
)
def test_native_writes_to_stdout_do_not_corrupt_json(site: PluginSite) -> None:
    native = (
        "import ctypes, os\n"
        "os.write(1, b'raw bytes on fd 1\\n')\n"
        "ctypes.CDLL(None).printf(b'buffered by C stdio')\n"
        "os.write(2, b'raw bytes on fd 2\\n')"
    )
    add_general(site, "native-dist", "native", at_import=native)
    result = cli(site, "doctor", "--json")
    assert result.json["healthy"]
    assert (
        "raw bytes on fd 1" in result.err
        and "buffered by C stdio" in result.err
        and "raw bytes on fd 2" in result.err
    )


@pytest.mark.fault(
    "cli",
    "activate() raises KeyboardInterrupt itself under doctor --json",
    "the plugin's failure (not the user's interrupt): valid JSON, exit status 1, the problem names "
    "the plugin",
)
def test_keyboard_interrupt_raised_by_a_plugin_is_its_failure_under_doctor(
    site: PluginSite,
) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu", "raise KeyboardInterrupt")
    result = cli(site, "doctor", "--json")
    assert result.code == 1
    problem = next(p for p in result.json["problems"] if p["plugin"] == "acme")
    assert "KeyboardInterrupt raised by the plugin's own code" in problem["message"]


@pytest.mark.fault(
    "cli",
    "the user presses Ctrl-C (SIGINT) while a plugin's activate() runs under doctor",
    "exit status 130 and 'interrupted' on stderr, as for any command; not reported as the plugin's "
    "failure",
)
def test_a_real_ctrl_c_during_doctor_is_the_users_interrupt(site: PluginSite) -> None:
    import signal
    import time

    marker = site.root / "activating"
    body = f"open({str(marker)!r}, 'w').close(); import time; time.sleep(60)"
    site.add_platform("acme-npu", "acme", "acmenpu", body)
    env = {k: v for k, v in os.environ.items() if k not in PLUGIN_VARS}
    env["PYTHONPATH"] = os.pathsep.join([str(site.root), str(RUNTIME_SRC)])
    process = subprocess.Popen(
        [sys.executable, "-m", "sglang_plugin_runtime", "doctor", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=site.root,
        # A child of a background job inherits SIGINT ignored; the CLI's own handler is what is
        # tested.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 60
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130 and "interrupted" in err and out == ""


@pytest.mark.fault(
    "cli",
    "activate() returns an invalid class name",
    "doctor lists the error once (it was listed twice)",
)
def test_invalid_activate_result_is_listed_once(site: PluginSite) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu", "return 'acme_platform.NoSuchClass'")
    report = cli(site, "doctor", "--json").json
    errors = [p["message"] for p in report["problems"] if "NoSuchClass" in p["message"]]
    assert len(errors) == 1


@pytest.mark.fault(
    "cli",
    "a platform plugin's activate() returns None",
    "doctor shows why, from what the plugin logged while it ran (a DEBUG line is enough), without "
    "-vv",
)
def test_doctor_says_why_a_plugin_is_unavailable(site: PluginSite) -> None:
    body = (
        "import logging; "
        "logging.getLogger('acme_platform').debug('no /dev/acme0: driver not loaded'); "
        "return None"
    )
    site.add_platform("acme-npu", "acme", "acmenpu", body)
    result = cli(site, "doctor")
    assert "None: DEBUG acme_platform: no /dev/acme0: driver not loaded" in result.out
    activation = cli(site, "doctor", "--json").json["platform"]["activations"][0]
    assert activation["log"] == ["DEBUG acme_platform: no /dev/acme0: driver not loaded"]


def test_doctor_says_when_an_unavailable_plugin_logged_no_reason(site: PluginSite) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu", "return None")
    assert "activate() logged no reason" in cli(site, "doctor").out


@pytest.mark.fault(
    "cli",
    "SGLANG_PLATFORM=acme-npu under doctor and list (the plugin is acme_npu)",
    "the error says: did you mean SGLANG_PLATFORM='acme_npu'?",
)
def test_doctor_and_list_suggest_the_platform_name(site: PluginSite) -> None:
    site.add_platform("acme-npu-platform", "acme_npu", "acmenpu")
    doctor = cli(site, "doctor", "--json", SGLANG_PLATFORM="acme-npu").json
    listed = cli(site, "list", "--json", SGLANG_PLATFORM="acme-npu").json
    assert "Did you mean SGLANG_PLATFORM='acme_npu'?" in messages(doctor)
    assert "Did you mean SGLANG_PLATFORM='acme_npu'?" in messages(listed)


@pytest.mark.fault(
    "cli",
    "SGLANG_PLATFORM=ACME misspelled under doctor, the platform's distribution shipping a general "
    "plugin",
    "one error (the platform name, with its suggestion); the general plugin's row says it was not "
    "loaded because the platform selection failed (it read as a second problem: ...other than "
    "SGLANG_PLATFORM='ACME')",
)
def test_doctor_says_general_plugins_wait_for_a_failed_platform_selection(site: PluginSite) -> None:
    site.add(
        "acme-npu",
        entry_points={
            "sglang.srt.platforms": {"acme": "acme_platform:activate"},
            "sglang.srt.plugins": {"acme_hooks": "acme_platform:register"},
        },
        modules={
            "acme_platform.py": platform_module("AcmePlatform", "acmenpu")
            + "def register():\n    pass\n"
        },
    )
    add_general(site, "timer-dist", "timer")
    report = cli(site, "doctor", "--json", SGLANG_PLATFORM="ACME").json
    assert [p["step"] for p in report["problems"]] == ["selection"]
    assert "Did you mean SGLANG_PLATFORM='acme'?" in messages(report)
    rows = {row["plugin"]: row for row in report["plugins"]["plugins"]}
    assert rows["timer"]["status"] == "loaded"
    assert (
        rows["acme_hooks"]["reason"] == "not loaded: the platform selection failed (see its error)"
    )
    text = cli(site, "doctor", SGLANG_PLATFORM="ACME").out
    assert text.count("'ACME'") == 2 and "Problems (1)" in text  # the environment, the one error


@pytest.mark.parametrize("name", ["cuda", "CPU", "musa"])
@pytest.mark.fault(
    "cli",
    "SGLANG_DIFFUSION_PLATFORM_OVERRIDE=cuda (a built-in of SGLang's diffusion engine: cpu, cuda, "
    "rocm, xpu, mps, npu, musa, any case) under doctor -n multimodal_gen",
    "no error, exit 0: the reason says the host selects its built-in platform itself and no "
    "platform plugin is imported (it advised installing a plugin and exited 1)",
)
def test_doctor_accepts_a_diffusion_built_in_platform_name(site: PluginSite, name: str) -> None:
    site.add(
        "vendor-dit",
        entry_points={"sglang.multimodal_gen.platforms": {"vendor": "vendor_dit:activate"}},
        modules={"vendor_dit.py": "raise RuntimeError('must not be imported')\n"},
    )
    result = cli(
        site, "doctor", "-n", "multimodal_gen", "--json", SGLANG_DIFFUSION_PLATFORM_OVERRIDE=name
    )
    report = result.json
    assert result.code == 0 and report["problems"] == [], report["problems"]
    reason = report["platform"]["reason"]
    assert (
        f"SGLANG_DIFFUSION_PLATFORM_OVERRIDE={name!r} names a built-in platform of the host"
        in reason
    )
    assert "no platform plugin is imported" in reason


@pytest.mark.fault(
    "cli",
    "SGLANG_PLUGINS=',' under doctor",
    "a warning problem: it names no plugin, so none loads; how to fix it",
)
def test_doctor_warns_about_an_allowlist_naming_no_plugin(site: PluginSite) -> None:
    add_general(site, "one-dist", "one")
    report = cli(site, "doctor", "--json", SGLANG_PLUGINS=",").json
    assert "SGLANG_PLUGINS=',' names no plugin" in messages(report, "warning")


@pytest.mark.fault(
    "cli",
    "doctor --import-targets imports a hook target's module, which calls sys.exit()",
    "a hooks error naming the module and the target; the report is still printed",
)
def test_target_module_calling_sys_exit_under_import_targets_is_reported(site: PluginSite) -> None:
    site.add(
        "target-dist",
        modules={"exiting_target.py": "import sys\nsys.exit(2)\ndef work():\n    pass\n"},
    )
    add_general(
        site,
        "hooks-dist",
        "hooks",
        body=(
            "HookRegistry.register('exiting_target.work', lambda result: result, HookType.AFTER)"
        ),
    )
    result = cli(site, "doctor", "--json", "--import-targets")
    assert result.code == 1
    assert (
        "importing 'exiting_target' for target 'exiting_target.work' failed: SystemExit(2)"
        in messages(result.json)
    )


@pytest.mark.fault(
    "cli",
    "a plugin registers an atexit print (Python and file descriptor 1), or starts a thread that "
    "prints after the report, under doctor --json",
    "stdout holds exactly the JSON document: the process ends as soon as it is written, so the "
    "late text is never printed (it went to stderr after the report, and the thread held the exit "
    "for 2 s)",
)
def test_plugin_output_after_the_report_never_reaches_stdout(site: PluginSite) -> None:
    late = (
        "import atexit, os, threading, time\n"
        "atexit.register(print, 'printed at exit')\n"
        "atexit.register(os.write, 1, b'written to fd 1 at exit\\n')\n"
        "threading.Thread(target=lambda: (time.sleep(2), print('printed by a thread'))).start()"
    )
    add_general(site, "late-dist", "late", at_import=late)
    result = cli(site, "doctor", "--json")
    assert result.json["healthy"]
    late_texts = ("printed at exit", "written to fd 1 at exit", "printed by a thread")
    assert not any(text in result.out + result.err for text in late_texts)


@pytest.mark.fault(
    "cli",
    "doctor --simulate cuda (or cpu, meta, xpu: a device type torch already has)",
    "exit 2 naming device types that can be simulated (it was an internal error advising "
    "replace_existing=True)",
)
@pytest.mark.parametrize("device", ["cuda", "cpu", "meta", "xpu"])
def test_simulating_a_device_type_of_torch_is_a_usage_error(site: PluginSite, device: str) -> None:
    pytest.importorskip("torch")
    result = cli(site, "doctor", "--simulate", device)
    assert result.code == 2 and result.out == ""
    assert f"--simulate {device}: {device} is one of torch's own device types" in result.err
    assert (
        "npu" in result.err
        and "internal error" not in result.err
        and "replace_existing" not in result.err
    )


@pytest.mark.fault(
    "cli",
    "doctor --simulate npu --simulate-backend sglang_plugin_runtime (a module that is installed)",
    "exit 2: the backend names a module that is not installed here (it was 'internal error: "
    "ModuleNotFoundError')",
)
def test_simulate_backend_naming_an_installed_module_is_a_usage_error(site: PluginSite) -> None:
    pytest.importorskip("torch")
    result = cli(site, "doctor", "--simulate", "npu", "--simulate-backend", "sglang_plugin_runtime")
    assert result.code == 2
    assert (
        "--simulate-backend sglang_plugin_runtime" in result.err
        and "not installed here" in result.err
    )
    assert "internal error" not in result.err


@pytest.mark.fault(
    "cli",
    "doctor --simulate npu where an installed distribution's entry_points.txt has a line that is "
    "no entry point (torch's own import reads every distribution's entry points: TypeError)",
    "exit 2 naming torch's error and the malformed distribution's path (it was 'internal error: "
    "TypeError: Pair.__new__() ...', exit 3)",
)
def test_simulate_where_torchs_import_fails_names_the_malformed_distribution(
    site: PluginSite,
) -> None:
    pytest.importorskip("torch")
    site.add("broken", entry_points_text="[sglang.srt.plugins]\nnot an entry point\n")
    result = cli(site, "doctor", "--simulate", "npu")
    assert result.code == 2, result.err
    assert (
        "importing torch failed (TypeError" in result.err and "broken-1.0.dist-info" in result.err
    )
    assert "internal error" not in result.err


@pytest.mark.fault(
    "cli",
    "a plugin's error text holds characters the terminal cannot encode (PYTHONIOENCODING=ascii, a "
    "C locale without UTF-8 mode)",
    "text doctor prints the whole report with those characters escaped (it exited 3 with no "
    "report)",
)
@pytest.mark.parametrize(
    "env",
    [{"PYTHONIOENCODING": "ascii"}, {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}],
    ids=["ascii", "c-locale"],
)
def test_text_doctor_escapes_what_the_terminal_cannot_encode(
    site: PluginSite, env: dict[str, str]
) -> None:
    site.add_platform(
        "acme-npu",
        "acme",
        "acmenpu",
        "raise RuntimeError('pilote introuvable: caf\\u00e9 \\u2615')",
    )
    result = cli(site, "doctor", **env)
    assert result.code == 1
    assert "pilote introuvable: caf\\xe9 \\u2615" in result.out
    assert "Result: PROBLEMS FOUND" in result.out


@pytest.mark.fault(
    "cli",
    "a platform class whose override cannot accept the host's call (a 400-character TypeError at "
    "import)",
    "text doctor says it once, in Problems; the activation row and the traceback point there (it "
    "said it 3 times)",
)
def test_doctor_prints_each_problem_once(site: PluginSite) -> None:
    extra = "class Bad(AcmePlatform):\n    def get_device_total_memory(self):\n        return 0\n"
    source = platform_module("AcmePlatform", "acme", "return __name__ + '.Bad'", extra=extra)
    site.add(
        "acme-npu",
        entry_points={PLATFORMS: {"acme": "acme_platform:activate"}},
        modules={"acme_platform.py": source},
    )
    out = cli(site, "doctor").out
    assert out.count("cannot accept the host's call") == 1
    assert "Traceback of platform plugin 'acme'" in out and "TypeError: (see Problems)" in out
    assert (
        "acme    acme-npu 1.0  failed" in out and "(see Problems)" in out.split("Traceback of")[0]
    )


STRICT_PLATFORM = """
import torch
from sglang_plugin_runtime.platforms.device_mixin import PlatformEnum
from sglang_plugin_runtime.platforms.interface import SRTPlatform

class SimPlatform(SRTPlatform):
    _enum = PlatformEnum.OOT
    device_name = "simnpu"
    device_type = "simnpu"

    def synchronise(self):
        pass

    def get_device_total_memory(self, device_id=0):
        return "16 GiB"

def activate():
    device = getattr(torch, "simnpu", None)
    return __name__ + ".SimPlatform" if device is not None and device.is_available() else None
"""


@pytest.mark.fault(
    "cli",
    "doctor --strict --simulate on a platform with a misspelled override and a method returning "
    "the wrong type",
    "exit 1: the misspelling and the conformance check's return-type error fail the gate (it said "
    "OK, exit 0)",
)
def test_strict_doctor_fails_on_what_the_conformance_check_catches(site: PluginSite) -> None:
    site.add(
        "sim-npu",
        entry_points={PLATFORMS: {"sim": "sim_platform:activate"}},
        modules={"sim_platform.py": STRICT_PLATFORM},
    )
    # SGLang runs it: warnings only
    assert cli(site, "doctor", "--json", "--simulate", "simnpu").code == 0
    result = cli(site, "doctor", "--json", "--strict", "--simulate", "simnpu")
    report = result.json
    assert result.code == 1 and report["platform"]["platform_class"] == "sim_platform.SimPlatform"
    assert "did you mean 'synchronize'?" in messages(report, "warning")
    conformance = [p for p in report["problems"] if p["message"].startswith("conformance check:")]
    assert any("get_device_total_memory" in p["message"] for p in conformance), report["problems"]
    assert {p["plugin"] for p in conformance} == {"sim"}


@pytest.mark.fault(
    "cli",
    "doctor --strict on the machine of a platform whose device method raises at SGLang's first "
    "call (get_device_total_memory), no simulation",
    "exit 1 naming the method and the error: the plugin's activate() found its device here, so the "
    "gate makes SGLang's device calls on it (it passed: device calls were made only on a simulated "
    "device)",
)
def test_strict_doctor_makes_the_device_calls_on_the_device_activate_found(
    site: PluginSite,
) -> None:
    extra = """
        class AcmePlatform(AcmeBase):
            def get_device_total_memory(self, device_id=0):
                raise RuntimeError("no memory query on this driver")
    """
    module = platform_module(
        "AcmeBase", "acmenpu", "return __name__ + '.AcmePlatform'", extra=extra
    )
    site.add(
        "acme-npu",
        entry_points={PLATFORMS: {"acme": "acme_platform:activate"}},
        modules={"acme_platform.py": module},
    )
    # SGLang would select it: only the strict gate calls the device
    assert cli(site, "doctor").code == 0
    result = cli(site, "doctor", "--json", "--strict")
    report = result.json
    assert result.code == 1
    found = [p for p in report["problems"] if "get_device_total_memory" in p["message"]]
    assert found and all(
        p["plugin"] == "acme" and "no memory query on this driver" in p["message"] for p in found
    )


@pytest.mark.fault(
    "cli",
    "a general plugin's register() raises under doctor",
    "doctor shows the message and the plugin's traceback (its frames and the frames it called), in "
    "the JSON and the text (it showed one line)",
)
def test_register_raising_shows_the_plugins_traceback(site: PluginSite) -> None:
    add_general(site, "broken-dist", "broken", body="import json\njson.loads('{not json')")
    result = cli(site, "doctor")
    assert result.code == 1 and "plugin 'broken' failed-call" in result.out
    trace = result.out.split("Traceback of general plugin 'broken'")[1].split("\nHooks")[0]
    assert (
        "broken_plugin.py" in trace
        and "json/decoder.py" in trace
        and "JSONDecodeError: (see Problems)" in trace
    )
    record = cli(site, "doctor", "--json").json["plugins"]["plugins"][0]
    assert record["status"] == "failed-call" and "broken_plugin.py" in record["traceback"]


# ---- released SGLang's own registry, and the SGLang releases a plugin declares -------------------

#: Released SGLang's registry as a plugin sees it (``_hooks``: target -> [(type, hook, source)]),
#: and a version.
FAKE_SGLANG = {
    "sglang/__init__.py": "",
    "sglang/srt/__init__.py": "",
    "sglang/srt/plugins/__init__.py": "",
    "sglang/srt/plugins/hook_registry.py": (
        "from collections import defaultdict, namedtuple\n"
        "HookSource = namedtuple('HookSource', 'plugin_name dist_name')\n"
        "class HookRegistry:\n"
        "    _hooks = defaultdict(list)\n"
        "    @classmethod\n"
        "    def register(cls, target, hook, hook_type=None):\n"
        "        cls._hooks[target].append((hook_type, hook, HookSource('hooks', 'hooks-dist')))\n"
    ),
    "sglang/srt/managers/__init__.py": "",
    "sglang/srt/managers/scheduler.py": (
        "class Scheduler:\n    def run_batch(self):\n        pass\n"
    ),
}


def _plugin_on_sglangs_registry(site: PluginSite, *targets: str) -> None:
    site.add("sglang", "0.5.23", modules=FAKE_SGLANG)
    body = "from sglang.srt.plugins.hook_registry import HookRegistry as Theirs\n" + "".join(
        f"Theirs.register({target!r}, print)\n" for target in targets
    )
    add_general(site, "hooks-dist", "hooks", body=body)


@pytest.mark.fault(
    "cli",
    "doctor under released SGLang: a plugin registers with SGLang's own registry, a module "
    "misspelled",
    "checked as SGLang's apply_hooks() resolves it: an error naming the module and the target",
)
def test_doctor_checks_the_targets_in_released_sglangs_registry(site: PluginSite) -> None:
    good, bad = (
        "sglang.srt.managers.scheduler.Scheduler.run_batch",
        "sglang.srt.managers.schedulr.Scheduler.x",
    )
    _plugin_on_sglangs_registry(site, good, bad)
    result = cli(site, "doctor", "--json", "--strict")
    report = result.json
    assert report["hooks"]["sglang_registry_targets"] == sorted([good, bad])
    assert result.code == 1
    (problem,) = report["problems"]
    assert (
        problem["target"] == bad and problem["plugin"] == "hooks" and problem["severity"] == "error"
    )
    assert "module 'sglang.srt.managers.schedulr' cannot be found" in problem["message"]


def test_doctor_passes_released_sglangs_registry_when_every_module_is_found(
    site: PluginSite,
) -> None:
    _plugin_on_sglangs_registry(site, "sglang.srt.managers.scheduler:Scheduler.run_batch")
    result = cli(site, "doctor", "--strict")
    assert result.code == 0, result.out
    assert "Hooks in released SGLang's registry" in result.out and "module found" in result.out
    deep = cli(site, "doctor", "--json", "--strict", "--import-targets")
    assert deep.code == 0, deep.json["problems"]


def test_import_targets_resolves_released_sglangs_targets_as_sglang_does(site: PluginSite) -> None:
    _plugin_on_sglangs_registry(site, "sglang.srt.managers.scheduler.Scheduler.run_batchh")
    # the module is found; the attribute is not looked up
    assert cli(site, "doctor", "--strict").code == 0
    deep = cli(site, "doctor", "--json", "--import-targets")
    assert deep.code == 1
    (problem,) = deep.json["problems"]
    assert "run_batchh" in problem["message"] and problem["plugin"] == "hooks"


def _declaring(
    site: PluginSite, supported: str, installed: str | None, other_requirements: str = ""
) -> Path:
    """hooks-dist 2.0, declaring ``sglang<supported>`` in its extra ``sglang`` after
    ``other_requirements`` (``Requires-Dist:`` lines); SGLang ``installed`` (None: not)."""
    if installed is not None:
        site.add("sglang", installed)
    dist_info = site.add(
        "hooks-dist",
        "2.0",
        entry_points={"sglang.srt.plugins": {"hooks": "hooks_mod:register"}},
        modules={"hooks_mod.py": "def register():\n    pass\n"},
    )
    metadata = dist_info / "METADATA"
    requirement = f'Requires-Dist: sglang{supported}; extra == "sglang"\nProvides-Extra: sglang\n'
    metadata.write_text(
        metadata.read_text().replace(
            "Version: 2.0\n", f"Version: 2.0\n{other_requirements}{requirement}"
        )
    )
    return dist_info


@pytest.mark.fault(
    "cli",
    "a plugin declares supported SGLang releases (its extra sglang) and another SGLang is "
    "installed",
    "doctor: a row per plugin and a warning naming the plugin, its range and the installed SGLang",
)
def test_doctor_reports_a_plugin_outside_its_supported_sglang_range(site: PluginSite) -> None:
    _declaring(site, ">=0.5.23,<0.6", "0.6.1")
    result = cli(site, "doctor", "--json")
    report = result.json
    assert result.code == 0  # a warning; --strict fails it
    assert report["sglang"] == {
        "installed": "0.6.1",
        "installed_release": None,  # no release the runtime has data of
        "plugins": [
            {
                "plugin": "hooks",
                "distribution": "hooks-dist",
                "version": "2.0",
                "supports": ">=0.5.23,<0.6",
                "status": "unsupported",
                "releases": ["0.5.23"],  # what its hooks and platform are judged against
            }
        ],
    }
    (problem,) = report["problems"]
    assert problem["severity"] == "warning" and problem["step"] == "sglang"
    assert (
        "'hooks' (hooks-dist 2.0) supports SGLang >=0.5.23,<0.6, but SGLang 0.6.1"
        in problem["message"]
    )
    assert cli(site, "doctor", "--strict").code == 1


@pytest.mark.parametrize(
    ("installed", "status"),
    [("0.5.23", "supported"), ("0.5.30rc1", "supported"), (None, "not-checked")],
)
def test_doctor_row_for_a_supported_or_absent_sglang(
    site: PluginSite, installed: str | None, status: str
) -> None:
    _declaring(site, ">=0.5.23,<0.6", installed)
    result = cli(site, "doctor", "--strict")
    assert result.code == 0, result.out
    section = result.out[result.out.index("Supported SGLang") :]
    row = next(line for line in section.splitlines() if line.strip().startswith("hooks "))
    assert row.split()[-3:] == [">=0.5.23,<0.6", status, "0.5.23"], result.out


@pytest.mark.fault(
    "cli",
    "a plugin depends on sglang-router>=0.1 before its requirement on sglang (>=0.5.23,<0.6), and "
    "SGLang 0.6.1 is installed",
    "doctor reads the requirement on sglang itself (a PEP 508 name is split exactly): supports "
    ">=0.5.23,<0.6, unsupported (was: 'supports -router>=0.1', not-checked)",
)
def test_doctor_tells_a_requirement_on_sglang_router_from_one_on_sglang(site: PluginSite) -> None:
    _declaring(site, ">=0.5.23,<0.6", "0.6.1", "Requires-Dist: sglang-router>=0.1\n")
    [row] = cli(site, "doctor", "--json").json["sglang"]["plugins"]
    assert (row["supports"], row["status"]) == (">=0.5.23,<0.6", "unsupported")


def _latin1_egg(site: PluginSite) -> Path:
    """legacy-hooks 0.9, an egg-info general plugin whose requires.txt is Latin-1."""
    egg = site.root / "legacy_hooks.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: legacy-hooks\nVersion: 0.9\n\n")
    (egg / "entry_points.txt").write_text("[sglang.srt.plugins]\nlegacy = legacy_hooks:register\n")
    (egg / "requires.txt").write_bytes("sglang>=0.5.23  # Ren\u00e9's fork\n".encode("latin-1"))
    (site.root / "legacy_hooks.py").write_text("def register():\n    pass\n")
    return egg


@pytest.mark.fault(
    "cli",
    "an egg-info plugin whose requires.txt is Latin-1 (not UTF-8)",
    "doctor reports it: a warning naming the file, the plugin and its distribution and saying to "
    "save it as UTF-8 or reinstall, the row not-checked; every other step runs (was: exit 3, "
    "'internal error: UnicodeDecodeError ... bug in sglang-plugins', no report)",
)
def test_a_latin1_requires_txt_is_a_warning_naming_the_file_not_an_internal_error(
    site: PluginSite,
) -> None:
    egg = _latin1_egg(site)
    result = cli(site, "doctor", "--json")
    report = result.json
    assert result.code == 0 and report["plugins"]["plugins"][0]["status"] == "loaded"
    assert report["sglang"]["plugins"][0]["status"] == "not-checked"
    [problem] = report["problems"]
    assert problem["severity"] == "warning" and problem["plugin"] == "legacy"
    assert str(egg / "requires.txt") in problem["message"]
    assert "legacy-hooks 0.9" in problem["message"] and "UTF-8" in problem["message"]


@pytest.mark.fault(
    "cli",
    "message: doctor's text on a Latin-1 requires.txt",
    "names the file, the plugin and its distribution and says how to fix it (was: 'internal error: "
    "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xe9 ...', naming neither)",
)
def test_doctors_text_on_a_latin1_requires_txt_names_the_file_and_the_distribution(
    site: PluginSite,
) -> None:
    egg = _latin1_egg(site)
    out = cli(site, "doctor").out
    assert f"plugin 'legacy' (legacy-hooks 0.9) in {egg / 'requires.txt'}" in out
    assert "Save that file as UTF-8, or reinstall the distribution" in out


@pytest.mark.fault(
    "cli",
    "doctor --simulate where NumPy is not installed (the CPU build of torch warns at import; issue "
    "28)",
    "no 'Failed to initialize NumPy' warning heads the report: nothing doctor does needs NumPy",
)
def test_simulate_does_not_print_torchs_numpy_warning(site: PluginSite) -> None:
    pytest.importorskip("torch")
    result = cli(site, "doctor", "--simulate", "npu")
    assert result.code == 0, result.out
    assert "NumPy" not in result.err and "NumPy" not in result.out


# --- the startup phase ----------------------------------------------------------------------------

#: acme-npu: a startup plugin that brings the backend up, and a platform whose activate() finds the
#: device only once it is up (as a vendor's torch extension, imported by the startup plugin).
BACKEND_FIRST = {
    "acme_backend.py": "READY = []\n",
    "acme_boot.py": "def boot():\n    import acme_backend\n    acme_backend.READY.append(1)\n",
    "acme_platform.py": platform_module(
        "AcmePlatform",
        "acmenpu",
        "import acme_backend; return __name__ + '.{cls}' if acme_backend.READY else None",
    ),
}


def _backend_first(site: PluginSite, startup: str = "acme_boot:boot") -> None:
    site.add(
        "acme-npu",
        entry_points={
            PLATFORMS: {"acme": "acme_platform:activate"},
            "sglang.srt.startup_plugins": {"acme_boot": startup},
        },
        modules=BACKEND_FIRST,
    )


@pytest.mark.fault(
    "cli",
    "doctor where a startup plugin makes the platform's activate() find its device (the launcher "
    "and an adopted SGLang run startup plugins before selection)",
    "doctor runs the startup phase first, as every server process does: the plugin's platform is "
    "selected (was: the fallback and exit 0)",
)
def test_doctor_runs_the_startup_plugins_before_it_selects_the_platform(site: PluginSite) -> None:
    _backend_first(site)
    report = cli(site, "doctor", "--json").json
    assert (report["platform"]["plugin"], report["platform"]["rule"]) == (
        "acme",
        "single-activated",
    )
    assert [o["status"] for o in report["plugins"]["startup"]] == ["loaded"]


@pytest.mark.parametrize("platform_env", [{}, {"SGLANG_PLATFORM": "acme"}])
@pytest.mark.fault(
    "cli",
    "SGLANG_PLUGINS lists general plugins only and the selected platform's distribution ships a "
    "startup plugin",
    "the allowlist still skips it (SGLang's filter), but with a WARNING in the log and in doctor "
    "naming it and the value to set (SGLANG_PLUGINS=ops,acme_boot) (was: INFO only, no problem)",
)
def test_the_selected_platforms_startup_plugin_skipped_by_the_allowlist_is_a_warning(
    site: PluginSite, platform_env: dict[str, str]
) -> None:
    site.add(
        "acme-npu",
        entry_points={
            PLATFORMS: {"acme": "acme_platform:activate"},
            "sglang.srt.startup_plugins": {"acme_boot": "acme_boot:boot"},
        },
        modules={**BACKEND_FIRST, "acme_platform.py": platform_module("AcmePlatform", "acmenpu")},
    )
    add_general(site, "ops-dist", "ops")
    result = cli(site, "doctor", "--json", "-v", SGLANG_PLUGINS="ops", **platform_env)
    report = result.json
    assert report["platform"]["plugin"] == "acme"
    [problem] = [p for p in report["problems"] if p["plugin"] == "acme_boot"]
    assert (
        problem["severity"] == "warning" and "SGLANG_PLUGINS='ops,acme_boot'" in problem["message"]
    )
    assert "WARNING" in result.err and "'acme_boot'" in result.err
