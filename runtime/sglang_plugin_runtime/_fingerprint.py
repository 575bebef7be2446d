"""What a process's plugins did, as a fingerprint that ranks and hosts can compare.

A fingerprint holds only what must be equal on every rank of a job: the runtime's version, the
namespace, the selected platform (class, plugin, distribution, version, rule) with every platform
plugin's ``activate()`` outcome, the general plugins with their status, distribution and version,
and the hooks registered on each target (type, hook, source, priority, whether it failed to apply).
Nothing that is legitimately per rank goes in: no pid, device index, host name, path, timing or
exception text (those quote paths and addresses), and no value a ``functools.partial`` hook binds
(a rank's own number). So equal plugins give equal digests on every rank and host, and
``sglang-plugins fingerprint`` on a node prints the digest a rank there would compute.

Whether a hook target is *applied* or still *pending* is left out too: it only says whether the
target's module has been imported yet in that process, which is a matter of timing (and always
pending in the CLI); the hooks apply on import either way. So is the chain a target shares with the
other targets naming the same function (a re-export) once applied: each target lists the hooks
registered on it. A target whose hooks *failed* to apply is in.

Built from public APIs only; standard library only; nothing here imports torch. Comparing
fingerprints and formatting the differences is :mod:`._consistency`'s, imported only when ranks
disagree.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from ._namespace import get_namespace

if TYPE_CHECKING:
    from ._namespace import PluginNamespace

#: Version of the fingerprint's layout; a change makes every digest change, so only bump it with the
#: runtime's.
FORMAT = 2

#: An address in a ``repr()`` (``<functools.partial object at 0x7f...>``): different in every
#: process.
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


class Record:
    """A dataclass that travels as JSON: ``to_dict()`` gives it as dicts and lists, under its field
    names."""

    to_dict = dataclasses.asdict


@dataclasses.dataclass(frozen=True)
class PluginFingerprint(Record):
    """What one process's plugins did, in a form that is equal on every rank that runs the same
    plugins."""

    format: int
    runtime_version: str
    namespace: str
    #: ``{status: selected|failed, class, plugin, distribution, version, rule, error_type,
    #: activations: [...]}``.
    platform: Mapping[str, Any]
    #: One record per general plugin (``{plugin, status, distribution, version}``), or ``None`` when
    #: ``load_plugins()`` has not run in this process.
    general_plugins: Sequence[Mapping[str, Any]] | None
    #: One entry per hook target: ``{target, failed, hooks: [{type, hook, plugin, distribution,
    #: priority, active}]}``.
    hooks: Sequence[Mapping[str, Any]]

    @property
    def digest(self) -> str:
        """sha256 of the canonical JSON of :meth:`to_dict` (64 hex digits)."""
        return digest_of(self.to_dict())


def canonical_json(data: Any) -> str:
    """The one JSON text of ``data``: sorted keys, no spaces, ASCII."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def digest_of(data: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_json(data).encode("ascii")).hexdigest()


def plugin_fingerprint(namespace: str | PluginNamespace = "srt") -> PluginFingerprint:
    """This process's plugin fingerprint (``.digest``, ``.to_dict()``): what
    ``check_plugin_consistency`` sends. It resolves the namespace's current platform if nothing has
    yet (hosts have by the time their process group exists), and never raises for what plugins did:
    a failed selection is recorded as such, so a rank whose platform failed still takes part in a
    comparison instead of dying alone."""
    from . import __version__
    from ._plugin_code import registry
    from .platforms import current_platform_selection
    from .plugins import plugin_load_report

    namespace = get_namespace(namespace)
    try:
        selection = current_platform_selection(namespace)
        platform: dict[str, Any] = {
            "status": "selected",
            "class": selection.class_path,
            "error_type": None,
            **{f: getattr(selection, f) for f in ("plugin", "distribution", "version", "rule")},
        }
        activations = selection.activations
    except Exception as exc:  # recorded, not raised
        activations, plugin = getattr(exc, "outcomes", ()), getattr(exc, "plugin", None)
        platform = {
            "status": "failed",
            "class": None,
            "plugin": plugin,
            "distribution": getattr(exc, "distribution", None),
            "version": next((o.version for o in activations if o.plugin == plugin), None),
            "rule": None,
            "error_type": type(exc).__name__,
        }
    platform["activations"] = _by_plugin(activations)
    report = plugin_load_report(namespace)
    plugins = None if report is None else _by_plugin(report.outcomes)
    hooks = []
    if registry() is not None:  # a plugin or the host registered a hook
        from .plugins.hook_registry import HookRegistry, Target

        entries = (
            {
                "target": Target.parse(report.target).dotted,
                "failed": report.status == "failed",
                # A re-export's chain holds its function's other targets' hooks: each lists its own.
                "hooks": [fingerprint_hook(h) for h in report.hooks if h.target == report.target],
            }
            for report in HookRegistry.describe()
        )
        hooks = sorted(entries, key=itemgetter("target"))

    return PluginFingerprint(FORMAT, __version__, namespace.name, platform, plugins, hooks)


def _by_plugin(outcomes: Iterable[Any]) -> list[dict[str, Any]]:
    """Plugin outcomes, as much of them as is equal on every rank, sorted."""
    records = (
        {f: getattr(o, f) for f in ("plugin", "status", "distribution", "version")}
        for o in outcomes
    )
    return sorted(records, key=lambda r: (r["plugin"], r["distribution"] or ""))


def fingerprint_hook(hook: Any) -> dict[str, Any]:
    """One ``HookReport`` as the fingerprint (and the CLI) shows it, without the addresses of
    ``repr()``."""
    data = {**hook.to_dict(), "hook": _ADDRESS.sub("", hook.hook)}
    del data["target"]  # the target it was registered on: the fingerprint's own key says it
    return data
