"""The adopted SGLang keeps its own platforms: the runtime selects plugins, SGLang's in-tree chain
is the fallback.

Each scenario is a fresh process of the adopted venv; a generated platform plugin is installed where
it matters, its device absent unless simulated.
"""

from __future__ import annotations

import pytest
from adopted_kit import Installed, Outcome, run_python

pytestmark = pytest.mark.subprocess

PROBE = """
import sglang_plugin_runtime.platforms as runtime
try:
    from sglang.srt.platforms import current_platform as p     # SGLang's own import path
except Exception as exc:
    report({"error": type(exc).__name__, "is_runtime_error": isinstance(exc, RuntimeError),
            "message": str(exc)})
else:
    selection = runtime.current_platform_selection()
    report({"class": f"{type(p).__module__}.{type(p).__qualname__}", "rule": selection.rule,
            "same_object": p is runtime.current_platform,
            "activations": [a.status for a in selection.activations]})
"""


def probe(installed: Installed | None = None, **env: str) -> Outcome:
    return run_python(PROBE, paths=[installed.site] if installed else [], env=env)


def test_with_no_plugin_and_no_accelerator_sglang_falls_back_to_its_base_platform() -> None:
    out = probe()
    assert (out["class"], out["rule"], out["same_object"]) == (
        "sglang_plugin_runtime.platforms.interface.SRTPlatform",
        "fallback",
        True,
    )


def test_sglang_use_cpu_engine_gives_sglangs_cpu_platform() -> None:
    out = probe(SGLANG_USE_CPU_ENGINE="1")
    assert (out["class"], out["rule"]) == ("sglang.srt.platforms.cpu.CpuSRTPlatform", "fallback")


def test_installed_plugins_without_their_device_fall_back_to_sglangs_chain(
    installed: Installed,
) -> None:
    out = probe(installed, SGLANG_USE_CPU_ENGINE="1")
    assert (out["class"], out["rule"]) == ("sglang.srt.platforms.cpu.CpuSRTPlatform", "fallback")
    assert out["activations"] and set(out["activations"]) == {"unavailable"}


def test_a_plugin_whose_device_is_present_wins_over_the_cpu_engine(installed: Installed) -> None:
    """As in SGLang 0.5.23: SGLANG_USE_CPU_ENGINE is consulted only when no plugin activated."""
    combination = installed.of_kind("platform")[0]
    code = (
        f"from sglang_plugin_runtime.testing import simulated_device\n"
        f"simulated_device({combination.device!r}, backend_module='torch_{combination.device}', "
        f"privateuse1=True).start()\n" + PROBE
    )
    out = run_python(code, paths=[installed.site], env={"SGLANG_USE_CPU_ENGINE": "1"})
    assert out["rule"] == "single-activated"
    assert out["class"].startswith(f"{combination.package}.platform.")


def test_sglang_platform_naming_a_plugin_without_its_device_is_a_runtime_error(
    installed: Installed,
) -> None:
    combination = installed.of_kind("platform")[0]
    out = probe(installed, SGLANG_PLATFORM=combination.entry_point)
    assert out["error"] == "PlatformUnavailableError" and out["is_runtime_error"]
    assert (
        "activate() returned None" in out["message"]
        and repr(combination.entry_point) in out["message"]
    )


def test_an_unknown_sglang_platform_is_a_runtime_error_listing_the_installed_ones(
    installed: Installed,
) -> None:
    out = probe(installed, SGLANG_PLATFORM="nosuch")
    assert out["error"] == "PlatformNotFoundError" and out["is_runtime_error"]
    assert "'nosuch'" in out["message"]
    assert all(repr(c.entry_point) in out["message"] for c in installed.of_kind("platform"))


def test_sglangs_distributed_backend_lookup_reads_the_selected_platform() -> None:
    """``parallel_state.get_default_distributed_backend`` goes through
    ``sglang.srt.platforms.current_platform``."""
    out = run_python(
        """
        from sglang.srt.distributed.parallel_state import get_default_distributed_backend
        report([get_default_distributed_backend("cpu"), get_default_distributed_backend("cuda"),
                get_default_distributed_backend("npu")])
        """,
        env={"SGLANG_USE_CPU_ENGINE": "1"},
    )
    assert out.result == ["gloo", "nccl", "hccl"]


def test_a_test_may_still_assign_sglangs_current_platform_override() -> None:
    out = run_python(
        """
        import sglang.srt.platforms as platforms
        from sglang.srt.platforms.cuda import CudaSRTPlatform
        platforms._current_platform = CudaSRTPlatform()
        report(type(platforms.current_platform).__name__)
        """
    )
    assert out.result == "CudaSRTPlatform"
