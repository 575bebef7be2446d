"""``MMPlatform``: what the diffusion engine (``sglang.multimodal_gen``) asks of a platform.

It carries the names of SGLang 0.5.23's diffusion ``Platform`` that ``DeviceMixin`` does
not already have: attention backend selection, compile backend and options, VAE
optimisation, communicators, dispatch keys and a few capability questions. Names both
classes share keep ``DeviceMixin``'s form (instance methods, ``get_device(device_id=0)``),
because a contract class that redefined them would shadow the vendor's device mixin in
``MyMMPlatform(MMPlatform, MyDeviceMixin)``. docs/platform-contract.md lists the
differences.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._contract import active, active_required, not_implemented
from .device_mixin import DeviceMixin, PlatformEnum

if TYPE_CHECKING:
    import torch

__all__ = ["MMPlatform"]

#: The diffusion host's default communicator, named (not imported) as SGLang names it.
_COMMUNICATORS = "sglang.multimodal_gen.runtime.distributed.device_communicators"
_DEFAULT_DEVICE_COMMUNICATOR = f"{_COMMUNICATORS}.base_device_communicator.DeviceCommunicatorBase"


class MMPlatform(DeviceMixin, _contract_class=True):
    """Base class of diffusion platforms; a plugin subclasses it with its device mixin.

    ``dispatch_key`` names a PyTorch dispatcher key (``"PrivateUse1"`` for most plugin
    devices) for direct ``torch.library`` registrations; ``simple_compile_backend`` is
    the ``torch.compile`` backend for small standalone functions.
    """

    #: A torch.device or None; kept for compatibility with SGLang.
    device: torch.device | None = None
    #: PyTorch dispatcher key for torch.library registrations.
    dispatch_key: str = ""
    #: torch.compile backend for small standalone functions.
    simple_compile_backend: str = "inductor"

    # ---- lifecycle ---------------------------------------------------------------------

    @active
    def init_backend(self) -> None:
        """One-time backend initialisation in each worker; where plugins register op forwards."""

    @active
    def apply_server_args_defaults(self, server_args: Any) -> None:
        """Adjust server arguments before they are normalised and validated."""

    # ---- compile and dispatch ------------------------------------------------------------

    @active
    def get_compile_backend(self, mode: str | None = None) -> str:
        """Backend used to compile diffusion modules (``simple_compile_backend`` by default)."""
        return self.simple_compile_backend

    @active
    def get_compile_options(self, module: torch.nn.Module) -> dict[str, object] | None:
        """Backend-specific compile options for ``module``, or ``None``."""
        return None

    @active
    def get_dispatch_key_name(self) -> str:
        """Behavioural key that picks ``forward_<key>()`` on custom ops (``"native"`` by
        default)."""
        return "native"

    @active
    def get_torch_library_dispatch_key(self) -> str:
        """Dispatcher key for direct ``torch.library`` registrations.

        Default: ``dispatch_key`` for an out-of-tree platform (``NotImplementedError`` while it is
        empty); in-tree, ``"PrivateUse1"`` on NPU, else ``"CUDA"``.
        """
        if not self.is_out_of_tree():
            return "PrivateUse1" if self.is_npu() else "CUDA"
        if not self.dispatch_key:
            raise NotImplementedError(
                f"{type(self).__name__}.get_torch_library_dispatch_key() has no answer: set "
                "dispatch_key (e.g. 'PrivateUse1') on your platform class"
            )
        return self.dispatch_key

    # ---- identity and capability questions -------------------------------------------

    @classmethod
    @active
    def is_blackwell(cls) -> bool:
        """Whether the current CUDA device is Blackwell (major capability 10).

        Default: ``False`` except on CUDA, where torch reports the capability.
        """
        return _cuda_capability(cls)[:1] == (10,)

    @classmethod
    @active
    def is_hopper(cls) -> bool:
        """Whether the current CUDA device is Hopper (capability 9.0).

        Default: ``False`` except on CUDA, where torch reports the capability.
        """
        return _cuda_capability(cls) == (9, 0)

    @classmethod
    @active
    def is_sm120(cls) -> bool:
        """Whether the current CUDA device has major capability 12.

        Default: ``False`` except on CUDA, where torch reports the capability.
        """
        return _cuda_capability(cls)[:1] == (12,)

    @classmethod
    @active
    def is_gfx1151(cls) -> bool:
        """Whether this is the gfx1151 ROCm architecture (False except on ROCm)."""
        return False

    @classmethod
    @active
    def is_cuda_static(cls) -> bool:
        """``is_cuda()`` answerable on the class, without an instance."""
        return cls._enum is PlatformEnum.CUDA

    @classmethod
    @active
    def is_rocm_static(cls) -> bool:
        """``is_rocm()`` answerable on the class, without an instance."""
        return cls._enum is PlatformEnum.ROCM

    @active
    def is_hpu(self) -> bool:
        """Whether the platform's device type is Gaudi's ``hpu``."""
        return self.device_type == "hpu"

    @active
    def is_hip(self) -> bool:
        """Alias of ``is_rocm()``."""
        return self.is_rocm()

    @active
    def is_device_type(self, device_type: str | None) -> bool:
        """Whether ``device_type`` belongs to this platform."""
        return device_type == self.device_type

    @classmethod
    @active
    def is_amp_supported(cls) -> bool:
        """Whether automatic mixed precision works on the device."""
        return True

    @classmethod
    @active
    def is_float64_supported(cls) -> bool:
        """Whether float64 tensors work on the device."""
        return True

    @active
    def has_device_capability(self, capability: tuple[int, int] | int, device_id: int = 0) -> bool:
        """Whether the device's capability is at least ``capability`` (tuple or packed int).

        Default: compares with ``get_device_capability(device_id)``; ``False`` when that is
        ``None``.
        """
        if (current := self.get_device_capability(device_id)) is None:
            return False
        if isinstance(capability, tuple):
            return current >= capability
        return current.to_int() >= capability

    @active
    def supports_distributed_device_id(self) -> bool:
        """Whether ``torch.distributed`` accepts this platform's device id (not for plugins).

        Default: ``False`` for an out-of-tree platform and for MPS, MUSA, NPU, CPU and XPU; else
        ``True``.
        """
        return not any(
            query()
            for query in (
                self.is_out_of_tree,
                self.is_mps,
                self.is_musa,
                self.is_npu,
                self.is_cpu,
                self.is_xpu,
            )
        )

    @classmethod
    @active
    def enable_dit_layerwise_offload_by_default(cls) -> bool:
        """Whether automatic DiT layer-wise offload is on by default."""
        return True

    @classmethod
    @active
    def device_shares_host_memory(cls) -> bool:
        """Whether device allocations come from host RAM (unified-memory parts)."""
        return False

    # ---- quantization helpers ----------------------------------------------------------

    @classmethod
    @active
    def get_modelopt_fp4_quantize_op(cls) -> Callable[..., Any] | None:
        """The ModelOpt fp4 quantize op, or ``None`` when unsupported."""
        return None

    @classmethod
    @active
    def get_modelopt_fp4_gemm_op(cls) -> tuple[Callable[..., Any] | None, str | None]:
        """The ModelOpt fp4 GEMM op and its name, or ``(None, None)``."""
        return None, None

    @classmethod
    @active
    def get_modelopt_flashinfer_fp4_backend(cls) -> str:
        """FlashInfer fp4 backend name (``"auto"`` by default)."""
        return "auto"

    # ---- devices, memory and models ----------------------------------------------------

    @classmethod
    @active_required
    def get_local_torch_device(cls) -> torch.device:
        """The ``torch.device`` of this process's rank."""
        raise not_implemented(cls, "get_local_torch_device")

    @classmethod
    @active_required
    def get_available_gpu_memory(
        cls,
        device_id: int | None = None,
        distributed: bool = False,
        empty_cache: bool = True,
        cpu_group: Any = None,
    ) -> float:
        """Free device memory in GiB (optionally the minimum across ranks)."""
        raise not_implemented(cls, "get_available_gpu_memory")

    @classmethod
    @active
    def verify_model_arch(cls, model_arch: str) -> None:
        """Reject (or warn about) a model architecture the device cannot run; all pass by
        default."""

    @classmethod
    @active
    def optimize_vae(cls, vae: torch.nn.Module) -> torch.nn.Module:
        """Apply device-specific optimisations to a loaded VAE; unchanged by default."""
        return vae

    @active
    def tensor_on_device(self, t: torch.Tensor) -> bool:
        """Whether ``t`` lives on this platform's device type."""
        return t.device.type == self.device_type

    # ---- attention and communicators -----------------------------------------------

    @classmethod
    @active
    def get_attn_backend_cls_str(
        cls, selected_backend: Any, head_size: int, dtype: torch.dtype
    ) -> str:
        """Qualified name of the attention backend class for these parameters (``""``: none)."""
        return ""

    @active
    def get_attn_backend(self, *args: Any, **kwargs: Any) -> Any:
        """Resolve ``get_attn_backend_cls_str(...)`` to the class it names."""
        from pkgutil import resolve_name

        return resolve_name(self.get_attn_backend_cls_str(*args, **kwargs))

    @classmethod
    @active
    def get_device_communicator_cls(cls) -> str:
        """Qualified name of the device communicator class (the host's base class by default).

        Default: returns the diffusion engine's ``DeviceCommunicatorBase``.
        """
        return _DEFAULT_DEVICE_COMMUNICATOR

    @classmethod
    @active
    def get_all_to_all_communicator_cls(cls) -> str:
        """Qualified name of the communicator ``all_to_all_4D`` uses.

        Default: ``get_device_communicator_cls()``; ``NotImplementedError`` for an out-of-tree
        platform that overrides neither.
        """
        qualname = cls.get_device_communicator_cls()
        if cls._enum is PlatformEnum.OOT and qualname == _DEFAULT_DEVICE_COMMUNICATOR:
            raise NotImplementedError(
                f"{cls.__name__}.get_all_to_all_communicator_cls() is not implemented: override it "
                "(or get_device_communicator_cls) in your platform class"
            )
        return qualname


def _cuda_capability(cls: type[MMPlatform]) -> tuple[int, ...]:
    """The current CUDA device's compute capability; ``()`` off CUDA (torch is imported only on
    CUDA)."""
    if not cls.is_cuda_static():
        return ()
    import torch

    return tuple(torch.cuda.get_device_capability())
