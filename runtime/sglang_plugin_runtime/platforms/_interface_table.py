"""The platform interface of each supported SGLang version, as data.

One row per public name SGLang's platform classes declare: the SGLang class that declares it, its signature there,
every way the host calls it (positional or keyword, which arguments, on an instance or on the class, and one call
site), since which supported version it exists, and, for a retired hook, what replaced it and whether the host
still serves it. Names SGLang used in other versions, which no supported version calls, are listed too, so that
a plugin written for them is recognised rather than taken for a typo.

Everything that judges a platform class reads this table: the definition-time check (``_contract``) refuses only
an override that cannot accept one of the calls recorded here, the testing kit's conformance check probes the
calls recorded here, ``sglang-plugins doctor`` says which names no host calls, and docs/platform-contract.md is
rendered from it (``render_markdown``; ``tests/test_interface_table_doc.py`` keeps the page in sync).

Where the rows come from:

- SGLang 0.5.23: the released wheel. Signatures from ``sglang.srt.platforms.device_mixin.DeviceMixin``,
  ``sglang.srt.platforms.interface.SRTPlatform`` and the diffusion engine's
  ``sglang.multimodal_gen.runtime.platforms.interface.Platform``; calls from every call site in the package
  (``tests_sglang/test_interface_table.py`` re-derives both from the installed wheel and fails on any drift).
- SGLang main: the public repository (``python/sglang/srt/platforms/device_mixin.py`` read at commit
  ``0099dee6``, ``builtin.py`` at ``4ac06988``, ``plugins/hook_registry``'s tests). Main's rows equal 0.5.23's
  except where ``since`` says ``"main"``; main's call sites were not all readable, so its calls are taken to be
  0.5.23's.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "DIFFUSION",
    "HOST_VERSIONS",
    "OTHER_VERSION_NAMES",
    "RELEASED",
    "SRT",
    "HostCall",
    "InterfaceEntry",
    "entries",
    "entry",
    "is_known_name",
    "render_markdown",
    "retired_entries",
]

#: The supported SGLang versions, oldest first.
HOST_VERSIONS: tuple[str, ...] = ("0.5.23", "main")
#: The newest released version; "not called by SGLang <RELEASED>" is said of names no row calls.
RELEASED = "0.5.23"

#: The two hosts a platform serves: the LLM runtime and the diffusion engine.
SRT = "srt"
DIFFUSION = "diffusion"

#: The SGLang classes rows belong to, and which host calls them.
_OWNER_HOST = {"DeviceMixin": SRT, "SRTPlatform": SRT, "diffusion Platform": DIFFUSION}


@dataclass(frozen=True)
class HostCall:
    """One way a host calls (or, for data, reads) a member.

    ``args`` positional arguments and the ``kwargs`` names, made on an instance (``current_platform.x(...)``) or,
    with ``on_class``, on the class itself. ``site`` names one place that makes the call: a file of the SGLang
    package, or ``sglang_plugin_runtime...`` for a call the runtime's own base classes make. ``indirect`` marks a
    call that is not a literal ``platform.name(...)`` expression there (a bound method handed to a helper, a
    retired hook served by its replacement), which a source scan cannot see.
    """

    args: int = 0
    kwargs: tuple[str, ...] = ()
    on_class: bool = False
    site: str = ""
    indirect: bool = False
    read: bool = False

    def render(self, name: str) -> str:
        """The call as code, e.g. ``platform.get_kv_pool_cls(kind=...)`` or ``PlatformClass.name``."""
        receiver = "PlatformClass" if self.on_class else "platform"
        if self.read:
            return f"{receiver}.{name}"
        parts = ["<arg>"] * self.args + [f"{k}=..." for k in self.kwargs]
        return f"{receiver}.{name}({', '.join(parts)})"


@dataclass(frozen=True)
class InterfaceEntry:
    """One public name of one SGLang platform class."""

    name: str
    #: ``DeviceMixin``, ``SRTPlatform`` or ``diffusion Platform``.
    owner: str
    #: ``method``, ``classmethod``, ``staticmethod``, ``property`` or ``attribute``, as SGLang declares it.
    kind: str
    #: SGLang's parameters, annotations left out (``""`` for data and properties).
    signature: str
    calls: tuple[HostCall, ...] = ()
    #: The first supported version that has it.
    since: str = HOST_VERSIONS[0]
    #: For a retired hook: what to override instead, and the versions that still call it as a fallback.
    replacement: str = ""
    served_by: tuple[str, ...] = ()
    #: How the conformance check may call it: ``"cheap"`` (no device, no side effect), ``"device"`` (only on a
    #: simulated device), or ``""`` (never: it has effects or needs real inputs).
    probe: str = ""

    @property
    def host(self) -> str:
        return _OWNER_HOST[self.owner]

    @property
    def retired(self) -> bool:
        return bool(self.replacement)

    @property
    def versions(self) -> tuple[str, ...]:
        """The supported versions that declare it (a retired hook: none; it is only served)."""
        if self.retired:
            return ()
        return HOST_VERSIONS[HOST_VERSIONS.index(self.since) :]


def _c(args: int = 0, *kwargs: str, site: str, on_class: bool = False, indirect: bool = False) -> HostCall:
    return HostCall(args, tuple(kwargs), on_class, site, indirect)


def _read(site: str, *, on_class: bool = False) -> HostCall:
    return HostCall(0, (), on_class, site, read=True)


_RT = "sglang_plugin_runtime"
_SELECTION = f"{_RT}._selection (validates the class)"
_COMMON = "srt/utils/common.py"

_E = InterfaceEntry

_ROWS: tuple[InterfaceEntry, ...] = (
    # ---- sglang.srt.platforms.device_mixin.DeviceMixin ------------------------------------------------------
    _E(
        "device_name",
        "DeviceMixin",
        "attribute",
        "",
        (_read("srt/arg_groups/platform_hook.py"), _read(_SELECTION, on_class=True)),
    ),
    _E("device_type", "DeviceMixin", "attribute", "", (_read(_SELECTION, on_class=True),)),
    _E(
        "is_cuda",
        "DeviceMixin",
        "method",
        "(self)",
        (_c(0, site="srt/mem_cache/storage/tensorcast_store/host_allocator.py"),),
        probe="cheap",
    ),
    _E("is_rocm", "DeviceMixin", "method", "(self)", probe="cheap"),
    _E(
        "is_cpu",
        "DeviceMixin",
        "method",
        "(self)",
        (_c(0, site="srt/mem_cache/kv_cache_configurator.py"),),
        probe="cheap",
    ),
    _E("is_xpu", "DeviceMixin", "method", "(self)", probe="cheap"),
    _E("is_musa", "DeviceMixin", "method", "(self)", probe="cheap"),
    _E("is_npu", "DeviceMixin", "method", "(self)", probe="cheap"),
    _E("is_mlu", "DeviceMixin", "method", "(self)", since="main", probe="cheap"),
    _E("is_tpu", "DeviceMixin", "method", "(self)", probe="cheap"),
    _E("is_mps", "DeviceMixin", "method", "(self)", probe="cheap"),
    _E("is_sail", "DeviceMixin", "method", "(self)", probe="cheap"),
    _E(
        "is_cuda_alike", "DeviceMixin", "method", "(self)", (_c(0, site="srt/mem_cache/memory_pool.py"),), probe="cheap"
    ),
    _E("is_out_of_tree", "DeviceMixin", "method", "(self)", (_c(0, site="kernels/fused_op.py"),), probe="cheap"),
    _E(
        "get_device_total_memory",
        "DeviceMixin",
        "method",
        "(self, device_id=0)",
        (_c(0, site=_COMMON), _c(1, site=_COMMON)),
        probe="device",
    ),
    _E(
        "get_current_memory_usage",
        "DeviceMixin",
        "method",
        "(self, device=None)",
        (_c(0, site=_COMMON),),
        probe="device",
    ),
    _E(
        "is_pin_memory_available", "DeviceMixin", "method", "(self, device=None)", (_c(1, site=_COMMON),), probe="cheap"
    ),
    _E("reindex_device_id", "DeviceMixin", "method", "(self, device_id)", (_c(1, site=_COMMON),)),
    _E(
        "get_device",
        "DeviceMixin",
        "method",
        "(self, device_id=0)",
        (_c(1, site="srt/model_loader/weight_utils.py"),),
        probe="device",
    ),
    _E("set_device", "DeviceMixin", "method", "(self, device)", (_c(1, site="srt/weight_cache/daemon.py"),)),
    _E("get_device_name", "DeviceMixin", "method", "(self, device_id=0)", probe="device"),
    _E(
        "get_device_uuid",
        "DeviceMixin",
        "method",
        "(self, device_id=0)",
        (_c(1, site="srt/checkpoint_engine/checkpoint_engine_worker.py"),),
        probe="device",
    ),
    _E(
        "get_device_capability",
        "DeviceMixin",
        "method",
        "(self, device_id=0)",
        (_c(0, site="srt/weight_cache/protocol.py"),),
        probe="device",
    ),
    _E("empty_cache", "DeviceMixin", "method", "(self)", (_c(0, site="srt/distributed/bootstrap.py"),), probe="device"),
    _E("synchronize", "DeviceMixin", "method", "(self)", (_c(0, site="srt/distributed/bootstrap.py"),), probe="device"),
    _E("get_available_memory", "DeviceMixin", "method", "(self, device_id=0)", probe="device"),
    _E(
        "get_torch_distributed_backend_str",
        "DeviceMixin",
        "method",
        "(self)",
        (_c(0, site="srt/distributed/parallel_state.py"),),
        probe="cheap",
    ),
    _E("get_communicator_class", "DeviceMixin", "method", "(self)", probe="cheap"),
    _E("inference_mode", "DeviceMixin", "classmethod", "(cls)"),
    _E("seed_everything", "DeviceMixin", "classmethod", "(cls, seed=None)"),
    _E("verify_quantization", "DeviceMixin", "method", "(self, quant)"),
    _E("cpu_arch", "DeviceMixin", "property", ""),
    _E(
        "get_cpu_architecture",
        "DeviceMixin",
        "classmethod",
        "(cls)",
        (_c(0, site="srt/platforms/device_mixin.py (DeviceMixin.cpu_arch)", indirect=True),),
        probe="cheap",
    ),
    _E(
        "get_torch_profiler_activity_str",
        "DeviceMixin",
        "method",
        "(self)",
        (_c(0, site="srt/managers/scheduler_components/profiler_manager.py"),),
        probe="cheap",
    ),
    _E(
        "get_torch_profiler_activity",
        "DeviceMixin",
        "method",
        "(self)",
        (_c(0, site="srt/managers/scheduler_components/profiler_manager.py"),),
        probe="device",
    ),
    # ---- sglang.srt.platforms.interface.SRTPlatform -----------------------------------------------------------
    _E("supported_quantization", "SRTPlatform", "attribute", ""),
    _E("capabilities", "SRTPlatform", "attribute", "", (_read("srt/utils/common.py"),)),
    _E(
        "apply_server_args_defaults",
        "SRTPlatform",
        "method",
        "(self, server_args)",
        (_c(1, site="srt/arg_groups/platform_hook.py (through record_foreign_defaults)", indirect=True),),
    ),
    _E(
        "get_default_attention_backend",
        "SRTPlatform",
        "method",
        "(self)",
        (_c(0, site="srt/arg_groups/model_override_base.py"),),
        probe="cheap",
    ),
    _E(
        "get_default_speculative_draft_attention_backend",
        "SRTPlatform",
        "method",
        "(self, algorithm)",
        (_c(1, site="srt/arg_groups/speculative_hook.py"),),
    ),
    _E(
        "get_graph_runner_cls",
        "SRTPlatform",
        "method",
        "(self)",
        (_c(0, site="srt/model_executor/model_runner_components/cuda_graph_setup.py"),),
        probe="cheap",
    ),
    _E(
        "get_full_graph_backend_cls",
        "SRTPlatform",
        "method",
        "(self)",
        (_c(0, site="srt/model_executor/runner_backend/utils.py"),),
        probe="cheap",
    ),
    _E(
        "get_kv_pool_cls",
        "SRTPlatform",
        "method",
        "(self, *, kind)",
        (_c(0, "kind", site="srt/mem_cache/kv_cache_configurator.py"),),
        probe="cheap",
    ),
    _E(
        "get_paged_allocator_cls",
        "SRTPlatform",
        "method",
        "(self)",
        (_c(0, site="srt/mem_cache/allocator/hisparse.py"),),
        probe="cheap",
    ),
    _E("get_compile_backend", "SRTPlatform", "method", "(self, mode=None)", (_c(1, site=_COMMON),), probe="cheap"),
    _E(
        "get_piecewise_backend_cls",
        "SRTPlatform",
        "method",
        "(self)",
        (_c(0, site="srt/compilation/backend.py"),),
        probe="cheap",
    ),
    _E(
        "get_speculative_cache_locs_fn",
        "SRTPlatform",
        "method",
        "(self)",
        (_c(0, site="kernels/ops/speculative/cache_locs.py"),),
        probe="cheap",
    ),
    _E(
        "get_speculative_worker_cls",
        "SRTPlatform",
        "method",
        "(self, algorithm)",
        (_c(0, "algorithm", site="srt/speculative/spec_info.py"),),
    ),
    _E(
        "get_speculative_graph_runner_cls",
        "SRTPlatform",
        "method",
        "(self, algorithm, phase)",
        (_c(0, "algorithm", "phase", site="srt/speculative/eagle_worker_v2.py"),),
    ),
    _E(
        "get_quantization_config",
        "SRTPlatform",
        "method",
        "(self, quantization)",
        (_c(1, site="srt/layers/quantization/__init__.py"),),
    ),
    _E(
        "supports_speculative_algorithm",
        "SRTPlatform",
        "method",
        "(self, algorithm)",
        (_c(1, site="srt/arg_groups/speculative_hook.py"),),
    ),
    _E(
        "supports_speculative_draft_attention_backend",
        "SRTPlatform",
        "method",
        "(self, algorithm, backend)",
        (_c(2, site="srt/arg_groups/speculative_hook.py"),),
    ),
    _E(
        "support_mamba_cache_extra_buffer",
        "SRTPlatform",
        "method",
        "(self)",
        (_c(0, site="srt/arg_groups/mamba_hook.py"),),
        probe="cheap",
    ),
    _E(
        "get_group_coordinator_device",
        "SRTPlatform",
        "method",
        "(self, local_rank)",
        (_c(1, site="srt/distributed/parallel_state.py"),),
    ),
    _E("init_backend", "SRTPlatform", "method", "(self)", (_c(0, site="srt/model_executor/model_runner.py"),)),
    _E(
        "post_load_model", "SRTPlatform", "method", "(self, model)", (_c(1, site="srt/model_executor/model_runner.py"),)
    ),
    _E("get_dispatch_key_name", "SRTPlatform", "method", "(self)", (_c(0, site="kernels/fused_op.py"),), probe="cheap"),
    # Retired: SRTPlatform.get_kv_pool_cls(kind=...) calls the hook of that kind, without arguments, when a
    # platform still defines it (SGLang 0.5.23 logs a deprecation warning; the runtime does the same).
    _E(
        "get_mha_kv_pool_cls",
        "SRTPlatform",
        "method",
        "(self)",
        (_c(0, site="srt/platforms/interface.py (SRTPlatform.get_kv_pool_cls, kind='mha')", indirect=True),),
        replacement="get_kv_pool_cls(self, *, kind) for kind='mha'",
        served_by=("0.5.23",),
    ),
    _E(
        "get_mla_kv_pool_cls",
        "SRTPlatform",
        "method",
        "(self)",
        (_c(0, site="srt/platforms/interface.py (SRTPlatform.get_kv_pool_cls, kind='mla')", indirect=True),),
        replacement="get_kv_pool_cls(self, *, kind) for kind='mla'",
        served_by=("0.5.23",),
    ),
    _E(
        "get_dsa_kv_pool_cls",
        "SRTPlatform",
        "method",
        "(self)",
        (_c(0, site="srt/platforms/interface.py (SRTPlatform.get_kv_pool_cls, kind='dsa')", indirect=True),),
        replacement="get_kv_pool_cls(self, *, kind) for kind='dsa'",
        served_by=("0.5.23",),
    ),
    # ---- sglang.multimodal_gen.runtime.platforms.interface.Platform (the diffusion engine) ------------------
    _E(
        "device_name",
        "diffusion Platform",
        "attribute",
        "",
        (_read("multimodal_gen/runtime/platforms/__init__.py"), _read(_SELECTION, on_class=True)),
    ),
    _E(
        "device_type",
        "diffusion Platform",
        "attribute",
        "",
        (_read("multimodal_gen/runtime/platforms/__init__.py"), _read(_SELECTION, on_class=True)),
    ),
    _E("device", "diffusion Platform", "attribute", ""),
    _E(
        "dispatch_key",
        "diffusion Platform",
        "attribute",
        "",
        (_read(f"{_RT}.platforms.multimodal (MMPlatform.get_torch_library_dispatch_key)"),),
    ),
    _E(
        "simple_compile_backend",
        "diffusion Platform",
        "attribute",
        "",
        (_read(f"{_RT}.platforms.multimodal (MMPlatform.get_compile_backend)"),),
    ),
    _E(
        "init_backend",
        "diffusion Platform",
        "method",
        "(self)",
        (_c(0, site="multimodal_gen/runtime/platforms/__init__.py (initialize_current_platform)", indirect=True),),
    ),
    _E(
        "apply_server_args_defaults",
        "diffusion Platform",
        "method",
        "(self, server_args)",
        (_c(1, site="multimodal_gen/runtime/server_args/server_args.py"),),
    ),
    _E(
        "get_compile_backend",
        "diffusion Platform",
        "method",
        "(self, mode=None)",
        (_c(1, site="multimodal_gen/runtime/utils/torch_compile.py"),),
        probe="cheap",
    ),
    _E(
        "get_compile_options",
        "diffusion Platform",
        "method",
        "(self, module)",
        (_c(1, site="multimodal_gen/runtime/utils/torch_compile.py"),),
    ),
    _E(
        "get_dispatch_key_name",
        "diffusion Platform",
        "method",
        "(self)",
        (_c(0, site="multimodal_gen/runtime/layers/custom_op.py"),),
        probe="cheap",
    ),
    _E(
        "get_torch_library_dispatch_key",
        "diffusion Platform",
        "method",
        "(self)",
        (_c(0, site="multimodal_gen/runtime/layers/utils.py"),),
        probe="cheap",
    ),
    _E(
        "is_cuda",
        "diffusion Platform",
        "method",
        "(self)",
        (_c(0, site="kernels/ops/diffusion/common/platform.py"),),
        probe="cheap",
    ),
    _E(
        "is_rocm",
        "diffusion Platform",
        "method",
        "(self)",
        (_c(0, site="multimodal_gen/runtime/distributed/device_communicators/pynccl.py"),),
        probe="cheap",
    ),
    _E(
        "is_tpu",
        "diffusion Platform",
        "method",
        "(self)",
        (_c(0, site="multimodal_gen/runtime/models/parameter.py"),),
        probe="cheap",
    ),
    _E(
        "is_cpu",
        "diffusion Platform",
        "method",
        "(self)",
        (_c(0, site="multimodal_gen/runtime/distributed/group_coordinator.py"),),
        probe="cheap",
    ),
    _E(
        "is_blackwell",
        "diffusion Platform",
        "classmethod",
        "(cls)",
        (_c(0, site="multimodal_gen/configs/pipeline_configs/minimax_h3_vdn.py"),),
        probe="cheap",
    ),
    _E(
        "is_hopper",
        "diffusion Platform",
        "classmethod",
        "(cls)",
        (_c(0, site="multimodal_gen/runtime/models/dits/cosmos3video.py"),),
        probe="cheap",
    ),
    _E(
        "is_sm120",
        "diffusion Platform",
        "classmethod",
        "(cls)",
        (_c(0, site="multimodal_gen/configs/pipeline_configs/minimax_h3_vdn.py"),),
        probe="cheap",
    ),
    _E(
        "is_gfx1151",
        "diffusion Platform",
        "classmethod",
        "(cls)",
        (_c(0, site="multimodal_gen/configs/pipeline_configs/qwen_image21.py"),),
        probe="cheap",
    ),
    _E(
        "is_cuda_static",
        "diffusion Platform",
        "classmethod",
        "(cls)",
        (_c(0, on_class=True, site=f"{_RT}.platforms.multimodal (MMPlatform.is_blackwell, is_hopper, is_sm120)"),),
        probe="cheap",
    ),
    _E("is_rocm_static", "diffusion Platform", "classmethod", "(cls)", probe="cheap"),
    _E("is_hpu", "diffusion Platform", "method", "(self)", probe="cheap"),
    _E(
        "is_xpu",
        "diffusion Platform",
        "method",
        "(self)",
        (_c(0, site="kernels/ops/diffusion/common/platform.py"),),
        probe="cheap",
    ),
    _E(
        "is_npu",
        "diffusion Platform",
        "method",
        "(self)",
        (_c(0, site="multimodal_gen/configs/pipeline_configs/glm_image.py"),),
        probe="cheap",
    ),
    _E(
        "is_out_of_tree",
        "diffusion Platform",
        "method",
        "(self)",
        (_c(0, site="multimodal_gen/runtime/layers/custom_op.py"),),
        probe="cheap",
    ),
    _E(
        "is_cuda_alike",
        "diffusion Platform",
        "method",
        "(self)",
        (_c(0, site="multimodal_gen/runtime/distributed/device_communicators/pynccl.py"),),
        probe="cheap",
    ),
    _E(
        "is_device_type",
        "diffusion Platform",
        "method",
        "(self, device_type)",
        (_c(1, site="multimodal_gen/runtime/managers/memory_managers/component_manager.py"),),
    ),
    _E(
        "is_mps",
        "diffusion Platform",
        "method",
        "(self)",
        (_c(0, site="multimodal_gen/configs/pipeline_configs/minimax_h3.py"),),
        probe="cheap",
    ),
    _E(
        "is_musa",
        "diffusion Platform",
        "method",
        "(self)",
        (_c(0, site="multimodal_gen/runtime/layers/custom_op.py"),),
        probe="cheap",
    ),
    _E(
        "is_hip",
        "diffusion Platform",
        "method",
        "(self)",
        (_c(0, site="kernels/ops/diffusion/common/platform.py"),),
        probe="cheap",
    ),
    _E(
        "is_amp_supported",
        "diffusion Platform",
        "classmethod",
        "(cls)",
        (_c(0, site="multimodal_gen/runtime/layers/linear.py"),),
        probe="cheap",
    ),
    _E(
        "is_float64_supported",
        "diffusion Platform",
        "classmethod",
        "(cls)",
        (_c(0, site="multimodal_gen/runtime/layers/rotary_embedding/mrope.py"),),
        probe="cheap",
    ),
    _E(
        "get_modelopt_fp4_quantize_op",
        "diffusion Platform",
        "classmethod",
        "(cls)",
        (_c(0, site="multimodal_gen/runtime/layers/quantization/modelopt_quant.py"),),
    ),
    _E(
        "get_modelopt_fp4_gemm_op",
        "diffusion Platform",
        "classmethod",
        "(cls)",
        (_c(0, site="multimodal_gen/runtime/layers/quantization/modelopt_quant.py"),),
    ),
    _E("get_modelopt_flashinfer_fp4_backend", "diffusion Platform", "classmethod", "(cls)", probe="cheap"),
    _E(
        "get_local_torch_device",
        "diffusion Platform",
        "classmethod",
        "(cls)",
        (_c(0, site="multimodal_gen/runtime/distributed/group_coordinator.py"),),
        probe="device",
    ),
    _E(
        "set_device",
        "diffusion Platform",
        "classmethod",
        "(cls, device)",
        (_c(1, site="multimodal_gen/runtime/distributed/parallel_state.py"),),
    ),
    _E(
        "synchronize",
        "diffusion Platform",
        "classmethod",
        "(cls)",
        (_c(0, site="multimodal_gen/runtime/pipelines_core/lora/pipeline.py"),),
        probe="device",
    ),
    _E(
        "empty_cache",
        "diffusion Platform",
        "classmethod",
        "(cls)",
        (_c(0, site="multimodal_gen/runtime/pipelines_core/lora/pipeline.py"),),
        probe="device",
    ),
    _E(
        "get_attn_backend_cls_str",
        "diffusion Platform",
        "classmethod",
        "(cls, selected_backend, head_size, dtype)",
        (_c(3, site="multimodal_gen/apps/ComfyUI_SGLDiffusion/core/preflight.py"),),
    ),
    _E(
        "get_device_capability",
        "diffusion Platform",
        "classmethod",
        "(cls, device_id=0)",
        (
            _c(0, site="multimodal_gen/configs/pipeline_configs/minimax_h3.py"),
            _c(1, site=f"{_RT}.platforms.multimodal (MMPlatform.has_device_capability)"),
        ),
        probe="device",
    ),
    _E("has_device_capability", "diffusion Platform", "classmethod", "(cls, capability, device_id=0)"),
    _E(
        "get_device_name",
        "diffusion Platform",
        "classmethod",
        "(cls, device_id=0)",
        (
            _c(0, site="multimodal_gen/configs/pipeline_configs/minimax_h3.py"),
            _c(1, site="multimodal_gen/runtime/server_args/server_args.py"),
        ),
        probe="device",
    ),
    _E(
        "get_device_uuid",
        "diffusion Platform",
        "classmethod",
        "(cls, device_id=0)",
        (_c(1, site="multimodal_gen/runtime/post_training/gpu_worker_post_training_mixin.py"),),
        probe="device",
    ),
    _E(
        "get_device_total_memory",
        "diffusion Platform",
        "classmethod",
        "(cls, device_id=0)",
        (
            _c(0, site="multimodal_gen/runtime/managers/gpu_worker.py"),
            _c(1, site="multimodal_gen/runtime/managers/dynamic_batch_admission.py"),
        ),
        probe="device",
    ),
    _E(
        "get_device",
        "diffusion Platform",
        "method",
        "(self, local_rank)",
        (_c(1, site="multimodal_gen/runtime/managers/gpu_worker.py"),),
        probe="device",
    ),
    _E(
        "get_torch_distributed_backend_str",
        "diffusion Platform",
        "method",
        "(self)",
        (_c(0, site="multimodal_gen/runtime/distributed/parallel_state.py"),),
        probe="cheap",
    ),
    _E(
        "supports_distributed_device_id",
        "diffusion Platform",
        "method",
        "(self)",
        (_c(0, site="multimodal_gen/runtime/distributed/parallel_state.py"),),
        probe="cheap",
    ),
    _E(
        "inference_mode",
        "diffusion Platform",
        "classmethod",
        "(cls)",
        (_c(0, site="multimodal_gen/runtime/pipelines_core/executors/pipeline_executor.py"),),
    ),
    _E("seed_everything", "diffusion Platform", "classmethod", "(cls, seed=None)"),
    _E(
        "verify_model_arch",
        "diffusion Platform",
        "classmethod",
        "(cls, model_arch)",
        (_c(1, site="multimodal_gen/runtime/models/registry.py"),),
    ),
    _E("get_current_memory_usage", "diffusion Platform", "classmethod", "(cls, device=None)", probe="device"),
    _E(
        "get_available_gpu_memory",
        "diffusion Platform",
        "classmethod",
        "(cls, device_id=None, distributed=False, empty_cache=True, cpu_group=None)",
        (
            _c(0, site="multimodal_gen/runtime/loader/component_loaders/component_loader.py"),
            _c(0, "device_id", "empty_cache", site="multimodal_gen/runtime/server_args/auto_tune.py"),
            _c(0, "empty_cache", site="multimodal_gen/runtime/managers/gpu_worker.py"),
        ),
    ),
    _E(
        "get_device_communicator_cls",
        "diffusion Platform",
        "classmethod",
        "(cls)",
        (_c(0, on_class=True, site=f"{_RT}.platforms.multimodal (MMPlatform.get_all_to_all_communicator_cls)"),),
        probe="cheap",
    ),
    _E(
        "get_all_to_all_communicator_cls",
        "diffusion Platform",
        "classmethod",
        "(cls)",
        (_c(0, site="multimodal_gen/runtime/distributed/group_coordinator.py"),),
        probe="cheap",
    ),
    _E(
        "get_cpu_architecture",
        "diffusion Platform",
        "classmethod",
        "(cls)",
        (_c(0, site="multimodal_gen/runtime/distributed/device_communicators/cpu_communicator.py"),),
        probe="cheap",
    ),
    _E(
        "enable_dit_layerwise_offload_by_default",
        "diffusion Platform",
        "classmethod",
        "(cls)",
        (_c(0, site="multimodal_gen/runtime/server_args/auto_tune.py"),),
        probe="cheap",
    ),
    _E(
        "device_shares_host_memory",
        "diffusion Platform",
        "classmethod",
        "(cls)",
        (_c(0, site="multimodal_gen/runtime/managers/memory_managers/component_manager.py"),),
        probe="cheap",
    ),
    _E(
        "optimize_vae",
        "diffusion Platform",
        "classmethod",
        "(cls, vae)",
        (_c(1, site="multimodal_gen/runtime/loader/component_loaders/vae_loader.py"),),
    ),
    _E("get_attn_backend", "diffusion Platform", "method", "(self, *args, **kwargs)"),
    _E(
        "tensor_on_device",
        "diffusion Platform",
        "method",
        "(self, t)",
        (_c(1, site="kernels/ops/diffusion/modulate/ltx2_ada_values_triton.py"),),
    ),
)

#: Public names of SGLang's platform classes in versions outside the supported range (or of SGLang main's in-tree
#: platforms), which no supported version calls. A plugin that still defines one is recognised, never taken for a
#: misspelling; doctor says no supported host calls it.
OTHER_VERSION_NAMES: dict[str, str] = {
    **dict.fromkeys(
        ("get_nsa_kv_pool_cls", "support_cuda_graph", "support_piecewise_cuda_graph"),
        "SRTPlatform before 0.5.23 (support_cuda_graph and support_piecewise_cuda_graph are still defined by "
        "SGLang main's in-tree platforms)",
    ),
    **dict.fromkeys(
        ("torch_compile_strategy", "torch_compile_defaults", "make_exported_program_callable", "get_export_runtime"),
        "SGLang main's in-tree platforms (torch.compile / export seam)",
    ),
    **dict.fromkeys(
        (
            "supports_fp8",
            "fp8_dtype",
            "fp8_min_max",
            "get_device_sku",
            "get_device_core_count",
            "get_device_count",
            "get_device_module",
            "get_device_available_memory",
            "supports_overlap_scheduler",
            "check_and_update_server_args",
            "check_and_update_model_dtype",
            "check_and_update_attntion_backend",
            "check_and_update_sampling_backend",
            "check_and_update_lora_backend",
            "verify_speculative_algorithm",
            "is_triton_avaliable",
            "init_environments",
            "torch_distributed_backend",
            "torch_compile_backend",
            "supported_speculative_algorithm",
            "supported_dtype",
            "supported_attntion_backend",
            "supported_sampling_backend",
            "supported_lora_backend",
        ),
        "the first SGLang Platform (sglang/srt/platforms/interface.py, adapted from vLLM)",
    ),
}


def entries(host: str | None = None) -> tuple[InterfaceEntry, ...]:
    """Every row, or those of one host (``SRT`` or ``DIFFUSION``)."""
    return tuple(e for e in _ROWS if host is None or e.host == host)


def entry(name: str, host: str) -> InterfaceEntry | None:
    """The row of ``name`` for ``host``, or ``None`` when that host's classes do not declare it."""
    return _BY_HOST.get((host, name))


def retired_entries(host: str = SRT) -> tuple[InterfaceEntry, ...]:
    """The retired hooks of ``host``, each with its replacement."""
    return tuple(e for e in entries(host) if e.retired)


def is_known_name(name: str) -> bool:
    """Whether some SGLang version's platform classes use ``name`` (so it is no misspelling)."""
    return name in _NAMES or name in OTHER_VERSION_NAMES


_BY_HOST: dict[tuple[str, str], InterfaceEntry] = {(e.host, e.name): e for e in _ROWS}
_NAMES = frozenset(e.name for e in _ROWS)


# ---------------------------------------------------------------------------------------------------------------
# docs/platform-contract.md
# ---------------------------------------------------------------------------------------------------------------

_OWNER_TITLES = {
    "DeviceMixin": "`sglang.srt.platforms.device_mixin.DeviceMixin`",
    "SRTPlatform": "`sglang.srt.platforms.interface.SRTPlatform`",
    "diffusion Platform": "`sglang.multimodal_gen.runtime.platforms.interface.Platform` (the diffusion engine)",
}


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _calls_cell(row: InterfaceEntry) -> str:
    if not row.calls:
        return "not called"
    parts = []
    for call in row.calls:
        where = call.site if call.site.startswith(_RT) else f"sglang/{call.site}"
        parts.append(f"`{call.render(row.name)}` ({_cell(where)})")
    return "<br>".join(parts)


def _status_cell(row: InterfaceEntry) -> str:
    if row.retired:
        served = ", ".join(row.served_by)
        return f"retired; served by {served} and the runtime (DeprecationWarning): override `{row.replacement}`"
    return "0.5.23, main" if row.since == HOST_VERSIONS[0] else f"since {row.since}"


def render_markdown() -> str:
    """The interface table as Markdown, one table per SGLang class, then the names of other versions."""
    lines: list[str] = []
    for owner, title in _OWNER_TITLES.items():
        lines += [
            f"### {title}",
            "",
            "| member | SGLang's signature | how SGLang calls it | versions |",
            "|---|---|---|---|",
        ]
        for row in (r for r in _ROWS if r.owner == owner):
            shape = (
                row.kind
                if not row.signature
                else f"{'@classmethod ' if row.kind == 'classmethod' else ''}{row.signature}"
            )
            lines.append(f"| `{row.name}` | {_cell(shape)} | {_calls_cell(row)} | {_status_cell(row)} |")
        lines.append("")
    lines += [
        "### Names of other SGLang versions",
        "",
        "Defined by a platform class of an SGLang outside the supported range; no supported version calls "
        "them. A plugin that defines one is accepted silently, and `sglang-plugins doctor` lists it.",
        "",
        "| name | where it comes from |",
        "|---|---|",
    ]
    for name, origin in OTHER_VERSION_NAMES.items():
        lines.append(f"| `{name}` | {_cell(origin)} |")
    return "\n".join(lines)
