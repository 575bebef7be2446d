"""DeviceMixin, PlatformEnum, DeviceCapability and CpuArchEnum."""

from __future__ import annotations

import platform
import random
import subprocess
import sys

import pytest

from sglang_plugin_runtime.platforms.device_mixin import (
    CpuArchEnum,
    DeviceCapability,
    DeviceMixin,
    PlatformEnum,
)


class _OotDevice(DeviceMixin):
    _enum = PlatformEnum.OOT
    device_name = "widget"
    device_type = "widget"


def test_platform_enum_has_sglang_members_plus_mlu() -> None:
    names = {member.name for member in PlatformEnum}
    assert names == {
        "CUDA",
        "ROCM",
        "CPU",
        "XPU",
        "MUSA",
        "NPU",
        "MLU",
        "TPU",
        "MPS",
        "SAIL",
        "OOT",
        "UNSPECIFIED",
    }


def test_cpu_arch_enum_members() -> None:
    assert {m.name for m in CpuArchEnum} == {"X86", "ARM", "UNSPECIFIED"}


def test_device_capability_compares_as_tuple() -> None:
    assert DeviceCapability(9, 0) >= DeviceCapability(8, 9)
    assert DeviceCapability(8, 0) < (8, 6)


def test_device_capability_as_version_str() -> None:
    assert DeviceCapability(8, 6).as_version_str() == "8.6"


def test_device_capability_to_int_packs_major_minor() -> None:
    assert DeviceCapability(9, 0).to_int() == 90


def test_device_capability_to_int_rejects_two_digit_minor_with_value_error() -> None:
    with pytest.raises(ValueError, match=r"minor must be between 0 and 9"):
        DeviceCapability(9, 10).to_int()


@pytest.mark.parametrize(
    ("enum", "query"),
    [
        (PlatformEnum.CUDA, "is_cuda"),
        (PlatformEnum.ROCM, "is_rocm"),
        (PlatformEnum.CPU, "is_cpu"),
        (PlatformEnum.XPU, "is_xpu"),
        (PlatformEnum.MUSA, "is_musa"),
        (PlatformEnum.NPU, "is_npu"),
        (PlatformEnum.MLU, "is_mlu"),
        (PlatformEnum.TPU, "is_tpu"),
        (PlatformEnum.MPS, "is_mps"),
        (PlatformEnum.SAIL, "is_sail"),
        (PlatformEnum.OOT, "is_out_of_tree"),
    ],
)
def test_identity_query_is_true_only_for_its_enum(enum: PlatformEnum, query: str) -> None:
    instance = DeviceMixin()
    instance._enum = enum
    queries = [
        "is_cuda",
        "is_rocm",
        "is_cpu",
        "is_xpu",
        "is_musa",
        "is_npu",
        "is_mlu",
        "is_tpu",
        "is_mps",
        "is_sail",
        "is_out_of_tree",
    ]
    assert {q for q in queries if getattr(instance, q)()} == {query}


@pytest.mark.parametrize("enum", list(PlatformEnum))
def test_is_cuda_alike_covers_cuda_rocm_musa_sail(enum: PlatformEnum) -> None:
    instance = DeviceMixin()
    instance._enum = enum
    expected = enum in (PlatformEnum.CUDA, PlatformEnum.ROCM, PlatformEnum.MUSA, PlatformEnum.SAIL)
    assert instance.is_cuda_alike() is expected


def test_base_identity_attributes_match_sglang_defaults() -> None:
    assert DeviceMixin._enum is PlatformEnum.UNSPECIFIED
    assert DeviceMixin.device_name == "unknown"
    assert DeviceMixin.device_type == "cpu"


@pytest.mark.parametrize(
    ("method", "args"),
    [
        ("get_device_total_memory", ()),
        ("get_current_memory_usage", ()),
        ("get_device", ()),
        ("set_device", (None,)),
        ("get_device_name", ()),
        ("get_device_uuid", ()),
        ("get_device_capability", ()),
        ("get_available_memory", ()),
        ("get_torch_profiler_activity_str", ()),
        ("get_torch_profiler_activity", ()),
    ],
)
def test_fail_fast_method_names_concrete_class_and_method(method: str, args: tuple) -> None:
    with pytest.raises(NotImplementedError) as excinfo:
        getattr(_OotDevice(), method)(*args)
    assert str(excinfo.value) == (
        f"_OotDevice.{method}() is not implemented: override it in your platform class"
    )


def test_defaults_that_do_not_fail() -> None:
    instance = _OotDevice()
    assert instance.is_pin_memory_available() is False
    assert instance.get_communicator_class() is None
    assert instance.empty_cache() is None
    assert instance.synchronize() is None
    assert instance.verify_quantization("fp8") is None


def test_reindex_device_id_yields_the_same_id_by_default() -> None:
    with _OotDevice().reindex_device_id(3) as index:
        assert index == 3


@pytest.mark.parametrize(
    ("device_type", "backend"),
    [
        ("cuda", "nccl"),
        ("xpu", "xccl"),
        ("hpu", "hccl"),
        ("npu", "hccl"),
        ("cpu", "gloo"),
        ("musa", "mccl"),
        ("mlu", "cncl"),
        ("widget", "gloo"),
    ],
)
def test_distributed_backend_follows_device_type_table(device_type: str, backend: str) -> None:
    instance = DeviceMixin()
    instance.device_type = device_type
    assert instance.get_torch_distributed_backend_str() == backend


def test_get_cpu_architecture_matches_platform_machine() -> None:
    machine = platform.machine().lower()
    expected = (
        CpuArchEnum.X86
        if machine in ("x86_64", "amd64", "i386", "i686")
        else CpuArchEnum.ARM
        if machine in ("arm64", "aarch64")
        else CpuArchEnum.UNSPECIFIED
    )
    assert DeviceMixin.get_cpu_architecture() is expected


def test_cpu_arch_is_cached_per_instance() -> None:
    instance = _OotDevice()
    assert instance.cpu_arch is DeviceMixin.get_cpu_architecture()
    assert "cpu_arch" in vars(instance)


def test_seed_everything_seeds_python_random() -> None:
    DeviceMixin.seed_everything(1234)
    first = random.random()
    DeviceMixin.seed_everything(1234)
    assert random.random() == first


def test_seed_everything_seeds_torch() -> None:
    torch = pytest.importorskip("torch")
    DeviceMixin.seed_everything(99)
    first = torch.rand(1).item()
    DeviceMixin.seed_everything(99)
    assert torch.rand(1).item() == first


def test_seed_everything_with_none_changes_nothing() -> None:
    random.seed(5)
    state = random.getstate()
    DeviceMixin.seed_everything(None)
    assert random.getstate() == state


def test_inference_mode_is_torch_inference_mode() -> None:
    torch = pytest.importorskip("torch")
    with DeviceMixin.inference_mode():
        assert torch.is_inference_mode_enabled()


def test_repr_names_class_device_and_enum() -> None:
    assert repr(_OotDevice()) == (
        "_OotDevice(device_name='widget', device_type='widget', enum=PlatformEnum.OOT)"
    )


def test_importing_device_mixin_does_not_import_torch() -> None:
    code = (
        "import sys, sglang_plugin_runtime.platforms.device_mixin; "
        "assert 'torch' not in sys.modules, 'torch was imported'"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
