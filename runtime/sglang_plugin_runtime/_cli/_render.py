"""Human-readable rendering of the diagnostics reports: sections of aligned tables, problems last."""

from __future__ import annotations

from typing import Any

from ._table import format_table


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.1f} ms"


def _dist(name: str | None, version: str | None) -> str | None:
    if name is None:
        return None
    return f"{name} {version}" if version else name


def _header(report: dict[str, Any], title: str) -> list[str]:
    lines = [f"sglang-plugins {title} (namespace {report['namespace']})"]
    sim = report.get("simulation")
    if sim:
        backend = f", backend module {sim['backend_module']}" if sim["backend_module"] else ""
        lines.append(
            f"SIMULATED device: torch.{sim['device_type']} ({sim['device_count']} device(s){backend}); "
            f"nothing below was checked on real hardware"
        )
    lines.append("")
    lines.append("Environment")
    environment = report["environment"].items()
    rows = [(name, "(unset)" if value is None else repr(value)) for name, value in environment]
    lines.extend(format_table(("VARIABLE", "VALUE"), rows))
    return lines


def _footer(report: dict[str, Any]) -> list[str]:
    lines = [""]
    problems = report["problems"]
    if problems:
        lines.append(f"Problems ({len(problems)})")
        rows: list[tuple[object, ...]] = [(p["severity"].upper(), p["step"], p["message"]) for p in problems]
        lines.extend(format_table(("SEVERITY", "STEP", "MESSAGE"), rows))
        lines.append("")
    errors = sum(1 for p in problems if p["severity"] == "error")
    warnings = len(problems) - errors
    verdict = "OK" if report["healthy"] else "PROBLEMS FOUND"
    tag = " [SIMULATED]" if report["simulated"] else ""
    lines.append(
        f"Result: {verdict}{tag}: {errors} error(s), {warnings} warning(s); exit status {report['exit_status']}"
    )
    return lines


def render_list(report: dict[str, Any]) -> str:
    lines = _header(report, "list")
    for group in report["groups"]:
        lines.append("")
        eps = group["entry_points"]
        lines.append(f"{group['kind'].capitalize()} plugins: group {group['group']} ({len(eps)} entry point(s))")
        if not eps:
            lines.append("  (none installed)")
            continue
        rows: list[tuple[object, ...]] = [
            (ep["name"], _dist(ep["distribution"], ep["version"]), ep["value"], ep["action"], ep["reason"])
            for ep in eps
        ]
        lines.extend(format_table(("NAME", "DISTRIBUTION", "TARGET", "ACTION", "WHY"), rows))
    if report["malformed"]:
        lines.append("")
        lines.append("Malformed distributions (skipped)")
        lines.extend(format_table(("PATH", "REASON"), [(m["path"], m["reason"]) for m in report["malformed"]]))
    if report["duplicates"]:
        lines.append("")
        lines.append("Duplicate entry-point names")
        rows = [(d["group"], d["name"], ", ".join(d["distributions"])) for d in report["duplicates"]]
        lines.extend(format_table(("GROUP", "NAME", "DISTRIBUTIONS"), rows))
    lines.append("")
    lines.append(f"{report['distribution_count']} installed distribution(s) scanned; no plugin was imported.")
    lines.extend(_footer(report))
    return "\n".join(lines) + "\n"


def _hook_rows(target: dict[str, Any]) -> list[tuple[Any, ...]]:
    rows: list[tuple[object, ...]] = []
    for hook in target["hooks"]:
        source = hook["source"] or {}
        note = None if hook["active"] else "overridden: does not run"
        rows.append(
            (
                hook["position"],
                hook["type"],
                hook["hook"],
                source.get("plugin"),
                source.get("distribution"),
                hook["priority"],
                note,
            )
        )
    return rows


def _hooks_section(hooks: dict[str, Any]) -> list[str]:
    lines = ["", "Hooks"]
    if not hooks["available"]:
        lines.append(f"  (not inspected: {hooks['unavailable_reason']})")
        return lines
    if not hooks["targets"]:
        lines.append("  (no hooks registered)")
        return lines
    rows: list[tuple[object, ...]] = []
    for target in hooks["targets"]:
        sources = sorted({h["source"]["plugin"] or "?" for h in target["hooks"] if h["source"] is not None})
        kinds = ", ".join(h["type"] for h in target["hooks"])
        note = target["error"] or "; ".join(c["message"] for c in target["conflicts"]) or None
        rows.append((target["target"], target["status"], kinds or "-", ", ".join(sources) or "unknown", note))
    lines.extend(format_table(("TARGET", "STATUS", "HOOKS (outermost first)", "PLUGINS", "NOTE"), rows))
    return lines


def _plugin_log(report: dict[str, Any]) -> list[str]:
    """Warnings plugins logged themselves (the runtime's own are already listed as problems)."""
    records = [r for r in report["log"] if not r["logger"].startswith("sglang_plugin_runtime")]
    if not records:
        return []
    lines = ["", "Warnings logged by plugins"]
    lines.extend(
        format_table(("LEVEL", "LOGGER", "MESSAGE"), [(r["level"], r["logger"], r["message"]) for r in records])
    )
    return lines


def _outcome(activation: dict[str, Any]) -> str | None:
    """The RESULT / ERROR cell: the class, the error, or why ``activate()`` returned ``None``."""
    if activation["status"] != "unavailable":
        return str(activation["error"] or activation["result"])
    said = activation.get("log") or []
    if said:
        return f"None: {said[-1]}"
    return "None (activate() logged no reason; log one at DEBUG to see it here)"


def render_doctor(report: dict[str, Any]) -> str:
    lines = _header(report, "doctor")
    discovery = report["discovery"]
    lines.append("")
    lines.append(
        f"Discovery: {discovery['distribution_count']} installed distribution(s) scanned, "
        f"{discovery['platform_plugins']} platform plugin(s), {discovery['general_plugins']} general plugin(s), "
        f"{len(discovery['malformed'])} malformed"
    )

    platform = report["platform"]
    lines.append("")
    lines.append("Platform plugins: activate()")
    if platform["activations"]:
        rows: list[tuple[object, ...]] = [
            (a["plugin"], _dist(a["distribution"], a["version"]), a["status"], _ms(a["seconds"]), _outcome(a))
            for a in platform["activations"]
        ]
        lines.extend(format_table(("PLUGIN", "DISTRIBUTION", "STATUS", "TIME", "RESULT / ERROR"), rows))
        for activation in platform["activations"]:
            if activation.get("traceback"):
                lines.append("")
                lines.append(f"Traceback of platform plugin {activation['plugin']!r} (the plugin's frames only)")
                lines.extend("  " + line for line in activation["traceback"].rstrip().splitlines())
    else:
        lines.append("  (no platform plugin was activated)")

    lines.append("")
    if platform["status"] == "selected":
        tag = " [SIMULATED]" if report["simulated"] else ""
        lines.append(f"Selected platform{tag}")
        plugin = platform["plugin"]
        rows = [
            ("class", platform["platform_class"]),
            (
                "plugin",
                f"{plugin} ({_dist(platform['distribution'], platform['version'])})" if plugin else "(none: fallback)",
            ),
            ("rule", platform["rule"]),
            ("reason", platform["reason"]),
        ]
    else:
        lines.append("Selected platform: NONE (selection failed)")
        rows = [("error", platform["error"])]
    lines.extend(format_table(("", ""), rows)[1:])
    if platform.get("overrides"):
        lines.append("")
        lines.append("Platform class: public names SGLang does not call")
        rows = [(o["attribute"], o["kind"], o["message"].partition(": ")[2]) for o in platform["overrides"]]
        lines.extend(format_table(("NAME", "KIND", "WHAT IT MEANS"), rows))

    plugins = report["plugins"]
    lines.append("")
    lines.append("General plugins")
    if plugins["plugins"]:
        rows = [
            (r["plugin"], _dist(r["distribution"], r["version"]), r["status"], _ms(r["seconds"]), r["reason"] or None)
            for r in plugins["plugins"]
        ]
        lines.extend(format_table(("PLUGIN", "DISTRIBUTION", "STATUS", "TIME", "REASON"), rows))
    else:
        lines.append("  (none installed)")
    if plugins["error"]:
        lines.append(f"  loading stopped: {plugins['error']}")

    lines.extend(_hooks_section(report["hooks"]))
    lines.extend(_plugin_log(report))
    lines.extend(_footer(report))
    return "\n".join(lines) + "\n"


def render_explain(report: dict[str, Any]) -> str:
    lines = [f"sglang-plugins explain {report['target']} (namespace {report['namespace']})"]
    if report["simulated"]:
        lines.append(f"SIMULATED device: torch.{report['simulation']['device_type']}")
    lines.append("")
    found = report["report"]
    if found is None:
        lines.append(f"No hook is registered on {report['target']} by the loaded plugins.")
        loaded = [p["plugin"] for p in report["plugins"]["plugins"] if p["status"] == "loaded"]
        lines.append(f"Plugins loaded: {', '.join(loaded) if loaded else 'none'}")
    else:
        lines.append(f"Target    {found['target']}")
        lines.append(f"Resolved  {found['resolved'] or '(not yet: its module is not imported)'}")
        lines.append(f"Status    {found['status']}" + (f": {found['error']}" if found["error"] else ""))
        lines.append("")
        lines.append("Hooks, outermost first")
        headers = ("#", "TYPE", "HOOK", "PLUGIN", "DISTRIBUTION", "PRIORITY", "NOTE")
        lines.extend(format_table(headers, _hook_rows(found)))
        lines.append("")
        lines.append("One call, step by step")
        arrows = {"enter": "->", "call": "==", "exit": "<-"}
        rows: list[tuple[object, ...]] = [
            (
                i,
                arrows[step["phase"]],
                step["type"],
                step["hook"] + ("" if step["position"] is None else f"  [#{step['position']}]"),
            )
            for i, step in enumerate(found["call_flow"], start=1)
        ]
        lines.extend(format_table(("STEP", "", "TYPE", "HOOK"), rows))
        if found["conflicts"]:
            lines.append("")
            lines.append("Conflicts")
            lines.extend(format_table(("KIND", "MESSAGE"), [(c["kind"], c["message"]) for c in found["conflicts"]]))
    lines.extend(_footer(report))
    return "\n".join(lines) + "\n"
