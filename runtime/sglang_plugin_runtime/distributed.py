"""Plugin consistency across the ranks of a ``torch.distributed`` job.

Every rank of a job discovers and loads plugins on its own. A node with another plugin version, another
``SGLANG_PLUGINS`` or a platform plugin that did not activate there runs different code than its peers: different
kernels or numerics per rank, or a collective that never matches and hangs. :func:`check_plugin_consistency`, called
once after the process group exists, compares the ranks' plugin fingerprints and raises on every rank alike when
they differ, naming the ranks, their hosts and each item that differs.

``SGLANG_PLUGINS_CONSISTENCY`` (read on each call): ``error`` (default) raises :class:`PluginConsistencyError` on
errors and logs warnings; ``warn`` logs both and returns; ``off`` returns at once without communicating, so it must
be set for every rank (as launchers pass their environment to all ranks), or the others wait in the collective.

Importing this module does not import torch; calling :func:`check_plugin_consistency` does.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._fingerprint import (
    ERROR,
    FORMAT,
    Difference,
    Participant,
    PluginFingerprint,
    RankGroup,
    Variant,
    build_fingerprint,
    compare,
    digest_of,
    format_differences,
    format_groups,
    rank_groups,
)
from ._namespace import SRT, PluginNamespace, get_namespace
from .errors import PluginConsistencyError

if TYPE_CHECKING:
    from torch.distributed import ProcessGroup

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
MODES = ("error", "warn", "off")
_MODE_CODES = {"warn": 1, "error": 2}

#: What every rank sends first: its fingerprint's sha256, its mode, whether building the fingerprint failed, and
#: the length of its full payload.
_HEAD = struct.Struct(">32sB?I")


@dataclass(frozen=True)
class ConsistencyResult:
    """What :func:`check_plugin_consistency` found, returned on every rank when it did not raise."""

    #: This rank's fingerprint.
    fingerprint: PluginFingerprint
    #: Ranks in the group.
    world_size: int
    #: The mode that applied: the strictest of the ranks' ``SGLANG_PLUGINS_CONSISTENCY``, so all ranks act alike.
    mode: str
    #: Empty when every rank agrees; else warnings (and, in ``warn`` mode, errors) that were logged.
    differences: tuple[Difference, ...] = ()
    #: Ranks grouped by identical fingerprint; filled only when they differ (the hosts are exchanged only then).
    groups: tuple[RankGroup, ...] = ()

    @property
    def consistent(self) -> bool:
        return not self.differences


def consistency_mode() -> str:
    """``SGLANG_PLUGINS_CONSISTENCY`` as one of ``error``, ``warn``, ``off``.

    An unknown value counts as ``error`` (with a warning): a typo must not switch the check off on one rank only.
    """
    raw = os.environ.get(CONSISTENCY_ENV, "").strip().lower()
    if not raw:
        return "error"
    if raw in MODES:
        return raw
    logger.warning("%s=%r is not one of %s; checking in 'error' mode.", CONSISTENCY_ENV, raw, ", ".join(MODES))
    return "error"


def plugin_fingerprint(namespace: str | PluginNamespace = SRT) -> PluginFingerprint:
    """This process's plugin fingerprint (``.digest``, ``.to_dict()``): what :func:`check_plugin_consistency` sends.

    Resolves the current platform if nothing has yet; records a failed selection instead of raising.
    """
    return build_fingerprint(get_namespace(namespace))


def check_plugin_consistency(
    group: ProcessGroup | None = None, namespace: str | PluginNamespace = SRT
) -> ConsistencyResult | None:
    """Check that every rank of ``group`` (default: the whole world) runs the same plugins.

    Call it on every rank of ``group``, after ``load_plugins()`` and after the process group exists. Any backend
    works; a CPU (``gloo``) group costs no device memory. When all ranks agree it costs one all-gather of 38 bytes
    per rank; otherwise a second all-gather exchanges the full fingerprints and host names, and every rank raises
    :class:`PluginConsistencyError` (or, in ``warn`` mode, logs) with the same report. Returns ``None`` when
    ``SGLANG_PLUGINS_CONSISTENCY=off``.

    Raises ``RuntimeError`` when no process group is initialised.
    """
    mode = consistency_mode()
    if mode == "off":
        logger.info("%s=off: plugin consistency across ranks is not checked.", CONSISTENCY_ENV)
        return None
    ns = get_namespace(namespace)
    exchange = _Exchange(group)
    fingerprint, data, failure = _own_fingerprint(ns, exchange.world_size)
    if exchange.world_size == 1:
        assert fingerprint is not None  # with no peers to keep waiting, a failure was raised as it is
        return ConsistencyResult(fingerprint, 1, mode)
    digest = digest_of(data)
    payload = json.dumps(
        {"rank": exchange.rank, "host": socket.gethostname(), "fingerprint": data, "failure": failure}, sort_keys=True
    ).encode("utf-8")
    head = _HEAD.pack(bytes.fromhex(digest), _MODE_CODES[mode], failure is not None, len(payload))
    heads = [_HEAD.unpack(raw) for raw in exchange.all_gather(head, _HEAD.size)]
    # Every rank decides from the same gathered bytes, so all raise or all return; the strictest mode applies.
    effective = "error" if any(code == _MODE_CODES["error"] for _, code, _, _ in heads) else "warn"
    any_failed = any(failed for _, _, failed, _ in heads)
    if len({d for d, _, _, _ in heads}) == 1 and not any_failed:
        assert fingerprint is not None
        logger.info("Plugin fingerprint %s is the same on all %d ranks.", digest[:12], exchange.world_size)
        return ConsistencyResult(fingerprint, exchange.world_size, effective)
    size = max(length for _, _, _, length in heads)
    entries = [
        json.loads(raw[:length].decode("utf-8"))
        for raw, (_, _, _, length) in zip(exchange.all_gather(payload, size), heads, strict=True)
    ]
    if any_failed:
        broken = "; ".join(f"rank {e['rank']} (host {e['host']}): {e['failure']}" for e in entries if e["failure"])
        raise PluginConsistencyError(
            f"Plugin consistency could not be checked: building the plugin fingerprint failed on {broken}. This is "
            f"a bug in sglang-plugin-runtime (every rank raises this error); please report it with the log of "
            f"those ranks. {CONSISTENCY_ENV}=off skips the check meanwhile.",
            namespace=ns.name,
        )
    assert fingerprint is not None
    participants = [Participant(int(e["rank"]), str(e["host"]), e["fingerprint"]) for e in entries]
    differences = tuple(compare(participants) or [_opaque_difference(participants)])
    groups = tuple(rank_groups(participants))
    raising = effective == "error" and any(d.severity == ERROR for d in differences)
    message = _report(ns, exchange.world_size, groups, differences, raising=raising)
    if raising:
        raise PluginConsistencyError(message, differences=differences, groups=groups, namespace=ns.name)
    lowest = min(p.rank for p in participants)
    if exchange.rank == lowest:
        logger.warning("%s", message)
    else:
        logger.warning(
            "Plugins differ across ranks (%d difference(s)); rank %d logs the report.", len(differences), lowest
        )
    return ConsistencyResult(fingerprint, exchange.world_size, effective, differences, groups)


def _own_fingerprint(
    ns: PluginNamespace, world_size: int
) -> tuple[PluginFingerprint | None, dict[str, Any], str | None]:
    """This rank's fingerprint, its dict, and ``None``; or, if building it failed, ``None``, a stand-in, the error.

    A bug here must not keep this rank out of the collective its peers wait in: it takes part, and every rank raises.
    """
    try:
        fingerprint = plugin_fingerprint(ns)
    except Exception as exc:
        if world_size == 1:
            raise
        logger.exception("Building this rank's plugin fingerprint failed")
        stand_in = {"format": FORMAT, "namespace": ns.name, "build_error": type(exc).__name__}
        return None, stand_in, f"{type(exc).__name__}: {exc}"
    return fingerprint, fingerprint.to_dict(), None


def _report(
    ns: PluginNamespace,
    world_size: int,
    groups: tuple[RankGroup, ...],
    differences: Sequence[Difference],
    *,
    raising: bool,
) -> str:
    verdict = "every rank raises this error" if raising else "logged only"
    if not raising and any(d.severity == ERROR for d in differences):
        verdict += f" ({CONSISTENCY_ENV}=warn)"
    hosts = sorted({host for group in groups for host in group.hosts})
    where = f"all on host {hosts[0]}" if len(hosts) == 1 else f"on {len(hosts)} hosts"
    headline = (
        f"Plugins differ across the {world_size} ranks of the process group ({where}; namespace {ns.name!r}); "
        f"{verdict}."
    )
    fix = (
        f"Fix: install the same plugin distributions and versions on every node and give every rank the same "
        f"{ns.platform_env} and {ns.plugins_env}. To compare nodes without a job, run `sglang-plugins fingerprint "
        f"--namespace {ns.name}` on each (the digests above are its first 12 digits; `--compare FILE` lists the "
        f"differences)."
    )
    lines = [
        headline,
        *format_groups(groups, show_hosts=len(hosts) > 1),
        *format_differences(differences, show_hosts=len(hosts) > 1),
        fix,
    ]
    if raising:
        lines.append(f"To log this instead of raising, set {CONSISTENCY_ENV}=warn on every rank.")
    return "\n".join(lines)


def _opaque_difference(participants: list[Participant]) -> Difference:
    """Fingerprints whose digests differ in a way :func:`compare` cannot itemise (should not happen)."""
    variants = tuple(Variant(f"fingerprint {g.digest[:12]}", g.ranks, g.hosts) for g in rank_groups(participants))
    return Difference("field", "fingerprint", ERROR, variants)


class _Exchange:
    """Byte strings all-gathered over one process group, as ``uint8`` tensors (torch is imported here)."""

    def __init__(self, group: ProcessGroup | None) -> None:
        import torch
        import torch.distributed as dist

        if not dist.is_available() or not dist.is_initialized():
            raise RuntimeError(
                "check_plugin_consistency() needs an initialised torch.distributed process group: call it after "
                "torch.distributed.init_process_group() (in SGLang: after init_distributed_environment())."
            )
        self._torch, self._dist, self._group = torch, dist, group
        self.world_size: int = dist.get_world_size(group)
        #: The global rank: what torchrun and SGLang's logs call a rank, whatever the group.
        self.rank: int = dist.get_rank()
        self._device: Any = None

    def all_gather(self, data: bytes, size: int) -> list[bytes]:
        """Every rank's ``data``, padded to ``size`` bytes, in group order; one collective."""
        torch = self._torch
        if self._device is None:
            self._device = self._collective_device()
        buffer = bytearray(size)
        buffer[: len(data)] = data
        tensor = torch.frombuffer(buffer, dtype=torch.uint8).to(self._device)
        gathered = [torch.empty(size, dtype=torch.uint8, device=self._device) for _ in range(self.world_size)]
        self._dist.all_gather(gathered, tensor, group=self._group)
        return [bytes(t.cpu().tolist()) for t in gathered]

    def _collective_device(self) -> Any:
        """CPU when the group has a CPU backend, else the group's device type at its current index.

        The rule ``torch.distributed.all_gather_object`` follows (with torch's helper for it, where this torch has
        one). ``all_gather_object`` itself is not used: it pickles, and torch 2.13 decodes it through numpy.
        """
        torch = self._torch
        finder = getattr(self._dist.distributed_c10d, "_get_object_coll_device", None)
        try:
            device_type = finder(self._group) if finder is not None else "cpu"
        except Exception:
            device_type = "cpu"
        if device_type == "cpu":
            return torch.device("cpu")
        return torch.device(device_type, torch.get_device_module(device_type).current_device())
