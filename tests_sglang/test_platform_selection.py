"""A generated SGLang-host platform plugin, selected (or refused) by the real
``sglang.srt.platforms.current_platform``.

Every scenario is a fresh subprocess of the SGLang venv with exactly the scenario's distributions on
``sys.path``. The ``simdev`` device does not exist anywhere: where a scenario needs it present, the
testing kit's simulated device registers ``torch.simdev`` and the ``torch_simdev`` backend module
before SGLang looks.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import GeneratedPackage
from scenarios import run_python

from sglang_plugin_runtime.testing import write_fake_distribution

pytestmark = pytest.mark.subprocess

SIMULATE = """
from sglang_plugin_runtime.testing import simulated_device
_sim = simulated_device("simdev", backend_module="torch_simdev", privateuse1=True).start()
"""

PROBE = """
import sys
try:
    from sglang.srt.platforms import current_platform as p
except Exception as exc:  # what SGLang raised, for the test to judge
    report({"ok": False, "error": type(exc).__name__, "message": str(exc),
            "imported": sorted(m for m in sys.modules
                               if m.startswith(("sglang_simdev", "broken_other")))})
else:
    from sglang.srt.platforms.interface import SRTPlatform
    info = {"ok": True, "class": f"{type(p).__module__}.{type(p).__qualname__}",
            "is_sglang_platform": isinstance(p, SRTPlatform), "out_of_tree": p.is_out_of_tree(),
            "device_name": p.device_name, "device_type": p.device_type,
            "imported": sorted(m for m in sys.modules
                               if m.startswith(("sglang_simdev", "broken_other")))}
    if p.device_type == "simdev":
        info["total_memory"] = p.get_device_total_memory(0)
        info["backend"] = p.get_torch_distributed_backend_str()
        info["attention"] = p.get_default_attention_backend()
        info["device"] = str(p.get_device(0))
    report(info)
"""


@pytest.fixture(scope="module")
def broken_other(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Another platform distribution whose module fails on import: never imported when
    SGLANG_PLATFORM names ours."""
    root = tmp_path_factory.mktemp("broken-other")
    write_fake_distribution(
        root,
        "broken-other-platform",
        entry_points={"sglang.srt.platforms": {"other": "broken_other:activate"}},
        modules={"broken_other.py": "raise ImportError('broken_other must never be imported')\n"},
    )
    return root


def test_auto_selects_the_generated_platform_when_its_device_is_present(
    platform_plugin: GeneratedPackage,
) -> None:
    out = run_python(SIMULATE + PROBE, paths=[platform_plugin.site])
    assert out["ok"], out.result
    assert out["class"] == "sglang_simdev_platform.platform.SimdevSRTPlatform"
    assert out["is_sglang_platform"] and out["out_of_tree"]
    assert (out["device_name"], out["device_type"]) == ("simdev", "simdev")
    assert out["total_memory"] == 16 * 1024**3  # served by the simulated torch.simdev
    assert out["backend"] == "gloo"
    assert out["attention"] == "torch_native"
    assert out["device"] == "simdev:0"


def test_sglang_platform_selects_it_and_never_imports_the_others(
    platform_plugin: GeneratedPackage, broken_other: Path
) -> None:
    out = run_python(
        SIMULATE + PROBE,
        paths=[platform_plugin.site, broken_other],
        env={"SGLANG_PLATFORM": "simdev"},
    )
    assert out["ok"], out.result
    assert out["class"] == "sglang_simdev_platform.platform.SimdevSRTPlatform"
    assert "broken_other" not in out["imported"]


def test_auto_without_the_device_falls_back_to_sglang_base_platform(
    platform_plugin: GeneratedPackage,
) -> None:
    out = run_python(PROBE, paths=[platform_plugin.site])
    assert out["ok"], out.result
    # activate() returned None; no CUDA here and SGLANG_USE_CPU_ENGINE unset: SGLang's base
    # SRTPlatform.
    assert out["class"] == "sglang.srt.platforms.interface.SRTPlatform"
    assert not out["out_of_tree"]
    assert "sglang_simdev_platform" in out["imported"]  # auto mode imports every plugin
    # ... but not the platform class module
    assert "sglang_simdev_platform.platform" not in out["imported"]


def test_sglang_platform_without_the_device_is_an_error(platform_plugin: GeneratedPackage) -> None:
    out = run_python(PROBE, paths=[platform_plugin.site], env={"SGLANG_PLATFORM": "simdev"})
    assert not out["ok"]
    assert out["error"] == "RuntimeError"
    assert "'simdev'" in out["message"] and "activate() returned None" in out["message"]


def test_unknown_sglang_platform_names_the_available_ones(
    platform_plugin: GeneratedPackage,
) -> None:
    out = run_python(
        SIMULATE + PROBE, paths=[platform_plugin.site], env={"SGLANG_PLATFORM": "nosuch"}
    )
    assert not out["ok"]
    assert out["error"] == "RuntimeError"
    assert "'nosuch' not found" in out["message"] and "'simdev'" in out["message"]
    assert "sglang_simdev_platform" not in out["imported"]


def test_two_active_platforms_need_sglang_platform(
    platform_plugin: GeneratedPackage, runtime_platform_plugin: GeneratedPackage
) -> None:
    out = run_python(SIMULATE + PROBE, paths=[platform_plugin.site, runtime_platform_plugin.site])
    assert not out["ok"]
    assert out["error"] == "RuntimeError"
    assert "Multiple platform plugins activated" in out["message"]
    assert "'simdev'" in out["message"] and "'simdev_rt'" in out["message"]


def test_a_runtime_host_platform_is_refused_by_released_sglang(
    runtime_platform_plugin: GeneratedPackage,
) -> None:
    """Why packages build on SGLang's classes where it is installed: SGLang 0.5.23 accepts only
    subclasses of its own ``SRTPlatform``, so a package built on the runtime's (the retired
    host_api=runtime) is refused."""
    out = run_python(SIMULATE + PROBE, paths=[runtime_platform_plugin.site])
    assert not out["ok"]
    assert out["error"] == "TypeError"
    assert "Expected an SRTPlatform subclass" in out["message"]
    assert "sglang_simdev_rt.platform.SimdevSRTPlatform" in out["message"]


def test_our_runtime_selects_the_runtime_host_platform_in_the_same_venv(
    runtime_platform_plugin: GeneratedPackage,
) -> None:
    code = (
        SIMULATE
        + """
from sglang_plugin_runtime.platforms import current_platform as p, current_platform_selection
s = current_platform_selection()
report({"class": f"{type(p).__module__}.{type(p).__qualname__}", "plugin": s.plugin, "rule": s.rule,
        "sglang_imported": "sglang" in sys.modules})
"""
    )
    out = run_python("import sys\n" + code, paths=[runtime_platform_plugin.site])
    assert out["class"] == "sglang_simdev_rt.platform.SimdevSRTPlatform"
    assert out["plugin"] == "simdev_rt"
    assert out["sglang_imported"] is False


COUNTING_PLATFORM = """
import os
def activate():
    with open(os.path.join(os.path.dirname(__file__), "activate.calls"), "a") as calls:
        calls.write("x")
    return __name__ + ".CountingPlatform"
from {base_module} import SRTPlatform
from {enum_module} import PlatformEnum
class CountingPlatform(SRTPlatform):
    _enum = PlatformEnum.OOT
    device_name = "counting"
    device_type = "cpu"
"""


@pytest.mark.parametrize(
    ("base", "enum"),
    [
        ("sglang.srt.platforms.interface", "sglang.srt.platforms.device_mixin"),
        (
            "sglang_plugin_runtime.platforms.interface",
            "sglang_plugin_runtime.platforms.device_mixin",
        ),
    ],
    ids=["built-on-sglang", "built-on-the-runtime"],
)
def test_activate_runs_once_per_process_when_the_runtime_selects_beside_released_sglang(
    tmp_path: Path, base: str, enum: str
) -> None:
    write_fake_distribution(
        tmp_path,
        "counting-platform",
        entry_points={"sglang.srt.platforms": {"counting": "counting_platform:activate"}},
        modules={
            "counting_platform.py": COUNTING_PLATFORM.format(base_module=base, enum_module=enum)
        },
    )
    out = run_python(
        """
        from sglang_plugin_runtime.platforms import current_platform_selection
        selection = current_platform_selection()
        report({"plugin": selection.plugin, "statuses": [a.status for a in selection.activations]})
        """,
        paths=[tmp_path],
    )
    assert out["plugin"] == "counting" and out["statuses"] == ["activated"], out.stderr
    assert (tmp_path / "activate.calls").read_text() == "x"


def test_keyboard_interrupt_in_activate_names_the_plugin_beside_released_sglang(
    tmp_path: Path,
) -> None:
    write_fake_distribution(
        tmp_path,
        "acme-npu",
        entry_points={"sglang.srt.platforms": {"acme": "acme_platform:activate"}},
        modules={"acme_platform.py": "def activate():\n    raise KeyboardInterrupt\n"},
    )
    out = run_python(
        """
        from sglang_plugin_runtime.platforms import current_platform_selection
        try:
            current_platform_selection()
        except KeyboardInterrupt as exc:
            report({"notes": getattr(exc, "__notes__", [])})
        """,
        paths=[tmp_path],
    )
    assert any("activate() of plugin 'acme'" in note for note in out["notes"]), out.result
