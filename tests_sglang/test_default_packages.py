"""Packages generated with every default work, unchanged, on each SGLang release (0.5.11 on).

Only ``plugin_kind`` is answered. Installed next to SGLang, such a package builds on SGLang's own
classes (its ``host.py`` finds ``sglang`` installed), so SGLang's real ``current_platform`` selects
the platform on a simulated device, and SGLang's real ``load_plugins()`` applies the general
plugin's hooks. Each scenario is a fresh subprocess of the SGLang venv with exactly the generated
package on ``sys.path``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import render
from scenarios import SGLANG_VERSION, generated_stand_ins, pip_install_target, run_python

# Release-generic: make test-releases runs them against every SGLang release.
pytestmark = [pytest.mark.subprocess, pytest.mark.every_release]

SIMULATE = """
from sglang_plugin_runtime.testing import simulated_device
_sim = simulated_device("mydevice", backend_module="torch_mydevice", privateuse1=True).start()
"""

PROBE = """
import sys
try:
    from sglang.srt.platforms import current_platform as p
except Exception as exc:  # what SGLang raised, for the test to judge
    report({"ok": False, "error": type(exc).__name__, "message": str(exc)})
else:
    from sglang.srt.platforms.interface import SRTPlatform
    from sglang_mydevice_platform.host import HOST_PACKAGE
    info = {"ok": True, "class": f"{type(p).__module__}.{type(p).__qualname__}",
            "host": HOST_PACKAGE,
            "is_sglang_platform": isinstance(p, SRTPlatform), "out_of_tree": p.is_out_of_tree()}
    if p.device_type == "mydevice":
        info["total_memory"] = p.get_device_total_memory(0)
        info["device"] = str(p.get_device(0))
    report(info)
"""


@dataclass
class Default:
    project: Path
    site: Path


def _default(kind: str, template_dir: Path, tmp: pytest.TempPathFactory) -> Default:
    project = render(template_dir, tmp.mktemp(f"default-{kind}"), plugin_kind=kind)
    assert "host_api: auto" in (project / ".copier-answers.yml").read_text(encoding="utf-8")
    return Default(project, pip_install_target(project, tmp.mktemp(f"default-site-{kind}")))


@pytest.fixture(scope="module")
def default_platform(template_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Default:
    return _default("platform", template_dir, tmp_path_factory)


@pytest.fixture(scope="module")
def default_general(template_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Default:
    return _default("general", template_dir, tmp_path_factory)


def test_sglang_selects_the_default_platform_on_a_simulated_device(
    default_platform: Default,
) -> None:
    out = run_python(SIMULATE + PROBE, paths=[default_platform.site])
    assert out["ok"], out.result
    assert out["class"] == "sglang_mydevice_platform.platform.MydeviceSRTPlatform"
    assert out["host"] == "sglang.srt" and out["is_sglang_platform"] and out["out_of_tree"]
    assert out["total_memory"] == 16 * 1024**3 and out["device"] == "mydevice:0"


def test_sglang_platform_names_the_default_platform(default_platform: Default) -> None:
    out = run_python(
        SIMULATE + PROBE, paths=[default_platform.site], env={"SGLANG_PLATFORM": "mydevice"}
    )
    assert out["ok"], out.result
    assert out["class"] == "sglang_mydevice_platform.platform.MydeviceSRTPlatform"


def test_without_the_device_sglang_falls_back_and_refuses_it_by_name(
    default_platform: Default,
) -> None:
    out = run_python(PROBE, paths=[default_platform.site])
    assert out["ok"] and out["class"] == "sglang.srt.platforms.interface.SRTPlatform", out.result
    named = run_python(PROBE, paths=[default_platform.site], env={"SGLANG_PLATFORM": "mydevice"})
    assert not named["ok"] and named["error"] == "RuntimeError"
    assert "'mydevice'" in named["message"] and "activate() returned None" in named["message"]


LOAD = """
from sglang.srt.plugins import load_plugins
from sglang.srt.plugins.hook_registry import HookRegistry
load_plugins()
from sglang_example_hooks import hooks
from sglang_example_hooks.host import HOST_PACKAGE
report({
    "host": HOST_PACKAGE,
    "prompt": resolve_target(hooks.PROMPT_TARGET)("  hello  "),
    "count": resolve_target(hooks.COUNT_TARGET)(1, 2, 0.0),
    "batch": target_owner(hooks.TIMER_TARGET)().run_batch(["a", "b"]),
    "timings": hooks.TIMINGS[hooks.TIMER_TARGET].calls,
    "counted": dict(hooks.COUNTS),
    "sources": sorted({tuple(src)
                       for hooks_ in HookRegistry._hooks.values() for _t, _h, src in hooks_}),
    "targets": len(HookRegistry._hooks),
})
"""


def test_sglangs_load_plugins_fires_every_default_hook_and_they_change_nothing(
    default_general: Default,
) -> None:
    out = run_python(
        generated_stand_ins(default_general.project) + LOAD, paths=[default_general.site]
    )
    assert out["host"] == "sglang.srt"  # registered with SGLang's own HookRegistry
    assert out["prompt"] == "  hello  " and out["count"] == 2  # BEFORE and AFTER only observe
    assert out["counted"] == {"prompts": 1, "prompt characters": 9, "video tokens": 2}
    assert out["batch"] == 2 and out["timings"] == 1  # AROUND, by @plugin_hook
    assert out["targets"] == 3  # no class REPLACE unless asked for
    # SGLang attributes them to the plugin
    assert out["sources"] == [["example", "sglang-example-hooks"]]


RUNTIME_PROBE = """
from sglang_plugin_runtime.platforms import current_platform_selection
selection = current_platform_selection()
report({"class": selection.class_path, "rule": selection.rule, "plugin": selection.plugin})
"""


def test_the_runtime_selects_the_default_platform_built_on_sglangs_classes(
    default_platform: Default,
) -> None:
    # The class subclasses released SGLang's SRTPlatform (not the runtime's): SGLang runs it, so the
    # runtime does.
    out = run_python(
        SIMULATE + RUNTIME_PROBE, paths=[default_platform.site], env={"SGLANG_PLATFORM": "mydevice"}
    )
    assert out["class"] == "sglang_mydevice_platform.platform.MydeviceSRTPlatform", out.result
    assert (out["rule"], out["plugin"]) == ("explicit", "mydevice")


def test_doctor_simulate_reports_the_default_platform_where_sglang_is_installed(
    default_platform: Default,
) -> None:
    import json
    import subprocess
    import sys

    from scenarios import clean_env

    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "sglang_plugin_runtime",
            "doctor",
            "--json",
            "--simulate",
            "mydevice",
            "--simulate-backend",
            "torch_mydevice",
        ],
        env=clean_env([default_platform.site]),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    report = json.loads(completed.stdout)
    assert report["platform"]["status"] == "selected", report["platform"]
    assert (
        report["platform"]["platform_class"]
        == "sglang_mydevice_platform.platform.MydeviceSRTPlatform"
    )
    assert not [p for p in report["problems"] if p["severity"] == "error"], report["problems"]


# ---- a customer's machine: the wheel from an index without the runtime, on released SGLang -------


def _wheel_from_an_index_without_the_runtime(project: Path, tmp: pytest.TempPathFactory) -> Path:
    """Build the wheel, then ``pip install --no-index --find-links`` it from a folder holding it
    alone (this venv has SGLang and what it needs): any requirement the folder cannot meet fails the
    install."""
    import importlib.metadata
    import subprocess
    import sys

    from scenarios import clean_env

    index = tmp.mktemp("find-links")
    PACKAGING = f"packaging=={importlib.metadata.version('packaging')}"
    # The index has what the wheel requires besides the runtime (packaging, as PyPI has it).
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--dest", str(index), PACKAGING],
        check=True,
        capture_output=True,
        env=clean_env(),
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--wheel",
            "--no-isolation",
            "--outdir",
            str(index),
            str(project),
        ],
        check=True,
        capture_output=True,
        env=clean_env(),
    )
    site = tmp.mktemp("customer-site")
    installed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-index",
            "--find-links",
            str(index),
            "--target",
            str(site),
            "--no-compile",
            _distribution(project),
        ],
        capture_output=True,
        text=True,
        env=clean_env(),
        check=False,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return site


def _distribution(project: Path) -> str:
    import yaml

    return str(
        yaml.safe_load((project / ".copier-answers.yml").read_text(encoding="utf-8"))[
            "distribution_name"
        ]
    )


#: The runtime's serving path is unimportable from here on: what runs is released SGLang and the
#: plugin alone.
WITHOUT_THE_RUNTIME = """
import sys
for _name in ("sglang_plugin_runtime.platforms", "sglang_plugin_runtime.plugins"):
    sys.modules[_name] = None
"""


def test_the_default_wheels_install_without_the_runtime_and_run_on_released_sglang(
    default_platform: Default, default_general: Default, tmp_path_factory: pytest.TempPathFactory
) -> None:
    platform_site = _wheel_from_an_index_without_the_runtime(
        default_platform.project, tmp_path_factory
    )
    general_site = _wheel_from_an_index_without_the_runtime(
        default_general.project, tmp_path_factory
    )
    selected = run_python(
        SIMULATE + WITHOUT_THE_RUNTIME + PROBE,
        paths=[platform_site],
        env={"SGLANG_PLATFORM": "mydevice", "SGLANG_PLUGINS_STRICT": "1"},
    )
    assert (
        selected["ok"]
        and selected["class"] == "sglang_mydevice_platform.platform.MydeviceSRTPlatform"
    ), selected
    assert selected["host"] == "sglang.srt"
    loaded = run_python(
        generated_stand_ins(default_general.project) + WITHOUT_THE_RUNTIME + LOAD,
        paths=[general_site],
        env={"SGLANG_PLUGINS_STRICT": "1"},
    )
    assert loaded["count"] == 2 and loaded["counted"]["video tokens"] == 2


#: Nothing of the runtime can be imported from here on, as where it is not installed.
WITHOUT_ANY_OF_THE_RUNTIME = """
import sys
sys.modules["sglang_plugin_runtime"] = None
"""

DIFFUSION_PROBE = """
import importlib
from sglang.srt.platforms.interface import SRTPlatform
from sglang_mydevice_platform import host
from sglang_mydevice_platform.platform import MydeviceSRTPlatform
try:
    importlib.import_module("sglang_mydevice_platform.diffusion")
    diffusion = "imported"
except ImportError as exc:
    diffusion = str(exc)
report({"srt": issubclass(MydeviceSRTPlatform, SRTPlatform), "host": host.HOST_PACKAGE,
        "supported": host.DIFFUSION_SUPPORTED, "diffusion": diffusion})
"""


@pytest.mark.fault(
    "templates",
    "a platform package generated with with_mm_platform=true, on released SGLang without the "
    "plugin kit's runtime",
    "its SRT platform class imports, built on SGLang's own classes; only the diffusion module says "
    "it needs the runtime (host.py imported sglang_plugin_runtime unconditionally: nothing of the "
    "package could be imported)",
)
def test_a_platform_with_diffusion_imports_on_released_sglang_without_the_runtime(
    template_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    project = render(
        template_dir, tmp_path_factory.mktemp("mm"), plugin_kind="platform", with_mm_platform=True
    )
    site = _wheel_from_an_index_without_the_runtime(project, tmp_path_factory)
    out = run_python(WITHOUT_ANY_OF_THE_RUNTIME + DIFFUSION_PROBE, paths=[site])
    assert out["srt"] and out["host"] == "sglang.srt" and out["supported"] is False, out.result
    assert "the runtime is not installed here" in out["diffusion"], out["diffusion"]


# ---- the gate where released SGLang is installed -------------------------------------------------


def _doctor(site: Path, *args: str) -> tuple[int, dict]:
    import json
    import subprocess
    import sys

    from scenarios import clean_env

    completed = subprocess.run(
        [sys.executable, "-m", "sglang_plugin_runtime", "doctor", "--json", *args],
        env=clean_env([site]),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return completed.returncode, json.loads(completed.stdout)


def test_doctor_strict_passes_the_default_packages_on_this_release(
    default_platform: Default, default_general: Default
) -> None:
    # Issue 35: the gate passes what every default generates, on every release of the default range
    # (make test-releases runs this file on each).
    code, report = _doctor(
        default_platform.site,
        "--strict",
        "--simulate",
        "mydevice",
        "--simulate-backend",
        "torch_mydevice",
    )
    assert code == 0, report["problems"]
    assert report["platform"]["status"] == "selected", report["platform"]
    code, report = _doctor(default_general.site, "--strict")
    assert code == 0, report["problems"]
    assert len(report["hooks"]["sglang_registry_targets"]) == 3


@pytest.mark.parametrize(
    "examples", [[], ["before"], ["after"], ["around_timer"], ["replace_class"]]
)
def test_doctor_strict_passes_a_correct_general_plugin_on_released_sglang(
    template_dir: Path, tmp_path_factory: pytest.TempPathFactory, examples: list[str]
) -> None:
    project = render(
        template_dir, tmp_path_factory.mktemp("gate"), plugin_kind="general", example_hooks=examples
    )
    code, report = _doctor(
        pip_install_target(project, tmp_path_factory.mktemp("gate-site")), "--strict"
    )
    assert code == 0, report["problems"]
    assert len(report["hooks"]["sglang_registry_targets"]) == len(examples)
    assert report["sglang"]["plugins"][0]["status"] == "supported"


def test_doctor_strict_names_a_misspelled_module_on_released_sglang(
    template_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    project = render(template_dir, tmp_path_factory.mktemp("gate"), plugin_kind="general")
    hooks = project / "sglang_example_hooks" / "hooks.py"
    hooks.write_text(
        hooks.read_text(encoding="utf-8").replace("managers.scheduler:", "managers.schedular:")
    )
    code, report = _doctor(
        pip_install_target(project, tmp_path_factory.mktemp("gate-site")), "--strict"
    )
    assert code == 1
    (problem,) = report["problems"]
    assert problem["target"] == "sglang.srt.managers.schedular:Scheduler.run_batch"
    assert "module 'sglang.srt.managers.schedular' cannot be found" in problem["message"]


def test_a_package_for_another_sglang_warns_once_on_released_sglang(
    template_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    project = render(
        template_dir,
        tmp_path_factory.mktemp("range"),
        plugin_kind="general",
        sglang_versions=">=0.6",
    )
    site = pip_install_target(project, tmp_path_factory.mktemp("range-site"))
    code = (
        "from sglang.srt.plugins import load_plugins\n"
        "load_plugins()\nload_plugins()\nreport(True)\n"
    )
    out = run_python(code, paths=[site])
    warnings = [line for line in out.stderr.splitlines() if "supports SGLang" in line]
    assert len(warnings) == 1, out.stderr
    assert (
        "plugin 'example' (sglang-example-hooks 0.1.0) supports SGLang >=0.6, but SGLang "
        f"{SGLANG_VERSION}" in warnings[0]
    )
    doctor_code, report = _doctor(site, "--strict")
    assert doctor_code == 1 and report["sglang"]["plugins"][0]["status"] == "unsupported"
