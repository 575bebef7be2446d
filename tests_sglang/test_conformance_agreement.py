"""Our conformance check and the real SGLang 0.5.23 agree about platform classes.

SGLang has no conformance check of its own; its verdict is what it does with a class:
``_load_platform_class`` accepts it or not, ``is_out_of_tree()``, and which of its methods still
raise ``NotImplementedError`` when called. "SGLang's verdict" below asks exactly that of the real
classes. Our verdict is ``check_platform_conformance`` on the same class generated for the runtime
host, and on the SGLang-host class itself (the check accepts classes built on SGLang's own bases, as
a vendor's generated tests call it).
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import GeneratedPackage

from sglang_plugin_runtime.testing import (
    assert_platform_conformance,
    check_platform_conformance,
    simulated_device,
)

# Arguments for SGLang's platform methods, by parameter name (what SGLang's core passes).
ARGUMENTS: dict[str, Any] = {
    "algorithm": "EAGLE",
    "device": None,
    "quant": "fp8",
    "local_rank": 0,
    "kind": "mha",
    "mode": None,
    "phase": "draft_decode",
    "backend": "triton",
    "server_args": None,
    "model": None,
    "seed": None,
    "quantization": "fp8",
    "device_id": 0,
}


def _public_methods(cls: type) -> dict[str, Any]:
    methods = {}
    for name in dir(cls):
        if name.startswith("_"):
            continue
        raw = inspect.getattr_static(cls, name)
        if isinstance(raw, (classmethod, staticmethod)) or inspect.isfunction(raw):
            methods[name] = raw
    return methods


def sglang_verdict(cls: type) -> set[str]:
    """What real SGLang finds wrong with ``cls``: its problems, by attribute name."""
    from sglang.srt.platforms import _load_platform_class

    problems: set[str] = set()
    try:
        _load_platform_class(f"{cls.__module__}:{cls.__qualname__}")
    except TypeError:
        return {"<class>"}
    instance = cls()
    if not instance.is_out_of_tree():
        problems.add("_enum")
    for name in _public_methods(cls):
        method = getattr(instance, name)
        try:
            signature = inspect.signature(method)
        except (TypeError, ValueError):
            continue
        kwargs = {
            p.name: ARGUMENTS[p.name]
            for p in signature.parameters.values()
            if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        }
        try:
            result = method(**kwargs)
            if hasattr(result, "__enter__"):  # reindex_device_id is a context manager
                with result:
                    pass
        except NotImplementedError:
            problems.add(name)
        except ModuleNotFoundError as exc:  # an older release's pool, in this venv's light SGLang
            assert exc.name == "transformers", exc
    return problems


def our_verdict(cls: type) -> set[str]:
    return {problem.attribute for problem in check_platform_conformance(cls)}


@pytest.fixture(scope="module")
def on_path(
    platform_plugin: GeneratedPackage, runtime_platform_plugin: GeneratedPackage
) -> Iterator[None]:
    # `import sglang` resolves SGLang's current_platform (sglang.srt.utils.common imports it): let
    # it do so before our plugins are on sys.path, so this process keeps SGLang's base platform.
    from sglang.srt.platforms import current_platform  # noqa: F401

    sys.path[:0] = [str(platform_plugin.site), str(runtime_platform_plugin.site)]
    with simulated_device("simdev", backend_module="torch_simdev", privateuse1=True):
        yield
    del sys.path[:2]


def _classes(variant: str) -> tuple[type, type]:
    """(SGLang-host class, runtime-host class) of the generated platform, or of a broken variant of
    it."""
    sglang_cls = importlib.import_module("sglang_simdev_platform.platform").SimdevSRTPlatform
    ours_cls = importlib.import_module("sglang_simdev_rt.platform").SimdevSRTPlatform
    if variant == "generated":
        return sglang_cls, ours_cls
    pair = []
    for cls in (sglang_cls, ours_cls):
        srt_base, mixin = (
            cls.__mro__[1],
            next(b for b in cls.__bases__ if b.__name__ == "SimdevDeviceMixin"),
        )
        if variant == "no_attention_backend":  # the vendor forgot the SRT overrides
            namespace: dict[str, Any] = {}
            bases: tuple[type, ...] = (srt_base, mixin)
        elif variant == "no_device_ops":  # the vendor forgot the device mixin
            namespace = {
                "device_name": "simdev",
                "device_type": "simdev",
                "_enum": mixin._enum,
                **{k: v for k, v in vars(cls).items() if k.startswith("get_default")},
            }
            bases = (srt_base,)
        elif variant == "not_out_of_tree":
            namespace = {"_enum": type(mixin._enum).CPU}
            bases = (cls,)
        else:
            raise AssertionError(variant)
        namespace["__module__"] = __name__
        new = type(f"Variant_{variant}", bases, namespace)
        pair.append(new)
    globals()[f"Variant_{variant}"] = pair[0]  # resolvable by SGLang's _load_platform_class
    return pair[0], pair[1]


VERDICTS = [
    ("generated", set()),
    (
        "no_attention_backend",
        {"get_default_attention_backend", "get_default_speculative_draft_attention_backend"},
    ),
    (
        "no_device_ops",
        {
            "get_available_memory",
            "get_current_memory_usage",
            "get_device",
            "get_device_capability",
            "get_device_name",
            "get_device_total_memory",
            "get_device_uuid",
            "get_torch_profiler_activity",
            "get_torch_profiler_activity_str",
            "set_device",
        },
    ),
    ("not_out_of_tree", {"_enum"}),
]


@pytest.mark.usefixtures("on_path")
@pytest.mark.parametrize(("variant", "expected"), VERDICTS)
def test_our_check_agrees_with_sglang(variant: str, expected: set[str]) -> None:
    sglang_cls, ours_cls = _classes(variant)
    assert sglang_verdict(sglang_cls) == expected
    assert our_verdict(ours_cls) == expected


@pytest.mark.usefixtures("on_path")
@pytest.mark.parametrize(("variant", "expected"), VERDICTS)
def test_our_check_on_the_sglang_host_class_itself_agrees_with_sglang(
    variant: str, expected: set[str]
) -> None:
    sglang_cls, _ = _classes(variant)
    assert sglang_verdict(sglang_cls) == expected
    assert our_verdict(sglang_cls) == expected


@pytest.mark.usefixtures("on_path")
def test_problems_of_an_sglang_host_class_name_that_class() -> None:
    sglang_cls, _ = _classes("not_out_of_tree")
    (problem,) = check_platform_conformance(sglang_cls)
    assert problem.message.startswith("Variant_not_out_of_tree._enum is PlatformEnum.CPU")


@pytest.mark.usefixtures("on_path")
def test_checking_the_generated_sglang_host_class_leaves_it_unchanged() -> None:
    sglang_cls, _ = _classes("generated")
    before = {klass: dict(vars(klass)) for klass in sglang_cls.__mro__}
    assert_platform_conformance(sglang_cls)
    assert {klass: dict(vars(klass)) for klass in sglang_cls.__mro__} == before


def test_the_contracts_require_the_same_methods() -> None:
    """The methods SGLang's base leaves raising NotImplementedError are exactly our contract's
    required ones."""
    from sglang.srt.platforms.interface import SRTPlatform as SGLangSRTPlatform

    from sglang_plugin_runtime.platforms import _contract
    from sglang_plugin_runtime.platforms.interface import SRTPlatform

    sglang_required = {name for name in sglang_verdict_base(SGLangSRTPlatform)}
    ours = _contract.contract_members(SRTPlatform)
    assert sglang_required == {name for name, member in ours.items() if member.required}
    # Every public name SGLang's platform has, ours has too (we add only is_mlu).
    assert set(_public_methods(SGLangSRTPlatform)) <= set(ours)
    assert set(ours) - set(dir(SGLangSRTPlatform)) == {"is_mlu"}


def sglang_verdict_base(cls: type) -> set[str]:
    instance = cls()
    required = set()
    for name in _public_methods(cls):
        method = getattr(instance, name)
        signature = inspect.signature(method)
        kwargs = {
            p.name: ARGUMENTS[p.name]
            for p in signature.parameters.values()
            if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        }
        try:
            result = method(**kwargs)
            if hasattr(result, "__enter__"):
                with result:
                    pass
        except NotImplementedError:
            required.add(name)
    return required


def test_a_platform_written_to_sglang_signatures_passes_our_override_check() -> None:
    """Every override spelled exactly as SGLang 0.5.23 declares it is accepted by our
    definition-time check."""
    from sglang.srt.platforms.interface import SRTPlatform as SGLangSRTPlatform

    from sglang_plugin_runtime.platforms.device_mixin import PlatformEnum
    from sglang_plugin_runtime.platforms.interface import SRTPlatform

    lines = [
        "class Ported(SRTPlatform):",
        "    _enum = PlatformEnum.OOT",
        "    device_name = 'ported'",
        "    device_type = 'ported'",
    ]
    for name, raw in sorted(_public_methods(SGLangSRTPlatform).items()):
        function = raw.__func__ if isinstance(raw, (classmethod, staticmethod)) else raw
        signature = inspect.signature(function)
        signature = signature.replace(
            parameters=[p.replace(annotation=p.empty) for p in signature.parameters.values()],
            return_annotation=signature.empty,
        )
        if isinstance(raw, classmethod):
            lines.append("    @classmethod")
        elif isinstance(raw, staticmethod):
            lines.append("    @staticmethod")
        lines.append(f"    def {name}{signature}: return None")
    namespace: dict[str, Any] = {"SRTPlatform": SRTPlatform, "PlatformEnum": PlatformEnum}
    exec("\n".join(lines), namespace)
    ported = namespace["Ported"]
    problems = [
        p
        for p in check_platform_conformance(ported)
        if p.kind in ("unknown", "retired", "signature", "binding")
    ]
    assert problems == []
