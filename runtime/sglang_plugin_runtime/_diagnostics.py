"""What discovery, selection, loading and the hook registry did, as plain JSON-ready data.

The ``sglang-plugins`` CLI renders these reports; nothing here prints. The shapes are the CLI's stable JSON schema
(``cli-schema.json`` next to this module): fields are only ever added, never renamed or removed, and
``SCHEMA_VERSION`` changes when that promise has to be broken.

Three reports:

- :func:`list_report` reads the cached discovery scan and predicts what the environment variables would do with
  each entry point, without importing any plugin.
- :func:`doctor_report` runs the real platform selection and ``load_plugins()`` in this process and records each
  step, so "my plugin silently did nothing" becomes a line saying which step failed and why.
- :func:`explain_report` loads the plugins and describes the hooks on one target in the order they run.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

from ._discovery import DiscoveryResult, discover_entry_points
from ._namespace import PluginNamespace
from ._plugin_code import describe_failure, is_plugin_failure

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 1

#: Exit statuses of every command; part of the documented contract.
EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_USAGE = 2

ERROR = "error"
WARNING = "warning"

# What ``list`` predicts for an entry point (values only ever get added).
ACTION_SELECTED = "selected"
ACTION_NOT_SELECTED = "not-selected"
ACTION_CANDIDATE = "candidate"
ACTION_ALLOWED = "allowed"
ACTION_SKIPPED_ALLOWLIST = "skipped-allowlist"
ACTION_SKIPPED_PLATFORM = "skipped-unselected-platform"
ACTION_DUPLICATE = "duplicate"
ACTION_NOT_INSTALLED = "not-installed"



@dataclass(frozen=True)
class Simulation:
    """A simulated torch device the command runs under; always reported, so output never passes for real."""

    device_type: str
    device_count: int = 1
    backend_module: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"device_type": self.device_type, "device_count": self.device_count, "backend_module": self.backend_module}


@dataclass
class _Problems:
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


def _environment(namespace: PluginNamespace) -> dict[str, str | None]:
    import os

    names = (namespace.platform_env, namespace.plugins_env, namespace.strict_env)
    return {name: os.environ.get(name) for name in names}


def _envelope(
    command: str, namespace: PluginNamespace, simulation: Simulation | None, problems: _Problems, strict: bool
) -> dict[str, Any]:
    errors = [p for p in problems.items if p["severity"] == ERROR]
    failing = problems.items if strict else errors
    return {
        "schema_version": SCHEMA_VERSION,
        "command": command,
        "namespace": namespace.name,
        "simulated": simulation is not None,
        "simulation": simulation.to_dict() if simulation is not None else None,
        "environment": _environment(namespace),
        "healthy": not failing,
        "exit_status": EXIT_PROBLEMS if failing else EXIT_OK,
        "problems": problems.items,
    }


def _discovery_problems(discovery: DiscoveryResult, namespace: PluginNamespace, problems: _Problems) -> list[dict[str, Any]]:
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


def _allowlist_problem(namespace: PluginNamespace, problems: _Problems) -> None:
    """``SGLANG_PLUGINS`` set to something that names no plugin (``","``) disables every general plugin."""
    import os

    if namespace.allowed_plugins() == frozenset():
        raw = os.environ.get(namespace.plugins_env, "")
        problems.add(
            WARNING,
            "plugins",
            f"{namespace.plugins_env}={raw!r} names no plugin, so no general plugin is loaded; unset it to load "
            f"them all, or list the ones to load ({namespace.plugins_env}=name1,name2)",
        )


def _entry_point_dict(ep: Any, action: str, reason: str) -> dict[str, Any]:
    return {
        "name": ep.name,
        "distribution": ep.dist_name,
        "version": ep.dist_version,
        "value": ep.value,
        "path": ep.dist_path,
        "action": action,
        "reason": reason,
    }


def list_report(
    namespace: PluginNamespace, *, simulation: Simulation | None = None, strict: bool = False
) -> dict[str, Any]:
    """Every entry point of ``namespace`` and what the environment would make of it; imports no plugin."""
    from ._loading import unselected_platform_dists

    discovery = discover_entry_points()
    problems = _Problems()
    duplicates = _discovery_problems(discovery, namespace, problems)
    selected = namespace.selected_platform()
    allowed = namespace.allowed_plugins()

    platform_rows = []
    platform_dupes = discovery.duplicates(namespace.platform_group)
    for ep in discovery.group(namespace.platform_group):
        if ep.name in platform_dupes and (selected is None or selected == ep.name):
            action, reason = ACTION_DUPLICATE, "another distribution offers the same name; selection will fail"
        elif selected is None:
            action, reason = ACTION_CANDIDATE, f"{namespace.platform_env} unset: imported and activate() called"
        elif ep.name == selected:
            action, reason = ACTION_SELECTED, f"{namespace.platform_env}={selected!r}: the only platform imported"
        else:
            action, reason = ACTION_NOT_SELECTED, f"{namespace.platform_env}={selected!r}: never imported"
        platform_rows.append(_entry_point_dict(ep, action, reason))
    if selected is not None and not any(ep.name == selected for ep in discovery.group(namespace.platform_group)):
        from ._selection import unknown_platform_message

        problems.add(
            ERROR,
            "selection",
            unknown_platform_message(namespace, discovery.group(namespace.platform_group), selected),
            plugin=selected,
        )
    _allowlist_problem(namespace, problems)

    excluded = unselected_platform_dists(namespace, discovery)
    plugin_rows = []
    plugin_dupes = discovery.duplicates(namespace.plugin_group)
    installed_names = {ep.name for ep in discovery.group(namespace.plugin_group)}
    for ep in discovery.group(namespace.plugin_group):
        if allowed is not None and ep.name not in allowed:
            action, reason = ACTION_SKIPPED_ALLOWLIST, f"not in {namespace.plugins_env}"
        elif ep.dist_name in excluded:
            action = ACTION_SKIPPED_PLATFORM
            reason = f"its distribution offers only platforms other than {namespace.platform_env}={selected!r}"
        elif ep.name in plugin_dupes:
            action, reason = ACTION_DUPLICATE, "another distribution offers the same name; it will not load"
        else:
            action = ACTION_ALLOWED
            reason = f"listed in {namespace.plugins_env}" if allowed is not None else f"{namespace.plugins_env} unset: all load"
        plugin_rows.append(_entry_point_dict(ep, action, reason))
    for missing in sorted((allowed or set()) - installed_names):
        plugin_rows.append(
            {
                "name": missing,
                "distribution": None,
                "version": None,
                "value": None,
                "path": None,
                "action": ACTION_NOT_INSTALLED,
                "reason": f"listed in {namespace.plugins_env} but not installed",
            }
        )
        problems.add(
            WARNING, "plugins", f"{namespace.plugins_env} lists {missing!r}, which is not installed", plugin=missing
        )

    report = _envelope("list", namespace, simulation, problems, strict)
    report.update(
        {
            "distribution_count": discovery.distribution_count,
            "groups": [
                {"group": namespace.platform_group, "kind": "platform", "entry_points": platform_rows},
                {"group": namespace.plugin_group, "kind": "general", "entry_points": plugin_rows},
            ],
            "malformed": [{"path": bad.path, "reason": bad.reason} for bad in discovery.malformed],
            "duplicates": duplicates,
        }
    )
    return report


# ---- doctor ------------------------------------------------------------------------------------------------


class _LogCapture(logging.Handler):
    """Keeps WARNING and worse records emitted while a report is built (plugins' own loggers included), and every
    record a platform plugin's own code logs while it is imported and activated (its reasons for returning
    ``None`` are usually DEBUG lines)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[dict[str, str]] = []
        #: plugin name -> what its code logged while it was being activated.
        self.activation_lines: dict[str, list[str]] = {}

    def emit(self, record: logging.LogRecord) -> None:
        from ._selection import activating

        try:
            message = record.getMessage()
        except Exception:  # a plugin's bad format string must not break the report
            message = str(record.msg)
        ep = activating()
        if ep is not None and not record.name.startswith("sglang_plugin_runtime"):
            self.activation_lines.setdefault(ep.name, []).append(f"{record.levelname} {record.name}: {message}")
        if record.levelno >= logging.WARNING:
            self.records.append({"level": record.levelname, "logger": record.name, "message": message})


@contextmanager
def _captured_logs() -> Iterator[_LogCapture]:
    """Capture as above. The root logger is lowered to DEBUG for the capture only: every other handler on it is
    raised to the level the root had, so nothing extra reaches the terminal."""
    handler = _LogCapture()
    root = logging.getLogger()
    previous_level = root.level
    effective = root.getEffectiveLevel()
    raised = [h for h in root.handlers if h.level == logging.NOTSET]
    for other in raised:
        other.setLevel(effective)
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.setLevel(previous_level)
        root.removeHandler(handler)
        for other in raised:
            other.setLevel(logging.NOTSET)


def _error_text(exc: BaseException) -> str:
    text = describe_failure(exc)
    cause = exc.__cause__
    if cause is not None and str(cause) not in str(exc):
        text += f" (caused by {type(cause).__name__}: {cause})"
    return text


def _activation_dicts(activations: Any, logs: _LogCapture) -> list[dict[str, Any]]:
    """Each activation as JSON, with what the plugin logged while it ran (why it returned ``None``, usually)."""
    rows = []
    for activation in activations:
        data = activation.to_dict()
        data["log"] = logs.activation_lines.get(activation.plugin, [])
        rows.append(data)
    return rows


def _platform_step(namespace: PluginNamespace, problems: _Problems, logs: _LogCapture) -> dict[str, Any]:
    from ._selection import platform_holder

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
        summary = "no platform could be selected" if problems.mentions(str(exc)) else f"no platform could be selected: {exc}"
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
            "error": _error_text(exc),
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
    return data


def _plugins_step(namespace: PluginNamespace, problems: _Problems) -> dict[str, Any]:
    from ._loading import LOADED, NOT_INSTALLED, load_general_plugins, reset_load_state

    _allowlist_problem(namespace, problems)
    reset_load_state(namespace)
    try:
        report = load_general_plugins(namespace)
    except Exception as exc:
        from ._loading import last_load_report

        partial = last_load_report(namespace)
        problems.add(
            ERROR,
            "plugins",
            f"loading general plugins stopped: {exc}",
            plugin=getattr(exc, "plugin", None),
            distribution=getattr(exc, "dist", None),
        )
        records = [r.to_dict() for r in partial.records] if partial is not None else []
        return {"status": "failed", "error": _error_text(exc), "plugins": records}
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


# ---- hooks -------------------------------------------------------------------------------------------------


def _hook_dict(hook: Any, position: int) -> dict[str, Any]:
    return {
        "position": position,
        "hook": hook.hook,
        "type": hook.hook_type,
        "priority": hook.priority,
        "active": hook.active,
        "source": {"plugin": hook.plugin, "distribution": hook.dist} if hook.plugin or hook.dist else None,
    }


def call_flow(target: dict[str, Any]) -> list[dict[str, Any]]:
    """The hooks of one target report in the order they run for one call.

    Hooks nest outermost first: BEFORE and AROUND hooks run on the way in, then the active REPLACE (or the
    original), then AFTER hooks on the way out, innermost first.
    """
    hooks = [h for h in target["hooks"] if h["active"]]
    entering = [h for h in hooks if h["type"] in ("before", "around")]
    replace = [h for h in hooks if h["type"] == "replace"]
    leaving = [h for h in reversed(hooks) if h["type"] == "after"]
    flow = [{"phase": "enter", "position": h["position"], "type": h["type"], "hook": h["hook"]} for h in entering]
    if replace:
        flow.append({"phase": "call", "position": replace[-1]["position"], "type": "replace", "hook": replace[-1]["hook"]})
    else:
        flow.append({"phase": "call", "position": None, "type": "original", "hook": target["resolved"] or target["target"]})
    flow.extend({"phase": "exit", "position": h["position"], "type": h["type"], "hook": h["hook"]} for h in leaving)
    return flow


def _target_dict(report: Any) -> dict[str, Any]:
    data = {
        "target": report.target,
        "status": report.status,
        "resolved": report.resolved,
        "error": report.error,
        "rebound": report.rebound,
        "hooks": [_hook_dict(h, i) for i, h in enumerate(report.hooks, start=1)],
        "conflicts": [{"kind": c.kind, "message": c.message} for c in report.conflicts],
    }
    data["call_flow"] = call_flow(data)
    return data


def _module_exists(target: str) -> bool | None:
    """Whether the top-level package of ``target`` can be found, without importing anything."""
    top = target.replace(":", ".").split(".")[0]
    if not top.isidentifier():
        return None
    if top in sys.modules:
        return True
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return False


def _describe_hooks(target: str | None = None) -> tuple[bool, str | None, list[dict[str, Any]]]:
    """``(available, why_not, target reports)`` from the hook registry's introspection API."""
    try:
        from .plugins.hook_registry import HookRegistry
    except ImportError as exc:  # a broken install must still get a report of everything else
        return False, f"the hook registry could not be imported: {exc}", []
    return True, None, [_target_dict(r) for r in HookRegistry.describe(target)]


def _import_target_modules(reports: list[dict[str, Any]]) -> list[str]:
    """Import the modules of pending targets so their hooks apply now; returns import errors."""
    errors = []
    for report in reports:
        if report["status"] != "pending":
            continue
        target = report["target"]
        module, sep, _attr = target.partition(":")
        candidates = [module] if sep else [".".join(target.split(".")[:i]) for i in range(len(target.split(".")) - 1, 0, -1)]
        for name in candidates:
            try:
                importlib.import_module(name)
                break
            except ModuleNotFoundError as exc:
                if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
                    continue  # not a module: the next shorter prefix may be
                errors.append(f"importing {name!r} for target {target!r} failed: {_error_text(exc)}")
                break
            except BaseException as exc:  # a target module that calls sys.exit() must not end the report
                if not is_plugin_failure(exc):
                    raise
                errors.append(f"importing {name!r} for target {target!r} failed: {_error_text(exc)}")
                break
    if reports:
        from .plugins.hook_registry import HookRegistry

        try:
            HookRegistry.apply_hooks()
        except Exception as exc:  # strict mode raises; the failed targets are in describe() either way
            errors.append(f"applying hooks failed: {_error_text(exc)}")
    return errors


def _hooks_step(
    problems: _Problems, *, import_targets: bool = False, target: str | None = None
) -> dict[str, Any]:
    available, why_not, targets = _describe_hooks(target)
    import_errors: list[str] = []
    if available and import_targets:
        import_errors = _import_target_modules(targets)
        available, why_not, targets = _describe_hooks(target)
    for message in import_errors:
        problems.add(ERROR, "hooks", message)
    if not available:
        problems.add(WARNING, "hooks", str(why_not))
    for report in targets:
        sources = sorted({h["source"]["plugin"] for h in report["hooks"] if h["source"] and h["source"]["plugin"]})
        dists = {h["source"]["distribution"] for h in report["hooks"] if h["source"]}
        who = f" (from {', '.join(sources)})" if sources else ""
        plugin = sources[0] if len(sources) == 1 else None
        dist = next(iter(dists)) if len(dists) == 1 else None
        if report["status"] == "failed":
            problems.add(
                ERROR,
                "hooks",
                f"hooks on {report['target']!r}{who} failed: {report['error'] or 'see the registry log'}",
                plugin=plugin,
                distribution=dist,
                target=report["target"],
            )
        elif report["status"] == "pending":
            exists = _module_exists(report["target"])
            if exists is False:
                report["status"] = "failed"
                report["error"] = report["error"] or "its module cannot be found: no such module is installed"
                problems.add(
                    ERROR,
                    "hooks",
                    f"hooks on {report['target']!r}{who} can never apply: its module is not installed "
                    f"(misspelled target?)",
                    plugin=plugin,
                    distribution=dist,
                    target=report["target"],
                )
            else:
                problems.add(
                    WARNING,
                    "hooks",
                    f"hooks on {report['target']!r}{who} are pending: the module is not imported in this process "
                    f"yet; they apply when it is (use --import-targets to check now)",
                    plugin=plugin,
                    distribution=dist,
                    target=report["target"],
                )
        for conflict in report["conflicts"]:
            problems.add(
                WARNING,
                "hooks",
                f"{report['target']}: {conflict['message']}",
                plugin=plugin,
                distribution=dist,
                target=report["target"],
            )
    foreign = _targets_in_sglang_registry()
    if foreign:
        problems.add(
            WARNING,
            "hooks",
            f"hooks on {len(foreign)} target(s) were registered with SGLang's own HookRegistry "
            f"(sglang.srt.plugins.hook_registry), e.g. by host_api=sglang plugins: {', '.join(foreign)}. "
            "SGLang's load_plugins() applies those; this runtime neither sees nor applies them.",
        )
    return {"available": available, "unavailable_reason": why_not, "targets": targets}


def _targets_in_sglang_registry() -> list[str]:
    """Targets with hooks in SGLang's own registry, if a plugin imported it (never imported here)."""
    module = sys.modules.get("sglang.srt.plugins.hook_registry")
    hooks = getattr(getattr(module, "HookRegistry", None), "_hooks", None)
    if not isinstance(hooks, dict):
        return []
    return sorted(str(target) for target, entries in hooks.items() if entries)


@contextmanager
def simulated(simulation: Simulation | None) -> Iterator[None]:
    """Run the body with ``simulation``'s device installed into torch (nothing when ``None``)."""
    if simulation is None:
        yield
        return
    from .testing._simulated_device import simulated_device

    device = simulated_device(
        simulation.device_type, device_count=simulation.device_count, backend_module=simulation.backend_module
    )
    device.start()
    try:
        yield
    finally:
        device.stop()


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
    problems = _Problems()
    with simulated(simulation), _captured_logs() as logs:
        discovery = discover_entry_points()
        duplicates = _discovery_problems(discovery, namespace, problems)
        platform = _platform_step(namespace, problems, logs)
        plugins = _plugins_step(namespace, problems)
        hooks = _hooks_step(problems, import_targets=import_targets)
    report = _envelope("doctor", namespace, simulation, problems, strict)
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


def explain_report(
    namespace: PluginNamespace,
    target: str,
    *,
    simulation: Simulation | None = None,
    import_targets: bool = False,
    strict: bool = False,
) -> dict[str, Any]:
    """Load the general plugins, then describe the hooks on ``target`` in the order they run."""
    problems = _Problems()
    with simulated(simulation), _captured_logs() as logs:
        plugins = _plugins_step(namespace, problems)
        hooks = _hooks_step(problems, import_targets=import_targets, target=target)
    wanted = target.replace(":", ".")
    matches = [t for t in hooks["targets"] if t["target"].replace(":", ".") == wanted]
    found = matches[0] if matches else None
    # Only the problems about this target (or about loading) matter here.
    problems.items = [p for p in problems.items if p["target"] in (None, found["target"] if found else target)]
    if found is None and hooks["available"]:
        problems.add(WARNING, "explain", f"no hook is registered on {target!r} by any loaded plugin", target=target)
    report = _envelope("explain", namespace, simulation, problems, strict)
    report.update({"target": target, "found": found is not None, "report": found, "plugins": plugins, "log": logs.records})
    return report
