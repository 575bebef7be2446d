"""What a process's plugins did, as a fingerprint that ranks and hosts can compare, and the diff of several.

A fingerprint holds only what must be equal on every rank of a job: the runtime's version, the namespace, the
selected platform (class, plugin, distribution, version, rule) with every platform plugin's ``activate()`` outcome,
the general plugins with their status, distribution and version, and the hook chain on each target (type, hook,
source, priority, whether it failed to apply). Nothing that is legitimately per rank goes in: no pid, device index,
host name, path, timing or exception text (those quote paths and addresses). So equal plugins give equal digests
on every rank and host, and ``sglang-plugins fingerprint`` on a node prints the digest a rank there would compute.

Whether a hook target is *applied* or still *pending* is left out too: it only says whether the target's module
has been imported yet in that process, which is a matter of timing (and always pending in the CLI); the hooks
apply on import either way. A target whose hooks *failed* to apply is in.

Built from public APIs only: ``current_platform_selection()``, ``plugin_load_report()`` and
``HookRegistry.describe()``. Standard library only; nothing here imports torch.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: Version of the fingerprint's layout; a change makes every digest change, so only bump it with the runtime's.
FORMAT = 1

ERROR = "error"
WARNING = "warning"

#: An address in a ``repr()`` (``<functools.partial object at 0x7f...>``): different in every process.
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


@dataclass(frozen=True)
class PluginFingerprint:
    """What one process's plugins did, in a form that is equal on every rank that runs the same plugins."""

    format: int
    runtime_version: str
    namespace: str
    #: ``{status: selected|failed, class, plugin, distribution, version, rule, error_type, activations: [...]}``.
    platform: Mapping[str, Any]
    #: One record per general plugin (``{plugin, status, distribution, version}``), or ``None`` when
    #: ``load_plugins()`` has not run in this process.
    general_plugins: Sequence[Mapping[str, Any]] | None
    #: One entry per hook target: ``{target, failed, hooks: [{type, hook, plugin, distribution, priority, active}]}``.
    hooks: Sequence[Mapping[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "runtime_version": self.runtime_version,
            "namespace": self.namespace,
            "platform": dict(self.platform),
            "general_plugins": None if self.general_plugins is None else [dict(p) for p in self.general_plugins],
            "hooks": [dict(h) for h in self.hooks],
        }

    @property
    def digest(self) -> str:
        """sha256 of the canonical JSON of :meth:`to_dict` (64 hex digits)."""
        return digest_of(self.to_dict())


def canonical_json(data: Any) -> str:
    """The one JSON text of ``data``: sorted keys, no spaces, ASCII."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def digest_of(data: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_json(data).encode("ascii")).hexdigest()


# ---- building ------------------------------------------------------------------------------------------------


def build_fingerprint(namespace: Any = "srt") -> PluginFingerprint:
    """The fingerprint of this process for ``namespace`` (a name or a ``PluginNamespace``).

    Resolves the namespace's current platform if nothing has yet (hosts have by the time their process group
    exists: the device decides the backend). Never raises for what plugins did: a failed selection is recorded as
    such, so a rank whose platform failed still takes part in a comparison instead of dying alone.
    """
    from . import __version__
    from ._namespace import get_namespace

    ns = get_namespace(namespace)
    return PluginFingerprint(
        format=FORMAT,
        runtime_version=__version__,
        namespace=ns.name,
        platform=_platform_section(ns),
        general_plugins=_plugins_section(ns),
        hooks=_hooks_section(),
    )


def _activation(activation: Any) -> dict[str, Any]:
    return {
        "plugin": activation.plugin,
        "distribution": activation.dist_name,
        "version": activation.dist_version,
        "status": activation.status,
    }


def _platform_section(ns: Any) -> dict[str, Any]:
    from .platforms import current_platform_selection

    try:
        selection = current_platform_selection(ns)
    except Exception as exc:  # recorded, not raised: see build_fingerprint()
        activations = [_activation(a) for a in getattr(exc, "activations", ())]
        plugin = getattr(exc, "plugin", None)
        version = next((a["version"] for a in activations if a["plugin"] == plugin), None)
        return {
            "status": "failed",
            "class": None,
            "plugin": plugin,
            "distribution": getattr(exc, "dist", None),
            "version": version,
            "rule": None,
            "error_type": type(exc).__name__,
            "activations": sorted(activations, key=lambda a: (a["plugin"], a["distribution"] or "")),
        }
    return {
        "status": "selected",
        "class": selection.class_path,
        "plugin": selection.plugin,
        "distribution": selection.dist_name,
        "version": selection.dist_version,
        "rule": selection.rule,
        "error_type": None,
        "activations": sorted(
            (_activation(a) for a in selection.activations), key=lambda a: (a["plugin"], a["distribution"] or "")
        ),
    }


def _plugins_section(ns: Any) -> list[dict[str, Any]] | None:
    from .plugins import plugin_load_report

    report = plugin_load_report(ns)
    if report is None:
        return None
    records = [
        {"plugin": r.plugin, "status": r.status, "distribution": r.dist_name, "version": r.dist_version}
        for r in report.records
    ]
    return sorted(records, key=lambda r: (r["plugin"], r["distribution"] or ""))


def _hooks_section() -> list[dict[str, Any]]:
    from .plugins.hook_registry import HookRegistry

    chains: dict[str, list[list[dict[str, Any]]]] = {}
    failed: dict[str, bool] = {}
    for report in HookRegistry.describe():
        # Both spellings (``pkg.mod:Class.m`` and ``pkg.mod.Class.m``) name the same target.
        name = report.target.replace(":", ".")
        chains.setdefault(name, []).append([_hook(h) for h in report.hooks])
        failed[name] = failed.get(name, False) or report.status == "failed"
    return [{"target": name, "failed": failed[name], "hooks": _merge(chains[name])} for name in sorted(chains)]


def _hook(report: Any) -> dict[str, Any]:
    return {
        "type": report.hook_type,
        "hook": _ADDRESS.sub("", report.hook),
        "plugin": report.plugin,
        "distribution": report.dist,
        "priority": report.priority,
        "active": report.active,
    }


def _merge(chains: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """One target's hooks, outermost first; for a target registered under both spellings, in a fixed order.

    Once applied, each spelling reports the whole chain; while pending, each reports only its own hooks. Sorting
    the union makes both states give the same list.
    """
    if len(chains) == 1:
        return chains[0]
    first = chains[0]
    hooks = first if all(chain == first for chain in chains) else [h for chain in chains for h in chain]
    return sorted(hooks, key=canonical_json)


# ---- comparing -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    """One value an item has, and the ranks (and their hosts) that have it."""

    value: str
    ranks: tuple[int, ...]
    hosts: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "ranks": list(self.ranks), "hosts": list(self.hosts)}


@dataclass(frozen=True)
class Difference:
    """One item (the platform, a general plugin, the hooks on a target, ...) that is not the same on every rank."""

    #: ``runtime``, ``namespace``, ``format``, ``platform``, ``platform-rule``, ``activation``, ``plugins-loaded``,
    #: ``plugin``, ``hooks`` or ``field`` (something this version does not know, from a newer runtime).
    kind: str
    #: What differs, for people: ``general plugin 'timer'``, ``hooks on 'pkg.mod.func'``.
    item: str
    #: ``error`` (different code runs on different ranks) or ``warning`` (the same code runs everywhere).
    severity: str
    #: Most common value first.
    variants: tuple[Variant, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "item": self.item,
            "severity": self.severity,
            "variants": [v.to_dict() for v in self.variants],
        }


@dataclass(frozen=True)
class RankGroup:
    """Ranks whose fingerprints are identical."""

    digest: str
    ranks: tuple[int, ...]
    hosts: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"digest": self.digest, "ranks": list(self.ranks), "hosts": list(self.hosts)}


@dataclass(frozen=True)
class Participant:
    """One rank's fingerprint (as a dict, as it travels), with where it comes from."""

    rank: int
    host: str
    fingerprint: Mapping[str, Any]


_MISSING = object()

#: The order items are listed in, most fundamental first.
_KIND_ORDER = (
    "format",
    "runtime",
    "namespace",
    "platform",
    "platform-rule",
    "activation",
    "plugins-loaded",
    "plugin",
    "hooks",
    "field",
)
_KNOWN_FIELDS = {"format", "runtime_version", "namespace", "platform", "general_plugins", "hooks"}


def _items(fingerprint: Mapping[str, Any]) -> dict[tuple[str, str], Any]:
    """The comparable items of one fingerprint: ``{(kind, name): raw value}``."""
    items: dict[tuple[str, str], Any] = {
        ("format", ""): fingerprint.get("format"),
        ("runtime", ""): fingerprint.get("runtime_version"),
        ("namespace", ""): fingerprint.get("namespace"),
    }
    platform = fingerprint.get("platform")
    if isinstance(platform, Mapping):
        items[("platform", "")] = {k: v for k, v in platform.items() if k not in ("rule", "activations")}
        items[("platform-rule", "")] = platform.get("rule")
        for activation in platform.get("activations") or ():
            items[("activation", activation["plugin"])] = {k: v for k, v in activation.items() if k != "plugin"}
    else:
        items[("platform", "")] = platform
    plugins = fingerprint.get("general_plugins")
    items[("plugins-loaded", "")] = plugins is not None
    for record in plugins or ():
        items[("plugin", record["plugin"])] = {k: v for k, v in record.items() if k != "plugin"}
    hook_targets: dict[str, list[Any]] = {}
    for target in fingerprint.get("hooks") or ():
        hook_targets.setdefault(target["target"], []).append({k: v for k, v in target.items() if k != "target"})
    for name, entries in hook_targets.items():
        items[("hooks", name)] = entries[0] if len(entries) == 1 else entries
    for key in sorted(set(fingerprint) - _KNOWN_FIELDS):
        items[("field", key)] = fingerprint[key]
    return items


def compare(participants: Sequence[Participant]) -> list[Difference]:
    """Every item that is not the same for all ``participants``, errors first, then in a fixed order."""
    per_rank = [(p, _items(p.fingerprint)) for p in participants]
    keys = sorted({key for _, items in per_rank for key in items}, key=lambda k: (_KIND_ORDER.index(k[0]), k[1]))
    platform_differs = len({canonical_json(items.get(("platform", ""))) for _, items in per_rank}) > 1
    differences = []
    for key in keys:
        if key[0] == "platform-rule" and platform_differs:
            continue  # the platform line already shows each rank's platform; the rule is its consequence
        groups: dict[str, tuple[Any, list[Participant]]] = {}
        for participant, items in per_rank:
            raw = items.get(key, _MISSING)
            token = "<missing>" if raw is _MISSING else canonical_json(raw)
            groups.setdefault(token, (raw, []))[1].append(participant)
        if len(groups) == 1:
            continue
        ordered = sorted(groups.values(), key=lambda g: (-len(g[1]), min(p.rank for p in g[1])))
        raws = [raw for raw, _ in ordered]
        variants = tuple(
            Variant(
                _render(key[0], raw),
                tuple(sorted(p.rank for p in members)),
                tuple(sorted({p.host for p in members})),
            )
            for raw, members in ordered
        )
        differences.append(Difference(key[0], _label(key), _severity(key[0], raws), variants))
    differences.sort(key=lambda d: d.severity != ERROR)  # stable: keeps the fixed order within each severity
    return differences


def rank_groups(participants: Sequence[Participant]) -> list[RankGroup]:
    """Ranks grouped by identical fingerprint, largest group first."""
    groups: dict[str, list[Participant]] = {}
    for participant in participants:
        groups.setdefault(digest_of(participant.fingerprint), []).append(participant)
    ordered = sorted(groups.items(), key=lambda g: (-len(g[1]), min(p.rank for p in g[1])))
    return [
        RankGroup(digest, tuple(sorted(p.rank for p in members)), tuple(sorted({p.host for p in members})))
        for digest, members in ordered
    ]


def _severity(kind: str, raws: Sequence[Any]) -> str:
    """Error when different code runs on different ranks; warning when the same code runs everywhere.

    - the rule that chose the platform (``SGLANG_PLATFORM`` on some ranks, automatic on others) and the
      ``activate()`` outcomes of platform plugins: warnings; the selected platform itself is its own item;
    - a general plugin that is loaded on no rank (skipped or failed everywhere, in different ways or versions):
      warning; one loaded on some ranks, or loaded in different versions: error;
    - everything else (runtime version, platform, whether plugins were loaded, hook chains): error.
    """
    if kind in ("platform-rule", "activation"):
        return WARNING
    if kind == "plugin":
        loaded = any(isinstance(raw, Mapping) and raw.get("status") == "loaded" for raw in raws)
        return ERROR if loaded else WARNING
    return ERROR


def _label(key: tuple[str, str]) -> str:
    kind, name = key
    return {
        "format": "fingerprint format",
        "runtime": "runtime version",
        "namespace": "namespace",
        "platform": "platform",
        "platform-rule": "platform selection rule",
        "activation": f"platform plugin {name!r}, activate()",
        "plugins-loaded": "general plugins",
        "plugin": f"general plugin {name!r}",
        "hooks": f"hooks on {name!r}",
        "field": f"fingerprint field {name!r}",
    }[kind]


def _dist(raw: Mapping[str, Any]) -> str:
    dist, version = raw.get("distribution"), raw.get("version")
    if not dist:
        return ""
    return f"{dist} {version}" if version else str(dist)


_ACTIVATION_TEXT = {
    "activated": "activated",
    "unavailable": "returned None (hardware not found)",
    "failed": "failed (import, activate() or its class)",
}


def _render(kind: str, raw: Any) -> str:
    """One item's value for people; the raw value is what is compared."""
    if raw is _MISSING:
        return {
            "activation": "not installed",
            "plugin": "not installed",
            "hooks": "no hooks",
        }.get(kind, "missing")
    if kind == "runtime":
        return f"sglang-plugin-runtime {raw}"
    if kind == "platform" and isinstance(raw, Mapping):
        plugin = raw.get("plugin")
        source = ", ".join(filter(None, [f"plugin {plugin!r}" if plugin else "", _dist(raw)]))
        if raw.get("status") == "failed":
            return f"selection failed: {raw.get('error_type')}" + (f" ({source})" if source else "")
        return f"{raw.get('class')}" + (f" ({source})" if source else " (no plugin: the fallback)")
    if kind == "activation" and isinstance(raw, Mapping):
        text = _ACTIVATION_TEXT.get(raw.get("status"), str(raw.get("status")))
        return f"{text}, {_dist(raw)}" if _dist(raw) else text
    if kind == "plugins-loaded":
        return "load_plugins() ran" if raw else "load_plugins() not called"
    if kind == "plugin" and isinstance(raw, Mapping):
        status = raw.get("status")
        if status == "not-installed":
            return "listed in the allowlist, not installed"
        return f"{status}, {_dist(raw)}" if _dist(raw) else str(status)
    if kind == "hooks" and isinstance(raw, Mapping):
        chain = "; ".join(_render_hook(h) for h in raw.get("hooks") or ()) or "no hooks"
        return f"{chain} (FAILED to apply)" if raw.get("failed") else chain
    if kind == "platform-rule":
        return str(raw)
    return canonical_json(raw)


def _render_hook(hook: Mapping[str, Any]) -> str:
    source = hook.get("plugin") or "no plugin"
    if hook.get("distribution"):
        source += f" from {hook['distribution']}"
    extra = f", priority {hook['priority']}" if hook.get("priority") else ""
    overridden = ", overridden" if not hook.get("active", True) else ""
    return f"{hook.get('type')} {hook.get('hook')} [{source}{extra}{overridden}]"


# ---- formatting ----------------------------------------------------------------------------------------------


def compress_ranks(ranks: Iterable[int]) -> str:
    """``[0, 1, 2, 5, 7, 8]`` -> ``"0-2, 5, 7, 8"`` (a span from three ranks on)."""
    ordered = sorted(set(ranks))
    spans: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        if j - i >= 2:
            spans.append(f"{ordered[i]}-{ordered[j]}")
        else:
            spans.extend(str(rank) for rank in ordered[i : j + 1])
        i = j + 1
    return ", ".join(spans)


def ranks_text(ranks: Sequence[int]) -> str:
    return ("rank " if len(ranks) == 1 else "ranks ") + compress_ranks(ranks)


def hosts_text(hosts: Sequence[str], limit: int = 4) -> str:
    if len(hosts) == 1:
        return f"host {hosts[0]}"
    if len(hosts) <= limit:
        return "hosts " + ", ".join(hosts)
    return f"{len(hosts)} hosts: " + ", ".join(hosts[:limit]) + ", ..."


def format_differences(differences: Sequence[Difference], indent: str = "  ", *, show_hosts: bool = True) -> list[str]:
    """The lines that list ``differences``, errors first; each value with the ranks (and hosts) that have it."""
    lines = []
    for severity, title in (
        (ERROR, "Differences that change what runs (errors)"),
        (WARNING, "Other differences (warnings)"),
    ):
        chosen = [d for d in differences if d.severity == severity]
        if not chosen:
            continue
        lines.append(f"{title}:")
        for difference in chosen:
            lines.append(f"{indent}{difference.item}:")
            width = min(max(len(v.value) for v in difference.variants), 100)
            for variant in difference.variants:
                where = ranks_text(variant.ranks) + (f" ({hosts_text(variant.hosts)})" if show_hosts else "")
                lines.append(f"{indent * 2}{variant.value:<{width}}  on {where}")
    return lines


def format_groups(groups: Sequence[RankGroup], indent: str = "  ", *, show_hosts: bool = True) -> list[str]:
    lines = ["Ranks by fingerprint:"]
    for group in groups:
        where = ranks_text(group.ranks) + (f" ({hosts_text(group.hosts)})" if show_hosts else "")
        lines.append(f"{indent}{group.digest[:12]}  {where}")
    return lines
