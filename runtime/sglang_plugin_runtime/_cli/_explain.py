"""``sglang-plugins explain TARGET``: load the general plugins, then the hooks on one target in the order they run."""

from __future__ import annotations

from typing import Any

from .._namespace import PluginNamespace
from ._doctor import plugins_step
from ._hooks import hooks_step
from ._logs import captured_logs
from ._report import WARNING, Problems, Simulation, envelope
from ._simulation import simulated


def explain_report(
    namespace: PluginNamespace,
    target: str,
    *,
    simulation: Simulation | None = None,
    import_targets: bool = False,
    strict: bool = False,
) -> dict[str, Any]:
    """Load the general plugins, then describe the hooks on ``target`` in the order they run."""
    problems = Problems()
    with simulated(simulation), captured_logs() as logs:
        plugins = plugins_step(namespace, problems)
        hooks = hooks_step(problems, import_targets=import_targets, target=target)
    wanted = target.replace(":", ".")
    matches = [t for t in hooks["targets"] if t["target"].replace(":", ".") == wanted]
    found = matches[0] if matches else None
    # Only the problems about this target (or about loading) matter here.
    problems.items = [p for p in problems.items if p["target"] in (None, found["target"] if found else target)]
    if found is None and hooks["available"]:
        problems.add(WARNING, "explain", f"no hook is registered on {target!r} by any loaded plugin", target=target)
    report = envelope("explain", namespace, simulation, problems, strict)
    report.update(
        {"target": target, "found": found is not None, "report": found, "plugins": plugins, "log": logs.records}
    )
    return report
