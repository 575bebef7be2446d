"""The documents for people: sections of aligned plain-text tables (no box drawing, so output pastes
anywhere), the problems last, each said once (a table cell or a traceback that would repeat a
problem points to it instead)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from .._consistency import dist_label
from .._sglang_releases import describe
from ..plugins._hooks._describe import ResolutionHookReport
from ._reports import (
    ContractDocument,
    DoctorDocument,
    ExplainDocument,
    FingerprintDocument,
    ListDocument,
    Report,
    Run,
)

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


def _dist(record: Any) -> str | None:
    """``name version`` of the distribution a record names, or ``None``."""
    return dist_label({"distribution": record.distribution, "version": record.version})


def _cell(run: Run, value: object) -> object:
    """The last cell of a plugin's row: a pointer to its problem (a failed or missing plugin is
    one: the Problems table says it), ``value``, or why ``activate()`` returned ``None``."""
    status = str(run.outcome.status)
    if status.startswith(("failed", "not-installed")):
        return SEE
    if status != "unavailable":
        return value
    logged = run.log
    return (
        f"None: {logged[-1]}"
        if logged
        else "None (activate() logged no reason; log one at DEBUG to see it here)"
    )


def _runs(kind: str, runs: Sequence[Run], last: str, key: str, stopped: object = None) -> list[str]:
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
            (o.plugin, _dist(o), o.status, f"{o.seconds * 1e3:.1f} ms", _cell(r, getattr(o, key)))
            for r in runs
            for o in [r.outcome]
        ],
        "(no platform plugin was activated)" if kind == "platform" else "(none installed)",
    )
    if stopped:
        out.append(f"  loading stopped: {SEE}")
    for o in (r.outcome for r in runs):
        if not o.traceback:
            continue
        lines = o.traceback.rstrip().splitlines()
        start = max(
            (i for i, line in enumerate(lines) if line.startswith("Traceback (")), default=0
        )
        for end in range(start + 1, len(lines)):
            if not lines[end].startswith(" "):  # the exception's own line, and its message
                lines[end:] = [f"{lines[end].partition(':')[0]}: {SEE}"]
                break
        out += [
            "",
            f"Traceback of {kind} plugin {o.plugin!r} (without the runtime's frames)",
            *("  " + line for line in lines),
        ]
    return out


def _list(report: ListDocument) -> list[str]:
    lines = []
    for g in report.groups:
        lines += _section(
            f"{g.kind.capitalize()} plugins: group {g.group} ({len(g.entry_points)} entry "
            "point(s))",
            ("NAME", "DISTRIBUTION", "TARGET", "STATUS", "WHY"),
            [(e.name, _dist(e), e.value, e.status, e.reason) for e in g.entry_points],
            "(none installed)",
        )
    lines += _section(
        "Malformed distributions (skipped)",
        ("PATH", "REASON"),
        [(m.path, m.reason) for m in report.found.malformed],
    )
    lines += _section(
        "Duplicate entry-point names",
        ("GROUP", "NAME", "DISTRIBUTIONS"),
        [(d.group, d.name, ", ".join(d.distributions)) for d in report.found.duplicates],
    )
    return [
        *lines,
        "",
        f"{report.distribution_count} installed distribution(s) scanned; no plugin was imported.",
    ]


def _doctor(report: DoctorDocument, simulated: bool, said: set[str | None]) -> list[str]:
    found, platform, hooks = report.discovery, report.platform, report.hooks
    counts = [
        (found.platform_plugins, "platform"),
        (found.startup_plugins, "startup"),
        (found.general_plugins, "general"),
    ]
    lines = [
        "",
        f"Discovery: {found.distribution_count} installed distribution(s) scanned, "
        + ", ".join(f"{n} {kind} plugins" for n, kind in counts if n is not None)
        + f", {len(found.found.malformed)} malformed",
        *_runs("platform", platform.activations, "RESULT / ERROR", "result"),
    ]
    if platform.status == "selected":
        title = "Selected platform" + (" [SIMULATED]" if simulated else "")
        pairs = [
            ("class", platform.platform_class),
            (
                "plugin",
                f"{platform.plugin} ({_dist(platform)})" if platform.plugin else "(none: fallback)",
            ),
            ("rule", platform.rule),
            ("reason", platform.reason),
        ]
    else:
        title, pairs = "Selected platform: NONE (selection failed)", [("error", SEE)]
    lines += ["", title, *table(("", ""), pairs)[1:]]
    lines += _section(
        "Platform class: public names SGLang does not call",
        ("NAME", "KIND", "WHAT IT MEANS"),
        [
            (o.attribute, o.kind, o.meaning)
            for o in getattr(platform, "overrides", ())  # none when selection failed
        ],
    )
    plugins = report.plugins
    if plugins.startup:
        lines += _runs("startup", [Run(o, []) for o in plugins.startup], "REASON", "reason")
    lines += _runs(
        "general", [Run(o, []) for o in plugins.plugins], "REASON", "reason", plugins.error
    )
    theirs = hooks.sglang_registry_targets
    lines += _section(
        "Hooks",
        ("TARGET", "STATUS", "HOOKS (outermost first)", "PLUGINS", "NOTE"),
        [
            (
                t.target,
                t.status,
                ", ".join(h.type for h in t.hooks) or "-",
                ", ".join(sorted({h.source.plugin or "?" for h in t.hooks if h.source}))
                or "unknown",
                SEE if t.status == "failed" or t.conflicts else t.error,
            )
            for t in hooks.targets
        ],
        "(none here: see released SGLang's registry)" if theirs else "(no hooks registered)",
    )
    if hooks.resolution_hooks:
        lines += _resolution_hooks(hooks.resolution_hooks, "SGLang resolution steps wrapped")
    lines += _section(
        "Hooks in released SGLang's registry (its load_plugins() applies them at start-up)",
        ("TARGET", "CHECK"),
        [(target, SEE if target in said else "module found") for target in theirs],
    )
    support = report.sglang
    lines += _section(
        f"Supported SGLang (installed: {support.installed or 'none'})",
        ("PLUGIN", "DISTRIBUTION", "SUPPORTS", "STATUS", "JUDGED AGAINST"),
        [
            (
                r.plugin,
                _dist(r),
                "(not declared)" if r.supports is None else r.supports,
                r.status,
                describe(r.releases),
            )
            for r in support.plugins
        ],
    )
    return lines + _section(
        "Warnings logged by plugins",
        ("LEVEL", "LOGGER", "MESSAGE"),
        [
            (r.level, r.logger, r.message)
            for r in report.log
            if not r.logger.startswith("sglang_plugin_runtime")
        ],
    )


def _resolution_hooks(hooks: Sequence[ResolutionHookReport], title: str) -> list[str]:
    return _section(
        title,
        ("STEP", "#", "HOOK", "PLUGIN", "DISTRIBUTION"),
        [(h.step, h.position, h.hook, h.plugin, h.distribution) for h in hooks],
    )


def _explain(report: ExplainDocument) -> list[str]:
    found = report.report
    if report.resolution_hooks:
        return _resolution_hooks(report.resolution_hooks, "Resolution step, outermost first")
    # the SGLang releases that have the target (none for a target outside SGLang)
    releases = [] if report.releases is None else [f"Releases  {describe(report.releases)}"]
    if found is None:
        loaded = (
            ", ".join(p.plugin for p in report.plugins.plugins if p.status == "loaded") or "none"
        )
        return [
            "",
            f"No hook is registered on {report.target} by the loaded plugins.",
            f"Plugins loaded: {loaded}",
            *releases,
        ]
    error = f": {found.error}" if found.error else ""
    lines = [
        "",
        f"Target    {found.target}",
        f"Resolved  {found.resolved or '(not yet: its module is not imported)'}",
        f"Status    {found.status}{error}",
        *releases,
    ]
    lines += _section(
        "Hooks, outermost first",
        ("#", "TYPE", "HOOK", "PLUGIN", "DISTRIBUTION", "PRIORITY", "NOTE"),
        [
            (
                h.position,
                h.type,
                h.hook,
                h.source and h.source.plugin,
                h.source and h.source.distribution,
                h.priority,
                None if h.active else "overridden: does not run",
            )
            for h in found.hooks
        ],
    )
    arrows = {"enter": "->", "call": "==", "exit": "<-"}
    lines += _section(
        "One call, step by step",
        ("STEP", "", "TYPE", "HOOK"),
        [
            (i, arrows[s.phase], s.type, s.hook + (f"  [#{s.position}]" if s.position else ""))
            for i, s in enumerate(found.call_flow, 1)
        ],
    )
    return lines + _section(
        "Conflicts", ("KIND", "MESSAGE"), [(c.kind, c.message) for c in found.conflicts]
    )


def _fingerprint(report: FingerprintDocument) -> list[str]:
    """The fingerprint as the items ranks compare, in the words their differences are reported
    in."""
    from .._consistency import describe

    compared = report.compared_with
    lines = [
        "",
        f"Digest: {report.digest}",
        f"Host:   {report.host} (not part of the fingerprint)",
        *_section("Fingerprint", ("ITEM", "VALUE"), describe(report.fingerprint)),
    ]
    if compared is None:
        return [
            *lines,
            "",
            "Every node (and rank) that runs the same plugins prints this digest. Save this with "
            "--json and run 'sglang-plugins fingerprint --compare FILE' on another node to list "
            "what differs.",
        ]
    where = f"{compared.source}, host {compared.host}" if compared.host else compared.source
    rows = [(d.severity.upper(), d.item, d.here, d.there) for d in compared.differences]
    title = f"Compared with {where}: {'SAME' if compared.same else 'DIFFERENT'}"
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


def _contract(report: ContractDocument) -> list[str]:
    installed = report.installed or "none"
    if report.installed and not report.installed_release:
        installed += ", no release with a plugin system"
    lines = [
        "",
        f"SGLang releases with a plugin system (installed: {installed}):",
        f"  {', '.join(report.releases)}",
    ]
    diff = report.diff
    if diff is None:
        return [*lines, "", "'sglang-plugins contract --diff FROM TO' shows what changed."]
    rows = []
    for c in diff.changes:
        was, now = (None if v is None else _shape(v, c.name) for v in (c.before, c.after))
        rows.append((c.section, c.name, c.change, f"{was} => {now}" if was and now else was or now))
    return lines + _section(
        f"The platform contract from SGLang {diff.from_} to {diff.to}: "
        f"{len(diff.changes)} change(s)",
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


def render(report: Report) -> str:
    command, sim, body = report.command, report.simulation, report.body
    target = f" {body.target}" if isinstance(body, ExplainDocument) else ""
    lines = [f"sglang-plugins {command}{target} (namespace {report.namespace})"]
    if sim:
        backend = f", backend module {sim.backend_module}" if sim.backend_module else ""
        lines.append(
            f"SIMULATED device: torch.{sim.device_type} ({sim.device_count} device(s)"
            f"{backend}); nothing below was checked on real hardware"
        )
    if command in ("list", "doctor"):
        lines += _section(
            "Environment",
            ("VARIABLE", "VALUE"),
            [(k, "(unset)" if v is None else repr(v)) for k, v in report.environment.items()],
        )
    if isinstance(body, ListDocument):
        lines += _list(body)
    elif isinstance(body, DoctorDocument):
        lines += _doctor(body, report.simulated, {p.target for p in report.problems})
    elif isinstance(body, ExplainDocument):
        lines += _explain(body)
    elif isinstance(body, FingerprintDocument):
        lines += _fingerprint(body)
    else:
        lines += _contract(body)
    # The comparison's differences are its table: not repeated as problems.
    problems = [
        (p.severity.upper(), p.step, p.message) for p in report.problems if p.step != "compare"
    ]
    lines += _section(f"Problems ({len(problems)})", ("SEVERITY", "STEP", "MESSAGE"), problems)
    errors = sum(p.severity == "error" for p in report.problems)
    verdict = "OK" if report.healthy else "PROBLEMS FOUND"
    result = (
        f"Result: {verdict}{' [SIMULATED]' if report.simulated else ''}: {errors} error(s), "
        f"{len(report.problems) - errors} warning(s); exit status {report.exit_status}"
    )
    return printable("\n".join([*lines, "", result, ""]))
