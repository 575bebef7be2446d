"""The documents ``list``, ``doctor``, ``explain`` and ``fingerprint`` print: the runtime's records,
as the CLI's JSON schema (``cli-schema.json``: within a schema version fields are only ever added,
never renamed or removed) names them.

A record becomes JSON through its ``to_dict()``, under its Python field names, so a hook, a plugin's
outcome or an entry point has one shape wherever it appears. Each command is one step
(``<command>_step``) run inside :func:`report`, which adds the envelope every document shares.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import socket
import stat
import sys
import time
import warnings
from collections.abc import Iterator
from importlib.util import find_spec
from typing import Any

from .._discovery import DiscoveryResult, discover_entry_points, duplicate_reason
from .._fingerprint import fingerprint_hook
from .._namespace import PluginNamespace, get_namespace, import_if_module
from .._plugin_code import (
    Status,
    describe_failure,
    guarded,
    plugin_source,
    safe_text,
)
from .._simulated_device import TORCH_INSTALL, simulated_device
from ..errors import DuplicatePluginError
from ..platforms import _selection

ERROR, WARNING = "error", "warning"
_MAX_FINGERPRINT_BYTES = 16 << 20  # a fingerprint of thousands of hooks is well under 1 MiB
_PROBLEM_KEYS = ("severity", "step", "message", "plugin", "distribution", "target")
#: The version of the JSON documents (``cli-schema.json``): a field renamed or removed makes a new
#: one.
SCHEMA_VERSION = 2


class InputError(ValueError):
    """An argument names something the command cannot use (a target, a ``--compare`` file); the
    message says why. The CLI reports it as a usage error."""


class Problems(list[dict[str, Any]]):
    """Problems found while building a report, in the order found; one fault reached twice is one
    problem."""

    def __init__(self) -> None:
        super().__init__()
        # one lookup per problem: a report may hold thousands
        self._seen: set[tuple[Any, ...]] = set()

    def add(
        self,
        severity: str,
        step: str,
        message: str,
        plugin: str | None = None,
        distribution: str | None = None,
        target: str | None = None,
    ) -> None:
        key = (severity, step, message, plugin, distribution, target)
        if key not in self._seen:
            self._seen.add(key)
            self.append(dict(zip(_PROBLEM_KEYS, key, strict=True)))


class LogCapture(logging.Handler):
    """WARNING and worse records emitted while a report is built (plugins' own loggers included),
    and every record a platform plugin's own code logs while it is imported and activated (why it
    returned ``None``, usually)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[dict[str, str]] = []
        self.plugin_lines: dict[tuple[str, str | None], list[str]] = {}

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # a plugin's bad format string must not break the report
            message = str(record.msg)
        if (source := plugin_source.get()) is not None and not record.name.startswith(
            "sglang_plugin_runtime"
        ):
            self.plugin_lines.setdefault((source.plugin_name, source.dist_name), []).append(
                f"{record.levelname} {record.name}: {message}"
            )
        if record.levelno >= logging.WARNING:
            self.records.append(
                {"level": record.levelname, "logger": record.name, "message": message}
            )


@contextlib.contextmanager
def _captured(simulation: dict[str, Any] | None) -> Iterator[LogCapture]:
    """Logs captured (see :class:`LogCapture`), on a simulated device if asked. The root logger is
    lowered to DEBUG for the capture only: every other handler on it is raised to the root's level,
    so the terminal sees no more."""
    handler, root = LogCapture(), logging.getLogger()
    level, raised = root.level, [h for h in root.handlers if h.level == logging.NOTSET]
    for other in raised:
        other.setLevel(root.getEffectiveLevel())
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        # The device type is a vendor's (torch's own are refused): torch.device() parses it once
        # PrivateUse1 is renamed to it, which lasts for this process only, as a generated package's
        # own tests do.
        with (
            simulated_device(**simulation, privateuse1=True)
            if simulation
            else contextlib.nullcontext()
        ):
            yield handler
    finally:
        root.setLevel(level)
        root.removeHandler(handler)
        for other in raised:
            other.setLevel(logging.NOTSET)


def _simulation(args: Any) -> dict[str, Any] | None:
    """``--simulate``'s device, checked: a device type torch lacks, a backend module that is not
    installed."""
    device, backend, count = args.simulate, args.simulate_backend, args.simulate_count
    if device is None:
        for option, value in (("--simulate-backend", backend), ("--simulate-count", count)):
            if value is not None:
                raise InputError(f"{option} needs --simulate DEVICE_TYPE")
        return None
    if not re.fullmatch(r"[a-z][a-z0-9_]*", device):
        raise InputError(
            f"--simulate {device!r}: a device type is a lower-case identifier such as 'npu'"
        )
    if count is not None and count < 1:
        raise InputError(f"--simulate-count {count}: it must be at least 1")
    try:
        # the CPU build of torch warns without NumPy, which nothing here needs
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Failed to initialize NumPy", UserWarning)
            import torch
    except ImportError:
        raise InputError(
            f"--simulate needs torch to attach the simulated device to: {TORCH_INSTALL}"
        ) from None
    free = ", ".join(
        name for name in ("npu", "mlu", "musa", "hpu", "gcu") if not hasattr(torch, name)
    )
    how = f"simulate a device type torch does not have (a vendor's: {free}, ...)"
    if device in ("meta", "privateuseone") or (
        hasattr(torch, device) and _parses_as_device(torch, device)
    ):
        raise InputError(
            f"--simulate {device}: {device} is one of torch's own device types, it cannot be "
            f"simulated; {how}"
        )
    if hasattr(torch, device):
        raise InputError(
            f"--simulate {device}: torch.{device} already exists and a simulated device module "
            f"would hide it; {how}"
        )
    if backend is not None:
        if not all(part.isidentifier() for part in backend.split(".")):
            raise InputError(
                f"--simulate-backend {backend!r}: give a module name such as torch_npu"
            )
        top = backend.partition(".")[0]
        if top in sys.modules or find_spec(top) is not None:
            what = f"{top!r} is installed here" if top != backend else "it is installed here"
            raise InputError(
                f"--simulate-backend {backend}: {what}; a fake one would hide it; give the name "
                "of a vendor module that is not installed here (e.g. torch_npu)"
            )
    # count is None or at least 1 here
    return {"device_type": device, "device_count": count or 1, "backend_module": backend}


def _parses_as_device(torch: Any, name: str) -> bool:
    """Whether ``torch.device(name)`` accepts ``name`` (``torch.nn`` exists, but ``nn`` is no device
    type)."""
    try:
        torch.device(name)
    except (RuntimeError, ValueError):
        return False
    return True


def report(args: Any) -> dict[str, Any]:
    """The envelope every document shares, around what ``args.command``'s step makes of this
    process's plugins;
    :class:`InputError` when an argument is unusable."""
    step = {
        "list": list_step,
        "doctor": doctor_step,
        "explain": explain_step,
        "fingerprint": fingerprint_step,
        "contract": contract_step,
    }[args.command]
    ns, simulation, problems = get_namespace(args.namespace), _simulation(args), Problems()
    with _captured(simulation) as logs:
        body = step(ns, problems, logs, args)
    failing = problems if args.strict else [p for p in problems if p["severity"] == ERROR]
    return {
        "schema_version": SCHEMA_VERSION,
        "command": args.command,
        "namespace": ns.name,
        "simulated": bool(simulation),
        "simulation": simulation,
        "environment": {
            name: os.environ.get(name) for name in (ns.platform_env, ns.plugins_env, ns.strict_env)
        },
        "healthy": not failing,
        "exit_status": 1 if failing else 0,
        "problems": problems,
        **body,
    }


def error_text(exc: BaseException) -> str:
    """``exc`` described, with its cause where its message does not already say it."""
    cause = exc.__cause__
    if cause is None or safe_text(cause) in safe_text(exc):
        return describe_failure(exc)
    return f"{describe_failure(exc)} (caused by {describe_failure(cause)})"


def _discovery(
    discovery: DiscoveryResult, ns: PluginNamespace, problems: Problems
) -> dict[str, Any]:
    """What the scan found, and what is wrong with it (malformed distributions, duplicate names)."""
    for _kind, group in _groups(ns):  # reads the versions: a METADATA may prove unreadable
        discovery.group(group)
    for bad in discovery.malformed:
        problems.add(
            ERROR,
            "discovery",
            f"malformed distribution at {bad.path}: {bad.reason}; it was skipped",
        )
    duplicates = []
    for group in (ns.platform_group, ns.plugin_group):
        for name, eps in discovery.duplicates(group).items():
            duplicates.append(
                {"group": group, "name": name, "distributions": [ep.distribution for ep in eps]}
            )
            problems.add(
                ERROR,
                "discovery",
                f"entry point {name!r} in group {group!r}: {duplicate_reason(eps)}",
                name,
                eps[0].distribution,
            )
    return {"malformed": [bad._asdict() for bad in discovery.malformed], "duplicates": duplicates}


def _allowlist(ns: PluginNamespace, problems: Problems) -> None:
    """``SGLANG_PLUGINS`` set to something that names no plugin (``","``) disables every general
    plugin."""
    if ns.allowed_plugins() == frozenset():
        env = ns.plugins_env
        problems.add(
            WARNING,
            "plugins",
            f"{env}={os.environ.get(env, '')!r} names no plugin, so no general plugin is loaded; "
            f"unset it to load them all, or list the ones to load ({env}=name1,name2)",
        )


def _groups(ns: PluginNamespace) -> list[tuple[str, str]]:
    """``(kind, group)`` of every entry-point group of ``ns``, in the order a process loads them."""
    startup = [("startup", ns.startup_group)] if ns.startup_group else []
    return [("platform", ns.platform_group), *startup, ("general", ns.plugin_group)]


def list_step(
    ns: PluginNamespace, problems: Problems, logs: LogCapture, args: Any
) -> dict[str, Any]:
    """Every entry point of ``ns`` and what the environment would make of it (the plans selection
    and loading follow); imports nothing."""
    from ..plugins._loading import plan_plugins

    discovery = discover_entry_points()
    found = _discovery(discovery, ns, problems)
    platforms, error = _selection.plan_platforms(ns, discovery)
    # duplicates: a discovery problem
    if error is not None and not isinstance(error, DuplicatePluginError):
        problems.add(ERROR, "selection", str(error), error.plugin, error.distribution)
    _allowlist(ns, problems)
    groups = []
    for kind, group in _groups(ns):
        plan = platforms if kind == "platform" else plan_plugins(ns, discovery, group)
        for p in plan:
            if p.entry_point is None:
                problems.add(
                    WARNING,
                    "plugins",
                    f"plugin {p.name!r} {p.status}: {p.reason}",
                    p.name,
                )
        # each plan as JSON; a listed name that is not installed has no distribution, version, ...
        entry_points = [
            {
                "name": p.name,
                **{
                    key: getattr(p.entry_point, key, None)
                    for key in ("distribution", "version", "value", "path")
                },
                "status": p.status,
                "reason": p.reason,
            }
            for p in plan
        ]
        groups.append({"group": group, "kind": kind, "entry_points": entry_points})
    return {"distribution_count": len(discovery.distributions), "groups": groups, **found}


def _outcomes(outcomes: Any, logs: LogCapture) -> list[dict[str, Any]]:
    """Plugin outcomes as JSON, each with what the plugin logged while its code ran."""
    return [
        {**o.to_dict(), "log": logs.plugin_lines.get((o.plugin, o.distribution), [])}
        for o in outcomes
    ]


def _platform(
    ns: PluginNamespace, problems: Problems, logs: LogCapture, strict: bool, judged: Judged
) -> dict[str, Any]:
    _selection.reset_current_platform(ns)
    start = time.perf_counter()
    try:
        cls = type(_selection.get_current_platform(ns, strict=strict))
    except Exception as exc:
        plugin, distribution = getattr(exc, "plugin", None), getattr(exc, "distribution", None)
        error = error_text(exc)
        problems.add(
            ERROR, "selection", f"no platform could be selected: {error}", plugin, distribution
        )
        return {
            **dict.fromkeys(("platform_class", "rule", "reason")),
            "plugin": plugin,
            "distribution": distribution,
            "version": None,
            "status": "failed",
            "error": error,
            "error_type": type(exc).__name__,
            "seconds": time.perf_counter() - start,
            "activations": _outcomes(getattr(exc, "outcomes", ()), logs),
        }
    seconds, selection = time.perf_counter() - start, _selection.current_platform_selection(ns)
    for a in selection.activations:
        if not a.ok:
            problems.add(
                ERROR,
                "selection",
                f"platform plugin {a.plugin!r} failed and was skipped: {a.reason}",
                a.plugin,
                a.distribution,
            )
    if selection.rule == "fallback" and selection.activations and not selection.problems:
        problems.add(
            WARNING,
            "selection",
            f"no installed platform plugin activated; using the fallback {selection.class_path}",
        )
    from ..platforms._describe import find_override_problems

    # What the class's public names mean to SGLang: a likely misspelling is a warning.
    findings = find_override_problems(cls)
    for finding in findings:
        if finding.kind == "misspelled":
            problems.add(WARNING, "selection", finding.message)
    if selection.plugin is not None:  # against the releases its distribution declares
        from ..platforms._describe import release_problems

        releases = judged[selection.distribution][1]
        for finding in release_problems(cls, releases):
            if finding.kind == "uncalled" and len(finding.releases) < len(releases):
                findings.append(finding)  # information: other judged releases call it
            else:
                where = (selection.plugin, selection.distribution)
                problems.add(WARNING, "sglang", finding.message, *where)
    # what a deployment gates on: the check the plugin's own tests run
    if strict and selection.plugin is not None:
        from ..testing._conformance import check_platform_conformance

        covered = {f.kind for f in findings} | {"misspelled", "retired"}
        # The plugin's activate() found its device here: SGLang's device calls are made on it too.
        for problem in check_platform_conformance(cls, device_present=True):
            if problem.kind not in covered:
                problems.add(
                    ERROR,
                    "selection",
                    f"conformance check: {problem.message}",
                    selection.plugin,
                    selection.distribution,
                )
    return {
        "status": "selected",
        "platform_class": selection.class_path,
        **{
            key: getattr(selection, key)
            for key in ("rule", "reason", "plugin", "distribution", "version")
        },
        "error": None,
        "error_type": None,
        "seconds": seconds,
        "activations": _outcomes(selection.activations, logs),
        "overrides": [
            {"attribute": f.attribute, "kind": f.kind, "message": f.message} for f in findings
        ],
    }


def _stopped(load: Any, ns: PluginNamespace, problems: Problems, strict: bool) -> str | None:
    """Run ``load`` (``load_plugins`` or its startup phase) here; the error that stopped it."""
    try:
        load(ns, strict=strict)
    except Exception as exc:
        error = error_text(exc)
        plugin, distribution = getattr(exc, "plugin", None), getattr(exc, "distribution", None)
        problems.add(ERROR, "plugins", f"loading plugins stopped: {error}", plugin, distribution)
        return error
    return None


def startup_step(ns: PluginNamespace, problems: Problems, strict: bool) -> None:
    """Run the startup phase here before selection, as the launcher and an adopted SGLang do (when
    ``sglang`` is imported): a startup plugin may be what lets a platform's ``activate()`` find
    its device."""
    from ..plugins._loading import load_startup_plugins, reset_load_state

    _allowlist(ns, problems)
    reset_load_state(ns)
    _stopped(load_startup_plugins, ns, problems, strict)


def plugins_step(ns: PluginNamespace, problems: Problems, strict: bool) -> dict[str, Any]:
    """Run ``load_plugins()`` here (after :func:`startup_step` and selection), and report what each
    plugin did."""
    from ..plugins._loading import load_plugins, plugin_load_report

    error = _stopped(load_plugins, ns, problems, strict)
    phases = {}
    for key, group in (("startup", ns.startup_group), ("plugins", ns.plugin_group)):
        # no startup group: no report (plugin_load_report(ns, None) is the general plugins')
        report = plugin_load_report(ns, group) if group else None
        outcomes, required = (report.outcomes, report.required) if report else ((), None)
        for o in outcomes:
            # the selected platform's own startup plugin, skipped by the allowlist: a warning
            if not o.ok or (o.status is Status.SKIPPED_ALLOWLIST and o.distribution == required):
                problems.add(
                    ERROR if not o.ok and o.status is not Status.NOT_INSTALLED else WARNING,
                    "plugins",
                    f"plugin {o.plugin!r} {o.status}: {o.reason}",
                    o.plugin,
                    o.distribution,
                )
        phases[key] = [o.to_dict() for o in outcomes]
    return {"status": "failed" if error else "loaded", "error": error, **phases}


def _target(report: Any) -> dict[str, Any]:
    """One ``TargetReport`` as JSON, with its hooks numbered outermost first and one call step by
    step."""
    data: dict[str, Any] = report.to_dict()  # its conflicts as JSON already
    hooks = []
    for position, hook in enumerate(report.hooks, start=1):
        h = fingerprint_hook(hook)
        source = {"plugin": h.pop("plugin"), "distribution": h.pop("distribution")}
        hooks.append(
            {"position": position, **h, "source": source if any(source.values()) else None}
        )
    data["hooks"] = hooks
    # BEFORE and AROUND hooks on the way in (outermost first), the active REPLACE (or the original),
    # AFTER hooks on the way out, innermost first.
    active = [h for h in hooks if h["active"]]
    original = {"position": None, "type": "original", "hook": data["resolved"] or data["target"]}
    steps = [("enter", h) for h in active if h["type"] in ("before", "around")]
    steps.append(("call", next((h for h in reversed(active) if h["type"] == "replace"), original)))
    steps += [("exit", h) for h in reversed(active) if h["type"] == "after"]
    data["call_flow"] = [
        {"phase": p, "position": h["position"], "type": h["type"], "hook": h["hook"]}
        for p, h in steps
    ]
    return data


def _import_modules(targets: list[dict[str, Any]], problems: Problems) -> None:
    """Import the modules of pending targets so their hooks apply now (``--import-targets``)."""
    from ..plugins.hook_registry import HookRegistry

    for target in (t["target"] for t in targets if t["status"] == "pending"):
        module, colon, _ = target.partition(":")
        parts = target.split(".")
        for name in (
            [module] if colon else [".".join(parts[:i]) for i in range(len(parts) - 1, 0, -1)]
        ):
            with guarded(f"the import of {name!r}") as call:
                if not import_if_module(name):
                    continue  # not a module: the next shorter prefix may be
            if call.error is not None:
                problems.add(
                    ERROR,
                    "hooks",
                    f"importing {name!r} for target {target!r} failed: {error_text(call.error)}",
                )
            break
    try:
        HookRegistry.apply_hooks()
    except Exception as exc:  # strict mode raises; the failed targets are in describe() either way
        problems.add(ERROR, "hooks", f"applying hooks failed: {error_text(exc)}")


def _hooks_on(
    target: str, plugins: set[str], distributions: set[Any]
) -> tuple[str, tuple[Any, Any, str]]:
    """How a problem about the hooks on ``target`` begins, and the plugin, distribution and target
    it names (a plugin or a distribution only where the hooks come from one)."""
    names = sorted(plugins)
    said = f"hooks on {target!r}" + (f" (from {', '.join(names)})" if names else "")
    plugin = names[0] if len(names) == 1 else None
    return said, (plugin, distributions.pop() if len(distributions) == 1 else None, target)


#: Why a module cannot be found, most of the time.
_NOT_FOUND = "a misspelled module, or a package that is not installed here"


def hooks_step(
    problems: Problems, import_targets: bool, judged: Judged, target: str | None = None
) -> dict[str, Any]:
    from ..plugins.hook_registry import HookRegistry
    from ._gate import host_not_installed, missing_module

    targets = [_target(r) for r in HookRegistry.describe(target)]
    if import_targets and targets:
        _import_modules(targets, problems)
        targets = [_target(r) for r in HookRegistry.describe(target)]
    for t in targets:
        name, status = t["target"], t["status"]
        sources = [h["source"] for h in t["hooks"] if h["source"]]
        releases = {r for s in sources for r in judged.get(s["distribution"], judged[None])[1]}
        hooks, where = _hooks_on(
            name,
            {s["plugin"] for s in sources if s["plugin"]},
            {s["distribution"] for s in sources},
        )
        missing = missing_module(name) if status == "pending" else None
        never = f"{hooks} never apply: module {missing!r} cannot be found"
        if status == "failed":
            problems.add(
                ERROR, "hooks", f"{hooks} failed: {t['error'] or 'see the registry log'}", *where
            )
        elif status == "pending" and import_targets:  # the deep check imported what it could
            why = never if missing else f"{hooks} never apply: {t['error'] or 'no resolution'}"
            problems.add(ERROR, "hooks", f"{why} (checked by importing the targets)", *where)
        elif missing is not None and not host_not_installed(name):
            problems.add(ERROR, "hooks", f"{never} ({_NOT_FOUND})", *where)
        elif absent := _absent(name, judged, releases | set(judged[None][1])):
            problems.add(WARNING, "hooks", f"{hooks} never apply{absent}", *where)
        # Pending on a module that can be found (or on SGLang, not installed here): they apply
        # when it is imported. Information, in the hooks table; --import-targets checks them now.
        for conflict in t["conflicts"]:
            problems.add(WARNING, "hooks", f"{name}: {conflict['message']}", *where)
    from ..plugins.hook_registry import describe_resolution_hooks

    steps = [r.to_dict() for r in describe_resolution_hooks(target)]
    return {
        "available": True,
        "unavailable_reason": None,
        "targets": targets,
        "resolution_hooks": steps,
    }


def _sglang_registry() -> dict[str, list[Any]]:
    """Hooks in released SGLang's own registry by target, if a plugin imported it."""
    module = sys.modules.get("sglang.srt.plugins.hook_registry")
    hooks = getattr(getattr(module, "HookRegistry", None), "_hooks", None)
    if not isinstance(hooks, dict):
        return {}
    return {str(t): list(entries) for t, entries in sorted(hooks.items()) if entries}


def _check_sglang_registry(problems: Problems, import_targets: bool) -> list[str]:
    """The targets of released SGLang's own registry, checked as its ``apply_hooks()`` resolves them
    at start-up: a module that cannot be found is an error; with ``--import-targets`` the module is
    imported and the attribute looked up, as SGLang will (``pkgutil.resolve_name``)."""
    import pkgutil

    from ._gate import missing_module

    registry = _sglang_registry()
    for target, entries in registry.items():
        sources = [s for *_, s in entries if s is not None]
        hooks, where = _hooks_on(
            target,
            {str(getattr(s, "plugin_name", s)) for s in sources},
            {getattr(s, "dist_name", None) for s in sources},
        )
        said = f"{hooks} in released SGLang's registry never apply"
        missing = missing_module(target)
        if missing is not None:
            problems.add(
                ERROR, "hooks", f"{said}: module {missing!r} cannot be found ({_NOT_FOUND})", *where
            )
        elif import_targets:
            owner, _, attribute = target.rpartition(".")
            with guarded(f"resolving {target!r} as SGLang's apply_hooks() does") as call:
                getattr(pkgutil.resolve_name(owner), attribute)
            if call.error is not None:
                problems.add(ERROR, "hooks", f"{said}: {error_text(call.error)}", *where)
    return list(registry)


#: Per distribution that offers a plugin (``None``: for a hook without one), the SGLang range it
#: declares and the releases its plugins are judged against: the range's, and the installed one.
Judged = dict[Any, tuple[Any, tuple[str, ...]]]


def _judged(discovery: DiscoveryResult, ns: PluginNamespace, problems: Problems) -> Judged:
    from .. import _sglang_releases as data
    from ._gate import declared_sglang_range

    installed = data.installed()[1]
    judged: Judged = {None: (None, (installed,) if installed else ())}
    for _kind, group in _groups(ns):
        for ep in discovery.group(group):
            if ep.distribution in judged:
                continue
            try:
                declared = declared_sglang_range(ep.path)
            # discovery read its METADATA (PKG-INFO) already: an egg-info's requires.txt is left
            except (OSError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
                where = getattr(exc, "filename", None) or os.path.join(ep.path, "requires.txt")
                problems.add(
                    WARNING,
                    "sglang",
                    f"cannot read the requirements of plugin {ep.name!r} ({ep.label}) in {where}: "
                    f"{describe_failure(exc)}; its SGLang range is not checked. Save that file as "
                    "UTF-8, or reinstall the distribution",
                    ep.name,
                    ep.distribution,
                )
                declared = None
            held = (data.releases_in(declared) or ()) if declared is not None else ()
            releases = tuple(r for r in data.releases() if r in held or r == installed)
            judged[ep.distribution] = (declared, releases)
    return judged


def _absent(target: str, judged: Judged, releases: set[str]) -> str | None:
    """Why hooks on ``target`` (in SGLang) never apply on some release, from the releases' module
    index: it is in none of them, or not in some of ``releases`` (those judged); ``None`` when no
    release lacks it or the index cannot tell."""
    from .. import _sglang_releases as data

    if re.split("[.:]", target)[0] != "sglang":
        return None
    every = data.releases()
    lacks = {release: data.missing(target, release) for release in every}
    present = [r for r in every if lacks[r] is None]
    if not present:
        return (
            f": {lacks[every[-1]]!r} is in no SGLang release with a plugin system "
            f"({every[0]} to {every[-1]}): a misspelling, or a name newer than SGLang {every[-1]}"
        )
    ordered = [r for r in every if r in releases]
    gaps = [r for r in ordered if lacks[r]]
    if not gaps:
        return None
    if judged[None][1] and judged[None][1][0] in gaps:
        tail = f"SGLang {judged[None][1][0]} is installed"
    elif gaps == ordered[: len(gaps)]:
        tail = f"the declared range starts at {ordered[0]}"
    else:
        tail = f"the declared range holds {data.describe(gaps)}"
    return (
        f" on SGLang {data.describe(gaps)}: {lacks[gaps[0]]!r} exists in SGLang "
        f"{data.describe(present)} only; {tail}"
    )


def _sglang_support(
    discovery: DiscoveryResult, ns: PluginNamespace, problems: Problems, judged: Judged
) -> Any:
    """The installed SGLang against the range each plugin's distribution declares (its requirement
    on ``sglang``: a generated package's extra ``sglang``), by the rule packages check at load."""
    from .. import _sglang_releases as data

    installed = data.installed()[0]
    rows, seen = [], set()
    for ep in [*discovery.group(ns.platform_group), *discovery.group(ns.plugin_group)]:
        if (key := (ep.name, ep.distribution)) in seen:
            continue
        seen.add(key)
        declared, releases = judged[ep.distribution]
        ok = None if installed is None or declared is None else data.in_range(installed, declared)
        rows.append(
            {
                "plugin": ep.name,
                "distribution": ep.distribution,
                "version": ep.version,
                "supports": declared,
                "status": {None: "not-checked", True: "supported", False: "unsupported"}[ok],
                "releases": list(releases),
            }
        )
        if ok is False:
            problems.add(
                WARNING,
                "sglang",
                f"plugin {ep.name!r} ({ep.distribution} {ep.version}) supports SGLang {declared}, "
                f"but SGLang {installed} is installed",
                ep.name,
                ep.distribution,
            )
    return {
        "installed": installed,
        "installed_release": judged[None][1][0] if judged[None][1] else None,
        "plugins": rows,
    }


def doctor_step(
    ns: PluginNamespace, problems: Problems, logs: LogCapture, args: Any
) -> dict[str, Any]:
    """Run the startup phase, selection, ``load_plugins()`` and hook application here, in a
    server process's order, and report every step."""
    discovery = discover_entry_points()
    found = _discovery(discovery, ns, problems)
    # --strict: plugin failures stop selection and loading, warnings fail
    strict = args.strict or ns.strict()
    startup_step(ns, problems, strict)
    judged = _judged(discovery, ns, problems)
    platform = _platform(ns, problems, logs, strict, judged)
    plugins = plugins_step(ns, problems, strict)
    theirs = _check_sglang_registry(problems, args.import_targets)
    hooks = hooks_step(problems, args.import_targets, judged)
    return {
        "discovery": {
            "distribution_count": len(discovery.distributions),
            **{f"{kind}_plugins": len(discovery.group(group)) for kind, group in _groups(ns)},
            **found,
        },
        "platform": platform,
        "plugins": plugins,
        "hooks": {**hooks, "sglang_registry_targets": theirs},
        "sglang": _sglang_support(discovery, ns, problems, judged),
        "log": logs.records,
    }


def explain_step(
    ns: PluginNamespace, problems: Problems, logs: LogCapture, args: Any
) -> dict[str, Any]:
    """Load the general plugins, then describe the hooks on ``args.target`` in the order they
    run."""
    from ..plugins.hook_registry import Target

    target = args.target
    try:
        wanted = None if target.isidentifier() else Target.parse(target)  # a resolution step
    except (ValueError, TypeError) as exc:
        raise InputError(f"explain: {exc}") from None
    strict = args.strict or ns.strict()
    startup_step(ns, problems, strict)
    try:  # as in a host process: the selected platform plugin's own hooks are registered too
        _selection.get_current_platform(ns, strict=strict)
    except Exception as exc:
        problems.add(
            WARNING,
            "selection",
            f"no platform could be selected ({error_text(exc)}): hooks its plugin registers are "
            "missing here; 'sglang-plugins doctor' says more",
        )
    plugins = plugins_step(ns, problems, strict)
    judged = _judged(discover_entry_points(), ns, problems)
    hooks = hooks_step(problems, args.import_targets, judged, target)
    found = next((t for t in hooks["targets"] if Target.parse(t["target"]) == wanted), None)
    # Only the problems about this target (or about loading) matter here.
    problems[:] = [
        p for p in problems if p["target"] in (None, found["target"] if found else target)
    ]
    steps = hooks["resolution_hooks"]
    if wanted is None and not steps:
        message = f"no plugin wraps SGLang's resolution step {target!r}"
        problems.add(WARNING, "explain", message, target=target)
    elif found is None and wanted is not None:
        message = f"no hook is registered on {target!r} by any loaded plugin"
        if wanted.dotted in {t.replace(":", ".") for t in _sglang_registry()}:
            message = (
                f"no hook is registered on {target!r} in this runtime's registry; released SGLang "
                "keeps its own registry, which has hooks on it: run sglang-plugins run -- "
                f"sglang-plugins explain {target}"
            )
        problems.add(WARNING, "explain", message, target=target)
        if absent := _absent(target, judged, set(judged[None][1])):
            problems.add(
                WARNING, "explain", f"hooks on {target!r} would never apply{absent}", target=target
            )
    from .. import _sglang_releases as data

    return {
        "target": target,
        "found": found is not None or bool(steps),
        "report": found,
        "releases": [r for r in data.releases() if data.missing(target, r) is None]
        if re.split("[.:]", target)[0] == "sglang"
        else None,
        "resolution_hooks": steps,
        "plugins": plugins,
        "log": logs.records,
    }


def contract_step(
    ns: PluginNamespace, problems: Problems, logs: LogCapture, args: Any
) -> dict[str, Any]:
    """The SGLang releases the runtime has data of, and with ``--diff`` what changed in the
    platform contract from one to another."""
    from .. import _sglang_releases as data

    changes = None
    if args.diff:
        try:
            changes = data.diff(*args.diff)
        except ValueError as exc:
            raise InputError(f"contract --diff: {exc}") from None
    installed, release = data.installed()
    return {
        "releases": list(data.releases()),
        "installed": installed,
        "installed_release": release,
        "diff": None
        if changes is None
        else {"from": args.diff[0], "to": args.diff[1], "changes": changes},
    }


def _comparison(argument: str) -> dict[str, Any]:
    """What ``--compare`` names: a file written by ``fingerprint --json`` (or a saved
    ``PluginFingerprint.to_dict()``), or a digest (at least its first 12 hex digits)."""
    other: dict[str, Any] = {"source": argument, "digest": None, "host": None, "fingerprint": None}
    where = f"fingerprint: --compare {argument!r}"
    how = (
        "give a file written by 'sglang-plugins fingerprint --json' on the other node, or its "
        "digest"
    )
    if re.fullmatch(r"[0-9a-fA-F]+", argument) and not os.path.exists(argument):
        if 12 <= len(argument) <= 64:
            return {**other, "digest": argument.lower()}
        raise InputError(
            f"{where}: no such file, and {argument!r} is {len(argument)} hex digits, no digest "
            f"(give at least its first 12, of 64); {how}"
        )
    try:
        with open(argument, "rb") as handle:
            # /dev/zero, a FIFO: endless or blocking
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise InputError(f"{where}: not a regular file; {how}")
            data = handle.read(_MAX_FINGERPRINT_BYTES + 1)
    except OSError as exc:
        raise InputError(f"{where}: cannot read it ({exc.strerror or exc}); {how}") from None
    if len(data) > _MAX_FINGERPRINT_BYTES:
        raise InputError(
            f"{where}: larger than {_MAX_FINGERPRINT_BYTES >> 20} MiB, so no fingerprint; {how}"
        )
    try:
        document = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, or nested too deeply
        raise InputError(f"{where}: not a fingerprint ({exc})") from None
    if isinstance(document, dict) and document.get("command") == "fingerprint":
        other["host"] = document.get("host") if isinstance(document.get("host"), str) else None
        document = document.get("fingerprint")
    if not isinstance(document, dict) or not {"format", "platform", "hooks"} <= set(document):
        raise InputError(
            f"{where}: not a fingerprint; write one with 'sglang-plugins fingerprint --json > FILE'"
        )
    return {**other, "fingerprint": document}


def fingerprint_step(
    ns: PluginNamespace, problems: Problems, logs: LogCapture, args: Any
) -> dict[str, Any]:
    """Select the platform and run ``load_plugins()`` here (as a fresh rank would), fingerprint the
    result, and compare it with what ``--compare`` names, when given."""
    from .._consistency import Participant, compare
    from .._fingerprint import digest_of, plugin_fingerprint
    from ..plugins import load_plugins

    other = _comparison(args.compare) if args.compare is not None else None
    try:
        load_plugins(ns, strict=args.strict or None)
    # strict mode: the fingerprint then says load_plugins() did not complete
    except Exception as exc:
        problems.add(
            ERROR,
            "plugins",
            f"load_plugins() raised {type(exc).__name__}: {exc}",
            getattr(exc, "plugin", None),
        )
    fingerprint, host = plugin_fingerprint(ns), socket.gethostname()
    mine, source = fingerprint.to_dict(), args.compare
    document = {
        "digest": fingerprint.digest,
        "host": host,
        "fingerprint": mine,
        "compared_with": None,
    }
    if other is None:
        return document
    theirs, rows = other.pop("fingerprint"), []
    if theirs is not None:  # a file: each item that differs (a digest only: the same or not)
        try:  # anyone's JSON: a damaged inner structure makes it no fingerprint (not a bug here)
            other["digest"], differences = (
                digest_of(theirs),
                compare(
                    [Participant(0, other["host"] or source, theirs), Participant(1, host, mine)]
                ),
            )
        except (LookupError, TypeError, AttributeError, ValueError, RecursionError) as exc:
            raise InputError(
                f"fingerprint: --compare {source!r}: not a fingerprint (damaged: "
                f"{type(exc).__name__})"
            ) from None
        where = f"{source} (host {other['host']})" if other["host"] else source
        for d in differences:
            value = {rank: v.value for v in d.variants for rank in v.ranks}
            problems.add(d.severity, "compare", f"{d.item}: here {value[1]}; in {where} {value[0]}")
            rows.append(
                {
                    "kind": d.kind,
                    "item": d.item,
                    "severity": d.severity,
                    "here": value[1],
                    "there": value[0],
                }
            )
    same = fingerprint.digest.startswith(other["digest"])
    if not same and theirs is None:
        problems.add(
            ERROR,
            "compare",
            f"this node's fingerprint {fingerprint.digest[:12]} differs from "
            f"{other['digest'][:12]}; compare with the other node's 'sglang-plugins fingerprint "
            "--json' file to see which items differ",
        )
    return {**document, "compared_with": {**other, "same": same, "differences": rows}}
