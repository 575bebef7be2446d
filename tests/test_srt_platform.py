"""SRTPlatform: SGLang 0.5.23's SRT surface, defaults and error types."""

from __future__ import annotations

import dataclasses
import pickle
import subprocess
import sys

import pytest

from sglang_plugin_runtime.platforms import describe_contract
from sglang_plugin_runtime.platforms.device_mixin import DeviceMixin, PlatformEnum
from sglang_plugin_runtime.platforms.interface import (
    PlatformCapabilities,
    SRTPlatform,
    reject_out_of_tree_path,
    require_out_of_tree_impl,
)


class _Oot(SRTPlatform):
    _enum = PlatformEnum.OOT
    device_name = "widget"
    device_type = "widget"


def test_srt_platform_is_a_device_mixin() -> None:
    assert issubclass(SRTPlatform, DeviceMixin)


def test_capabilities_default_to_conservative_answers() -> None:
    assert PlatformCapabilities().as_dict() == {
        "supports_triton": False,
        "graph_capture": False,
        "piecewise_graph": False,
        "hicache_device_kernels": False,
        "supports_pynccl": False,
        "supports_fp8": False,
    }


def test_capabilities_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        PlatformCapabilities().graph_capture = True  # type: ignore[misc]


def test_capabilities_compare_and_hash_by_value() -> None:
    assert PlatformCapabilities(graph_capture=True) == PlatformCapabilities(graph_capture=True)
    assert len({PlatformCapabilities(), PlatformCapabilities()}) == 1


def test_capabilities_replace_changes_named_flags() -> None:
    assert PlatformCapabilities().replace(supports_fp8=True) == PlatformCapabilities(
        supports_fp8=True
    )


def test_capabilities_survive_pickling() -> None:
    caps = PlatformCapabilities(supports_triton=True)
    assert pickle.loads(pickle.dumps(caps)) == caps


def test_capabilities_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        PlatformCapabilities(True)  # type: ignore[misc]


def test_srt_class_attribute_defaults() -> None:
    assert SRTPlatform.supported_quantization == []
    assert SRTPlatform.capabilities == PlatformCapabilities()


@pytest.mark.parametrize(
    ("method", "args", "kwargs", "expected"),
    [
        ("apply_server_args_defaults", (object(),), {}, None),
        ("get_graph_runner_cls", (), {}, None),
        ("get_full_graph_backend_cls", (), {}, None),
        ("get_kv_pool_cls", (), {"kind": "mha"}, None),
        ("get_paged_allocator_cls", (), {}, None),
        ("get_compile_backend", (), {}, "inductor"),
        ("get_compile_backend", ("npugraph_ex",), {}, "inductor"),
        ("get_piecewise_backend_cls", (), {}, None),
        ("get_speculative_cache_locs_fn", (), {}, None),
        ("get_speculative_worker_cls", ("EAGLE",), {}, None),
        ("get_speculative_graph_runner_cls", ("EAGLE", "draft_decode"), {}, None),
        ("get_quantization_config", ("fp8",), {}, None),
        ("supports_speculative_algorithm", ("EAGLE",), {}, False),
        ("supports_speculative_draft_attention_backend", ("EAGLE", "fa3"), {}, False),
        ("support_mamba_cache_extra_buffer", (), {}, False),
        ("init_backend", (), {}, None),
        ("post_load_model", (object(),), {}, None),
        ("get_dispatch_key_name", (), {}, "native"),
    ],
)
def test_srt_default(method: str, args: tuple, kwargs: dict, expected: object) -> None:
    assert getattr(_Oot(), method)(*args, **kwargs) == expected


def test_default_attention_backend_fails_fast() -> None:
    with pytest.raises(
        NotImplementedError, match=r"_Oot\.get_default_attention_backend\(\) is not implemented"
    ):
        _Oot().get_default_attention_backend()


def test_default_speculative_draft_backend_fails_fast() -> None:
    with pytest.raises(
        NotImplementedError, match=r"_Oot\.get_default_speculative_draft_attention_backend"
    ):
        _Oot().get_default_speculative_draft_attention_backend("EAGLE")


def test_get_kv_pool_cls_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        _Oot().get_kv_pool_cls("mha")  # type: ignore[misc]


def test_get_kv_pool_cls_unknown_kind_raises_key_error() -> None:
    with pytest.raises(KeyError, match="unknown KV pool kind 'gqa'"):
        _Oot().get_kv_pool_cls(kind="gqa")  # type: ignore[arg-type]


def test_group_coordinator_device_defaults_to_cpu() -> None:
    torch = pytest.importorskip("torch")
    assert _Oot().get_group_coordinator_device(0) == torch.device("cpu")


def test_require_out_of_tree_impl_raises_for_oot_naming_hook() -> None:
    with pytest.raises(
        NotImplementedError,
        match=r"_Oot \(device 'widget'\) provides no graph runner: override get_graph_runner_cls",
    ):
        require_out_of_tree_impl(_Oot(), hook="get_graph_runner_cls", subsystem="graph runner")


def test_require_out_of_tree_impl_is_noop_in_tree() -> None:
    assert require_out_of_tree_impl(SRTPlatform(), hook="h", subsystem="s") is None


def test_reject_out_of_tree_path_raises_for_oot() -> None:
    with pytest.raises(NotImplementedError, match=r"reached LoRA, which has no platform seam"):
        reject_out_of_tree_path(_Oot(), subsystem="LoRA")


def test_reject_out_of_tree_path_is_noop_in_tree() -> None:
    assert reject_out_of_tree_path(SRTPlatform(), subsystem="s") is None


def test_every_srt_member_is_active() -> None:
    srt_members = [m for m in describe_contract(SRTPlatform) if m.declared_in is SRTPlatform]
    assert srt_members and all(m.status == "active" for m in srt_members)


def test_describe_contract_marks_required_members() -> None:
    required = {m.name for m in describe_contract(SRTPlatform) if m.required}
    assert {"get_default_attention_backend", "get_device_total_memory", "get_device"} <= required
    assert "get_compile_backend" not in required


def test_describe_contract_records_status_kind_signature_and_declaring_class() -> None:
    members = {m.name: m for m in describe_contract(SRTPlatform)}
    member = members["get_device_total_memory"]
    assert (member.status, member.required, member.kind, member.declared_in) == (
        "active",
        True,
        "method",
        DeviceMixin,
    )
    assert member.render() == "get_device_total_memory(device_id: int = 0) -> int"
    assert members["set_device"].status == "reserved"
    assert members["seed_everything"].kind == "classmethod"
    assert members["capabilities"].kind == "attribute"


def test_describe_contract_lists_device_mixin_members_first() -> None:
    names = [m.name for m in describe_contract(SRTPlatform)]
    assert names.index("is_cuda") < names.index("apply_server_args_defaults")


def test_importing_interface_does_not_import_torch() -> None:
    code = (
        "import sys, sglang_plugin_runtime.platforms.interface; "
        "assert 'torch' not in sys.modules, 'torch was imported'"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
