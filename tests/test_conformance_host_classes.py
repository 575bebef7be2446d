"""check_platform_conformance on classes built on SGLang's own platform bases (plugins with
host_api=sglang).

The real SGLang is not installed in the dev venv: these unit tests of the mapping (SGLang's contract
classes to ours, SGLang's value types to ours) use a tiny stand-in package named like SGLang's
modules, written into a temporary folder. This is the one place a stand-in is acceptable:
tests_sglang/test_conformance_agreement.py runs the same check on a generated host_api=sglang class
in the real SGLang 0.5.23.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sglang_plugin_runtime._simulated_device import simulated_device
from sglang_plugin_runtime.testing._conformance import (
    assert_platform_conformance,
    check_platform_conformance,
)

_DEVICE_MIXIN = """
import enum
from typing import NamedTuple


class PlatformEnum(enum.Enum):
    CUDA = enum.auto()
    CPU = enum.auto()
    OOT = enum.auto()
    UNSPECIFIED = enum.auto()


class CpuArchEnum(enum.Enum):
    X86 = enum.auto()
    ARM = enum.auto()
    UNSPECIFIED = enum.auto()


class DeviceCapability(NamedTuple):
    major: int
    minor: int


class DeviceMixin:
    _enum = PlatformEnum.UNSPECIFIED
    device_name = "unknown"
    device_type = "cpu"

    def is_out_of_tree(self):
        return self._enum == PlatformEnum.OOT

    @classmethod
    def get_cpu_architecture(cls):
        return CpuArchEnum.X86

    def get_torch_distributed_backend_str(self):
        return "gloo"

    def get_device_total_memory(self, device_id=0):
        raise NotImplementedError

    def get_current_memory_usage(self, device=None):
        raise NotImplementedError

    def get_device(self, device_id=0):
        raise NotImplementedError

    def set_device(self, device):
        raise NotImplementedError

    def get_device_name(self, device_id=0):
        raise NotImplementedError

    def get_device_uuid(self, device_id=0):
        raise NotImplementedError

    def get_device_capability(self, device_id=0):
        raise NotImplementedError

    def get_available_memory(self, device_id=0):
        raise NotImplementedError

    def get_torch_profiler_activity_str(self):
        raise NotImplementedError

    def get_torch_profiler_activity(self):
        raise NotImplementedError
"""

_INTERFACE = """
from dataclasses import dataclass

from sglang.srt.platforms.device_mixin import DeviceMixin, PlatformEnum


@dataclass(frozen=True)
class PlatformCapabilities:
    supports_triton: bool = False
    graph_capture: bool = False


class SRTPlatform(DeviceMixin):
    supported_quantization = []
    capabilities = PlatformCapabilities()

    def get_default_attention_backend(self):
        raise NotImplementedError

    def get_default_speculative_draft_attention_backend(self, algorithm):
        raise NotImplementedError

    def get_kv_pool_cls(self, *, kind):
        return None
"""


def _forget_stand_in() -> None:
    for name in [n for n in sys.modules if n == "sglang" or n.startswith("sglang.")]:
        del sys.modules[name]


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[types.SimpleNamespace]:
    """The stand-in ``sglang.srt.platforms`` modules, importable for this test only."""
    if "sglang" in sys.modules:
        pytest.skip("a real sglang is imported in this process")
    package = tmp_path / "sglang" / "srt" / "platforms"
    package.mkdir(parents=True)
    for folder in (tmp_path / "sglang", tmp_path / "sglang" / "srt", package):
        (folder / "__init__.py").write_text("", encoding="utf-8")
    (package / "device_mixin.py").write_text(_DEVICE_MIXIN, encoding="utf-8")
    (package / "interface.py").write_text(_INTERFACE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    from sglang.srt.platforms import device_mixin, interface

    try:
        yield types.SimpleNamespace(
            **vars(device_mixin),
            **{
                "SRTPlatform": interface.SRTPlatform,
                "PlatformCapabilities": interface.PlatformCapabilities,
            },
        )
    finally:
        _forget_stand_in()


def _device_mixin(host: types.SimpleNamespace, **extra: Any) -> type:
    """A complete vendor device mixin on the stand-in's DeviceMixin, driving ``torch.widget``."""

    class WidgetDeviceMixin(host.DeviceMixin):
        _enum = host.PlatformEnum.OOT
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
            return f"widget-{device_id}"

        def get_device_capability(self, device_id: int = 0) -> object:
            import torch

            return host.DeviceCapability(*torch.widget.get_device_capability(device_id))

        def get_available_memory(self, device_id: int = 0) -> tuple[int, int]:
            import torch

            return torch.widget.mem_get_info(device_id)

        def get_torch_profiler_activity_str(self) -> str:
            return "PrivateUse1"

        def get_torch_profiler_activity(self) -> object:
            import torch

            return torch.profiler.ProfilerActivity.PrivateUse1

    for name, value in extra.items():
        setattr(WidgetDeviceMixin, name, value)
    return WidgetDeviceMixin


def _platform(host: types.SimpleNamespace, mixin: type | None = None, **namespace: Any) -> type:
    """``WidgetSRTPlatform(SRTPlatform, WidgetDeviceMixin)`` on the stand-in, as host_api=sglang
    generates it."""

    def get_default_attention_backend(self: object) -> str:
        return "torch_native"

    def get_default_speculative_draft_attention_backend(self: object, algorithm: str) -> str:
        return "torch_native"

    body = {
        "get_default_attention_backend": get_default_attention_backend,
        "get_default_speculative_draft_attention_backend": (
            get_default_speculative_draft_attention_backend
        ),
        **namespace,
    }
    return type("WidgetSRTPlatform", (host.SRTPlatform, mixin or _device_mixin(host)), body)


def _kinds(problems: list[Any]) -> set[tuple[str, str]]:
    return {(p.attribute, p.kind) for p in problems}


def test_complete_class_on_sglang_bases_has_no_problems(host: types.SimpleNamespace) -> None:
    assert check_platform_conformance(_platform(host)) == []


def test_complete_class_on_sglang_bases_has_no_problems_on_a_simulated_device(
    host: types.SimpleNamespace,
) -> None:
    # get_device_capability returns SGLang's DeviceCapability: mapped onto ours by its fields.
    with simulated_device("widget", capability=(9, 0)):
        assert check_platform_conformance(_platform(host)) == []


def test_in_tree_sglang_enum_is_an_identity_problem_named_for_the_class(
    host: types.SimpleNamespace,
) -> None:
    cls = _platform(host, _enum=host.PlatformEnum.CPU)
    problems = check_platform_conformance(cls)
    assert _kinds(problems) == {("_enum", "identity")}
    assert problems[0].message.startswith("WidgetSRTPlatform._enum is PlatformEnum.CPU")


def test_in_tree_sglang_enum_is_accepted_when_not_out_of_tree(host: types.SimpleNamespace) -> None:
    cls = _platform(host, _enum=host.PlatformEnum.CPU)
    assert check_platform_conformance(cls, out_of_tree=False) == []


def test_device_type_inherited_from_sglangs_device_mixin_is_a_placeholder(
    host: types.SimpleNamespace,
) -> None:
    mixin = _device_mixin(host)
    del mixin.device_type
    assert _kinds(check_platform_conformance(_platform(host, mixin))) == {
        ("device_type", "identity")
    }


def test_required_method_left_to_sglangs_base_is_not_implemented(
    host: types.SimpleNamespace,
) -> None:
    cls = type("BareSRTPlatform", (host.SRTPlatform, _device_mixin(host)), {})
    problems = check_platform_conformance(cls)
    assert _kinds(problems) == {
        ("get_default_attention_backend", "not_implemented"),
        ("get_default_speculative_draft_attention_backend", "not_implemented"),
    }
    assert all(p.message.startswith("BareSRTPlatform.") for p in problems)


def test_device_ops_missing_are_not_implemented_on_sglangs_base(
    host: types.SimpleNamespace,
) -> None:
    mixin = type(
        "EmptyDeviceMixin",
        (host.DeviceMixin,),
        {
            "_enum": host.PlatformEnum.OOT,
            "device_name": "widget",
            "device_type": "widget",
        },
    )
    not_implemented = {
        a
        for a, kind in _kinds(check_platform_conformance(_platform(host, mixin)))
        if kind == "not_implemented"
    }
    assert not_implemented == {
        "get_device_total_memory",
        "get_current_memory_usage",
        "get_device",
        "set_device",
        "get_device_name",
        "get_device_uuid",
        "get_device_capability",
        "get_available_memory",
        "get_torch_profiler_activity_str",
        "get_torch_profiler_activity",
    }


def test_misspelled_override_is_reported_on_the_vendors_own_mixin(
    host: types.SimpleNamespace,
) -> None:
    mixin = _device_mixin(host, get_devcie_name=lambda self, device_id=0: "widget")
    problems = check_platform_conformance(_platform(host, mixin))
    assert _kinds(problems) == {("get_devcie_name", "misspelled")}
    assert problems[0].message.startswith(
        "WidgetDeviceMixin.get_devcie_name: not a name SGLang calls"
    )
    assert "did you mean 'get_device_name'" in problems[0].message


def test_incompatible_signature_is_reported(host: types.SimpleNamespace) -> None:
    def get_default_speculative_draft_attention_backend(self: object) -> str:
        return "torch_native"

    cls = _platform(
        host,
        get_default_speculative_draft_attention_backend=get_default_speculative_draft_attention_backend,
    )
    problems = check_platform_conformance(cls)
    assert _kinds(problems) == {("get_default_speculative_draft_attention_backend", "signature")}
    assert "cannot accept the host's call" in problems[0].message
    assert (
        "SGLang declares get_default_speculative_draft_attention_backend(self, algorithm)"
        in problems[0].message
    )


def test_retired_sglang_hook_is_reported(host: types.SimpleNamespace) -> None:
    def get_mha_kv_pool_cls(self: object) -> None:
        return None

    problems = check_platform_conformance(_platform(host, get_mha_kv_pool_cls=get_mha_kv_pool_cls))
    assert _kinds(problems) == {("get_mha_kv_pool_cls", "retired")}


def test_sglang_enum_results_are_mapped_by_member_name(host: types.SimpleNamespace) -> None:
    @classmethod  # type: ignore[misc]
    def get_cpu_architecture(cls: type) -> object:
        return host.CpuArchEnum.ARM

    assert (
        check_platform_conformance(_platform(host, get_cpu_architecture=get_cpu_architecture)) == []
    )


def test_a_result_of_the_wrong_type_is_still_reported(host: types.SimpleNamespace) -> None:
    @classmethod  # type: ignore[misc]
    def get_cpu_architecture(cls: type) -> object:
        return "arm"

    problems = check_platform_conformance(
        _platform(host, get_cpu_architecture=get_cpu_architecture)
    )
    assert _kinds(problems) == {("get_cpu_architecture", "return_type")}
    assert problems[0].message.startswith("WidgetSRTPlatform.get_cpu_architecture() returned 'arm'")


def test_sglang_capabilities_are_mapped_by_fields(host: types.SimpleNamespace) -> None:
    cls = _platform(host, capabilities=host.PlatformCapabilities(supports_triton=True))
    assert check_platform_conformance(cls) == []


def test_sglang_value_with_a_field_ours_lacks_is_reported_as_is(
    host: types.SimpleNamespace,
) -> None:
    # A newer SGLang's capabilities with a flag our contract does not know: reported, never silently
    # dropped.
    odd = type(
        "PlatformCapabilities",
        (),
        {
            "__module__": host.PlatformCapabilities.__module__,
            "__struct_fields__": ("supports_teleport",),
            "supports_teleport": True,
        },
    )()
    problems = check_platform_conformance(_platform(host, capabilities=odd))
    assert _kinds(problems) == {("capabilities", "attribute_type")}


def test_device_method_raising_on_a_simulated_device_is_reported(
    host: types.SimpleNamespace,
) -> None:
    def get_device_name(self: object, device_id: int = 0) -> str:
        raise RuntimeError("driver gone")

    mixin = _device_mixin(host, get_device_name=get_device_name)
    with simulated_device("widget"):
        problems = check_platform_conformance(_platform(host, mixin))
    assert _kinds(problems) == {("get_device_name", "raises")}
    assert (
        problems[0].message
        == "WidgetSRTPlatform.get_device_name(0) raised RuntimeError: driver gone"
    )


def test_methods_run_on_the_class_itself_so_zero_argument_super_works(
    host: types.SimpleNamespace,
) -> None:
    class WidgetSRTPlatform(host.SRTPlatform, _device_mixin(host)):
        def __init__(self) -> None:
            super().__init__()

        def get_default_attention_backend(self) -> str:
            return "torch_native"

        def get_default_speculative_draft_attention_backend(self, algorithm: str) -> str:
            return "torch_native"

        def get_torch_distributed_backend_str(self) -> str:
            return super().get_torch_distributed_backend_str()

    assert check_platform_conformance(WidgetSRTPlatform) == []


def test_checking_never_mutates_the_class_or_its_bases(host: types.SimpleNamespace) -> None:
    cls = _platform(host, _enum=host.PlatformEnum.CPU)
    before = {klass: dict(vars(klass)) for klass in cls.__mro__}
    subclasses = {klass: klass.__subclasses__() for klass in cls.__mro__ if klass is not object}
    with simulated_device("widget"):
        check_platform_conformance(cls)
    assert {klass: dict(vars(klass)) for klass in cls.__mro__} == before
    assert {klass: klass.__subclasses__() for klass in subclasses} == subclasses


def test_assert_names_the_original_class(host: types.SimpleNamespace) -> None:
    cls = _platform(host, _enum=host.PlatformEnum.CPU)
    with pytest.raises(
        AssertionError, match=r"^WidgetSRTPlatform does not conform .*\(1 problem\)"
    ):
        assert_platform_conformance(cls)


def test_lookalike_base_outside_sglang_is_not_a_platform() -> None:
    lookalike = type("SRTPlatform", (), {"__module__": "mylib.platforms.interface"})
    cls = type("Plat", (lookalike,), {})
    assert _kinds(check_platform_conformance(cls)) == {("<class>", "not_a_platform")}


def test_judging_a_runtime_class_never_imports_sglang() -> None:
    code = textwrap.dedent(
        """
        import sys
        from sglang_plugin_runtime.platforms.device_mixin import PlatformEnum
        from sglang_plugin_runtime.platforms.interface import SRTPlatform
        from sglang_plugin_runtime.testing import check_platform_conformance

        class Plat(SRTPlatform):
            _enum = PlatformEnum.OOT
            device_name = device_type = "widget"

        check_platform_conformance(Plat)
        print(sorted(n for n in sys.modules if n == "sglang" or n.startswith("sglang.")))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"
