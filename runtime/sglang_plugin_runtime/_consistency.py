"""Fingerprints that differ: which items, error or warning, which ranks and hosts have each value,
and the report.

Imported only when ranks disagree (by
:func:`sglang_plugin_runtime.distributed.check_plugin_consistency`) or when the CLI compares two
nodes. Pure functions over fingerprint documents (as they travel: JSON objects).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from ._fingerprint import Record, canonical_json, digest_of
from .errors import PluginConsistencyError

ERROR, WARNING = "error", "warning"
_ENV = "SGLANG_PLUGINS_CONSISTENCY"


@dataclass(frozen=True)
class Variant(Record):
    """One value an item has, and the ranks (and their hosts) that have it."""

    value: str
    ranks: tuple[int, ...]
    hosts: tuple[str, ...]


@dataclass(frozen=True)
class Difference(Record):
    """One item (the platform, a general plugin, the hooks on a target, ...) that is not the same on
    every rank."""

    #: ``runtime``, ``namespace``, ``format``, ``platform``, ``platform-rule``, ``activation``,
    #: ``plugins-loaded``, ``plugin``, ``hooks`` or ``field`` (something this version does not know,
    #: from a newer runtime).
    kind: str
    #: What differs, for people: ``general plugin 'timer'``, ``hooks on 'pkg.mod.func'``.
    item: str
    #: ``error`` (different code runs on different ranks) or ``warning`` (the same code runs
    #: everywhere).
    severity: str
    #: Most common value first.
    variants: tuple[Variant, ...]


@dataclass(frozen=True)
class RankGroup(Record):
    """Ranks whose fingerprints are identical."""

    digest: str
    ranks: tuple[int, ...]
    hosts: tuple[str, ...]


class Participant(NamedTuple):
    """One rank's fingerprint (as a dict, as it travels), with where it comes from."""

    rank: int
    host: str
    fingerprint: Mapping[str, Any]


_MISSING = object()
#: Each kind of item, most fundamental first (the order items are listed in), with its label for
#: people.
_LABELS = {
    "format": "fingerprint format",
    "runtime": "runtime version",
    "namespace": "namespace",
    "platform": "platform",
    "platform-rule": "platform selection rule",
    "activation": "platform plugin {!r}, activate()",
    "plugins-loaded": "general plugins",
    "plugin": "general plugin {!r}",
    "hooks": "hooks on {!r}",
    "field": "fingerprint field {!r}",
}
_KNOWN_FIELDS = {"format", "runtime_version", "namespace", "platform", "general_plugins", "hooks"}
#: How a platform plugin's ``activate()`` or a general plugin ended, for people (else the status
#: itself).
_STATUS_TEXT = {
    "unavailable": "returned None (hardware not found)",
    "not-installed": "listed in the allowlist, not installed",
}
_ABSENT = {"activation": "not installed", "plugin": "not installed", "hooks": "no hooks"}
_NOT_CALLED = "load_plugins() not called"


def _order(key: tuple[str, str]) -> tuple[int, str]:
    return list(_LABELS).index(key[0]), key[1]


def _without(record: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k not in keys}


def _items(fingerprint: Mapping[str, Any]) -> dict[tuple[str, str], Any]:
    """The comparable items of one fingerprint: ``{(kind, name): raw value}``."""
    platform, plugins = fingerprint.get("platform"), fingerprint.get("general_plugins")
    items = {
        ("format", ""): fingerprint.get("format"),
        ("runtime", ""): fingerprint.get("runtime_version"),
        ("namespace", ""): fingerprint.get("namespace"),
        ("platform", ""): platform,
        # as people read it: one text for each of the two values
        ("plugins-loaded", ""): _NOT_CALLED if plugins is None else "load_plugins() ran",
    }
    if isinstance(platform, Mapping):
        items["platform", ""] = _without(platform, "rule", "activations")
        items["platform-rule", ""] = platform.get("rule")
        for activation in platform.get("activations") or ():
            items["activation", activation["plugin"]] = _without(activation, "plugin")
    for record in plugins or ():
        items["plugin", record["plugin"]] = _without(record, "plugin")
    hooks = fingerprint.get("hooks") or ()
    # one record per target; two records of one target are compared as their list
    for name in {target["target"] for target in hooks}:
        entries = [_without(target, "target") for target in hooks if target["target"] == name]
        items["hooks", name] = entries[0] if len(entries) == 1 else entries
    for key in fingerprint.keys() - _KNOWN_FIELDS:
        items["field", key] = fingerprint[key]
    return items


def _absent(kind: str, items: Mapping[tuple[str, str], Any]) -> Any:
    """What a rank's ``items`` say of an item of ``kind`` they lack."""
    if kind == "plugin" and items["plugins-loaded", ""] == _NOT_CALLED:
        return f"{_NOT_CALLED} on this rank: call it before the check"
    return _MISSING


def _grouped(
    keyed: Iterable[tuple[Any, Participant]],
) -> list[tuple[Any, tuple[int, ...], tuple[str, ...]]]:
    """``(key, ranks, hosts)`` of the participants that share a key (compared as JSON), largest
    group first."""
    groups: dict[str, tuple[Any, list[Participant]]] = {}
    for key, participant in keyed:
        groups.setdefault("<missing>" if key is _MISSING else canonical_json(key), (key, []))[
            1
        ].append(participant)
    rows = [
        (key, tuple(sorted(p.rank for p in m)), tuple(sorted({p.host for p in m})))
        for key, m in groups.values()
    ]
    return sorted(rows, key=lambda row: (-len(row[1]), row[1][0]))


def compare(participants: Sequence[Participant]) -> list[Difference]:
    """Every item that is not the same for all ``participants``, errors first, then in a fixed
    order.

    Raises ``LookupError``/``TypeError``/``AttributeError`` on a document that is not a fingerprint.
    """
    per_rank = [(p, _items(p.fingerprint)) for p in participants]
    differences: list[Difference] = []
    for kind, name in sorted({key for _, items in per_rank for key in items}, key=_order):
        if kind == "platform-rule" and differences and differences[-1].kind == "platform":
            # the platform (just listed) differs: its line shows each rank's; the rule is its
            # consequence
            continue
        # a general plugin missing where load_plugins() was not called is no uninstalled one
        grouped = _grouped(
            (items.get((kind, name), _absent(kind, items)), p) for p, items in per_rank
        )
        if len(grouped) > 1:
            # Error when different code runs on different ranks; warning when the same code runs
            # everywhere:
            # - the rule that chose the platform (SGLANG_PLATFORM on some ranks, automatic on
            #   others) and the activate() outcomes of platform plugins: warnings; the selected
            #   platform itself is its own item;
            # - a general plugin that is loaded on no rank (skipped or failed everywhere, in
            #   different ways or versions): warning; one loaded on some ranks, or loaded in
            #   different versions: error;
            # - everything else (runtime version, platform, whether plugins were loaded, hook
            #   chains): error.
            loaded = any(
                isinstance(raw, Mapping) and raw.get("status") == "loaded" for raw, *_ in grouped
            )
            warns = kind in ("platform-rule", "activation") or (kind == "plugin" and not loaded)
            differences.append(
                Difference(
                    kind,
                    _LABELS[kind].format(name),
                    WARNING if warns else ERROR,
                    tuple(
                        Variant(_render(kind, raw), ranks, hosts) for raw, ranks, hosts in grouped
                    ),
                )
            )
    # stable: keeps the fixed order within each severity
    differences.sort(key=lambda d: d.severity != ERROR)
    return differences


def describe(fingerprint: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Each item of ``fingerprint`` as people read it, ``(label, value)``, in the order differences
    are listed."""
    items = _items(fingerprint)
    return [
        (_LABELS[kind].format(name), _render(kind, items[kind, name]))
        for kind, name in sorted(items, key=_order)
    ]


def rank_groups(participants: Sequence[Participant]) -> list[RankGroup]:
    """Ranks grouped by identical fingerprint, largest group first."""
    return [
        RankGroup(*group) for group in _grouped((digest_of(p.fingerprint), p) for p in participants)
    ]


def dist_label(raw: Mapping[str, Any]) -> str | None:
    """``name version`` of the distribution a record names, or ``None``."""
    dist, version = raw.get("distribution"), raw.get("version")
    return None if not dist else f"{dist} {version}" if version else str(dist)


def _render(kind: str, raw: Any) -> str:
    """One item's value for people; the raw value is what is compared."""
    if raw is _MISSING:
        return _ABSENT.get(kind, "missing")
    if kind == "runtime":
        return f"sglang-plugin-runtime {raw}"
    if kind == "platform-rule" or isinstance(raw, str):
        return str(raw)
    if not isinstance(raw, Mapping) or kind in ("format", "namespace", "field"):
        return canonical_json(raw)
    if kind == "platform":
        plugin = raw.get("plugin")
        source = ", ".join(filter(None, [plugin and f"plugin {plugin!r}", dist_label(raw)]))
        where = f" ({source})" if source else ""
        if raw.get("status") == "failed":
            return f"selection failed: {raw.get('error_type')}{where}"
        return f"{raw.get('class')}{where or ' (no plugin: the fallback)'}"
    if kind != "hooks":
        status = str(raw.get("status"))
        return ", ".join(filter(None, [_STATUS_TEXT.get(status, status), dist_label(raw)]))
    chain = "; ".join(_render_hook(h) for h in raw.get("hooks") or ()) or "no hooks"
    return f"{chain} (FAILED to apply)" if raw.get("failed") else chain


def _render_hook(hook: Mapping[str, Any]) -> str:
    source = (hook.get("plugin") or "no plugin") + (
        f" from {hook['distribution']}" if hook.get("distribution") else ""
    )
    extra = f", priority {hook['priority']}" if hook.get("priority") else ""
    overridden = ", overridden" if not hook.get("active", True) else ""
    return f"{hook.get('type')} {hook.get('hook')} [{source}{extra}{overridden}]"


# ---- formatting ----------------------------------------------------------------------------------


def compress_ranks(ranks: Iterable[int]) -> str:
    """``[0, 1, 2, 5, 7, 8]`` -> ``"0-2, 5, 7, 8"`` (a span from three ranks on)."""
    runs = itertools.groupby(enumerate(sorted(set(ranks))), key=lambda pair: pair[1] - pair[0])
    spans = [[rank for _, rank in run] for _, run in runs]
    return ", ".join(f"{s[0]}-{s[-1]}" if len(s) >= 3 else ", ".join(map(str, s)) for s in spans)


def _where(ranks: Sequence[int], hosts: Sequence[str], show_hosts: bool) -> str:
    text = ("rank " if len(ranks) == 1 else "ranks ") + compress_ranks(ranks)
    if not show_hosts:
        return text
    if len(hosts) > 4:
        return f"{text} ({len(hosts)} hosts: {', '.join(hosts[:4])}, ...)"
    return f"{text} ({'host' if len(hosts) == 1 else 'hosts'} {', '.join(hosts)})"


def format_differences(differences: Sequence[Difference], *, show_hosts: bool = True) -> list[str]:
    """The lines that list ``differences``, errors first; each value with the ranks (and hosts) that
    have it."""
    lines = []
    for severity, title in {
        ERROR: "Differences that change what runs (errors)",
        WARNING: "Other differences (warnings)",
    }.items():
        chosen = [d for d in differences if d.severity == severity]
        if chosen:
            lines.append(f"{title}:")
        for difference in chosen:
            width = min(max(len(v.value) for v in difference.variants), 100)
            lines.append(f"  {difference.item}:")
            lines += [
                f"    {v.value:<{width}}  on {_where(v.ranks, v.hosts, show_hosts)}"
                for v in difference.variants
            ]
    return lines


def format_groups(groups: Sequence[RankGroup], *, show_hosts: bool = True) -> list[str]:
    return [
        "Ranks by fingerprint:",
        *(f"  {g.digest[:12]}  {_where(g.ranks, g.hosts, show_hosts)}" for g in groups),
    ]


def judge(
    namespace: Any,
    rank: int,
    world: int,
    entries: list[dict[str, Any]],
    mode: str,
    logger: logging.Logger,
) -> Any:
    """The ranks' gathered fingerprints differ: raise :class:`PluginConsistencyError` on every rank
    alike, or (in ``warn`` mode, or with warnings only) log the report and return the differences
    and the rank groups."""
    broken = "; ".join(
        f"rank {e['rank']} (host {e['host']}): {e['failure']}" for e in entries if e["failure"]
    )
    if broken:
        raise PluginConsistencyError(
            "Plugin consistency could not be checked: building the plugin fingerprint failed on "
            f"{broken}. This is a bug in sglang-plugin-runtime (every rank raises this error); "
            f"please report it with the log of those ranks. {_ENV}=off skips the check meanwhile.",
            namespace=namespace.name,
        )
    # rank and host as every rank sent them (an int, a str)
    participants = [Participant(e["rank"], e["host"], e["fingerprint"]) for e in entries]
    groups = tuple(rank_groups(participants))
    # Digests that differ in a way compare() cannot itemise (should not happen) still make one
    # difference.
    differences = tuple(
        compare(participants)
        or [
            Difference(
                "field",
                "fingerprint",
                ERROR,
                tuple(Variant(f"fingerprint {g.digest[:12]}", g.ranks, g.hosts) for g in groups),
            )
        ]
    )
    errors = differences[0].severity == ERROR  # errors come first
    raising = mode == "error" and errors
    verdict = (
        "every rank raises this error" if raising else "logged only" + f" ({_ENV}=warn)" * errors
    )
    hosts = sorted({p.host for p in participants})
    many_hosts = len(hosts) > 1
    where = f"on {len(hosts)} hosts" if many_hosts else f"all on host {hosts[0]}"
    lines = [
        f"Plugins differ across the {world} ranks of the process group ({where}; namespace "
        f"{namespace.name!r}); {verdict}.",
        *format_groups(groups, show_hosts=many_hosts),
        *format_differences(differences, show_hosts=many_hosts),
        f"Fix: install the same plugin distributions and versions on every node and give every "
        f"rank the same {namespace.platform_env} and {namespace.plugins_env}. To compare nodes "
        f"without a job, run `sglang-plugins fingerprint --namespace {namespace.name}` on each "
        f"(the digests above are its first 12 digits; `--compare FILE` lists the differences).",
    ]
    if raising:
        lines.append(f"To log this instead of raising, set {_ENV}=warn on every rank.")
        raise PluginConsistencyError(
            "\n".join(lines), differences=differences, groups=groups, namespace=namespace.name
        )
    lowest = min(p.rank for p in participants)
    logger.warning(
        "%s",
        "\n".join(lines)
        if rank == lowest
        else f"Plugins differ across ranks ({len(differences)} difference(s)); rank {lowest} logs "
        "the report.",
    )
    return differences, groups
