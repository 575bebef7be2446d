"""Definition-time checks: refuse only what the host's real calls cannot use; warn about likely
misspellings.

Every platform class SGLang would run is accepted: a vendor's own public API, names of other SGLang
versions, retired hooks the host still serves, renamed parameters the host passes positionally, a
vendor device mixin with extra methods. A ``TypeError`` is kept for an override that cannot accept a
call the host makes (the interface table records each one); a public name one or two keystrokes from
a contract name gets a WARNING.
"""

from __future__ import annotations

import functools
import inspect
import logging
import warnings
from functools import cached_property

import pytest

from sglang_plugin_runtime.platforms import _contract
from sglang_plugin_runtime.platforms._describe import find_override_problems
from sglang_plugin_runtime.platforms.device_mixin import DeviceMixin, PlatformEnum
from sglang_plugin_runtime.platforms.interface import SRTPlatform
from sglang_plugin_runtime.platforms.multimodal import MMPlatform

CONTRACT_LOGGER = "sglang_plugin_runtime.platforms._contract"


def _define(body: dict, *bases: type, **kwargs: object) -> type:
    return type("Plat", bases or (SRTPlatform,), dict(body), **kwargs)


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == CONTRACT_LOGGER and r.levelno == logging.WARNING
    ]


# ---- accepted: what SGLang runs ------------------------------------------------------------------


def test_vendor_public_methods_and_properties_are_accepted_silently(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.DEBUG, logger=CONTRACT_LOGGER):

        class Plat(SRTPlatform):
            def frobnicate(self) -> None:
                pass

            @property
            def vendor_name(self) -> str:
                return "acme"

            def get_device_count(self) -> int:
                return 8

    assert Plat().vendor_name == "acme"
    assert _warnings(caplog) == []
    kinds = {(p.attribute, p.kind) for p in find_override_problems(Plat)}
    assert kinds == {
        ("frobnicate", "unknown"),
        ("vendor_name", "unknown"),
        ("get_device_count", "unknown"),
    }


def test_names_of_other_sglang_versions_are_accepted(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger=CONTRACT_LOGGER):

        class Plat(SRTPlatform):
            def support_cuda_graph(self) -> bool:
                return True

            def support_piecewise_cuda_graph(self) -> bool:
                return False

            def supports_fp8(self) -> bool:
                return False

            def get_nsa_kv_pool_cls(self) -> type:
                return object

    assert _warnings(caplog) == []
    problems = {p.attribute: p for p in find_override_problems(Plat)}
    assert {p.kind for p in problems.values()} == {"unknown"}
    assert "SRTPlatform before 0.5.23" in problems["support_cuda_graph"].message


def test_a_member_of_the_other_host_is_accepted_on_a_platform() -> None:
    class Plat(SRTPlatform):
        # the diffusion platform's; one edit from is_cpu, yet no misspelling
        def is_hpu(
            self,
        ) -> bool:
            return False

    class MMPlat(MMPlatform):
        def get_kv_pool_cls(self, *, kind: str) -> None:
            return None

    problems = find_override_problems(Plat) + find_override_problems(MMPlat)
    assert [(p.attribute, p.kind) for p in problems] == [
        ("is_hpu", "unknown"),
        ("get_kv_pool_cls", "unknown"),
    ]
    assert "a name of MMPlatform; not called here" in problems[0].message


def test_vendor_device_mixin_with_extra_public_methods_is_accepted() -> None:
    class MyDeviceMixin(DeviceMixin):
        # SRT's name on a device mixin: no host calls a mixin
        def get_default_attention_backend(
            self,
        ) -> str:
            return "x"

        def vendor_only(self) -> int:
            return 1

    class MySRTPlatform(SRTPlatform, MyDeviceMixin):
        pass

    assert MySRTPlatform().vendor_only() == 1


def test_renamed_positional_parameter_is_accepted_when_the_host_passes_it_positionally() -> None:
    class Plat(SRTPlatform):
        def get_device(self, local_rank):
            return local_rank

    assert Plat().get_device(3) == 3


def test_parameters_the_host_passes_by_keyword_may_be_reordered() -> None:
    class Plat(SRTPlatform):
        def get_speculative_graph_runner_cls(self, phase: str, algorithm: str) -> tuple[str, str]:  # type: ignore[override]
            return algorithm, phase

    assert Plat().get_speculative_graph_runner_cls(algorithm="EAGLE", phase="draft_decode") == (
        "EAGLE",
        "draft_decode",
    )


def test_members_the_host_never_calls_accept_any_shape() -> None:
    class Plat(SRTPlatform):
        def get_device_name(self, device_id: int) -> str:  # SGLang's LLM host never calls it
            return "x"

        # an instance method where SGLang has a classmethod
        def seed_everything(self, seed: int | None = None) -> None:
            pass

        def verify_quantization(self, quant: str, strict: bool) -> None:
            pass

    assert Plat().get_device_name(0) == "x"


def test_classmethod_and_staticmethod_overrides_serve_instance_calls() -> None:
    class Plat(SRTPlatform):
        @classmethod
        def get_device_uuid(cls, device_id: int = 0) -> str:
            return "uuid"

        @staticmethod
        def get_dispatch_key_name() -> str:
            return "widget"

    assert Plat().get_device_uuid(0) == "uuid"
    assert Plat().get_dispatch_key_name() == "widget"


@pytest.mark.parametrize("kind", ["partialmethod", "singledispatchmethod"])
@pytest.mark.fault(
    "selection",
    "a platform class defines get_device = functools.partialmethod(...) or a "
    "@functools.singledispatchmethod override (SGLang calls both fine)",
    "accepted at class definition, and the host's call works (was: TypeError 'this sets it to a "
    "non-callable partialmethod')",
)
def test_partialmethod_and_singledispatchmethod_overrides_are_accepted(kind: str) -> None:
    def _device(self: object, device_id: object = None, *, prefix: str) -> str:
        return prefix if device_id is None else f"{prefix}:{device_id}"

    if kind == "partialmethod":
        get_device = functools.partialmethod(_device, prefix="acme")
    else:
        get_device = functools.singledispatchmethod(lambda self, device_id=None: "acme")
        get_device.register(int, lambda self, device_id: f"acme:{device_id}")
    plat = _define({"get_device": get_device})()
    assert plat.get_device(1) == "acme:1"


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


def test_private_names_and_dunders_are_free() -> None:
    class Plat(SRTPlatform):
        _enum = PlatformEnum.OOT
        _cache: dict = {}

        def _helper(self) -> int:
            return 1

        def __init__(self) -> None:
            self._ready = True

    assert Plat()._helper() == 1


def test_contract_data_attributes_may_be_set() -> None:
    class Plat(SRTPlatform):
        device_name = "widget"
        device_type = "widget"
        supported_quantization = ["fp8"]

    assert Plat.supported_quantization == ["fp8"]


def test_property_may_serve_data_the_host_reads_on_instances() -> None:
    from sglang_plugin_runtime.platforms.interface import PlatformCapabilities

    class Plat(SRTPlatform):
        @property
        def capabilities(self) -> PlatformCapabilities:  # type: ignore[override]
            return PlatformCapabilities(graph_capture=True)

    assert Plat().capabilities.graph_capture is True


def test_cached_property_contract_member_may_be_overridden_by_data() -> None:
    class Plat(DeviceMixin):
        cpu_arch = None

    assert Plat.cpu_arch is None


def test_cached_property_override_of_cpu_arch_is_accepted() -> None:
    class Plat(DeviceMixin):
        @cached_property
        def cpu_arch(self) -> None:
            return None

    assert Plat().cpu_arch is None


def test_mm_platform_accepts_its_own_members() -> None:
    class Plat(MMPlatform):
        dispatch_key = "PrivateUse1"

        @classmethod
        def get_attn_backend_cls_str(
            cls, selected_backend: object, head_size: int, dtype: object
        ) -> str:
            return "pkg.Backend"

    assert Plat.get_attn_backend_cls_str(None, 64, None) == "pkg.Backend"


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


def test_signature_check_ignores_annotations_and_default_values() -> None:
    class Plat(SRTPlatform):
        def get_device_total_memory(self, device_id=5):
            return 1

    assert inspect.signature(Plat.get_device_total_memory).parameters["device_id"].default == 5


# ---- retired hooks: accepted and served as SGLang serves them ------------------------------------


def test_retired_kv_pool_hook_is_served_by_get_kv_pool_cls_with_a_deprecation_warning() -> None:
    class Plat(SRTPlatform):
        def get_mla_kv_pool_cls(self) -> type:
            return dict

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert Plat().get_kv_pool_cls(kind="mla") is dict
        assert Plat().get_kv_pool_cls(kind="mha") is None
    (warning,) = caught
    assert warning.category is DeprecationWarning
    assert "Plat.get_mla_kv_pool_cls() is a retired SGLang hook" in str(warning.message)
    assert "get_kv_pool_cls(self, *, kind)" in str(warning.message) and "kind='mla'" in str(
        warning.message
    )


def test_retired_hook_warns_once_per_class() -> None:
    class Plat(SRTPlatform):
        def get_dsa_kv_pool_cls(self) -> type:
            return list

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            assert Plat().get_kv_pool_cls(kind="dsa") is list
    assert len(caught) == 1


def test_retired_hook_is_reported_with_its_replacement() -> None:
    Plat = _define({"get_mha_kv_pool_cls": lambda self: object})
    (problem,) = find_override_problems(Plat)
    assert (problem.kind, problem.is_error) == ("retired", False)
    assert "override get_kv_pool_cls(self, *, kind) for kind='mha' instead" in problem.message


def test_retired_hook_that_cannot_take_the_served_call_is_refused() -> None:
    with pytest.raises(
        TypeError, match=r"Plat\.get_mha_kv_pool_cls: .*cannot accept the host's call"
    ):

        class Plat(SRTPlatform):
            def get_mha_kv_pool_cls(self, layer: int) -> type:
                return object


# ---- likely misspellings: a warning with a suggestion --------------------------------------------


def test_misspelled_override_is_a_warning_with_a_suggestion(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger=CONTRACT_LOGGER):

        class Plat(SRTPlatform):
            def get_devce_name(self, device_id: int = 0) -> str:
                return "x"

    (message,) = _warnings(caplog)
    assert message.startswith(
        "Plat.get_devce_name: not a name SGLang calls; did you mean 'get_device_name'?"
    )
    assert Plat().get_devce_name() == "x"


def test_misspelled_data_attribute_is_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=CONTRACT_LOGGER):

        class Plat(SRTPlatform):
            supported_quantisation = ["fp8"]

    assert ["did you mean 'supported_quantization'" in m for m in _warnings(caplog)] == [True]


def test_misspelling_in_a_vendor_mixin_is_warned_once(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=CONTRACT_LOGGER):

        class MyDeviceMixin(DeviceMixin):
            def synchronise(self) -> None:
                pass

        class A(SRTPlatform, MyDeviceMixin):
            pass

        class B(MMPlatform, MyDeviceMixin):
            pass

    assert [m.split(":")[0] for m in _warnings(caplog)] == ["MyDeviceMixin.synchronise"]


def test_misspelling_in_a_plain_mixin_is_warned_when_a_platform_uses_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Helpers:
        def get_default_atention_backend(self) -> str:
            return "x"

    with caplog.at_level(logging.WARNING, logger=CONTRACT_LOGGER):

        class Plat(SRTPlatform, Helpers):
            pass

    assert ["Helpers.get_default_atention_backend" in m for m in _warnings(caplog)] == [True]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("synchronise", "synchronize"),
        ("get_devce_name", "get_device_name"),
        ("get_kv_pool_class", "get_kv_pool_cls"),
        ("init_backnd", "init_backend"),
        ("vendor_name", None),
        ("get_device_count", None),
        ("is_gpu", None),
        ("set_device_id", None),
    ],
)
def test_near_miss_is_one_or_two_edits_from_a_contract_name(
    name: str, expected: str | None
) -> None:
    found = _contract.misspelling(name, _contract.contract_members(SRTPlatform))
    assert (found and found.split("did you mean ")[1].split("?")[0].strip("'")) == expected


# ---- refused: the host's call would fail ---------------------------------------------------------


def test_override_without_the_argument_the_host_passes_is_refused() -> None:
    with pytest.raises(TypeError) as excinfo:

        class Plat(SRTPlatform):
            def is_pin_memory_available(self) -> bool:  # SGLang 0.5.23 passes the target device
                return False

    message = str(excinfo.value)
    assert (
        "Plat.is_pin_memory_available: is_pin_memory_available() cannot accept the host's call "
        "platform.is_pin_memory_available(<arg>)" in message
    )
    assert "called from sglang/srt/utils/common.py" in message
    assert "SGLang declares is_pin_memory_available(self, device=None)" in message


def test_two_problems_are_reported_in_one_type_error() -> None:
    with pytest.raises(TypeError) as excinfo:

        class Plat(SRTPlatform):
            def is_pin_memory_available(self) -> bool:
                return False

            def get_kv_pool_cls(self) -> None:
                return None

    message = str(excinfo.value)
    assert "Plat cannot serve its host's calls (SRTPlatform, DeviceMixin): 2 problems" in message
    assert "Plat.is_pin_memory_available" in message and "Plat.get_kv_pool_cls" in message


def test_dropped_default_is_refused_when_the_host_calls_without_the_argument() -> None:
    with pytest.raises(TypeError, match=r"missing a required argument: 'device_id'"):

        class Plat(SRTPlatform):
            def get_device_total_memory(self, device_id: int) -> int:
                return 1


def test_missing_parameter_is_refused() -> None:
    with pytest.raises(
        TypeError, match=r"supports_speculative_algorithm\(\) cannot accept the host's call"
    ):

        class Plat(SRTPlatform):
            def supports_speculative_algorithm(self) -> bool:
                return True


def test_missing_keyword_parameter_is_refused() -> None:
    with pytest.raises(TypeError, match=r"got an unexpected keyword argument 'kind'"):

        class Plat(SRTPlatform):
            def get_kv_pool_cls(self) -> None:
                return None


def test_positional_only_parameter_the_host_passes_by_keyword_is_refused() -> None:
    with pytest.raises(TypeError, match=r"get_kv_pool_cls\(kind, /\) cannot accept"):

        class Plat(SRTPlatform):
            def get_kv_pool_cls(self, kind: str, /) -> None:
                return None


def test_new_required_parameter_is_refused() -> None:
    with pytest.raises(TypeError, match=r"missing a required argument: 'strict'"):

        class Plat(SRTPlatform):
            def get_compile_backend(self, mode: str | None, strict: bool) -> str:
                return "x"


def test_new_required_keyword_only_parameter_is_refused() -> None:
    with pytest.raises(TypeError, match=r"missing a required (keyword-only )?argument: 'hint'"):

        class Plat(SRTPlatform):
            def get_compile_backend(self, mode: str | None = None, *, hint: str) -> str:
                return "x"


def test_property_where_the_host_calls_a_method_is_refused() -> None:
    with pytest.raises(
        TypeError,
        match=r"the host calls it \(platform\.get_dispatch_key_name\(\)\); this defines a property",
    ):

        class Plat(SRTPlatform):
            @property
            def get_dispatch_key_name(self) -> str:
                return "x"


def test_non_callable_where_the_host_calls_a_method_is_refused() -> None:
    with pytest.raises(TypeError, match=r"this sets it to a non-callable str"):

        class Plat(SRTPlatform):
            get_dispatch_key_name = "npu"


def test_method_where_the_host_reads_data_is_refused() -> None:
    with pytest.raises(TypeError, match=r"Plat\.capabilities: the host reads it as data"):

        class Plat(SRTPlatform):
            def capabilities(self) -> None:
                pass


def test_property_where_the_runtime_reads_the_class_is_refused() -> None:
    with pytest.raises(TypeError, match=r"Plat\.device_type: the runtime reads it on the class"):

        class Plat(SRTPlatform):
            @property
            def device_type(self) -> str:
                return "widget"


def test_instance_method_where_the_class_is_called_is_refused() -> None:
    with pytest.raises(TypeError, match=r"Plat\.is_cuda_static: the host calls it on the class"):

        class Plat(MMPlatform):
            def is_cuda_static(self) -> bool:
                return False


def test_mm_override_without_the_keywords_the_diffusion_engine_passes_is_refused() -> None:
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'empty_cache'"):

        class Plat(MMPlatform):
            @classmethod
            def get_available_gpu_memory(cls, device_id: int | None = None) -> float:
                return 1.0


def test_incompatible_method_in_a_plain_mixin_is_refused_with_the_platform() -> None:
    class Helpers:
        def get_kv_pool_cls(self) -> None:
            return None

    with pytest.raises(TypeError, match=r"Helpers\.get_kv_pool_cls"):

        class Plat(SRTPlatform, Helpers):
            pass


def test_wrapped_override_is_checked_through_its_wrapped_function() -> None:
    import functools

    with pytest.raises(TypeError, match=r"supports_speculative_algorithm\(\) cannot accept"):

        class Plat(SRTPlatform):
            @functools.lru_cache(maxsize=1)
            def supports_speculative_algorithm(self) -> bool:
                return True


# ---- reporting and escape hatch ------------------------------------------------------------------


def test_check_overrides_false_bypasses_the_check() -> None:
    class Plat(SRTPlatform, check_overrides=False):
        def get_kv_pool_cls(self) -> None:
            return None

    assert Plat().get_kv_pool_cls() is None


def test_find_override_problems_reports_without_raising() -> None:
    Plat = _define(
        {"get_devce_name": lambda self: "x", "get_kv_pool_cls": lambda self: None},
        SRTPlatform,
        check_overrides=False,
    )
    problems = find_override_problems(Plat)
    assert [(p.attribute, p.kind, p.is_error) for p in problems] == [
        ("get_devce_name", "misspelled", False),
        ("get_kv_pool_cls", "signature", True),
    ]


def test_subclass_of_bypassed_class_reports_base_problems_in_whole_mro_mode() -> None:
    Base = _define({"frobnicate": lambda self: None}, SRTPlatform, check_overrides=False)

    class Child(Base):
        pass

    assert [p.owner for p in find_override_problems(Child)] == ["Plat"]


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


def test_defining_a_platform_imports_no_torch() -> None:
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
            def vendor_helper(self):
                return None

        assert "torch" not in sys.modules
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
