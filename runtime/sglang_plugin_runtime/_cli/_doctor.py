"""``sglang-plugins doctor``: run the real selection, ``load_plugins()`` and hook application here, step by step.

So "my plugin silently did nothing" becomes a line saying which step failed and why.
"""

from __future__ import annotations

import time
from typing import Any

from .._discovery import discover_entry_points
from .._namespace import PluginNamespace
from ._hooks import hooks_step
from ._logs import LogCapture, captured_logs
from ._report import (
    ERROR,
    WARNING,
    Problems,
    Simulation,
    allowlist_problem,
    discovery_problems,
    envelope,
    error_text,
)
from ._simulation import simulated


def _activation_dicts(activations: Any, logs: LogCapture) -> list[dict[str, Any]]:
    """Each activation as JSON, with what the plugin logged while it ran (why it returned ``None``, usually)."""
    rows = []
    for activation in activations:
        data = activation.to_dict()
        data["log"] = logs.activation_lines.get(activation.plugin, [])
        rows.append(data)
    return rows


def _platform_step(namespace: PluginNamespace, problems: Problems, logs: LogCapture) -> dict[str, Any]:
    from ..platforms._selection import platform_holder

    holder = platform_holder(namespace)
    holder.reset()
    start = time.perf_counter()
    try:
        holder.get()
    except Exception as exc:
        seconds = time.perf_counter() - start
        activations = getattr(exc, "activations", ())
        for activation in activations:
            if activation.status == "failed":
                problems.add(
                    ERROR,
                    "selection",
                    f"platform plugin {activation.plugin!r} failed: {activation.error}",
                    plugin=activation.plugin,
                    distribution=activation.dist_name,
                )
        summary = (
            "no platform could be selected" if problems.mentions(str(exc)) else f"no platform could be selected: {exc}"
        )
        problems.add(
            ERROR,
            "selection",
            summary,
            plugin=getattr(exc, "plugin", None),
            distribution=getattr(exc, "dist", None),
        )
        return {
            "status": "failed",
            "platform_class": None,
            "rule": None,
            "reason": None,
            "plugin": getattr(exc, "plugin", None),
            "distribution": getattr(exc, "dist", None),
            "version": None,
            "error": error_text(exc),
            "error_type": type(exc).__name__,
            "seconds": seconds,
            "activations": _activation_dicts(activations, logs),
        }
    seconds = time.perf_counter() - start
    selection = holder.selection()
    assert selection is not None
    for activation in selection.activations:
        if activation.status == "failed":
            problems.add(
                ERROR,
                "selection",
                f"platform plugin {activation.plugin!r} failed and was skipped: {activation.error}",
                plugin=activation.plugin,
                distribution=activation.dist_name,
            )
    if selection.rule == "fallback" and selection.activations and not selection.problems:
        problems.add(
            WARNING,
            "selection",
            f"no installed platform plugin activated; using the fallback {selection.class_path}",
        )
    data = selection.to_dict()
    data["activations"] = _activation_dicts(selection.activations, logs)
    data.pop("namespace", None)
    data.pop("problems", None)
    data.update({"status": "selected", "error": None, "error_type": None, "seconds": seconds})
    data["overrides"] = _override_findings(type(holder.get()), problems)
    return data


def _override_findings(cls: type, problems: Problems) -> list[dict[str, str]]:
    """What the selected class's public names mean to SGLang; a likely misspelling is a warning.

    A name no host calls (the vendor's own API, another SGLang version's name, a retired hook) is listed and is
    no problem: SGLang runs such a class.
    """
    from ..platforms._describe import find_override_problems

    findings = find_override_problems(cls)
    for finding in findings:
        if finding.kind == "misspelled":
            problems.add(WARNING, "selection", finding.message)
    return [{"attribute": f.attribute, "kind": f.kind, "message": f.message} for f in findings]


def plugins_step(namespace: PluginNamespace, problems: Problems) -> dict[str, Any]:
    from ..plugins._loading import LOADED, NOT_INSTALLED, load_general_plugins, reset_load_state

    allowlist_problem(namespace, problems)
    reset_load_state(namespace)
    try:
        report = load_general_plugins(namespace)
    except Exception as exc:
        from ..plugins._loading import last_load_report

        partial = last_load_report(namespace)
        problems.add(
            ERROR,
            "plugins",
            f"loading general plugins stopped: {exc}",
            plugin=getattr(exc, "plugin", None),
            distribution=getattr(exc, "dist", None),
        )
        records = [r.to_dict() for r in partial.records] if partial is not None else []
        return {"status": "failed", "error": error_text(exc), "plugins": records}
    for record in report.records:
        if record.ok or record.status == LOADED:
            continue
        severity = WARNING if record.status == NOT_INSTALLED else ERROR
        problems.add(
            severity,
            "plugins",
            f"general plugin {record.plugin!r} {record.status}: {record.reason}",
            plugin=record.plugin,
            distribution=record.dist_name,
        )
    return {"status": "loaded", "error": None, "plugins": [r.to_dict() for r in report.records]}


def doctor_report(
    namespace: PluginNamespace,
    *,
    simulation: Simulation | None = None,
    import_targets: bool = False,
    strict: bool = False,
) -> dict[str, Any]:
    """Run selection, ``load_plugins()`` and hook application in this process and report every step.

    Meant for a fresh process (the CLI): it resets this process's current platform and load state first.
    """
    problems = Problems()
    with simulated(simulation), captured_logs() as logs:
        discovery = discover_entry_points()
        duplicates = discovery_problems(discovery, namespace, problems)
        platform = _platform_step(namespace, problems, logs)
        plugins = plugins_step(namespace, problems)
        hooks = hooks_step(problems, import_targets=import_targets)
    report = envelope("doctor", namespace, simulation, problems, strict)
    report.update(
        {
            "discovery": {
                "distribution_count": discovery.distribution_count,
                "platform_plugins": len(discovery.group(namespace.platform_group)),
                "general_plugins": len(discovery.group(namespace.plugin_group)),
                "malformed": [{"path": bad.path, "reason": bad.reason} for bad in discovery.malformed],
                "duplicates": duplicates,
            },
            "platform": platform,
            "plugins": plugins,
            "hooks": hooks,
            "log": logs.records,
        }
    )
    return report
