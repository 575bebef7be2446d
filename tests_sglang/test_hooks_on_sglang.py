"""Our ``HookRegistry`` applied to real SGLang code, in this process, and ``reset()`` putting every
object back.

Targets:
- ``sglang.srt.runtime_context.get_platform``: a module-level function that about thirty SGLang
  modules hold a ``from ... import get_platform`` copy of once ``sglang.srt.server_args`` is
  imported (2,600 modules);
- ``SRTPlatform.get_compile_backend``: a method of SGLang's ``SRTPlatform``, seen by its subclasses
  and by SGLang's own ``current_platform``;
- ``SRTPlatform.get_cpu_architecture``: a classmethod SGLang's ``SRTPlatform`` inherits from its
  ``DeviceMixin``, hooked through the subclass (the base class must not change).
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator

import pytest

from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookType, isolated_registry

GET_PLATFORM = "sglang.srt.runtime_context.get_platform"


@pytest.fixture(scope="module")
def sglang_modules() -> types.ModuleType:
    import sglang.srt.runtime_context as runtime_context
    import sglang.srt.server_args  # noqa: F401 - imports the ~30 modules that copy get_platform

    return runtime_context


@pytest.fixture
def registry() -> Iterator[type[HookRegistry]]:
    with isolated_registry() as registry:
        yield registry


def holders(obj: object, name: str) -> list[str]:
    """Every module whose global ``name`` is ``obj``."""
    return sorted(
        module_name
        for module_name, module in list(sys.modules.items())
        if isinstance(module, types.ModuleType) and vars(module).get(name) is obj
    )


def test_a_function_copied_into_many_modules_is_patched_everywhere_and_restored(
    sglang_modules: types.ModuleType, registry: type[HookRegistry]
) -> None:
    original = sglang_modules.get_platform
    copies = holders(original, "get_platform")
    assert len(copies) >= 20, copies  # the defining module plus its stale `from x import f` copies
    calls: list[str] = []

    def count(result: object, *args: object, **kwargs: object) -> None:
        calls.append("after")

    registry.register(GET_PLATFORM, count, HookType.AFTER)
    registry.apply_hooks()
    patched = sglang_modules.get_platform
    assert patched is not original and patched.__wrapped__ is original
    assert holders(patched, "get_platform") == copies  # every stale copy rebound
    assert holders(original, "get_platform") == []
    # through a stale copy
    assert sys.modules["sglang.srt.utils.common"].get_platform() is original()
    assert calls == ["after"]

    registry.reset()
    assert sglang_modules.get_platform is original
    assert holders(original, "get_platform") == copies  # every copy restored, by identity
    sys.modules["sglang.srt.utils.common"].get_platform()
    assert calls == ["after"]


def test_a_method_of_sglang_srtplatform_is_hooked_for_every_platform_and_restored(
    sglang_modules: types.ModuleType, registry: type[HookRegistry]
) -> None:
    from sglang.srt.platforms import current_platform
    from sglang.srt.platforms.cpu import CpuSRTPlatform
    from sglang.srt.platforms.interface import SRTPlatform

    original = SRTPlatform.__dict__["get_compile_backend"]

    def tag(original_fn, self, *args, **kwargs):
        return "hooked:" + original_fn(self, *args, **kwargs)

    registry.register(
        "sglang.srt.platforms.interface.SRTPlatform.get_compile_backend", tag, HookType.AROUND
    )
    registry.apply_hooks()
    assert SRTPlatform().get_compile_backend() == "hooked:inductor"
    assert CpuSRTPlatform().get_compile_backend(mode="x") == "hooked:inductor"
    assert current_platform.get_compile_backend() == "hooked:inductor"  # SGLang's own singleton

    registry.reset()
    assert SRTPlatform.__dict__["get_compile_backend"] is original
    assert current_platform.get_compile_backend() == "inductor"


def test_an_inherited_classmethod_is_hooked_through_the_subclass_only(
    sglang_modules: types.ModuleType, registry: type[HookRegistry]
) -> None:
    from sglang.srt.platforms.device_mixin import CpuArchEnum, DeviceMixin
    from sglang.srt.platforms.interface import SRTPlatform

    base_before = dict(vars(DeviceMixin))
    assert "get_cpu_architecture" not in vars(SRTPlatform)

    def force_arm(result, cls, *args, **kwargs):
        return CpuArchEnum.ARM

    registry.register(
        "sglang.srt.platforms.interface.SRTPlatform.get_cpu_architecture", force_arm, HookType.AFTER
    )
    registry.apply_hooks()
    assert SRTPlatform.get_cpu_architecture() is CpuArchEnum.ARM
    assert SRTPlatform().get_cpu_architecture() is CpuArchEnum.ARM
    assert DeviceMixin.get_cpu_architecture() is not CpuArchEnum.ARM or sys.platform == "darwin"
    assert dict(vars(DeviceMixin)) == base_before  # the base class is never mutated

    registry.reset()
    assert "get_cpu_architecture" not in vars(SRTPlatform)  # the shadowing entry is gone again
    assert dict(vars(DeviceMixin)) == base_before


@pytest.mark.fault(
    "hooks",
    "a hook on ServerArgs.__post_init__ (a msgspec Struct, which calls the __post_init__ it had "
    "when the class was made)",
    "the target fails, saying the patch would never run and what to hook instead; not applied",
)
def test_a_hook_on_a_msgspec_structs_post_init_fails_saying_it_would_never_run(
    sglang_modules: types.ModuleType, registry: type[HookRegistry]
) -> None:
    from sglang.srt.server_args import ServerArgs

    post_init = ServerArgs.__post_init__
    registry.register(
        "sglang.srt.server_args.ServerArgs.__post_init__",
        lambda original, *args, **kwargs: original(*args, **kwargs),
        HookType.AROUND,
    )
    registry.apply_hooks()
    (report,) = registry.describe()
    assert report.status == "failed" and ServerArgs.__post_init__ is post_init
    assert "never runs: msgspec calls the __post_init__" in (report.error or "")
