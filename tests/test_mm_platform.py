"""MMPlatform: the diffusion engine's platform surface."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sglang_plugin_runtime.platforms import describe_contract
from sglang_plugin_runtime.platforms.device_mixin import DeviceCapability, DeviceMixin, PlatformEnum
from sglang_plugin_runtime.platforms.multimodal import MMPlatform


class _Oot(MMPlatform):
    _enum = PlatformEnum.OOT
    device_name = "widget"
    device_type = "widget"


class _WithCapability(_Oot):
    def get_device_capability(self, device_id: int = 0) -> DeviceCapability | None:
        return DeviceCapability(8, 6)


def test_mm_platform_is_a_device_mixin() -> None:
    assert issubclass(MMPlatform, DeviceMixin)


def test_mm_class_attribute_defaults() -> None:
    assert (MMPlatform.device, MMPlatform.dispatch_key, MMPlatform.simple_compile_backend) == (
        None,
        "",
        "inductor",
    )


@pytest.mark.parametrize(
    ("method", "args", "expected"),
    [
        ("init_backend", (), None),
        ("apply_server_args_defaults", (object(),), None),
        ("get_compile_backend", (), "inductor"),
        ("get_compile_options", (object(),), None),
        ("get_dispatch_key_name", (), "native"),
        ("is_blackwell", (), False),
        ("is_hopper", (), False),
        ("is_sm120", (), False),
        ("is_gfx1151", (), False),
        ("is_cuda_static", (), False),
        ("is_rocm_static", (), False),
        ("is_hpu", (), False),
        ("is_hip", (), False),
        ("is_amp_supported", (), True),
        ("is_float64_supported", (), True),
        ("supports_distributed_device_id", (), False),
        ("enable_dit_layerwise_offload_by_default", (), True),
        ("device_shares_host_memory", (), False),
        ("get_modelopt_fp4_quantize_op", (), None),
        ("get_modelopt_fp4_gemm_op", (), (None, None)),
        ("get_modelopt_flashinfer_fp4_backend", (), "auto"),
        ("verify_model_arch", ("FluxPipeline",), None),
        ("get_attn_backend_cls_str", (None, 128, None), ""),
    ],
)
def test_mm_default(method: str, args: tuple, expected: object) -> None:
    assert getattr(_Oot(), method)(*args) == expected


def test_compile_backend_follows_simple_compile_backend() -> None:
    class Plat(_Oot):
        simple_compile_backend = "widget_backend"

    assert Plat().get_compile_backend(mode="default") == "widget_backend"


def test_optimize_vae_returns_the_module_unchanged() -> None:
    vae = object()
    assert _Oot.optimize_vae(vae) is vae


def test_is_device_type_compares_with_device_type() -> None:
    assert _Oot().is_device_type("widget") and not _Oot().is_device_type("cuda")


def test_torch_library_dispatch_key_requires_dispatch_key_out_of_tree() -> None:
    with pytest.raises(NotImplementedError, match=r"set dispatch_key"):
        _Oot().get_torch_library_dispatch_key()


def test_torch_library_dispatch_key_is_dispatch_key_out_of_tree() -> None:
    class Plat(_Oot):
        dispatch_key = "PrivateUse1"

    assert Plat().get_torch_library_dispatch_key() == "PrivateUse1"


def test_torch_library_dispatch_key_in_tree_defaults() -> None:
    npu = MMPlatform()
    npu._enum = PlatformEnum.NPU
    assert (
        npu.get_torch_library_dispatch_key(),
        MMPlatform().get_torch_library_dispatch_key(),
    ) == (
        "PrivateUse1",
        "CUDA",
    )


def test_device_communicator_defaults_to_the_hosts_base_class() -> None:
    assert _Oot.get_device_communicator_cls().endswith(
        "base_device_communicator.DeviceCommunicatorBase"
    )


def test_all_to_all_communicator_fails_fast_out_of_tree() -> None:
    with pytest.raises(
        NotImplementedError, match=r"_Oot\.get_all_to_all_communicator_cls\(\) is not implemented"
    ):
        _Oot.get_all_to_all_communicator_cls()


def test_all_to_all_communicator_follows_device_communicator() -> None:
    class Plat(_Oot):
        @classmethod
        def get_device_communicator_cls(cls) -> str:
            return "vendor.Comm"

    assert Plat.get_all_to_all_communicator_cls() == "vendor.Comm"


def test_local_torch_device_fails_fast() -> None:
    with pytest.raises(
        NotImplementedError, match=r"_Oot\.get_local_torch_device\(\) is not implemented"
    ):
        _Oot.get_local_torch_device()


def test_available_gpu_memory_fails_fast() -> None:
    with pytest.raises(
        NotImplementedError, match=r"_Oot\.get_available_gpu_memory\(\) is not implemented"
    ):
        _Oot.get_available_gpu_memory()


@pytest.mark.parametrize(
    ("capability", "expected"), [((8, 0), True), ((9, 0), False), (86, True), (90, False)]
)
def test_has_device_capability_accepts_tuple_or_packed_int(
    capability: object, expected: bool
) -> None:
    assert _WithCapability().has_device_capability(capability) is expected


def test_has_device_capability_is_false_without_capability() -> None:
    class Plat(_Oot):
        def get_device_capability(self, device_id: int = 0) -> DeviceCapability | None:
            return None

    assert Plat().has_device_capability((1, 0)) is False


def test_get_attn_backend_resolves_the_named_class() -> None:
    class Plat(_Oot):
        @classmethod
        def get_attn_backend_cls_str(
            cls, selected_backend: object, head_size: int, dtype: object
        ) -> str:
            return "collections.OrderedDict"

    import collections

    assert Plat().get_attn_backend(None, 64, None) is collections.OrderedDict


def test_tensor_on_device_compares_device_type() -> None:
    torch = pytest.importorskip("torch")
    cpu = MMPlatform()
    assert cpu.tensor_on_device(torch.zeros(1)) is True
    assert _Oot().tensor_on_device(torch.zeros(1)) is False


def test_mm_get_device_keeps_device_mixin_signature() -> None:
    assert MMPlatform.get_device is DeviceMixin.get_device


def test_every_mm_member_is_active() -> None:
    members = [m for m in describe_contract(MMPlatform) if m.declared_in is MMPlatform]
    assert members and all(m.status == "active" for m in members)


def test_mm_platform_over_vendor_mixin_uses_vendor_device_methods() -> None:
    class MyDeviceMixin(DeviceMixin):
        def get_device_name(self, device_id: int = 0) -> str:
            return "widget-1"

    class MyMMPlatform(MMPlatform, MyDeviceMixin):
        pass

    assert MyMMPlatform().get_device_name() == "widget-1"


def test_importing_multimodal_does_not_import_torch() -> None:
    code = (
        "import sys, sglang_plugin_runtime.platforms.multimodal; "
        "assert 'torch' not in sys.modules, 'torch was imported'"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
