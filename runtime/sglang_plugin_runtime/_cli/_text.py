"""The documents for people: sections of aligned plain-text tables (no box drawing, so output pastes
anywhere), the problems last, each said once (a table cell or a traceback that would repeat a
problem points to it instead)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from .._consistency import dist_label
from .._sglang_releases import describe

SEE = "(see Problems)"


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """Lines of a table; ``None`` cells show as ``-``; the last column is never padded (no trailing
    spaces)."""
    # One line per row: newlines in error messages would break the alignment.
    cells = [
        [" ".join(str("-" if v is None else v).split()) for v in row] for row in [headers, *rows]
    ]
    widths = [max(map(len, column)) for column in zip(*cells, strict=True)]
    return [
        ("  " + "  ".join([*map(str.ljust, row[:-1], widths), row[-1]])).rstrip() for row in cells
    ]


def _section(
    title: str, headers: Sequence[str], rows: Sequence[Sequence[object]], empty: str = ""
) -> list[str]:
    """A titled table; with no rows, ``empty`` under the title (or nothing at all)."""
    return (
        ["", title, *table(headers, rows)] if rows else ["", title, f"  {empty}"] if empty else []
    )


def _cell(record: dict[str, Any], key: str) -> object:
    """The last cell of a plugin's row: a pointer to its problem (a failed or missing plugin is
    one: the Problems table says it), ``record[key]``, or why ``activate()`` returned ``None``."""
    status = str(record["status"])
    if status.startswith(("failed", "not-installed")):
        return SEE
    if status != "unavailable":
        return record[key]
    logged = record.get("log")
    return (
        f"None: {logged[-1]}"
        if logged
        else "None (activate() logged no reason; log one at DEBUG to see it here)"
    )


def _runs(
    kind: str, records: list[dict[str, Any]], last: str, key: str, stopped: object = None
) -> list[str]:
    """The table of plugins that ran (their ``key`` in the ``last`` column), then their tracebacks;
    the last message of each traceback (a problem says it) replaced by a pointer."""
    titles = {
        "platform": "Platform plugins: activate()",
        "startup": "Startup plugins",
        "general": "General plugins",
    }
    out = _section(
        titles[kind],
        ("PLUGIN", "DISTRIBUTION", "STATUS", "TIME", last),
        [
            (r["plugin"], dist_label(r), r["status"], f"{r['seconds'] * 1e3:.1f} ms", _cell(r, key))
            for r in records
        ],
        "(no platform plugin was activated)" if kind == "platform" else "(none installed)",
    )
    if stopped:
        out.append(f"  loading stopped: {SEE}")
    for record in records:
        if not record.get("traceback"):
            continue
        lines = record["traceback"].rstrip().splitlines()
        start = max(
            (i for i, line in enumerate(lines) if line.startswith("Traceback (")), default=0
        )
        for end in range(start + 1, len(lines)):
            if not lines[end].startswith(" "):  # the exception's own line, and its message
                lines[end:] = [f"{lines[end].partition(':')[0]}: {SEE}"]
                break
        out += [
            "",
            f"Traceback of {kind} plugin {record['plugin']!r} (without the runtime's frames)",
            *("  " + line for line in lines),
        ]
    return out


def _list(report: dict[str, Any]) -> list[str]:
    lines = []
    for g in report["groups"]:
        lines += _section(
            f"{g['kind'].capitalize()} plugins: group {g['group']} ({len(g['entry_points'])} entry "
            "point(s))",
            ("NAME", "DISTRIBUTION", "TARGET", "STATUS", "WHY"),
            [
                (e["name"], dist_label(e), e["value"], e["status"], e["reason"])
                for e in g["entry_points"]
            ],
            "(none installed)",
        )
    lines += _section(
        "Malformed distributions (skipped)",
        ("PATH", "REASON"),
        [tuple(m.values()) for m in report["malformed"]],  # path, reason
    )
    lines += _section(
        "Duplicate entry-point names",
        ("GROUP", "NAME", "DISTRIBUTIONS"),
        [(d["group"], d["name"], ", ".join(d["distributions"])) for d in report["duplicates"]],
    )
    return [
        *lines,
        "",
        f"{report['distribution_count']} installed distribution(s) scanned; no plugin was "
        "imported.",
    ]


def _doctor(report: dict[str, Any]) -> list[str]:
    found, platform, hooks = report["discovery"], report["platform"], report["hooks"]
    counts = ", ".join(
        f"{found[key]} {key.replace('_', ' ')}" for key in found if key.endswith("_plugins")
    )
    lines = [
        "",
        f"Discovery: {found['distribution_count']} installed distribution(s) scanned, {counts}, "
        f"{len(found['malformed'])} malformed",
        *_runs("platform", platform["activations"], "RESULT / ERROR", "result"),
    ]
    if platform["status"] == "selected":
        title = "Selected platform" + (" [SIMULATED]" if report["simulated"] else "")
        pairs = [
            ("class", platform["platform_class"]),
            (
                "plugin",
                f"{platform['plugin']} ({dist_label(platform)})"
                if platform["plugin"]
                else "(none: fallback)",
            ),
            ("rule", platform["rule"]),
            ("reason", platform["reason"]),
        ]
    else:
        title, pairs = "Selected platform: NONE (selection failed)", [("error", SEE)]
    lines += ["", title, *table(("", ""), pairs)[1:]]
    lines += _section(
        "Platform class: public names SGLang does not call",
        ("NAME", "KIND", "WHAT IT MEANS"),
        [
            (o["attribute"], o["kind"], o["message"].partition(": ")[2])
            for o in platform.get("overrides", ())  # none when selection failed
        ],
    )
    plugins = report["plugins"]
    if plugins["startup"]:
        lines += _runs("startup", plugins["startup"], "REASON", "reason")
    lines += _runs("general", plugins["plugins"], "REASON", "reason", plugins["error"])
    theirs = hooks["sglang_registry_targets"]
    lines += _section(
        "Hooks",
        ("TARGET", "STATUS", "HOOKS (outermost first)", "PLUGINS", "NOTE"),
        [
            (
                t["target"],
                t["status"],
                ", ".join(h["type"] for h in t["hooks"]) or "-",
                ", ".join(sorted({h["source"]["plugin"] or "?" for h in t["hooks"] if h["source"]}))
                or "unknown",
                SEE if t["status"] == "failed" or t["conflicts"] else t["error"],
            )
            for t in hooks["targets"]
        ],
        "(none here: see released SGLang's registry)" if theirs else "(no hooks registered)",
    )
    if hooks.get("resolution_hooks"):
        lines += _resolution_hooks(hooks["resolution_hooks"], "SGLang resolution steps wrapped")
    said = {p["target"] for p in report["problems"]}
    lines += _section(
        "Hooks in released SGLang's registry (its load_plugins() applies them at start-up)",
        ("TARGET", "CHECK"),
        [(target, SEE if target in said else "module found") for target in theirs],
    )
    support = report["sglang"]
    lines += _section(
        f"Supported SGLang (installed: {support['installed'] or 'none'})",
        ("PLUGIN", "DISTRIBUTION", "SUPPORTS", "STATUS", "JUDGED AGAINST"),
        [
            (
                r["plugin"],
                dist_label(r),
                "(not declared)" if r["supports"] is None else r["supports"],
                r["status"],
                describe(r["releases"]),
            )
            for r in support["plugins"]
        ],
    )
    return lines + _section(
        "Warnings logged by plugins",
        ("LEVEL", "LOGGER", "MESSAGE"),
        [
            tuple(r.values())  # level, logger, message
            for r in report["log"]
            if not r["logger"].startswith("sglang_plugin_runtime")
        ],
    )


def _resolution_hooks(hooks: list[dict[str, Any]], title: str) -> list[str]:
    return _section(
        title,
        ("STEP", "#", "HOOK", "PLUGIN", "DISTRIBUTION"),
        [(h["step"], h["position"], h["hook"], h["plugin"], h["distribution"]) for h in hooks],
    )


def _explain(report: dict[str, Any]) -> list[str]:
    found = report["report"]
    if report["resolution_hooks"]:
        return _resolution_hooks(report["resolution_hooks"], "Resolution step, outermost first")
    # the SGLang releases that have the target (none for a target outside SGLang)
    releases = [] if report["releases"] is None else [f"Releases  {describe(report['releases'])}"]
    if found is None:
        loaded = (
            ", ".join(p["plugin"] for p in report["plugins"]["plugins"] if p["status"] == "loaded")
            or "none"
        )
        return [
            "",
            f"No hook is registered on {report['target']} by the loaded plugins.",
            f"Plugins loaded: {loaded}",
            *releases,
        ]
    error = f": {found['error']}" if found["error"] else ""
    lines = [
        "",
        f"Target    {found['target']}",
        f"Resolved  {found['resolved'] or '(not yet: its module is not imported)'}",
        f"Status    {found['status']}{error}",
        *releases,
    ]
    lines += _section(
        "Hooks, outermost first",
        ("#", "TYPE", "HOOK", "PLUGIN", "DISTRIBUTION", "PRIORITY", "NOTE"),
        [
            (
                h["position"],
                h["type"],
                h["hook"],
                *((h["source"] or {}).get(key) for key in ("plugin", "distribution")),
                h["priority"],
                None if h["active"] else "overridden: does not run",
            )
            for h in found["hooks"]
        ],
    )
    arrows = {"enter": "->", "call": "==", "exit": "<-"}
    lines += _section(
        "One call, step by step",
        ("STEP", "", "TYPE", "HOOK"),
        [
            (
                i,
                arrows[s["phase"]],
                s["type"],
                s["hook"] + (f"  [#{s['position']}]" if s["position"] else ""),
            )
            for i, s in enumerate(found["call_flow"], 1)
        ],
    )
    return lines + _section(
        "Conflicts", ("KIND", "MESSAGE"), [tuple(c.values()) for c in found["conflicts"]]
    )  # a conflict's values: kind, message


def _fingerprint(report: dict[str, Any]) -> list[str]:
    """The fingerprint as the items ranks compare, in the words their differences are reported
    in."""
    from .._consistency import describe

    compared = report["compared_with"]
    lines = [
        "",
        f"Digest: {report['digest']}",
        f"Host:   {report['host']} (not part of the fingerprint)",
        *_section("Fingerprint", ("ITEM", "VALUE"), describe(report["fingerprint"])),
    ]
    if compared is None:
        return [
            *lines,
            "",
            "Every node (and rank) that runs the same plugins prints this digest. Save this with "
            "--json and run 'sglang-plugins fingerprint --compare FILE' on another node to list "
            "what differs.",
        ]
    where = (
        f"{compared['source']}, host {compared['host']}" if compared["host"] else compared["source"]
    )
    rows = [
        (d["severity"].upper(), d["item"], d["here"], d["there"]) for d in compared["differences"]
    ]
    title = f"Compared with {where}: {'SAME' if compared['same'] else 'DIFFERENT'}"
    # no differences: the title alone
    return lines + (_section(title, ("SEVERITY", "ITEM", "HERE", "THERE"), rows) or ["", title])


def _shape(value: Any, name: str) -> str:
    """A contract member's shape as ``contract --diff`` shows it: ``method (self), required``,
    ``method (self) -> None``, ``attribute = []``, a member's calls."""
    from ..platforms._contract import render_call

    if isinstance(value, list):  # a member's calls
        return "; ".join(render_call(call, name) for call in value)
    if not isinstance(value, dict):
        return "present"
    said = " ".join(filter(None, [value.get("kind"), value.get("signature")]))
    if value.get("required"):
        return f"{said}, required"
    if "default" in value:
        arrow = " ->" if value.get("kind", "attribute") not in ("attribute", "property") else " ="
        return f"{said}{arrow} {value['default']!r}".strip()
    return said


def _contract(report: dict[str, Any]) -> list[str]:
    installed = report["installed"] or "none"
    if report["installed"] and not report["installed_release"]:
        installed += ", no release with a plugin system"
    lines = [
        "",
        f"SGLang releases with a plugin system (installed: {installed}):",
        f"  {', '.join(report['releases'])}",
    ]
    diff = report["diff"]
    if diff is None:
        return [*lines, "", "'sglang-plugins contract --diff FROM TO' shows what changed."]
    rows = []
    for c in diff["changes"]:
        was, now = (None if v is None else _shape(v, c["name"]) for v in (c["before"], c["after"]))
        rows.append(
            (c["section"], c["name"], c["change"], f"{was} => {now}" if was and now else was or now)
        )
    return lines + _section(
        f"The platform contract from SGLang {diff['from']} to {diff['to']}: "
        f"{len(diff['changes'])} change(s)",
        ("SECTION", "NAME", "CHANGE", "WHAT"),
        rows,
        "(no change)",
    )


#: Characters that steer a terminal (C0 but tab and newline, DEL, C1, bidirectional overrides):
#: plugin text shows them escaped, so that a message cannot clear, recolour or reorder the report
#: around it.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with :data:`_CONTROL` characters written as Python escapes (``\\x1b``)."""
    return _CONTROL.sub(lambda match: ascii(match[0])[1:-1], text)


def render(report: dict[str, Any]) -> str:
    command, sim = report["command"], report["simulation"]
    target = f" {report['target']}" if command == "explain" else ""
    lines = [f"sglang-plugins {command}{target} (namespace {report['namespace']})"]
    if sim:
        backend = f", backend module {sim['backend_module']}" if sim["backend_module"] else ""
        lines.append(
            f"SIMULATED device: torch.{sim['device_type']} ({sim['device_count']} device(s)"
            f"{backend}); nothing below was checked on real hardware"
        )
    if command in ("list", "doctor"):
        lines += _section(
            "Environment",
            ("VARIABLE", "VALUE"),
            [(k, "(unset)" if v is None else repr(v)) for k, v in report["environment"].items()],
        )
    lines += {
        "list": _list,
        "doctor": _doctor,
        "explain": _explain,
        "fingerprint": _fingerprint,
        "contract": _contract,
    }[command](report)
    # The comparison's differences are its table: not repeated as problems.
    problems = [
        (p["severity"].upper(), p["step"], p["message"])
        for p in report["problems"]
        if p["step"] != "compare"
    ]
    lines += _section(f"Problems ({len(problems)})", ("SEVERITY", "STEP", "MESSAGE"), problems)
    errors = sum(p["severity"] == "error" for p in report["problems"])
    verdict = "OK" if report["healthy"] else "PROBLEMS FOUND"
    result = (
        f"Result: {verdict}{' [SIMULATED]' if report['simulated'] else ''}: {errors} error(s), "
        f"{len(report['problems']) - errors} warning(s); exit status {report['exit_status']}"
    )
    return printable("\n".join([*lines, "", result, ""]))
