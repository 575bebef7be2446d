"""``sglang-plugins fingerprint``: this node's plugin fingerprint, and its differences from another node's.

The fingerprint is what :func:`sglang_plugin_runtime.distributed.check_plugin_consistency` compares across the
ranks of a job; printing it per node lets an operator find the odd node before starting one.
"""

from __future__ import annotations

import json
import os
import re
import socket
from typing import Any

from .._fingerprint import ERROR, Participant, build_fingerprint, compare, digest_of
from ._table import format_table

_DIGEST = re.compile(r"[0-9a-fA-F]{12,64}")


class ComparisonInputError(ValueError):
    """``--compare`` names something that is neither a fingerprint file nor a digest."""


def load_comparison(argument: str) -> dict[str, Any]:
    """What ``--compare`` names: a file written by ``fingerprint --json`` (or a saved ``PluginFingerprint.to_dict()``),
    or a digest (at least its first 12 hex digits)."""
    if _DIGEST.fullmatch(argument) and not os.path.exists(argument):
        return {"source": argument, "digest": argument.lower(), "host": None, "fingerprint": None}
    try:
        with open(argument, encoding="utf-8") as handle:
            document = json.load(handle)
    except OSError as exc:
        raise ComparisonInputError(
            f"--compare {argument!r}: cannot read it ({exc.strerror or exc}); give a file written by "
            f"'sglang-plugins fingerprint --json' on the other node, or its digest"
        ) from None
    except ValueError as exc:
        raise ComparisonInputError(f"--compare {argument!r}: not JSON ({exc})") from None
    if (
        isinstance(document, dict)
        and document.get("command") == "fingerprint"
        and isinstance(document.get("fingerprint"), dict)
    ):
        fingerprint, host = document["fingerprint"], document.get("host")
    elif isinstance(document, dict) and {"format", "platform", "hooks"} <= set(document):
        fingerprint, host = document, None
    else:
        raise ComparisonInputError(
            f"--compare {argument!r}: not a fingerprint; write one with 'sglang-plugins fingerprint --json > FILE'"
        )
    return {"source": argument, "digest": digest_of(fingerprint), "host": host, "fingerprint": fingerprint}


def _environment(namespace: Any) -> dict[str, str | None]:
    names = (namespace.platform_env, namespace.plugins_env, namespace.strict_env)
    return {name: os.environ.get(name) for name in names}


def _problem(severity: str, step: str, message: str, *, plugin: str | None = None) -> dict[str, Any]:
    return {
        "severity": severity,
        "step": step,
        "message": message,
        "plugin": plugin,
        "distribution": None,
        "target": None,
    }


def fingerprint_report(
    namespace: Any, *, simulation: Any = None, strict: bool = False, comparison: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Select the platform and run ``load_plugins()`` here (as a fresh rank would), then fingerprint the result."""
    from ..plugins import load_plugins
    from ._report import SCHEMA_VERSION
    from ._simulation import simulated

    problems: list[dict[str, Any]] = []
    with simulated(simulation):
        try:
            load_plugins(namespace)
        except Exception as exc:  # strict mode: the fingerprint then says load_plugins() did not complete
            problems.append(
                _problem(
                    ERROR,
                    "plugins",
                    f"load_plugins() raised {type(exc).__name__}: {exc}",
                    plugin=getattr(exc, "plugin", None),
                )
            )
        fingerprint = build_fingerprint(namespace)
    data = fingerprint.to_dict()
    digest = fingerprint.digest
    host = socket.gethostname()
    compared = None
    if comparison is not None:
        compared = _compare(data, digest, host, comparison, problems)
    errors = [p for p in problems if p["severity"] == ERROR]
    failing = problems if strict else errors
    return {
        "schema_version": SCHEMA_VERSION,
        "command": "fingerprint",
        "namespace": namespace.name,
        "simulated": simulation is not None,
        "simulation": simulation.to_dict() if simulation is not None else None,
        "environment": _environment(namespace),
        "healthy": not failing,
        "exit_status": 1 if failing else 0,
        "problems": problems,
        "digest": digest,
        "host": host,
        "fingerprint": data,
        "compared_with": compared,
    }


def _compare(
    data: dict[str, Any], digest: str, host: str, comparison: dict[str, Any], problems: list[dict[str, Any]]
) -> dict[str, Any]:
    source = comparison["source"]
    if comparison["fingerprint"] is None:  # a digest only: same or not, no items
        same = digest.startswith(comparison["digest"])
        if not same:
            problems.append(
                _problem(
                    ERROR,
                    "compare",
                    f"this node's fingerprint {digest[:12]} differs from {comparison['digest'][:12]}; compare with the "
                    f"other node's 'sglang-plugins fingerprint --json' file to see which items differ",
                )
            )
        return {"source": source, "digest": comparison["digest"], "host": None, "same": same, "differences": []}
    there, here = 0, 1
    differences = compare(
        [
            Participant(there, comparison["host"] or source, comparison["fingerprint"]),
            Participant(here, host, data),
        ]
    )
    rows: list[dict[str, Any]] = []
    for difference in differences:
        values = {rank: variant.value for variant in difference.variants for rank in variant.ranks}
        rows.append(
            {
                "kind": difference.kind,
                "item": difference.item,
                "severity": difference.severity,
                "here": values[here],
                "there": values[there],
            }
        )
        where = f"{source}" + (f" (host {comparison['host']})" if comparison["host"] else "")
        problems.append(
            _problem(
                difference.severity,
                "compare",
                f"{difference.item}: here {values[here]}; in {where} {values[there]}",
            )
        )
    return {
        "source": source,
        "digest": comparison["digest"],
        "host": comparison["host"],
        "same": comparison["digest"] == digest,
        "differences": rows,
    }


# ---- rendering -----------------------------------------------------------------------------------------------


def _dist(item: dict[str, Any]) -> str | None:
    if not item.get("distribution"):
        return None
    return f"{item['distribution']} {item['version']}" if item.get("version") else item["distribution"]


def render_fingerprint(report: dict[str, Any]) -> str:
    fp = report["fingerprint"]
    lines = [f"sglang-plugins fingerprint (namespace {report['namespace']})"]
    sim = report["simulation"]
    if sim:
        lines.append(f"SIMULATED device: torch.{sim['device_type']}; nothing below was checked on real hardware")
    lines += ["", f"Digest: {report['digest']}", f"Host:   {report['host']} (not part of the fingerprint)", ""]
    lines.append(f"Runtime: sglang-plugin-runtime {fp['runtime_version']}")
    platform = fp["platform"]
    if platform["status"] == "failed":
        lines.append(f"Platform: selection FAILED: {platform['error_type']} (plugin {platform['plugin']!r})")
    else:
        source = f"plugin {platform['plugin']!r}, {_dist(platform)}" if platform["plugin"] else "no plugin"
        lines.append(f"Platform: {platform['class']} ({source}; rule {platform['rule']})")
    if platform["activations"]:
        rows: list[tuple[object, ...]] = [(a["plugin"], _dist(a), a["status"]) for a in platform["activations"]]
        lines.extend(format_table(("PLATFORM PLUGIN", "DISTRIBUTION", "ACTIVATE()"), rows))
    lines.append("")
    plugins = fp["general_plugins"]
    if plugins is None:
        lines.append("General plugins: load_plugins() did not run")
    else:
        lines.append(f"General plugins ({len(plugins)})")
        rows = [(p["plugin"], _dist(p), p["status"]) for p in plugins]
        lines.extend(format_table(("PLUGIN", "DISTRIBUTION", "STATUS"), rows) if rows else ["  (none installed)"])
    lines.append("")
    lines.append(f"Hooks ({len(fp['hooks'])} target(s))")
    rows = [
        (
            t["target"] + (" [FAILED]" if t["failed"] else ""),
            h["type"],
            h["hook"],
            h["plugin"],
            "" if h["active"] else "overridden",
        )
        for t in fp["hooks"]
        for h in t["hooks"]
    ]
    lines.extend(format_table(("TARGET", "TYPE", "HOOK", "PLUGIN", "NOTE"), rows) if rows else ["  (none registered)"])
    compared = report["compared_with"]
    lines.append("")
    if compared is None:
        lines.append(
            "Every node (and rank) that runs the same plugins prints this digest. Save this with --json and run "
            "'sglang-plugins fingerprint --compare FILE' on another node to list what differs."
        )
    else:
        where = compared["source"] + (f", host {compared['host']}" if compared["host"] else "")
        lines.append(f"Compared with {where}: {'SAME' if compared['same'] else 'DIFFERENT'}")
        if compared["differences"]:
            rows = [(d["severity"].upper(), d["item"], d["here"], d["there"]) for d in compared["differences"]]
            lines.extend(format_table(("SEVERITY", "ITEM", "HERE", "THERE"), rows))
    others = [p for p in report["problems"] if p["step"] != "compare"]
    if others:
        lines.append("")
        lines.append(f"Problems ({len(others)})")
        lines.extend(
            format_table(
                ("SEVERITY", "STEP", "MESSAGE"), [(p["severity"].upper(), p["step"], p["message"]) for p in others]
            )
        )
    lines.append("")
    errors = sum(1 for p in report["problems"] if p["severity"] == "error")
    warnings = len(report["problems"]) - errors
    verdict = "OK" if report["healthy"] else "PROBLEMS FOUND"
    tag = " [SIMULATED]" if report["simulated"] else ""
    lines.append(
        f"Result: {verdict}{tag}: {errors} error(s), {warnings} warning(s); exit status {report['exit_status']}"
    )
    return "\n".join(lines) + "\n"
