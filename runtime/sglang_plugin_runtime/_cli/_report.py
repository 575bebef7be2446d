"""What every report shares: the schema version, exit statuses, problems and the envelope around a report.

The reports are the CLI's stable JSON schema (``cli-schema.json`` next to the package): fields are only ever added,
never renamed or removed, and ``SCHEMA_VERSION`` changes when that promise has to be broken.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from .._discovery import DiscoveryResult
from .._namespace import PluginNamespace
from .._plugin_code import describe_failure

SCHEMA_VERSION = 1

#: Exit statuses of every command; part of the documented contract.
EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_USAGE = 2

ERROR = "error"
WARNING = "warning"

# What ``list`` predicts for an entry point (values only ever get added).


@dataclass(frozen=True)
class Simulation:
    """A simulated torch device the command runs under; always reported, so output never passes for real."""

    device_type: str
    device_count: int = 1
    backend_module: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "device_type": self.device_type,
            "device_count": self.device_count,
            "backend_module": self.backend_module,
        }


@dataclass
class Problems:
    """Problems found while building a report, in the order found."""

    items: list[dict[str, Any]] = field(default_factory=list)

    def add(
        self,
        severity: str,
        step: str,
        message: str,
        *,
        plugin: str | None = None,
        distribution: str | None = None,
        target: str | None = None,
    ) -> None:
        item = {
            "severity": severity,
            "step": step,
            "message": message,
            "plugin": plugin,
            "distribution": distribution,
            "target": target,
        }
        if item not in self.items:  # one fault reached through two paths is still one problem
            self.items.append(item)

    def mentions(self, text: str) -> bool:
        """Whether a problem already says ``text`` (so a summary does not repeat it)."""
        return any(text in item["message"] for item in self.items)


def environment(namespace: PluginNamespace) -> dict[str, str | None]:

    names = (namespace.platform_env, namespace.plugins_env, namespace.strict_env)
    return {name: os.environ.get(name) for name in names}


def envelope(
    command: str, namespace: PluginNamespace, simulation: Simulation | None, problems: Problems, strict: bool
) -> dict[str, Any]:
    errors = [p for p in problems.items if p["severity"] == ERROR]
    failing = problems.items if strict else errors
    return {
        "schema_version": SCHEMA_VERSION,
        "command": command,
        "namespace": namespace.name,
        "simulated": simulation is not None,
        "simulation": simulation.to_dict() if simulation is not None else None,
        "environment": environment(namespace),
        "healthy": not failing,
        "exit_status": EXIT_PROBLEMS if failing else EXIT_OK,
        "problems": problems.items,
    }


def discovery_problems(
    discovery: DiscoveryResult, namespace: PluginNamespace, problems: Problems
) -> list[dict[str, Any]]:
    for bad in discovery.malformed:
        problems.add(ERROR, "discovery", f"malformed distribution at {bad.path}: {bad.reason}; it was skipped")
    duplicates = []
    for group in (namespace.platform_group, namespace.plugin_group):
        for name, eps in discovery.duplicates(group).items():
            labels = [ep.dist_label for ep in eps]
            duplicates.append({"group": group, "name": name, "distributions": [ep.dist_name for ep in eps]})
            problems.add(
                ERROR,
                "discovery",
                f"entry point {name!r} in group {group!r} is offered by {' and '.join(labels)}; uninstall one of them",
                plugin=name,
                distribution=eps[0].dist_name,
            )
    return duplicates


def allowlist_problem(namespace: PluginNamespace, problems: Problems) -> None:
    """``SGLANG_PLUGINS`` set to something that names no plugin (``","``) disables every general plugin."""

    if namespace.allowed_plugins() == frozenset():
        raw = os.environ.get(namespace.plugins_env, "")
        problems.add(
            WARNING,
            "plugins",
            f"{namespace.plugins_env}={raw!r} names no plugin, so no general plugin is loaded; unset it to load "
            f"them all, or list the ones to load ({namespace.plugins_env}=name1,name2)",
        )


def error_text(exc: BaseException) -> str:
    text = describe_failure(exc)
    cause = exc.__cause__
    if cause is not None and str(cause) not in str(exc):
        text += f" (caused by {type(cause).__name__}: {cause})"
    return text
