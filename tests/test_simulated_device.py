"""The simulated torch device module."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")

from sglang_plugin_runtime._simulated_device import (  # noqa: E402
    SimulatedDevice,
    active_simulated_device,
    simulated_device,
)

_GIB = 1024**3


def test_installs_module_as_torch_attribute_and_in_sys_modules() -> None:
    with simulated_device("npu") as sim:
        assert torch.npu is sim.module
        assert sys.modules["torch.npu"] is sim.module


def test_restores_absent_torch_attribute_and_sys_modules_entry_on_exit() -> None:
    assert not hasattr(torch, "npu") and "torch.npu" not in sys.modules
    with simulated_device("npu"):
        pass
    assert "npu" not in vars(torch)
    assert "torch.npu" not in sys.modules


def test_restores_previous_torch_attribute_and_sys_modules_entry_exactly() -> None:
    before_attr, before_module = object(), object()
    torch.mlu = before_attr
    sys.modules["torch.mlu"] = before_module  # type: ignore[assignment]
    try:
        with simulated_device("mlu", replace_existing=True) as sim:
            assert torch.mlu is sim.module
        assert torch.mlu is before_attr
        assert sys.modules["torch.mlu"] is before_module
    finally:
        del torch.mlu
        del sys.modules["torch.mlu"]


def test_refuses_to_hide_an_existing_real_device_module() -> None:
    with pytest.raises(ValueError, match=r"torch\.xpu already exists"):
        simulated_device("xpu").start()
    assert not getattr(torch.xpu, "__simulated__", False)


@pytest.mark.parametrize("device_type", ["cpu", "cuda", "meta"])
def test_refuses_real_device_types_without_replace_existing(device_type: str) -> None:
    with pytest.raises(ValueError, match=rf"refusing to simulate '{device_type}'"):
        simulated_device(device_type)


def test_registers_and_removes_backend_module() -> None:
    with simulated_device("npu", backend_module="torch_npu") as sim:
        import torch_npu  # type: ignore[import-not-found]

        assert torch_npu.npu is sim.module
        assert sys.modules["torch_npu.npu"] is sim.module
    assert "torch_npu" not in sys.modules and "torch_npu.npu" not in sys.modules


def test_reports_configured_count_name_memory_and_capability() -> None:
    with simulated_device(
        "npu", device_count=2, name="Ascend 910B", total_memory=64 * _GIB, capability=(2, 1)
    ):
        props = torch.npu.get_device_properties(1)
        assert torch.npu.is_available() and torch.npu.device_count() == 2
        assert (props.name, props.total_memory, props.major, props.minor) == (
            "Ascend 910B",
            64 * _GIB,
            2,
            1,
        )
        assert torch.npu.get_device_name(0) == "Ascend 910B"
        assert torch.npu.get_device_capability() == (2, 1)


def test_device_uuids_are_distinct_per_device() -> None:
    with simulated_device("npu", device_count=2):
        assert torch.npu.get_device_properties(0).uuid != torch.npu.get_device_properties(1).uuid


def test_set_device_changes_current_device() -> None:
    with simulated_device("npu", device_count=4):
        torch.npu.set_device("npu:3")
        assert torch.npu.current_device() == 3


def test_set_device_rejects_out_of_range_ordinal() -> None:
    with (
        simulated_device("npu", device_count=1),
        pytest.raises(RuntimeError, match="invalid device ordinal 2"),
    ):
        torch.npu.set_device(2)


def test_set_device_rejects_other_device_type() -> None:
    with simulated_device("npu"), pytest.raises(ValueError, match="expected a 'npu' device"):
        torch.npu.set_device("cuda:0")


def test_memory_model_tracks_allocated_peak_and_free() -> None:
    with simulated_device("npu", total_memory=10 * _GIB) as sim:
        sim.allocate(3 * _GIB)
        sim.free(2 * _GIB)
        assert torch.npu.memory_allocated() == 1 * _GIB
        assert torch.npu.max_memory_allocated() == 3 * _GIB
        assert torch.npu.mem_get_info() == (7 * _GIB, 10 * _GIB)


def test_empty_cache_releases_reserved_memory() -> None:
    with simulated_device("npu", total_memory=10 * _GIB) as sim:
        sim.allocate(3 * _GIB)
        sim.free(3 * _GIB)
        torch.npu.empty_cache()
        assert torch.npu.memory_reserved() == 0
        assert torch.npu.mem_get_info()[0] == 10 * _GIB


def test_reset_peak_memory_stats_resets_peak_to_current() -> None:
    with simulated_device("npu") as sim:
        sim.allocate(100)
        sim.free(60)
        torch.npu.reset_peak_memory_stats()
        assert torch.npu.max_memory_allocated() == 40


def test_manual_seed_all_is_recorded() -> None:
    with simulated_device("npu") as sim:
        torch.npu.manual_seed_all(7)
        assert sim.seed == 7


def test_calls_are_recorded_in_order() -> None:
    with simulated_device("npu") as sim:
        torch.npu.synchronize()
        torch.npu.get_device_name(0)
        assert [c.name for c in sim.calls] == ["synchronize", "get_device_name"]
        assert sim.calls_to("get_device_name")[0].args == (0,)
        assert sim.called("synchronize") and not sim.called("empty_cache")


def test_get_device_module_cache_does_not_outlive_a_simulation() -> None:
    code = textwrap.dedent(
        """
        import torch
        from sglang_plugin_runtime._simulated_device import simulated_device
        with simulated_device("npu", privateuse1=True) as first:
            assert torch.get_device_module("npu") is first.module
        with simulated_device("npu", privateuse1=True) as second:
            assert torch.get_device_module("npu") is second.module
        print("ok")
        """
    )
    result = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True
    )
    assert result.stdout.strip() == "ok", result.stderr


def test_start_and_stop_work_without_with() -> None:
    sim = simulated_device("npu")
    sim.start()
    try:
        assert sim.active and active_simulated_device("npu") is sim
    finally:
        sim.stop()
    assert not sim.active and active_simulated_device("npu") is None


def test_start_twice_is_an_error() -> None:
    with simulated_device("npu") as sim, pytest.raises(RuntimeError, match="already started"):
        sim.start()


def test_nested_simulations_restore_in_order() -> None:
    with simulated_device("npu", name="outer") as outer:
        with simulated_device("npu", name="inner") as inner:
            assert torch.npu is inner.module
        assert torch.npu is outer.module
    assert not hasattr(torch, "npu")


def test_stopping_out_of_order_is_refused() -> None:
    outer = simulated_device("npu").start()
    inner = simulated_device("npu").start()
    try:
        with pytest.raises(RuntimeError, match="stop that one first"):
            outer.stop()
    finally:
        inner.stop()
        outer.stop()


def test_simulated_device_returns_a_simulated_device() -> None:
    assert isinstance(simulated_device("npu"), SimulatedDevice)


def test_privateuse1_makes_torch_device_parse_in_a_fresh_process() -> None:
    code = textwrap.dedent(
        """
        import torch
        from sglang_plugin_runtime._simulated_device import simulated_device
        with simulated_device("npu", privateuse1=True) as sim:
            device = torch.device("npu", 0)
            torch.get_device_module(device).set_device(device)
            assert sim.called("set_device")
        print("ok")
        """
    )
    result = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_torch_manual_seed_seeds_a_privateuse1_device_without_warning() -> None:
    code = textwrap.dedent(
        """
        import warnings
        import torch
        from sglang_plugin_runtime._simulated_device import simulated_device
        with simulated_device("npu", privateuse1=True) as sim:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                torch.manual_seed(7)
            print(sim.seed)
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "7"


def test_missing_torch_is_a_clear_runtime_error() -> None:
    code = textwrap.dedent(
        """
        import sys
        sys.modules["torch"] = None  # makes "import torch" fail
        from sglang_plugin_runtime._simulated_device import simulated_device
        try:
            simulated_device("npu").start()
        except RuntimeError as exc:
            print(exc)
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    # The CPU build: from PyPI, `pip install torch` pulls the multi-GB CUDA build.
    assert (
        "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
        in result.stdout
    ), result.stderr
