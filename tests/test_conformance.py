"""check_platform_conformance / assert_platform_conformance."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from sglang_plugin_runtime._simulated_device import simulated_device
from sglang_plugin_runtime.platforms.device_mixin import DeviceCapability, DeviceMixin, PlatformEnum
from sglang_plugin_runtime.platforms.interface import PlatformCapabilities, SRTPlatform
from sglang_plugin_runtime.platforms.multimodal import MMPlatform
from sglang_plugin_runtime.testing._conformance import (
    ConformanceProblem,
    assert_platform_conformance,
    check_platform_conformance,
)


class WidgetDeviceMixin(DeviceMixin):
    """A complete device mixin written against ``torch.widget`` (simulated in these tests)."""

    _enum = PlatformEnum.OOT
    device_name = "widget"
    device_type = "widget"

    def get_device_total_memory(self, device_id: int = 0) -> int:
        import torch

        return int(torch.widget.get_device_properties(device_id).total_memory)

    def get_current_memory_usage(self, device: object = None) -> float:
        import torch

        return float(torch.widget.max_memory_allocated(device))

    def get_device(self, device_id: int | None = None) -> str:
        return "widget" if device_id is None else f"widget:{device_id}"

    def set_device(self, device: object) -> None:
        import torch

        torch.widget.set_device(0)

    def get_device_name(self, device_id: int = 0) -> str:
        import torch

        return torch.widget.get_device_name(device_id)

    def get_device_uuid(self, device_id: int = 0) -> str:
        import torch

        return torch.widget.get_device_properties(device_id).uuid

    def get_device_capability(self, device_id: int = 0) -> DeviceCapability | None:
        import torch

        return DeviceCapability(*torch.widget.get_device_capability(device_id))

    def empty_cache(self) -> None:
        import torch

        torch.widget.empty_cache()

    def synchronize(self) -> None:
        import torch

        torch.widget.synchronize()

    def get_available_memory(self, device_id: int = 0) -> tuple[int, int]:
        import torch

        return torch.widget.mem_get_info(device_id)

    def get_torch_profiler_activity_str(self) -> str:
        return "PrivateUse1"

    def get_torch_profiler_activity(self) -> object:
        import torch

        return torch.profiler.ProfilerActivity.PrivateUse1


class GoodSRT(SRTPlatform, WidgetDeviceMixin):
    capabilities = PlatformCapabilities(graph_capture=True)

    def get_default_attention_backend(self) -> str:
        return "widget_attn"

    def get_default_speculative_draft_attention_backend(self, algorithm: str) -> str:
        return "widget_attn"


class GoodMM(MMPlatform, WidgetDeviceMixin):
    dispatch_key = "PrivateUse1"

    @classmethod
    def get_local_torch_device(cls) -> object:
        import torch

        return torch.device("cpu")

    @classmethod
    def get_available_gpu_memory(
        cls,
        device_id: int | None = None,
        distributed: bool = False,
        empty_cache: bool = True,
        cpu_group: object = None,
    ) -> float:
        return 1.0

    @classmethod
    def get_all_to_all_communicator_cls(cls) -> str:
        return "widget.comm.AllToAll"


def _kinds(problems: list[ConformanceProblem]) -> set[tuple[str, str]]:
    return {(p.attribute, p.kind) for p in problems}


def test_good_srt_platform_has_no_problems() -> None:
    assert check_platform_conformance(GoodSRT) == []


def test_good_mm_platform_has_no_problems() -> None:
    assert check_platform_conformance(GoodMM) == []


def test_good_platform_has_no_problems_on_a_simulated_device() -> None:
    with simulated_device("widget") as sim:
        assert check_platform_conformance(GoodSRT) == []
    assert sim.called("get_device_properties") and sim.called("synchronize")


def test_device_methods_are_not_called_without_a_simulated_device() -> None:
    class Plat(GoodSRT):
        def synchronize(self) -> None:
            raise AssertionError("reached the device")

    assert check_platform_conformance(Plat) == []


def test_device_method_raising_on_simulated_device_is_reported() -> None:
    class Plat(GoodSRT):
        def synchronize(self) -> None:
            raise RuntimeError("driver error")

    with simulated_device("widget"):
        problems = check_platform_conformance(Plat)
    assert [(p.attribute, p.kind) for p in problems] == [("synchronize", "raises")]
    assert "driver error" in problems[0].message


def test_device_method_with_wrong_return_type_on_simulated_device_is_reported() -> None:
    class Plat(GoodSRT):
        def get_available_memory(self, device_id: int = 0) -> tuple[int, int]:
            return [1, 2]  # type: ignore[return-value]

    with simulated_device("widget"):
        assert _kinds(check_platform_conformance(Plat)) == {("get_available_memory", "return_type")}


def test_a_get_device_returning_a_torch_device_is_reported_sglang_splits_a_string() -> None:
    """SGLang 0.5.23 without ``--device`` calls ``get_device(None)`` (srt/utils/common.py) and
    splits the answer on ":" (srt/arg_groups/serving_hook.py): a torch.device stops its server."""

    class Plat(GoodSRT):
        def get_device(self, device_id: int = 0) -> object:
            import torch

            return torch.device("cpu", device_id)

    with simulated_device("widget"):
        problems = check_platform_conformance(Plat)
    assert _kinds(problems) == {("get_device", "return_type")}
    assert "returned device(type='cpu', index=0)" in problems[0].message
    assert "the contract declares str" in problems[0].message


@pytest.mark.fault(
    "testing",
    "a platform's get_device() breaks on None (f'widget:{int(device_id)}'); SGLang 0.5.23 calls "
    "get_device(None) when --device is not given",
    "the conformance check reports get_device(None) raising (was: probed with 0 only, so it "
    "passed the gate)",
)
def test_the_conformance_check_calls_get_device_with_none_as_sglang_does() -> None:
    class Plat(GoodSRT):
        def get_device(self, device_id: int = 0) -> str:
            return f"widget:{int(device_id)}"

    with simulated_device("widget"):
        problems = check_platform_conformance(Plat)
    assert _kinds(problems) == {("get_device", "raises")}
    assert "Plat.get_device(None) raised TypeError" in problems[0].message


def test_broken_class_reports_every_problem() -> None:
    class Broken(SRTPlatform, check_overrides=False):
        device_name = ""
        capabilities = {"graph_capture": True}

        def get_devce_name(self) -> str:
            return "x"

        def get_device(self, local_rank: int) -> object:  # SGLang calls it with one argument: fine
            return None

        get_dispatch_key_name = "x"  # SGLang calls it: a string is no method

        def get_compile_backend(self, mode: str | None = None) -> str:
            return 3  # type: ignore[return-value]

        def get_mha_kv_pool_cls(self) -> None:
            return None

    kinds = _kinds(check_platform_conformance(Broken))
    assert {
        ("_enum", "identity"),
        ("device_name", "identity"),
        ("device_type", "identity"),
        ("capabilities", "attribute_type"),
        ("get_devce_name", "misspelled"),
        ("get_dispatch_key_name", "binding"),
        ("get_mha_kv_pool_cls", "retired"),
        ("get_compile_backend", "return_type"),
        ("get_default_attention_backend", "not_implemented"),
        ("get_device_total_memory", "not_implemented"),
    } <= kinds


def test_in_tree_enum_is_an_identity_problem() -> None:
    class Plat(GoodSRT):
        _enum = PlatformEnum.NPU

    problems = check_platform_conformance(Plat)
    assert [(p.attribute, p.kind) for p in problems] == [("_enum", "identity")]
    assert "PlatformEnum.OOT" in problems[0].message


def test_in_tree_enum_is_accepted_when_not_out_of_tree() -> None:
    class Plat(GoodSRT):
        _enum = PlatformEnum.NPU

    assert check_platform_conformance(Plat, out_of_tree=False) == []


def test_inherited_placeholder_device_type_is_an_identity_problem() -> None:
    class Plat(SRTPlatform):
        _enum = PlatformEnum.OOT
        device_name = "widget"

    problems = [p for p in check_platform_conformance(Plat) if p.kind == "identity"]
    assert [p.attribute for p in problems] == ["device_type"]


def test_required_method_inheriting_fail_fast_base_is_reported_once() -> None:
    class Plat(GoodSRT):
        get_default_attention_backend = SRTPlatform.get_default_attention_backend

    problems = check_platform_conformance(Plat)
    assert [(p.attribute, p.kind) for p in problems] == [
        ("get_default_attention_backend", "not_implemented")
    ]


def test_reserved_required_methods_can_be_excluded() -> None:
    class Plat(SRTPlatform):
        _enum = PlatformEnum.OOT
        device_name = "widget"
        device_type = "widget"

    required = {
        p.attribute
        for p in check_platform_conformance(Plat, include_reserved=False)
        if p.kind == "not_implemented"
    }
    assert required == {
        "get_device",
        "get_device_total_memory",
        "get_current_memory_usage",
        "get_default_attention_backend",
        "get_default_speculative_draft_attention_backend",
    }


def test_mm_all_to_all_communicator_left_to_base_is_not_implemented() -> None:
    class Plat(GoodMM):
        get_all_to_all_communicator_cls = MMPlatform.__dict__["get_all_to_all_communicator_cls"]

    assert _kinds(check_platform_conformance(Plat)) == {
        ("get_all_to_all_communicator_cls", "not_implemented")
    }


def test_mm_without_dispatch_key_is_reported() -> None:
    class Plat(GoodMM):
        dispatch_key = ""

    assert _kinds(check_platform_conformance(Plat)) == {
        ("get_torch_library_dispatch_key", "not_implemented")
    }


def test_class_built_with_type_and_checks_bypassed_is_reported() -> None:
    Plat = type("Plat", (GoodSRT,), {"synchronise": lambda self: None}, check_overrides=False)
    problems = check_platform_conformance(Plat)
    assert [(p.attribute, p.kind) for p in problems] == [("synchronise", "misspelled")]
    assert "did you mean 'synchronize'" in problems[0].message


def test_problem_in_bypassed_base_is_reported_on_subclass() -> None:
    class Base(GoodSRT, check_overrides=False):
        def get_kv_pool_cls(self) -> None:
            return None

    class Child(Base):
        pass

    assert _kinds(check_platform_conformance(Child)) == {("get_kv_pool_cls", "signature")}


def test_vendor_api_and_other_versions_names_pass_the_check() -> None:
    class Plat(GoodSRT):
        def frobnicate(self) -> None:
            pass

        @property
        def vendor_name(self) -> str:
            return "acme"

        def support_cuda_graph(self) -> bool:
            return False

    assert check_platform_conformance(Plat) == []


def test_retired_hook_fails_the_check_until_the_replacement_is_overridden() -> None:
    class Legacy(GoodSRT):
        def get_mla_kv_pool_cls(self) -> type:
            return object

    class Both(Legacy):
        def get_kv_pool_cls(self, *, kind: str) -> type | None:
            return object if kind == "mla" else None

    (problem,) = check_platform_conformance(Legacy)
    assert (problem.attribute, problem.kind) == ("get_mla_kv_pool_cls", "retired")
    assert "get_kv_pool_cls(self, *, kind) for kind='mla'" in problem.message
    assert check_platform_conformance(Both) == []


def test_constructor_failure_is_reported() -> None:
    class Plat(GoodSRT):
        def __init__(self) -> None:
            raise OSError("no driver")

    assert _kinds(check_platform_conformance(Plat)) == {("__init__", "instantiation")}


def test_non_platform_class_is_one_problem() -> None:
    assert _kinds(check_platform_conformance(int)) == {("<class>", "not_a_platform")}


def test_assert_platform_conformance_passes_for_good_class() -> None:
    assert assert_platform_conformance(GoodSRT) is None


def test_assert_platform_conformance_lists_all_problems() -> None:
    class Plat(GoodSRT, check_overrides=False):
        device_name = ""

        def get_devce_name(self) -> None:
            pass

    with pytest.raises(AssertionError) as excinfo:
        assert_platform_conformance(Plat)
    message = str(excinfo.value)
    assert "2 problems" in message and "[identity]" in message and "[misspelled]" in message


def test_conformance_problem_is_frozen() -> None:
    problem = ConformanceProblem("a", "identity", "m")
    with pytest.raises(AttributeError):
        problem.kind = "x"  # type: ignore[misc]


def test_conformance_check_does_not_import_torch_for_cheap_checks() -> None:
    code = textwrap.dedent(
        """
        import sys
        from sglang_plugin_runtime.platforms.device_mixin import PlatformEnum
        from sglang_plugin_runtime.platforms.interface import SRTPlatform
        from sglang_plugin_runtime.testing._conformance import check_platform_conformance

        class Plat(SRTPlatform):
            _enum = PlatformEnum.OOT
            device_name = device_type = "widget"
            def get_default_attention_backend(self):
                return "x"

        check_platform_conformance(Plat)
        assert "torch" not in sys.modules, "torch was imported"
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
