"""Device identity and device operations shared by the SRT and diffusion platforms.

``DeviceMixin`` is the root of the platform contract. A vendor writes one device mixin
(``MyDeviceMixin(DeviceMixin)``) and combines it with a subsystem platform
(``MySRTPlatform(SRTPlatform, MyDeviceMixin)``); the contract classes never redefine
each other's names, so the vendor's device methods always win in that MRO.

Nothing here imports torch at import time: methods that need it import it when called,
so resolving a platform stays cheap.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Iterator
from functools import cached_property
from typing import TYPE_CHECKING, Any, NamedTuple

from ._contract import (
    active,
    active_required,
    enforce,
    not_implemented,
    register_contract_class,
    reserved,
    reserved_required,
)

if TYPE_CHECKING:
    import torch

__all__ = ["CpuArchEnum", "DeviceCapability", "DeviceMixin", "PlatformEnum"]


class PlatformEnum(enum.Enum):
    """Known platform kinds; ``OOT`` marks every out-of-tree (plugin) platform.

    SGLang 0.5.23's members plus ``MLU``. Compare members, never their values.
    """

    CUDA = enum.auto()
    ROCM = enum.auto()
    CPU = enum.auto()
    XPU = enum.auto()
    MUSA = enum.auto()
    NPU = enum.auto()
    MLU = enum.auto()
    TPU = enum.auto()
    MPS = enum.auto()
    SAIL = enum.auto()
    OOT = enum.auto()
    UNSPECIFIED = enum.auto()


class CpuArchEnum(enum.Enum):
    """Host CPU architecture families a platform may care about."""

    X86 = enum.auto()
    ARM = enum.auto()
    UNSPECIFIED = enum.auto()


class DeviceCapability(NamedTuple):
    """A ``(major, minor)`` compute capability; tuple ordering gives ``>=`` for free."""

    major: int
    minor: int

    def as_version_str(self) -> str:
        """``"major.minor"``, the form logs and error messages use."""
        return f"{self.major}.{self.minor}"

    def to_int(self) -> int:
        """The packed ``<major><minor>`` integer (``9.0`` -> ``90``); minor must be one digit."""
        if not 0 <= self.minor < 10:
            raise ValueError(
                f"DeviceCapability({self.major}, {self.minor}) cannot be packed as <major><minor>: "
                "minor must be between 0 and 9"
            )
        return self.major * 10 + self.minor


#: torch.distributed backend per torch device type; unknown types fall back to gloo.
_DISTRIBUTED_BACKENDS = {
    "cuda": "nccl",
    "xpu": "xccl",
    "hpu": "hccl",
    "npu": "hccl",
    "mlu": "cncl",
    "musa": "mccl",
}


class DeviceMixin:
    """Device identity queries and device operations, the root of the platform contract.

    Class attributes a platform sets: ``_enum`` (a :class:`PlatformEnum`; ``OOT`` for a
    plugin), ``device_name`` (short human name) and ``device_type`` (the ``torch.device``
    type string). Required operations raise ``NotImplementedError`` naming the concrete
    class until overridden.
    """

    _enum: PlatformEnum = PlatformEnum.UNSPECIFIED
    #: Short human-readable device name (e.g. "npu"); non-empty.
    device_name: str = "unknown"
    #: The torch.device type string (e.g. "npu"); non-empty.
    device_type: str = "cpu"

    def __init_subclass__(
        cls, *, _contract_class: bool = False, check_overrides: bool = True, **kwargs: Any
    ) -> None:
        """Check every platform subclass against the contract when it is defined.

        ``check_overrides=False`` is an escape hatch for experiments; the conformance
        check still reports what it would have refused.
        """
        super().__init_subclass__(**kwargs)
        if _contract_class:
            register_contract_class(cls)
        elif check_overrides:
            enforce(cls)

    # ---- identity queries ------------------------------------------------------------

    @active
    def is_cuda(self) -> bool:
        """Whether this is the CUDA platform."""
        return self._enum is PlatformEnum.CUDA

    @active
    def is_rocm(self) -> bool:
        """Whether this is the ROCm platform."""
        return self._enum is PlatformEnum.ROCM

    @active
    def is_cpu(self) -> bool:
        """Whether this is the CPU platform."""
        return self._enum is PlatformEnum.CPU

    @active
    def is_xpu(self) -> bool:
        """Whether this is the Intel XPU platform."""
        return self._enum is PlatformEnum.XPU

    @active
    def is_musa(self) -> bool:
        """Whether this is the Moore Threads MUSA platform."""
        return self._enum is PlatformEnum.MUSA

    @active
    def is_npu(self) -> bool:
        """Whether this is the Ascend NPU platform."""
        return self._enum is PlatformEnum.NPU

    @reserved
    def is_mlu(self) -> bool:
        """Whether this is the Cambricon MLU platform (not in SGLang 0.5.23)."""
        return self._enum is PlatformEnum.MLU

    @active
    def is_tpu(self) -> bool:
        """Whether this is the TPU platform."""
        return self._enum is PlatformEnum.TPU

    @active
    def is_mps(self) -> bool:
        """Whether this is the Apple MPS platform."""
        return self._enum is PlatformEnum.MPS

    @active
    def is_sail(self) -> bool:
        """Whether this is the SAIL platform."""
        return self._enum is PlatformEnum.SAIL

    @active
    def is_cuda_alike(self) -> bool:
        """Whether the device speaks CUDA-like APIs (CUDA, ROCm, MUSA, SAIL)."""
        return self._enum in (
            PlatformEnum.CUDA,
            PlatformEnum.ROCM,
            PlatformEnum.MUSA,
            PlatformEnum.SAIL,
        )

    @active
    def is_out_of_tree(self) -> bool:
        """Whether this platform comes from a plugin (``_enum is PlatformEnum.OOT``)."""
        return self._enum is PlatformEnum.OOT

    # ---- active device operations ------------------------------------------------------

    @active_required
    def get_device_total_memory(self, device_id: int = 0) -> int:
        """Total memory of a device in bytes; hosts size the KV cache from it."""
        raise not_implemented(self, "get_device_total_memory")

    @active_required
    def get_current_memory_usage(self, device: torch.device | None = None) -> float:
        """Peak memory in use on a device, in bytes."""
        raise not_implemented(self, "get_current_memory_usage")

    @active
    def is_pin_memory_available(self, device: Any = None) -> bool:
        """Whether pinned host memory can be used with the target device."""
        return False

    @active
    @contextlib.contextmanager
    def reindex_device_id(self, device_id: int) -> Iterator[int]:
        """Context in which a physical device is seen as logical device 0 (identity by default).

        Default: yields ``device_id`` unchanged.
        """
        yield device_id

    @active_required
    def get_device(self, device_id: int = 0) -> str:
        """The device string for a device index (``"npu:1"``; the bare type when ``device_id`` is
        None): SGLang 0.5.23 asks it when ``--device`` is not given (``srt/utils/common.py``) and
        splits the answer on ``":"`` (``srt/arg_groups/serving_hook.py``), so a ``torch.device``
        stops its server."""
        raise not_implemented(self, "get_device")

    # ---- reserved device management --------------------------------------------------

    @reserved_required
    def set_device(self, device: torch.device) -> None:
        """Make ``device`` the current device of this process."""
        raise not_implemented(self, "set_device")

    @reserved_required
    def get_device_name(self, device_id: int = 0) -> str:
        """Marketing name of a device, for logs and model-config decisions."""
        raise not_implemented(self, "get_device_name")

    @reserved_required
    def get_device_uuid(self, device_id: int = 0) -> str:
        """Stable unique identifier of a device."""
        raise not_implemented(self, "get_device_uuid")

    @reserved_required
    def get_device_capability(self, device_id: int = 0) -> DeviceCapability | None:
        """Compute capability of a device, or ``None`` when the notion does not apply."""
        raise not_implemented(self, "get_device_capability")

    @reserved
    def empty_cache(self) -> None:
        """Return cached device memory to the driver; a no-op for CPU-like devices."""

    @reserved
    def synchronize(self) -> None:
        """Wait for queued device work; a no-op for CPU-like devices."""

    @reserved_required
    def get_available_memory(self, device_id: int = 0) -> tuple[int, int]:
        """``(free_bytes, total_bytes)`` of a device."""
        raise not_implemented(self, "get_available_memory")

    # ---- distributed -------------------------------------------------------------------

    @active
    def get_torch_distributed_backend_str(self) -> str:
        """The ``torch.distributed`` backend for ``device_type`` (table default, else gloo).

        Default: by ``device_type``: ``"nccl"`` for cuda, ``"xccl"`` for xpu, ``"hccl"`` for hpu and
        npu, ``"cncl"`` for mlu, ``"mccl"`` for musa, ``"gloo"`` for any other.
        """
        return _DISTRIBUTED_BACKENDS.get(self.device_type, "gloo")

    @reserved
    def get_communicator_class(self) -> type | None:
        """A platform communicator class, or ``None`` for the host's default."""
        return None

    # ---- misc --------------------------------------------------------------------------

    @classmethod
    @reserved
    def inference_mode(cls) -> Any:
        """The no-grad context the device supports (``torch.inference_mode`` by default)."""
        import torch

        return torch.inference_mode(mode=True)

    @classmethod
    @reserved
    def seed_everything(cls, seed: int | None = None) -> None:
        """Seed ``random``, numpy and torch (when installed) for reproducible runs.

        Default: seeds ``random``, then numpy and torch where installed; nothing for ``seed=None``.
        """
        if seed is None:
            return
        import random

        random.seed(seed)
        with contextlib.suppress(ImportError):  # numpy and torch are seeded where installed
            import numpy

            numpy.random.seed(seed)
        with contextlib.suppress(ImportError):
            import torch

            torch.manual_seed(seed)

    @reserved
    def verify_quantization(self, quant: str) -> None:
        """Reject a quantization method the device cannot run; accepts all by default."""

    @cached_property
    @reserved
    def cpu_arch(self) -> CpuArchEnum:
        """The host CPU architecture, computed once per instance."""
        return self.get_cpu_architecture()

    @classmethod
    @reserved
    def get_cpu_architecture(cls) -> CpuArchEnum:
        """Classify the host CPU from ``platform.machine()``.

        Default: ``X86`` for x86_64/amd64/i386/i686, ``ARM`` for arm64/aarch64, else
        ``UNSPECIFIED``.
        """
        import platform

        machine = platform.machine().lower()
        if machine in ("x86_64", "amd64", "i386", "i686"):
            return CpuArchEnum.X86
        return CpuArchEnum.ARM if machine in ("arm64", "aarch64") else CpuArchEnum.UNSPECIFIED

    @reserved_required
    def get_torch_profiler_activity_str(self) -> str:
        """Name of the ``torch.profiler.ProfilerActivity`` that traces this device."""
        raise not_implemented(self, "get_torch_profiler_activity_str")

    @reserved_required
    def get_torch_profiler_activity(self) -> torch.profiler.ProfilerActivity:
        """The ``torch.profiler.ProfilerActivity`` that traces this device."""
        raise not_implemented(self, "get_torch_profiler_activity")

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(device_name={self.device_name!r}, "
            f"device_type={self.device_type!r}, enum={self._enum})"
        )


register_contract_class(DeviceMixin)
