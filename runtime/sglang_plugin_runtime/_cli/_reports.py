"""The documents ``list``, ``doctor``, ``explain``, ``fingerprint`` and ``contract`` print: trees of
typed records that mirror the CLI's JSON schema (``cli-schema.json``: within a schema version fields
are only ever added, never renamed or removed), turned into JSON by :func:`encode` alone and into
text by ``_text`` from the same objects.

A record's JSON is its fields in order, under their Python names, so a hook, a plugin's outcome or
an entry point has one shape wherever it appears. Each command is one step (``<command>_step``) run
inside :func:`report`, which adds the envelope every document shares.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import logging
import os
import re
import socket
import stat
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib.metadata import PathDistribution
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from .. import _sglang_releases as releases_data
from .._consistency import Participant, compare
from .._discovery import (
    DiscoveryResult,
    MalformedDistribution,
    discover_entry_points,
    duplicate_reason,
)
from .._fingerprint import digest_of, fingerprint_hook, plugin_fingerprint
from .._namespace import PluginNamespace, get_namespace, import_if_module
from .._plugin_code import (
    PluginOutcome,
    Status,
    describe_failure,
    guarded,
    plugin_source,
    safe_text,
)
from .._simulated_device import TORCH_INSTALL, simulated_device
from ..errors import DuplicatePluginError
from ..platforms import _selection
from ..plugins._hooks._describe import Conflict, ResolutionHookReport, TargetReport
from ..plugins._loading import (
    load_plugins,
    load_startup_plugins,
    plan_plugins,
    plugin_load_report,
    reset_load_state,
)
from ._gate import host_not_installed, missing_module

ERROR, WARNING = "error", "warning"
_MAX_FINGERPRINT_BYTES = 16 << 20  # a fingerprint of thousands of hooks is well under 1 MiB
#: The version of the JSON documents (``cli-schema.json``): a field renamed or removed makes a new
#: one.
SCHEMA_VERSION = 2
#: Field metadata: the field's own fields stand in its record's place (a document's body in the
#: envelope, a plugin's outcome beside its log).
FLAT = {"flat": True}
#: Field metadata: the field is left out while it is ``None``.
OPTIONAL = {"optional": True}
#: Field metadata: the field is for the text only.
TEXT = {"text": True}


def encode(value: Any) -> Any:
    """``value`` as JSON: a record (a dataclass, or a named tuple) as its fields in order (a name
    that is a Python keyword without its trailing ``_``), as :data:`FLAT`, :data:`OPTIONAL` and
    :data:`TEXT` say."""
    if dataclasses.is_dataclass(value):
        data: dict[str, Any] = {}
        for f in dataclasses.fields(value):
            item = getattr(value, f.name)
            if f.metadata.get("flat"):
                data.update(encode(item))
            elif not (f.metadata.get("text") or (f.metadata.get("optional") and item is None)):
                data[f.name.rstrip("_")] = encode(item)
        return data
    if hasattr(value, "_asdict"):  # a named tuple
        value = value._asdict()
    if isinstance(value, dict):
        return {key: encode(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [encode(item) for item in value]
    return value


class InputError(ValueError):
    """An argument names something the command cannot use (a target, a ``--compare`` file); the
    message says why. The CLI reports it as a usage error."""


@dataclass(frozen=True, kw_only=True)
class Problem:
    severity: str
    step: str
    message: str
    plugin: str | None = None
    distribution: str | None = None
    target: str | None = None


class Problems(dict[Problem, None]):
    """Problems found while building a report, in the order found (its keys); one fault reached
    twice is one problem, found in one lookup (a report may hold thousands)."""

    def add(
        self, severity: str, step: str, message: str, about: object = None, **who: str | None
    ) -> None:
        """Add the problem; ``who``: the plugin, distribution and target it is about, or ``about``'s
        plugin and distribution (an exception, a plugin's outcome, the selection)."""
        if about is not None:
            who = {k: getattr(about, k, None) for k in ("plugin", "distribution")} | who
        self.setdefault(Problem(severity=severity, step=step, message=message, **who))


@dataclass
class Simulation:
    device_type: str
    device_count: int
    backend_module: str | None


@dataclass
class LogLine:
    level: str
    logger: str
    message: str


@dataclass
class EntryPoint:
    """A planned plugin; a listed name that is not installed has no distribution, version, ..."""

    name: str
    distribution: str | None
    version: str | None
    value: str | None
    path: str | None
    status: str
    reason: str


@dataclass
class Group:
    group: str
    kind: str
    entry_points: list[EntryPoint]


@dataclass
class Duplicate:
    group: str
    name: str
    distributions: list[str]


@dataclass
class Found:
    """What the scan found that is wrong (malformed distributions, duplicate names)."""

    malformed: list[MalformedDistribution]
    duplicates: list[Duplicate]


@dataclass
class ListDocument:
    distribution_count: int
    groups: list[Group]
    found: Found = field(metadata=FLAT)


@dataclass
class Discovery:
    distribution_count: int
    platform_plugins: int
    startup_plugins: int | None = field(metadata=OPTIONAL)
    general_plugins: int
    found: Found = field(metadata=FLAT)


@dataclass
class Run:
    """A plugin's outcome, with what the plugin logged while its code ran."""

    outcome: PluginOutcome = field(metadata=FLAT)
    log: list[str]


@dataclass
class Override:
    attribute: str
    kind: str
    message: str
    meaning: str = field(metadata=TEXT)
    """The message without the name it is about."""


@dataclass(kw_only=True)
class Platform:
    """The platform selected."""

    status: str = "selected"
    platform_class: str
    rule: str
    reason: str
    plugin: str | None
    distribution: str | None
    version: str | None
    error: None = None
    error_type: None = None
    seconds: float
    activations: list[Run]
    overrides: list[Override]


@dataclass(kw_only=True)
class FailedPlatform:
    """No platform selected: the fields of :class:`Platform` but the overrides, in the order
    schema version 2 prints them."""

    platform_class: None = None
    rule: None = None
    reason: None = None
    plugin: str | None
    distribution: str | None
    version: None = None
    status: str = "failed"
    error: str
    error_type: str
    seconds: float
    activations: list[Run]


@dataclass
class Plugins:
    status: str
    error: str | None
    startup: list[PluginOutcome]
    plugins: list[PluginOutcome]


@dataclass
class Source:
    plugin: str | None
    distribution: str | None


@dataclass
class Hook:
    """A registered hook, numbered outermost first, as the fingerprint shows it."""

    position: int
    type: str
    hook: str
    priority: int
    active: bool
    source: Source | None


@dataclass
class CallStep:
    phase: str
    position: int | None
    type: str
    hook: str


@dataclass
class Target:
    """One target's ``TargetReport``, with its hooks numbered and one call step by step."""

    target: str
    status: str
    error: str | None
    resolved: str | None
    hooks: list[Hook]
    conflicts: tuple[Conflict, ...]
    rebound: int
    call_flow: list[CallStep]


@dataclass
class Hooks:
    available: bool
    unavailable_reason: str | None
    targets: list[Target]
    resolution_hooks: list[ResolutionHookReport]
    sglang_registry_targets: list[str] = field(default_factory=list)


@dataclass
class Support:
    plugin: str
    distribution: str
    version: str
    supports: str | None
    status: str
    releases: list[str]


@dataclass
class SGLangSupport:
    installed: str | None
    installed_release: str | None
    plugins: list[Support]


@dataclass
class DoctorDocument:
    discovery: Discovery
    platform: Platform | FailedPlatform
    plugins: Plugins
    hooks: Hooks
    sglang: SGLangSupport
    log: list[LogLine]


@dataclass
class ExplainDocument:
    target: str
    found: bool
    report: Target | None
    releases: list[str] | None
    """The SGLang releases that have the target (``None``: a target outside SGLang)."""
    resolution_hooks: list[ResolutionHookReport]
    plugins: Plugins
    log: list[LogLine]


@dataclass
class Change:
    section: str
    name: str
    change: str
    before: Any
    after: Any


@dataclass
class Diff:
    from_: str
    to: str
    changes: list[Change]


@dataclass
class ContractDocument:
    releases: list[str]
    installed: str | None
    installed_release: str | None
    diff: Diff | None


@dataclass
class Difference:
    kind: str
    item: str
    severity: str
    here: Any
    there: Any


@dataclass
class Comparison:
    source: str
    digest: str | None
    host: str | None
    same: bool = False
    differences: list[Difference] = field(default_factory=list)


@dataclass
class FingerprintDocument:
    digest: str
    host: str
    fingerprint: dict[str, Any]
    compared_with: Comparison | None


Document = ListDocument | DoctorDocument | ExplainDocument | FingerprintDocument | ContractDocument


@dataclass
class Report:
    """The envelope every document shares, around its body."""

    schema_version: int
    command: str
    namespace: str
    simulated: bool
    simulation: Simulation | None
    environment: dict[str, str | None]
    healthy: bool
    exit_status: int
    problems: list[Problem]
    body: Document = field(metadata=FLAT)


class LogCapture(logging.Handler):
    """WARNING and worse records emitted while a report is built (plugins' own loggers included),
    and every record a platform plugin's own code logs while it is imported and activated (why it
    returned ``None``, usually)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[LogLine] = []
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
            self.records.append(LogLine(record.levelname, record.name, message))


@contextlib.contextmanager
def _captured(simulation: Simulation | None) -> Iterator[LogCapture]:
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
            simulated_device(**encode(simulation), privateuse1=True)
            if simulation
            else contextlib.nullcontext()
        ):
            yield handler
    finally:
        root.setLevel(level)
        root.removeHandler(handler)
        for other in raised:
            other.setLevel(logging.NOTSET)


def _simulation(args: argparse.Namespace) -> Simulation | None:
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
    except (
        Exception
    ) as exc:  # torch's own import failed (it reads every distribution's entry points)
        bad = "; ".join(f"{m.path} ({m.reason})" for m in discover_entry_points().malformed)
        raise InputError(
            f"--simulate: importing torch failed ({type(exc).__name__}: {exc}), as it will in "
            "SGLang's processes; "
            + (
                f"fix or remove the malformed distributions: {bad}"
                if bad
                else "fix torch's install"
            )
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
    return Simulation(device, count or 1, backend)


def _parses_as_device(torch: Any, name: str) -> bool:
    """Whether ``torch.device(name)`` accepts ``name`` (``torch.nn`` exists, but ``nn`` is no device
    type)."""
    try:
        torch.device(name)
    except (RuntimeError, ValueError):
        return False
    return True


def report(args: argparse.Namespace) -> Report:
    """The envelope every document shares, around what ``args.command``'s step makes of this
    process's plugins; :class:`InputError` when an argument is unusable."""
    steps: dict[str, Callable[..., Document]] = {
        "list": list_step,
        "doctor": doctor_step,
        "explain": explain_step,
        "fingerprint": fingerprint_step,
        "contract": contract_step,
    }
    ns, simulation, problems = get_namespace(args.namespace), _simulation(args), Problems()
    with _captured(simulation) as logs:
        body = steps[args.command](ns, problems, logs, args)
    failing = problems if args.strict else [p for p in problems if p.severity == ERROR]
    return Report(
        schema_version=SCHEMA_VERSION,
        command=args.command,
        namespace=ns.name,
        simulated=bool(simulation),
        simulation=simulation,
        environment={
            name: os.environ.get(name) for name in (ns.platform_env, ns.plugins_env, ns.strict_env)
        },
        healthy=not failing,
        exit_status=1 if failing else 0,
        problems=list(problems),
        body=body,
    )


def error_text(exc: BaseException) -> str:
    """``exc`` described, with its cause where its message does not already say it."""
    cause = exc.__cause__
    if cause is None or safe_text(cause) in safe_text(exc):
        return describe_failure(exc)
    return f"{describe_failure(exc)} (caused by {describe_failure(cause)})"


def _discovery(discovery: DiscoveryResult, ns: PluginNamespace, problems: Problems) -> Found:
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
            duplicates.append(Duplicate(group, name, [ep.distribution for ep in eps]))
            problems.add(
                ERROR,
                "discovery",
                f"entry point {name!r} in group {group!r}: {duplicate_reason(eps)}",
                plugin=name,
                distribution=eps[0].distribution,
            )
    return Found(list(discovery.malformed), duplicates)


def _allowlist(ns: PluginNamespace, problems: Problems) -> None:
    """``SGLANG_PLUGINS`` set to something that names no plugin (``","``) disables every general
    plugin."""
    if ns.allowed_plugins() == frozenset():
        env = ns.plugins_env
        problems.add(
            WARNING,
            "plugins",
            f"{env}={os.environ.get(env, '')!r} names no plugin, so no general "
            "plugin is loaded; unset it to load them all, or list the ones to load "
            f"({env}=name1,name2)",
        )


def _groups(ns: PluginNamespace) -> list[tuple[str, str]]:
    """``(kind, group)`` of every entry-point group of ``ns``, in the order a process loads them."""
    startup = [("startup", ns.startup_group)] if ns.startup_group else []
    return [("platform", ns.platform_group), *startup, ("general", ns.plugin_group)]


def list_step(
    ns: PluginNamespace, problems: Problems, logs: LogCapture, args: argparse.Namespace
) -> ListDocument:
    """Every entry point of ``ns`` and what the environment would make of it (the plans selection
    and loading follow); imports nothing."""
    discovery = discover_entry_points()
    found = _discovery(discovery, ns, problems)
    platforms, error = _selection.plan_platforms(ns, discovery)
    # duplicates: a discovery problem
    if error is not None and not isinstance(error, DuplicatePluginError):
        problems.add(ERROR, "selection", str(error), error)
    _allowlist(ns, problems)
    groups = []
    for kind, group in _groups(ns):
        plan = platforms if kind == "platform" else plan_plugins(ns, discovery, group)
        for p in plan:
            if p.entry_point is None:
                problems.add(
                    WARNING, "plugins", f"plugin {p.name!r} {p.status}: {p.reason}", plugin=p.name
                )
        entry_points = [
            EntryPoint(
                name=p.name,
                status=p.status,
                reason=p.reason,
                **{
                    key: getattr(p.entry_point, key, None)
                    for key in ("distribution", "version", "value", "path")
                },
            )
            for p in plan
        ]
        groups.append(Group(group, kind, entry_points))
    return ListDocument(len(discovery.distributions), groups, found)


def _runs(outcomes: Any, logs: LogCapture) -> list[Run]:
    return [Run(o, logs.plugin_lines.get((o.plugin, o.distribution), [])) for o in outcomes]


def _platform(
    ns: PluginNamespace, problems: Problems, logs: LogCapture, strict: bool, judged: Judged
) -> Platform | FailedPlatform:
    from ..platforms._describe import find_override_problems, release_problems

    _selection.reset_current_platform(ns)
    start = time.perf_counter()
    try:
        cls = type(_selection.get_current_platform(ns, strict=strict))
    except Exception as exc:
        error = error_text(exc)
        problems.add(ERROR, "selection", f"no platform could be selected: {error}", exc)
        return FailedPlatform(
            plugin=getattr(exc, "plugin", None),
            distribution=getattr(exc, "distribution", None),
            error=error,
            error_type=type(exc).__name__,
            seconds=time.perf_counter() - start,
            activations=_runs(getattr(exc, "outcomes", ()), logs),
        )
    seconds, selection = time.perf_counter() - start, _selection.current_platform_selection(ns)
    for a in selection.activations:
        if not a.ok:
            problems.add(
                ERROR,
                "selection",
                f"platform plugin {a.plugin!r} failed and was skipped: {a.reason}",
                a,
            )
    if (
        selection.rule == _selection.Rule.FALLBACK
        and selection.activations
        and not selection.problems
    ):
        problems.add(
            WARNING,
            "selection",
            f"no installed platform plugin activated; using the fallback {selection.class_path}",
        )
    # What the class's public names mean to SGLang: a likely misspelling is a warning.
    findings = find_override_problems(cls)
    for finding in findings:
        if finding.kind == "misspelled":
            problems.add(WARNING, "selection", finding.message)
    if selection.plugin is not None:  # against the releases its distribution declares
        releases = judged[selection.distribution][1]
        for finding in release_problems(cls, releases):
            if finding.kind == "uncalled" and len(finding.releases) < len(releases):
                findings.append(finding)  # information: other judged releases call it
            else:
                problems.add(WARNING, "sglang", finding.message, selection)
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
                    selection,
                )
    return Platform(
        platform_class=selection.class_path,
        rule=selection.rule,
        reason=selection.reason,
        plugin=selection.plugin,
        distribution=selection.distribution,
        version=selection.version,
        seconds=seconds,
        activations=_runs(selection.activations, logs),
        # the finding's message names its class and member: the table's rows name them already
        overrides=[
            Override(f.attribute, f.kind, f.message, f.message.partition(": ")[2]) for f in findings
        ],
    )


def _stopped(load: Any, ns: PluginNamespace, problems: Problems, strict: bool) -> str | None:
    """Run ``load`` (``load_plugins`` or its startup phase) here; the error that stopped it."""
    try:
        load(ns, strict=strict)
    except Exception as exc:
        error = error_text(exc)
        problems.add(ERROR, "plugins", f"loading plugins stopped: {error}", exc)
        return error
    return None


def startup_step(ns: PluginNamespace, problems: Problems, strict: bool) -> None:
    """Run the startup phase here before selection, as the launcher and an adopted SGLang do (when
    ``sglang`` is imported): a startup plugin may be what lets a platform's ``activate()`` find
    its device."""
    _allowlist(ns, problems)
    reset_load_state(ns)
    _stopped(load_startup_plugins, ns, problems, strict)


def plugins_step(ns: PluginNamespace, problems: Problems, strict: bool) -> Plugins:
    """Run ``load_plugins()`` here (after :func:`startup_step` and selection), and report what each
    plugin did."""
    error = _stopped(load_plugins, ns, problems, strict)
    phases = []
    for group in (ns.startup_group, ns.plugin_group):
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
                    o,
                )
        phases.append(list(outcomes))
    return Plugins("failed" if error else "loaded", error, *phases)


def _target(report: TargetReport) -> Target:
    """One ``TargetReport`` with its hooks numbered outermost first and one call step by step."""
    hooks = [
        Hook(
            position,
            h.type,
            fingerprint_hook(h)["hook"],
            h.priority,
            h.active,
            Source(h.plugin, h.distribution) if h.plugin or h.distribution else None,
        )
        for position, h in enumerate(report.hooks, start=1)
    ]
    # BEFORE and AROUND hooks on the way in (outermost first), the active REPLACE (or the original),
    # AFTER hooks on the way out, innermost first.
    active = [h for h in hooks if h.active]
    flow = [
        CallStep("enter", h.position, h.type, h.hook)
        for h in active
        if h.type in ("before", "around")
    ]
    flow.append(
        next(
            (
                CallStep("call", h.position, h.type, h.hook)
                for h in reversed(active)
                if h.type == "replace"
            ),
            CallStep("call", None, "original", report.resolved or report.target),
        )
    )
    flow += [
        CallStep("exit", h.position, h.type, h.hook) for h in active[::-1] if h.type == "after"
    ]
    # the report's own fields, but its hooks numbered
    return Target(**{**vars(report), "hooks": hooks, "call_flow": flow})


def _import_modules(targets: list[Target], problems: Problems) -> None:
    """Import the modules of pending targets so their hooks apply now (``--import-targets``)."""
    from ..plugins.hook_registry import HookRegistry

    for target in (t.target for t in targets if t.status == "pending"):
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
) -> tuple[str, dict[str, Any]]:
    """How a problem about the hooks on ``target`` begins, and the plugin, distribution and target
    it names (a plugin or a distribution only where the hooks come from one)."""
    names = sorted(plugins)
    said = f"hooks on {target!r}" + (f" (from {', '.join(names)})" if names else "")
    plugin = names[0] if len(names) == 1 else None
    distribution = distributions.pop() if len(distributions) == 1 else None
    return said, {"plugin": plugin, "distribution": distribution, "target": target}


#: Why a module cannot be found, most of the time.
_NOT_FOUND = "a misspelled module, or a package that is not installed here"


def hooks_step(
    problems: Problems, import_targets: bool, judged: Judged, target: str | None = None
) -> Hooks:
    from ..plugins.hook_registry import HookRegistry

    targets = [_target(r) for r in HookRegistry.describe(target)]
    if import_targets and targets:
        _import_modules(targets, problems)
        targets = [_target(r) for r in HookRegistry.describe(target)]
    for t in targets:
        name, status = t.target, t.status
        sources = [h.source for h in t.hooks if h.source]
        releases = {r for s in sources for r in judged.get(s.distribution, judged[None])[1]}
        hooks, who = _hooks_on(
            name, {s.plugin for s in sources if s.plugin}, {s.distribution for s in sources}
        )
        missing = missing_module(name) if status == "pending" else None
        never = f"{hooks} never apply: module {missing!r} cannot be found"
        severity, message = ERROR, ""
        if status == "failed":
            message = f"{hooks} failed: {t.error or 'see the registry log'}"
        elif status == "pending" and import_targets:  # the deep check imported what it could
            why = never if missing else f"{hooks} never apply: {t.error or 'no resolution'}"
            message = f"{why} (checked by importing the targets)"
        elif missing is not None and not host_not_installed(name):
            message = f"{never} ({_NOT_FOUND})"
        elif absent := _absent(name, judged, releases | set(judged[None][1])):
            severity, message = WARNING, f"{hooks} never apply{absent}"
        # Pending on a module that can be found (or on SGLang, not installed here): they apply
        # when it is imported. Information, in the hooks table; --import-targets checks them now.
        if message:
            problems.add(severity, "hooks", message, **who)
        for c in t.conflicts:
            problems.add(WARNING, "hooks", f"{name}: {c.message}", **who)
    from ..plugins.hook_registry import describe_resolution_hooks

    return Hooks(True, None, targets, list(describe_resolution_hooks(target)))


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

    registry = _sglang_registry()
    for target, entries in registry.items():
        sources = [s for *_, s in entries if s is not None]
        hooks, who = _hooks_on(
            target,
            {str(getattr(s, "plugin_name", s)) for s in sources},
            {getattr(s, "dist_name", None) for s in sources},
        )
        said = f"{hooks} in released SGLang's registry never apply"
        missing = missing_module(target)
        if missing is not None:
            problems.add(
                ERROR, "hooks", f"{said}: module {missing!r} cannot be found ({_NOT_FOUND})", **who
            )
        elif import_targets:
            owner, _, attribute = target.rpartition(".")
            with guarded(f"resolving {target!r} as SGLang's apply_hooks() does") as call:
                getattr(pkgutil.resolve_name(owner), attribute)
            if call.error is not None:
                problems.add(ERROR, "hooks", f"{said}: {error_text(call.error)}", **who)
    return list(registry)


#: Per distribution that offers a plugin (``None``: for a hook without one), the SGLang range it
#: declares and the releases its plugins are judged against: the range's, and the installed one.
Judged = dict[Any, tuple[Any, tuple[str, ...]]]


def _judged(discovery: DiscoveryResult, ns: PluginNamespace, problems: Problems) -> Judged:
    installed = releases_data.installed()[1]
    judged: Judged = {None: (None, (installed,) if installed else ())}
    for _kind, group in _groups(ns):
        for ep in discovery.group(group):
            if ep.distribution in judged:
                continue
            try:
                # the range of its requirement on sglang (an extra's or its own; "": any), or None
                declared = releases_data.sglang_range(PathDistribution(Path(ep.path)).requires)
            # discovery read its METADATA (PKG-INFO) already: an egg-info's requires.txt is left
            except (OSError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
                where = getattr(exc, "filename", None) or os.path.join(ep.path, "requires.txt")
                problems.add(
                    WARNING,
                    "sglang",
                    f"cannot read the requirements of plugin {ep.name!r} ({ep.label}) "
                    f"in {where}: {describe_failure(exc)}; its SGLang range is not checked. "
                    "Save that file as UTF-8, or reinstall the distribution",
                    plugin=ep.name,
                    distribution=ep.distribution,
                )
                declared = None
            held = (releases_data.releases_in(declared) or ()) if declared is not None else ()
            releases = tuple(r for r in releases_data.releases() if r in held or r == installed)
            judged[ep.distribution] = (declared, releases)
    return judged


def _absent(target: str, judged: Judged, releases: set[str]) -> str | None:
    """Why hooks on ``target`` (in SGLang) never apply on some release, from the releases' module
    index: it is in none of them, or not in some of ``releases`` (those judged); ``None`` when no
    release lacks it or the index cannot tell."""
    if re.split("[.:]", target)[0] != "sglang":
        return None
    every = releases_data.releases()
    lacks = {release: releases_data.missing(target, release) for release in every}
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
        tail = f"the declared range holds {releases_data.describe(gaps)}"
    return (
        f" on SGLang {releases_data.describe(gaps)}: {lacks[gaps[0]]!r} exists in SGLang "
        f"{releases_data.describe(present)} only; {tail}"
    )


def _sglang_support(
    discovery: DiscoveryResult, ns: PluginNamespace, problems: Problems, judged: Judged
) -> SGLangSupport:
    """The installed SGLang against the range each plugin's distribution declares (its requirement
    on ``sglang``: a generated package's extra ``sglang``), by the rule packages check at load."""
    installed, release = releases_data.installed()
    rows, seen = [], set()
    for ep in [*discovery.group(ns.platform_group), *discovery.group(ns.plugin_group)]:
        if (key := (ep.name, ep.distribution)) in seen:
            continue
        seen.add(key)
        declared, releases = judged[ep.distribution]
        ok = (
            None
            if installed is None or declared is None
            else releases_data.in_range(installed, declared)
        )
        status = {None: "not-checked", True: "supported", False: "unsupported"}[ok]
        rows.append(Support(ep.name, ep.distribution, ep.version, declared, status, list(releases)))
        if ok is False:
            problems.add(
                WARNING,
                "sglang",
                f"plugin {ep.name!r} ({ep.distribution} {ep.version}) supports SGLang "
                f"{declared}, but SGLang {installed} is installed",
                plugin=ep.name,
                distribution=ep.distribution,
            )
    return SGLangSupport(installed, release, rows)


def doctor_step(
    ns: PluginNamespace, problems: Problems, logs: LogCapture, args: argparse.Namespace
) -> DoctorDocument:
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
    hooks.sglang_registry_targets = theirs
    count = {kind: len(discovery.group(group)) for kind, group in _groups(ns)}
    return DoctorDocument(
        Discovery(
            len(discovery.distributions),
            count["platform"],
            count.get("startup"),
            count["general"],
            found,
        ),
        platform,
        plugins,
        hooks,
        _sglang_support(discovery, ns, problems, judged),
        logs.records,
    )


def explain_step(
    ns: PluginNamespace, problems: Problems, logs: LogCapture, args: argparse.Namespace
) -> ExplainDocument:
    """Load the general plugins, then describe the hooks on ``args.target`` in the order they
    run."""
    from ..plugins.hook_registry import Target as TargetName

    target = args.target
    try:
        wanted = None if target.isidentifier() else TargetName.parse(target)  # a resolution step
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
            f"no platform could be selected ({error_text(exc)}): hooks its plugin "
            "registers are missing here; 'sglang-plugins doctor' says more",
        )
    plugins = plugins_step(ns, problems, strict)
    judged = _judged(discover_entry_points(), ns, problems)
    hooks = hooks_step(problems, args.import_targets, judged, target)
    found = next((t for t in hooks.targets if TargetName.parse(t.target) == wanted), None)
    # Only the problems about this target (or about loading) matter here.
    for p in [p for p in problems if p.target not in (None, found.target if found else target)]:
        del problems[p]
    steps = hooks.resolution_hooks
    messages = []
    if wanted is None and not steps:
        messages.append(f"no plugin wraps SGLang's resolution step {target!r}")
    elif found is None and wanted is not None:
        message = f"no hook is registered on {target!r} by any loaded plugin"
        if wanted.dotted in {t.replace(":", ".") for t in _sglang_registry()}:
            message = (
                f"no hook is registered on {target!r} in this runtime's registry; released SGLang "
                "keeps its own registry, which has hooks on it: run sglang-plugins run -- "
                f"sglang-plugins explain {target}"
            )
        messages.append(message)
        if absent := _absent(target, judged, set(judged[None][1])):
            messages.append(f"hooks on {target!r} would never apply{absent}")
    for message in messages:
        problems.add(WARNING, "explain", message, target=target)
    in_sglang = re.split("[.:]", target)[0] == "sglang"
    return ExplainDocument(
        target,
        found is not None or bool(steps),
        found,
        [r for r in releases_data.releases() if releases_data.missing(target, r) is None]
        if in_sglang
        else None,
        steps,
        plugins,
        logs.records,
    )


def contract_step(
    ns: PluginNamespace, problems: Problems, logs: LogCapture, args: argparse.Namespace
) -> ContractDocument:
    """The SGLang releases the runtime has data of, and with ``--diff`` what changed in the
    platform contract from one to another."""
    diff = None
    if args.diff:
        try:
            before, after = args.diff
            diff = Diff(before, after, [Change(**c) for c in releases_data.diff(before, after)])
        except ValueError as exc:
            raise InputError(f"contract --diff: {exc}") from None
    installed, release = releases_data.installed()
    return ContractDocument(list(releases_data.releases()), installed, release, diff)


def _comparison(argument: str) -> tuple[Comparison, dict[str, Any] | None]:
    """What ``--compare`` names: a file written by ``fingerprint --json`` (or a saved
    ``PluginFingerprint.to_dict()``), or a digest (at least its first 12 hex digits); and the
    fingerprint the file holds."""
    where = f"fingerprint: --compare {argument!r}"
    how = (
        "give a file written by 'sglang-plugins fingerprint --json' on the other node, or its "
        "digest"
    )
    if re.fullmatch(r"[0-9a-fA-F]+", argument) and not os.path.exists(argument):
        if 12 <= len(argument) <= 64:
            return Comparison(argument, argument.lower(), None), None
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
    other = Comparison(argument, None, None)
    if isinstance(document, dict) and document.get("command") == "fingerprint":
        other.host = document.get("host") if isinstance(document.get("host"), str) else None
        document = document.get("fingerprint")
    if not isinstance(document, dict) or not {"format", "platform", "hooks"} <= set(document):
        raise InputError(
            f"{where}: not a fingerprint; write one with 'sglang-plugins fingerprint --json > FILE'"
        )
    return other, document


def fingerprint_step(
    ns: PluginNamespace, problems: Problems, logs: LogCapture, args: argparse.Namespace
) -> FingerprintDocument:
    """Select the platform and run ``load_plugins()`` here (as a fresh rank would), fingerprint the
    result, and compare it with what ``--compare`` names, when given."""
    other, theirs = _comparison(args.compare) if args.compare is not None else (None, None)
    try:
        load_plugins(ns, strict=args.strict or None)
    # strict mode: the fingerprint then says load_plugins() did not complete
    except Exception as exc:
        problems.add(
            ERROR,
            "plugins",
            f"load_plugins() raised {type(exc).__name__}: {exc}",
            plugin=getattr(exc, "plugin", None),
        )
    fingerprint, host = plugin_fingerprint(ns), socket.gethostname()
    mine, source = fingerprint.to_dict(), args.compare
    document = FingerprintDocument(fingerprint.digest, host, mine, other)
    if other is None:
        return document
    if theirs is not None:  # a file: each item that differs (a digest only: the same or not)
        try:  # anyone's JSON: a damaged inner structure makes it no fingerprint (not a bug here)
            other.digest, differences = (
                digest_of(theirs),
                compare([Participant(0, other.host or source, theirs), Participant(1, host, mine)]),
            )
        except (LookupError, TypeError, AttributeError, ValueError, RecursionError) as exc:
            raise InputError(
                f"fingerprint: --compare {source!r}: not a fingerprint (damaged: "
                f"{type(exc).__name__})"
            ) from None
        where = f"{source} (host {other.host})" if other.host else source
        for d in differences:
            value = {rank: v.value for v in d.variants for rank in v.ranks}
            problems.add(d.severity, "compare", f"{d.item}: here {value[1]}; in {where} {value[0]}")
            other.differences.append(Difference(d.kind, d.item, d.severity, value[1], value[0]))
    other.same = fingerprint.digest.startswith(str(other.digest))
    if not other.same and theirs is None:
        problems.add(
            ERROR,
            "compare",
            f"this node's fingerprint {fingerprint.digest[:12]} differs from "
            f"{str(other.digest)[:12]}; compare with the other node's 'sglang-plugins "
            "fingerprint --json' file to see which items differ",
        )
    return document
