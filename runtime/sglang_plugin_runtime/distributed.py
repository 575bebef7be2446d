"""Plugin consistency across the ranks of a ``torch.distributed`` job.

Every rank of a job discovers and loads plugins on its own. A node with another plugin version,
another ``SGLANG_PLUGINS`` or a platform plugin that did not activate there runs different code than
its peers: different kernels or numerics per rank, or a collective that never matches and hangs.
:func:`check_plugin_consistency`, called once after the process group exists, compares the ranks'
plugin fingerprints and raises on every rank alike when they differ, naming the ranks, their hosts
and each item that differs.

``SGLANG_PLUGINS_CONSISTENCY`` (read on each call): ``error`` (default) raises
:class:`PluginConsistencyError` on errors and logs warnings; ``warn`` logs both and returns; ``off``
returns at once without communicating, so it must be set for every rank (as launchers pass their
environment to all ranks), or the others wait in the collective.

Importing this module does not import torch; calling :func:`check_plugin_consistency` does. What
ranks that agree need is here; comparing and reporting fingerprints that differ is in
:mod:`._consistency`, imported only then.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._fingerprint import FORMAT, PluginFingerprint, digest_of, plugin_fingerprint
from ._lazy_exports import lazy_exports
from ._namespace import SRT, PluginNamespace, get_namespace
from .errors import PluginConsistencyError

if TYPE_CHECKING:
    from torch.distributed import ProcessGroup

    from ._consistency import Difference, RankGroup, Variant

__all__ = [
    "CONSISTENCY_ENV",
    "ConsistencyResult",
    "Difference",
    "PluginConsistencyError",
    "PluginFingerprint",
    "RankGroup",
    "Variant",
    "check_plugin_consistency",
    "consistency_mode",
    "plugin_fingerprint",
]

logger = logging.getLogger(__name__)

#: The environment variable that relaxes the check: ``error`` (default), ``warn`` or ``off``.
CONSISTENCY_ENV = "SGLANG_PLUGINS_CONSISTENCY"
#: The modes, each sent as its index: the strictest (highest) applies.
_MODES = ("off", "warn", "error")

#: What every rank sends first: its fingerprint's sha256, its mode, whether building the fingerprint
#: failed, and the length of its full payload.
_HEAD = struct.Struct(">32sB?I")

# The records of a disagreement, from the module that builds them (imported on first use).
__getattr__ = lazy_exports(
    __name__,
    globals(),
    dict.fromkeys(("Difference", "RankGroup", "Variant"), f"{__package__}._consistency"),
)


@dataclass(frozen=True)
class ConsistencyResult:
    """What :func:`check_plugin_consistency` found, returned on every rank when it did not raise."""

    #: This rank's fingerprint.
    fingerprint: PluginFingerprint
    #: Ranks in the group.
    world_size: int
    #: The mode that applied: the strictest of the ranks' ``SGLANG_PLUGINS_CONSISTENCY``, so all
    #: ranks act alike.
    mode: str
    #: Empty when every rank agrees; else warnings (and, in ``warn`` mode, errors) that were logged.
    differences: tuple[Difference, ...] = ()
    #: Ranks grouped by identical fingerprint; filled only when they differ (the hosts are exchanged
    #: only then).
    groups: tuple[RankGroup, ...] = ()

    @property
    def consistent(self) -> bool:
        return not self.differences


def consistency_mode() -> str:
    """``SGLANG_PLUGINS_CONSISTENCY`` as one of ``error``, ``warn``, ``off``.

    An unknown value counts as ``error`` (with a warning): a typo must not switch the check off on
    one rank only.
    """
    raw = os.environ.get(CONSISTENCY_ENV, "").strip().lower()
    if raw in _MODES:
        return raw
    if raw:
        logger.warning(
            "%s=%r is not one of error, warn, off; checking in 'error' mode.", CONSISTENCY_ENV, raw
        )
    return "error"


def check_plugin_consistency(
    group: ProcessGroup | None = None, namespace: str | PluginNamespace = SRT
) -> ConsistencyResult | None:
    """Check that every rank of ``group`` (default: the whole world) runs the same plugins.

    Call it on every rank of ``group``, after ``load_plugins()`` and after the process group exists.
    Any backend works; a CPU (``gloo``) group costs no device memory. When all ranks agree it costs
    one all-gather of 38 bytes per rank; otherwise a second all-gather exchanges the full
    fingerprints and host names, and every rank raises :class:`PluginConsistencyError` (or, in
    ``warn`` mode, logs) with the same report. Returns ``None`` when
    ``SGLANG_PLUGINS_CONSISTENCY=off``.

    Raises ``RuntimeError`` when no process group is initialised.
    """
    mode = consistency_mode()
    if mode == "off":
        logger.info("%s=off: plugin consistency across ranks is not checked.", CONSISTENCY_ENV)
        return None
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        raise RuntimeError(
            "check_plugin_consistency() needs an initialised torch.distributed process group: call "
            "it after torch.distributed.init_process_group() (in SGLang: after "
            "init_distributed_environment())."
        )
    namespace = get_namespace(namespace)
    world = dist.get_world_size(group)
    rank = dist.get_rank()
    if world == 1:
        return ConsistencyResult(plugin_fingerprint(namespace), 1, mode)
    # Where building the fingerprint fails, ``fingerprint`` is never read: judge() raises.
    failure = None
    try:
        fingerprint = plugin_fingerprint(namespace)
        data = fingerprint.to_dict()
    # a bug here must not keep this rank out of the collective its peers wait in
    except Exception as exc:
        logger.exception("Building this rank's plugin fingerprint failed")
        failure = f"{type(exc).__name__}: {exc}"
        data = {"format": FORMAT, "build_error": type(exc).__name__}
    digest = digest_of(data)
    encoded = json.dumps(
        {"rank": rank, "host": socket.gethostname(), "fingerprint": data, "failure": failure}
    ).encode()
    head = _HEAD.pack(bytes.fromhex(digest), _MODES.index(mode), failure is not None, len(encoded))
    heads = map(_HEAD.unpack, _all_gather(group, head, _HEAD.size))
    digests, modes, failures, lengths = zip(*heads, strict=True)
    # Every rank decides from the same gathered bytes, so all raise or all return; the strictest
    # mode applies.
    effective = _MODES[max(modes)]
    if len(set(digests)) == 1 and not any(failures):
        logger.info("Plugin fingerprint %s is the same on all %d ranks.", digest[:12], world)
        return ConsistencyResult(fingerprint, world, effective)
    gathered = zip(_all_gather(group, encoded, max(lengths)), lengths, strict=True)
    entries = [json.loads(raw[:length]) for raw, length in gathered]
    from ._consistency import judge

    differences, groups = judge(
        namespace, rank, world, entries, effective, logger
    )  # raises, or logs
    return ConsistencyResult(fingerprint, world, effective, differences, groups)


def _all_gather(group: ProcessGroup | None, data: bytes, size: int) -> list[bytes]:
    """Every rank's ``data``, padded to ``size`` bytes, in group order: one collective, as ``uint8``
    tensors on the device ``torch.distributed.all_gather_object`` would use (CPU for a CPU backend).
    ``all_gather_object`` itself pickles, and torch 2.13 decodes it through numpy."""
    import torch
    import torch.distributed as dist

    try:
        kind = dist.distributed_c10d._get_object_coll_device(group)
    except Exception:  # not in this torch, or it cannot tell
        kind = "cpu"
    # a device type alone ("cuda") is its current device, as all_gather_object picks it
    tensor = torch.frombuffer(bytearray(data.ljust(size, b"\0")), dtype=torch.uint8).to(kind)
    gathered = [torch.empty_like(tensor) for _ in range(dist.get_world_size(group))]
    dist.all_gather(gathered, tensor, group=group)
    return [bytes(t.cpu().tolist()) for t in gathered]
