"""``SRTPlatform``: what the LLM serving runtime (SRT) asks of a platform.

The SRT-specific half of the contract: server-argument defaults, the backend
initialisation lifecycle, factories for the attention backend, graph runners, KV pools,
allocators and compile backends, and the capability flags core reads before it picks a
code path. Out-of-tree platforms subclass it (``sglang.srt.platforms`` entry point) and
override what their hardware needs; everything else keeps a conservative default.
"""

from __future__ import annotations

import dataclasses
import logging
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

from ._contract import active, active_required, not_implemented
from .device_mixin import DeviceMixin, PlatformEnum

if TYPE_CHECKING:
    import torch

__all__ = [
    "KVPoolKind",
    "PlatformCapabilities",
    "PlatformEnum",
    "SRTPlatform",
    "reject_out_of_tree_path",
    "require_out_of_tree_impl",
]

logger = logging.getLogger(__name__)

KVPoolKind = Literal["mha", "mla", "dsa"]
_KV_POOL_KINDS: tuple[str, ...] = ("mha", "mla", "dsa")
#: (platform class, retired hook) pairs already warned about: one warning per class, as SGLang does.
_WARNED_RETIRED_HOOKS: set[tuple[type, str]] = set()


@dataclass(frozen=True, slots=True, kw_only=True)
class PlatformCapabilities:
    """What a platform can do, read by core before it builds anything.

    Every flag defaults to the conservative answer, so a new platform is never handed a
    code path it cannot serve. ``supports_triton``: Triton kernels launch on the device.
    ``graph_capture``: the decode graph runner (``get_graph_runner_cls``) runs.
    ``piecewise_graph``: the prefill piecewise compilation backend runs.
    ``hicache_device_kernels``: the HiCache transfer kernels exist. ``supports_pynccl``:
    model-parallel groups may build a PyNccl communicator. ``supports_fp8``: fp8
    kernels run (not in SGLang 0.5.23; added so the flag lives beside the others).

    A frozen, keyword-only value, like SGLang's frozen ``msgspec.Struct``.
    """

    supports_triton: bool = False
    graph_capture: bool = False
    piecewise_graph: bool = False
    hicache_device_kernels: bool = False
    supports_pynccl: bool = False
    supports_fp8: bool = False

    def as_dict(self) -> dict[str, bool]:
        """The flags by name, e.g. for diagnostics and ``--json`` output."""
        return dataclasses.asdict(self)

    def replace(self, **changes: bool) -> PlatformCapabilities:
        """A copy with some flags changed (unknown names raise ``TypeError``)."""
        return dataclasses.replace(self, **changes)


class SRTPlatform(DeviceMixin, _contract_class=True):
    """Base class of SRT platforms; a plugin subclasses it with its device mixin.

    A platform that still defines a retired hook (``get_mha_kv_pool_cls`` and friends) is
    served from it by ``get_kv_pool_cls``, as SGLang serves it, with a ``DeprecationWarning``.
    """

    #: Names of the quantization methods the device runs.
    supported_quantization: list[str] = []
    #: A PlatformCapabilities: what core may ask of the device.
    capabilities: PlatformCapabilities = PlatformCapabilities()

    # ---- configuration lifecycle ---------------------------------------------------------

    @active
    def apply_server_args_defaults(self, server_args: Any) -> None:
        """Adjust parsed server arguments to the platform's defaults, in place."""

    @active
    def init_backend(self) -> None:
        """One-time backend initialisation in each worker; raising aborts startup."""

    @active
    def post_load_model(self, model: torch.nn.Module) -> None:
        """Adjust a loaded model in place (relocate weights, swap quant methods, add hooks)."""

    # ---- subsystem factories -------------------------------------------------------------

    @active_required
    def get_default_attention_backend(self) -> str:
        """Name of the attention backend used when the user names none."""
        raise not_implemented(self, "get_default_attention_backend")

    @active_required
    def get_default_speculative_draft_attention_backend(self, algorithm: str) -> str:
        """Draft-model attention backend for a speculative algorithm."""
        raise not_implemented(self, "get_default_speculative_draft_attention_backend")

    @active
    def get_graph_runner_cls(self) -> type | None:
        """Decode graph runner class, or ``None`` for the in-tree device-keyed choice."""
        return None

    @active
    def get_full_graph_backend_cls(self) -> type | None:
        """Full device-graph backend class, or ``None`` for the in-tree default."""
        return None

    @active
    def get_kv_pool_cls(self, *, kind: KVPoolKind) -> type | None:
        """KV pool class for ``kind`` (``"mha"``, ``"mla"`` or ``"dsa"``), or ``None`` for in-tree.

        Falls back to the retired ``get_<kind>_kv_pool_cls()`` when the platform still defines it.

        Default: returns ``None`` (the in-tree pool), or what the retired hook returns (with a
        ``DeprecationWarning``); ``KeyError`` for an unknown kind.
        """
        if kind not in _KV_POOL_KINDS:
            raise KeyError(f"unknown KV pool kind {kind!r}; expected one of {_KV_POOL_KINDS}")
        hook = f"get_{kind}_kv_pool_cls"
        legacy = getattr(self, hook, None)
        if legacy is None:
            return None
        if (type(self), hook) not in _WARNED_RETIRED_HOOKS:
            _WARNED_RETIRED_HOOKS.add((type(self), hook))
            message = (
                f"{type(self).__name__}.{hook}() is a retired SGLang hook, served for now; "
                f"override get_kv_pool_cls(self, *, kind) and return the pool for kind={kind!r} "
                "instead"
            )
            warnings.warn(message, DeprecationWarning, stacklevel=2)
            logger.warning("%s", message)
        return cast("type | None", legacy())

    @active
    def get_paged_allocator_cls(self) -> type | None:
        """Paged allocator class, or ``None`` for the in-tree one."""
        return None

    @active
    def get_compile_backend(self, mode: str | None = None) -> str:
        """``torch.compile`` backend name; ``mode`` is an optional platform hint."""
        return "inductor"

    @active
    def get_piecewise_backend_cls(self) -> type | None:
        """Piecewise compilation backend class, or ``None`` for the in-tree default."""
        return None

    @active
    def get_speculative_cache_locs_fn(self) -> Callable[..., Any] | None:
        """Platform implementation of speculative KV-cache locations, or ``None``."""
        return None

    @active
    def get_speculative_worker_cls(self, algorithm: str) -> type | None:
        """Worker class replacing the built-in one for ``algorithm``, or ``None`` to keep it."""
        return None

    @active
    def get_speculative_graph_runner_cls(self, algorithm: str, phase: str) -> type | None:
        """Draft graph runner for ``phase``; ``None`` runs the draft eagerly."""
        return None

    @active
    def get_quantization_config(self, quantization: str) -> type | None:
        """Hardware-specific quantization config class, or ``None`` for the default."""
        return None

    # ---- speculative decoding support ------------------------------------------------

    @active
    def supports_speculative_algorithm(self, algorithm: str) -> bool:
        """Whether the named speculative algorithm runs here (no by default)."""
        return False

    @active
    def supports_speculative_draft_attention_backend(self, algorithm: str, backend: str) -> bool:
        """Whether ``backend`` can serve as draft attention for ``algorithm`` (no by default)."""
        return False

    @active
    def support_mamba_cache_extra_buffer(self) -> bool:
        """Whether Mamba cache snapshots are supported (no by default)."""
        return False

    # ---- distributed and dispatch ------------------------------------------------------

    @active
    def get_group_coordinator_device(self, local_rank: int) -> torch.device:
        """Device a ``GroupCoordinator`` binds to on this rank (CPU by default)."""
        import torch

        return torch.device("cpu")

    @active
    def get_dispatch_key_name(self) -> str:
        """Which ``forward_<key>()`` fused ops select on this platform (``"native"`` by default)."""
        return "native"


def require_out_of_tree_impl(platform: SRTPlatform, *, hook: str, subsystem: str) -> None:
    """Refuse an out-of-tree platform's "no opinion" where the fallback assumes CUDA."""
    if platform.is_out_of_tree():
        raise NotImplementedError(
            f"Out-of-tree platform {type(platform).__name__} (device {platform.device_name!r}) "
            f"provides no {subsystem}: override {hook} on your SRTPlatform subclass, because the "
            f"in-tree fallback is chosen by "
            "device and would give this device CUDA's."
        )


def reject_out_of_tree_path(platform: SRTPlatform, *, subsystem: str) -> None:
    """Refuse an out-of-tree platform on an in-tree-only path that has no platform seam."""
    if platform.is_out_of_tree():
        raise NotImplementedError(
            f"Out-of-tree platform {type(platform).__name__} (device {platform.device_name!r}) "
            f"reached {subsystem}, "
            "which has no platform seam yet and would build in-tree classes that assume CUDA."
        )
