"""Definition-time checks: unknown, misspelled, retired and wrongly-shaped overrides."""

from __future__ import annotations

import inspect
from functools import cached_property

import pytest

from sglang_plugin_runtime.platforms import _contract
from sglang_plugin_runtime.platforms.device_mixin import DeviceMixin, PlatformEnum
from sglang_plugin_runtime.platforms.interface import SRTPlatform
from sglang_plugin_runtime.platforms.multimodal import MMPlatform


def _define(body: dict, *bases: type, **kwargs: object) -> type:
    return type("Plat", bases or (SRTPlatform,), dict(body), **kwargs)


def test_misspelled_override_is_listed_with_suggestion() -> None:
    with pytest.raises(TypeError, match=r"Plat\.get_devce_name: .*did you mean 'get_device_name'\?"):
        class Plat(SRTPlatform):
            def get_devce_name(self, device_id: int = 0) -> str:
                return "x"


def test_unknown_public_name_without_close_match_is_refused() -> None:
    with pytest.raises(TypeError, match=r"Plat\.frobnicate: not part of the platform contract"):
        class Plat(SRTPlatform):
            def frobnicate(self) -> None:
                pass


def test_unknown_public_data_attribute_is_refused() -> None:
    with pytest.raises(TypeError, match=r"Plat\.supported_quantisation: .*'supported_quantization'"):
        class Plat(SRTPlatform):
            supported_quantisation = ["fp8"]


def test_two_problems_are_reported_in_one_type_error() -> None:
    with pytest.raises(TypeError) as excinfo:
        class Plat(SRTPlatform):
            def get_devce_name(self) -> str:
                return "x"

            def get_default_atention_backend(self) -> str:
                return "x"

    message = str(excinfo.value)
    assert "2 problems" in message
    assert "Plat.get_devce_name" in message
    assert "Plat.get_default_atention_backend" in message


def test_private_names_and_dunders_are_free() -> None:
    class Plat(SRTPlatform):
        _enum = PlatformEnum.OOT
        _cache: dict = {}

        def _helper(self) -> int:
            return 1

        def __init__(self) -> None:
            self._ready = True

    assert Plat()._helper() == 1


def test_retired_kv_pool_hook_is_named_with_its_replacement() -> None:
    with pytest.raises(TypeError, match=r"Plat\.get_mla_kv_pool_cls: this SGLang hook is retired.*get_kv_pool_cls"):
        class Plat(SRTPlatform):
            def get_mla_kv_pool_cls(self) -> type:
                return object


def test_renamed_positional_parameter_is_a_signature_problem() -> None:
    with pytest.raises(TypeError, match=r"parameter 1 is named 'local_rank'; the contract names it 'device_id'"):
        class Plat(SRTPlatform):
            def get_device(self, local_rank: int = 0) -> object:
                return None


def test_dropped_default_is_a_signature_problem() -> None:
    with pytest.raises(TypeError, match=r"parameter 'device_id' has no default"):
        class Plat(SRTPlatform):
            def get_device_name(self, device_id: int) -> str:
                return "x"


def test_missing_parameter_is_a_signature_problem() -> None:
    with pytest.raises(TypeError, match=r"missing parameter 'algorithm'"):
        class Plat(SRTPlatform):
            def supports_speculative_algorithm(self) -> bool:
                return True


def test_reordered_parameters_are_a_signature_problem() -> None:
    with pytest.raises(TypeError, match=r"parameters reordered"):
        class Plat(SRTPlatform):
            def get_speculative_graph_runner_cls(self, phase: str, algorithm: str) -> None:
                return None


def test_missing_keyword_only_parameter_is_a_signature_problem() -> None:
    with pytest.raises(TypeError, match=r"missing keyword-only parameter 'kind'"):
        class Plat(SRTPlatform):
            def get_kv_pool_cls(self) -> None:
                return None


def test_new_required_parameter_is_a_signature_problem() -> None:
    with pytest.raises(TypeError, match=r"new required parameter 'strict'"):
        class Plat(SRTPlatform):
            def verify_quantization(self, quant: str, strict: bool) -> None:
                pass


def test_new_required_keyword_only_parameter_is_a_signature_problem() -> None:
    with pytest.raises(TypeError, match=r"new required keyword-only parameter 'hint'"):
        class Plat(SRTPlatform):
            def get_compile_backend(self, mode: str | None = None, *, hint: str) -> str:
                return "x"


def test_compatible_widenings_are_accepted() -> None:
    class Plat(SRTPlatform):
        def get_compile_backend(self, mode: str | None = None, extra: int = 0) -> str:
            return "x"

        def get_kv_pool_cls(self, **kwargs: object) -> None:
            return None

        def get_device_name(self, *args: object, **kwargs: object) -> str:
            return "x"

        def supports_speculative_algorithm(self, algorithm: str, *, strict: bool = False) -> bool:
            return True

    assert Plat().get_compile_backend() == "x"


def test_classmethod_overriding_instance_method_is_refused() -> None:
    with pytest.raises(TypeError, match=r"Plat\.get_device_name: DeviceMixin\.get_device_name is an instance method; this defines a classmethod"):
        class Plat(SRTPlatform):
            @classmethod
            def get_device_name(cls, device_id: int = 0) -> str:
                return "x"


def test_instance_method_overriding_classmethod_is_refused() -> None:
    with pytest.raises(TypeError, match=r"DeviceMixin\.seed_everything is a classmethod; this defines an instance method"):
        class Plat(SRTPlatform):
            def seed_everything(self, seed: int | None = None) -> None:
                pass


def test_staticmethod_overriding_instance_method_is_refused() -> None:
    with pytest.raises(TypeError, match=r"is an instance method; this defines a staticmethod"):
        class Plat(SRTPlatform):
            @staticmethod
            def get_dispatch_key_name() -> str:
                return "x"


def test_property_overriding_method_is_refused() -> None:
    with pytest.raises(TypeError, match=r"is an instance method; this defines a property"):
        class Plat(SRTPlatform):
            @property
            def get_dispatch_key_name(self) -> str:
                return "x"


def test_non_callable_overriding_method_is_refused() -> None:
    with pytest.raises(TypeError, match=r"this sets it to a non-callable str"):
        class Plat(SRTPlatform):
            get_dispatch_key_name = "npu"


def test_method_overriding_contract_data_attribute_is_refused() -> None:
    with pytest.raises(TypeError, match=r"SRTPlatform\.capabilities is a data attribute"):
        class Plat(SRTPlatform):
            def capabilities(self) -> None:
                pass


def test_contract_data_attributes_may_be_set() -> None:
    class Plat(SRTPlatform):
        device_name = "widget"
        device_type = "widget"
        supported_quantization = ["fp8"]

    assert Plat.supported_quantization == ["fp8"]


def test_cached_property_contract_member_may_be_overridden_by_data() -> None:
    class Plat(DeviceMixin):
        cpu_arch = None

    assert Plat.cpu_arch is None


def test_vendor_mixin_is_checked_against_device_mixin() -> None:
    with pytest.raises(TypeError, match=r"MyDeviceMixin\.get_default_attention_backend: not part"):
        class MyDeviceMixin(DeviceMixin):
            def get_default_attention_backend(self) -> str:
                return "x"


def test_platform_over_vendor_mixin_is_checked_against_the_union() -> None:
    class MyDeviceMixin(DeviceMixin):
        def get_device_name(self, device_id: int = 0) -> str:
            return "widget"

    class MySRTPlatform(SRTPlatform, MyDeviceMixin):
        def get_default_attention_backend(self) -> str:
            return "widget"

        def get_device_uuid(self, device_id: int = 0) -> str:
            return "u"

    assert MySRTPlatform().get_device_name() == "widget"


def test_plain_mixin_outside_the_platform_tree_is_checked_too() -> None:
    class Helpers:
        def get_devce_name(self) -> str:
            return "x"

    with pytest.raises(TypeError, match=r"Helpers\.get_devce_name"):
        class Plat(SRTPlatform, Helpers):
            pass


def test_mm_platform_accepts_its_own_members() -> None:
    class Plat(MMPlatform):
        dispatch_key = "PrivateUse1"

        @classmethod
        def get_attn_backend_cls_str(cls, selected_backend: object, head_size: int, dtype: object) -> str:
            return "pkg.Backend"

    assert Plat.get_attn_backend_cls_str(None, 64, None) == "pkg.Backend"


def test_srt_only_name_is_unknown_on_mm_platform() -> None:
    with pytest.raises(TypeError, match=r"Plat\.get_kv_pool_cls: not part of the platform contract"):
        class Plat(MMPlatform):
            def get_kv_pool_cls(self, *, kind: str) -> None:
                return None


def test_check_overrides_false_bypasses_the_check() -> None:
    class Plat(SRTPlatform, check_overrides=False):
        def get_devce_name(self) -> str:
            return "x"

    assert Plat().get_devce_name() == "x"


def test_find_override_problems_reports_without_raising() -> None:
    Plat = _define({"get_devce_name": lambda self: "x"}, SRTPlatform, check_overrides=False)
    problems = _contract.find_override_problems(Plat)
    assert [(p.attribute, p.kind) for p in problems] == [("get_devce_name", "unknown")]


def test_subclass_of_bypassed_class_reports_base_problems_in_whole_mro_mode() -> None:
    Base = _define({"frobnicate": lambda self: None}, SRTPlatform, check_overrides=False)

    class Child(Base):
        pass

    assert [p.owner for p in _contract.find_override_problems(Child)] == ["Plat"]


def test_contract_classes_do_not_redefine_each_others_names() -> None:
    device_names = set(_contract.contract_members(DeviceMixin))
    for contract_cls in (SRTPlatform, MMPlatform):
        own = {n for n in vars(contract_cls) if not n.startswith("_")}
        assert not own & device_names, contract_cls


def test_contract_member_without_marker_is_refused() -> None:
    with pytest.raises(TypeError, match=r"Extra\.unmarked has no @active/@reserved marker"):
        class Extra(DeviceMixin, _contract_class=True):
            def unmarked(self) -> None:
                pass


def test_signature_check_ignores_annotations_and_default_values() -> None:
    class Plat(SRTPlatform):
        def get_device_total_memory(self, device_id=5):  # noqa: ANN001, ANN201
            return 1

    assert inspect.signature(Plat.get_device_total_memory).parameters["device_id"].default == 5


def test_cached_property_override_of_cpu_arch_is_accepted() -> None:
    class Plat(DeviceMixin):
        @cached_property
        def cpu_arch(self) -> None:
            return None

    assert Plat().cpu_arch is None


def test_positional_only_parameter_is_a_signature_problem() -> None:
    with pytest.raises(TypeError, match=r"parameter 'device_id' is positional-only here"):
        class Plat(SRTPlatform):
            def get_device(self, device_id: int = 0, /) -> object:
                return None


def test_wrapped_override_is_checked_through_its_wrapped_function() -> None:
    import functools

    with pytest.raises(TypeError, match=r"missing parameter 'algorithm'"):
        class Plat(SRTPlatform):
            @functools.lru_cache(maxsize=1)
            def supports_speculative_algorithm(self) -> bool:
                return True


def test_defining_a_valid_platform_imports_no_inspect_dataclasses_or_difflib() -> None:
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(
        """
        import sys
        from sglang_plugin_runtime.platforms.interface import SRTPlatform
        from sglang_plugin_runtime.platforms.multimodal import MMPlatform

        class Plat(SRTPlatform):
            def get_device_name(self, device_id: int = 0) -> str:
                return "x"
            def get_kv_pool_cls(self, *, kind):
                return None

        loaded = [m for m in ("inspect", "dataclasses", "difflib", "torch") if m in sys.modules]
        assert not loaded, loaded
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
