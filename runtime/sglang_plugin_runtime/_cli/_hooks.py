"""The hooks step of ``doctor`` and ``explain``: each target's hooks, in the order they run, and what is wrong."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any

from .._plugin_code import is_plugin_failure
from ._report import ERROR, WARNING, Problems, error_text


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
        flow.append(
            {"phase": "call", "position": replace[-1]["position"], "type": "replace", "hook": replace[-1]["hook"]}
        )
    else:
        flow.append(
            {"phase": "call", "position": None, "type": "original", "hook": target["resolved"] or target["target"]}
        )
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
        from ..plugins.hook_registry import HookRegistry
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
        candidates = (
            [module] if sep else [".".join(target.split(".")[:i]) for i in range(len(target.split(".")) - 1, 0, -1)]
        )
        for name in candidates:
            try:
                importlib.import_module(name)
                break
            except ModuleNotFoundError as exc:
                if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
                    continue  # not a module: the next shorter prefix may be
                errors.append(f"importing {name!r} for target {target!r} failed: {error_text(exc)}")
                break
            except BaseException as exc:  # a target module that calls sys.exit() must not end the report
                if not is_plugin_failure(exc):
                    raise
                errors.append(f"importing {name!r} for target {target!r} failed: {error_text(exc)}")
                break
    if reports:
        from ..plugins.hook_registry import HookRegistry

        try:
            HookRegistry.apply_hooks()
        except Exception as exc:  # strict mode raises; the failed targets are in describe() either way
            errors.append(f"applying hooks failed: {error_text(exc)}")
    return errors


def hooks_step(problems: Problems, *, import_targets: bool = False, target: str | None = None) -> dict[str, Any]:
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
