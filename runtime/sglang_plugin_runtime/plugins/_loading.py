"""Loading general plugins: filter, import with attribution, run ``register()``, record what happened.

Written once for every namespace. The public functions with SGLang's signatures live in
:mod:`sglang_plugin_runtime.plugins`.
"""

# No ``from __future__ import annotations`` here: typing.NamedTuple would compile a ForwardRef for every
# string annotation of its fields, a cost paid by every process at start-up.
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from .._discovery import DiscoveryResult, PluginEntryPoint, discover_entry_points, normalize_distribution_name
from .._forking import after_fork_in_child
from .._namespace import PluginNamespace, known_namespaces
from .._plugin_code import describe_failure, is_plugin_failure, note_interrupt
from ..errors import DuplicatePluginError, PluginLoadError
from ._hooks._registry import active_registry
from ._hooks._types import HookSource, _current_plugin_source

logger = logging.getLogger(__name__)

# Statuses of a general plugin; part of the CLI's JSON schema, so values only ever get added.
LOADED = "loaded"
SKIPPED_ALLOWLIST = "skipped-allowlist"
SKIPPED_PLATFORM = "skipped-unselected-platform"
FAILED_IMPORT = "failed-import"
FAILED_REGISTER = "failed-register"
FAILED_DUPLICATE = "failed-duplicate"
NOT_INSTALLED = "not-installed"


class PluginRecord(NamedTuple):
    """What happened to one general plugin."""

    plugin: str
    status: str
    reason: str = ""
    dist_name: str | None = None
    dist_version: str | None = None
    value: str | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.status.startswith("failed") and self.status != NOT_INSTALLED

    def to_dict(self) -> dict[str, Any]:
        return {
            "plugin": self.plugin,
            "status": self.status,
            "reason": self.reason,
            "distribution": self.dist_name,
            "version": self.dist_version,
            "value": self.value,
            "seconds": self.seconds,
        }


class LoadReport:
    """Everything :func:`load_general_plugins` did in this process for one namespace."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.records: list[PluginRecord] = []
        self.completed = False

    @property
    def problems(self) -> list[PluginRecord]:
        return [r for r in self.records if not r.ok]

    def __repr__(self) -> str:
        plugins = ", ".join(f"{r.plugin}: {r.status}" for r in self.records) or "no plugins"
        state = "" if self.completed else ", incomplete"
        return f"LoadReport({self.namespace}: {plugins}{state})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "completed": self.completed,
            "plugins": [r.to_dict() for r in self.records],
        }


def namespace_for_group(group: str, default: PluginNamespace) -> PluginNamespace:
    for namespace in known_namespaces():
        if group in (namespace.plugin_group, namespace.platform_group):
            return namespace
    return default


def unselected_platform_dists(namespace: PluginNamespace, discovery: DiscoveryResult) -> set[str]:
    """Distributions offering only platforms other than the one ``SGLANG_PLATFORM`` selects.

    A distribution that offers the selected platform is never in the set, even when it offers others too.
    """
    selected = namespace.selected_platform()
    if not selected:
        return set()
    offering: dict[str, bool] = {}
    for ep in discovery.group(namespace.platform_group):
        offering[ep.dist_name] = offering.get(ep.dist_name, False) or ep.name == selected
    return {dist for dist, offers_selected in offering.items() if not offers_selected}


def _record(ep: PluginEntryPoint, status: str, reason: str = "", *, seconds: float = 0.0) -> PluginRecord:
    return PluginRecord(ep.name, status, reason, ep.dist_name, ep.dist_version, ep.value, seconds)


def _source_for(ep: PluginEntryPoint) -> HookSource:
    return HookSource(plugin_name=ep.name, dist_name=ep.dist_name)


def _attributed(ep: PluginEntryPoint, action: Callable[[], Any]) -> Any:
    """Run ``action`` with ``ep`` as the current plugin source, so hooks it registers are attributed to it."""
    token = _current_plugin_source.set(_source_for(ep))
    try:
        return action()
    finally:
        _current_plugin_source.reset(token)


def _fail(
    report: LoadReport | None, record: PluginRecord, strict: bool, strict_env: str, error: BaseException | None
) -> None:
    if report is not None:
        report.records.append(record)
    where = f"plugin {record.plugin!r}" + (
        f" (distribution {record.dist_name} {record.dist_version})" if record.dist_name else ""
    )
    message = f"General {where} failed: {record.reason}"
    if strict:
        raise PluginLoadError(
            f"{message} ({strict_env}=1 makes this an error)", plugin=record.plugin, dist=record.dist_name
        ) from error
    logger.warning("%s. It was skipped; the other plugins are unaffected.", message)


def load_entry_points(
    group: str,
    namespace: PluginNamespace,
    *,
    excluded_dists: Iterable[str] | None = None,
    apply_allowlist: bool,
    report: LoadReport | None = None,
    discovery: DiscoveryResult | None = None,
    skip: Iterable[str] = (),
) -> dict[str, tuple[Callable[..., Any], str | None]]:
    """Import the entry points of ``group`` and return ``{name: (callable, dist_name)}``, in sorted order.

    Imports run with the plugin as the current hook source. Failures are recorded in ``report`` and logged
    (strict mode raises); they never stop the other plugins. Entry points named in ``skip`` are left alone.
    """
    skip = frozenset(skip)
    discovery = discovery if discovery is not None else discover_entry_points()
    strict = namespace.strict()
    excluded = {normalize_distribution_name(d) for d in (excluded_dists or ())}
    allowed = namespace.allowed_plugins() if apply_allowlist else None
    entries = discovery.group(group)
    duplicates = discovery.duplicates(group)
    if allowed is not None and not allowed:
        logger.warning(
            "%s=%r names no plugin, so no general plugin in group %r is loaded (as in SGLang). Unset %s to load "
            "them all, or list the ones to load: %s=name1,name2.",
            namespace.plugins_env,
            os.environ.get(namespace.plugins_env, ""),
            group,
            namespace.plugins_env,
            namespace.plugins_env,
        )
    if allowed is not None:
        for missing in sorted(allowed - {ep.name for ep in entries}):
            logger.warning(
                "%s lists %r, but it is not installed: no plugin of that name in group %r. "
                "Check the spelling or install it.",
                namespace.plugins_env,
                missing,
                group,
            )
            if report is not None:
                report.records.append(
                    PluginRecord(missing, NOT_INSTALLED, f"listed in {namespace.plugins_env} but not installed")
                )
    loaded: dict[str, tuple[Callable[..., Any], str | None]] = {}
    for ep in entries:
        if ep.name in skip:
            continue
        if allowed is not None and ep.name not in allowed:
            logger.info("Skipping plugin %r: not in %s", ep.name, namespace.plugins_env)
            if report is not None:
                report.records.append(_record(ep, SKIPPED_ALLOWLIST, f"not in {namespace.plugins_env}"))
            continue
        if ep.dist_name in excluded:
            selected = namespace.selected_platform()
            reason = f"its distribution offers only platforms other than {namespace.platform_env}={selected!r}"
            logger.info("Skipping plugin %r (%s): %s", ep.name, ep.dist_label, reason)
            if report is not None:
                report.records.append(_record(ep, SKIPPED_PLATFORM, reason))
            continue
        if ep.name in duplicates:
            dists = " and ".join(other.dist_label for other in duplicates[ep.name])
            reason = f"the name {ep.name!r} is offered by {dists}; uninstall one of them"
            if strict:
                raise DuplicatePluginError(
                    f"Plugin name {ep.name!r} in group {group!r}: {reason}", plugin=ep.name, dist=ep.dist_name
                )
            _fail(report, _record(ep, FAILED_DUPLICATE, reason), False, namespace.strict_env, None)
            continue
        start = time.perf_counter()
        failure: tuple[str, BaseException | None] | None = None
        try:
            func = _attributed(ep, ep.load)
        except BaseException as exc:
            if not is_plugin_failure(exc):
                note_interrupt(exc, f"the import of plugin {ep.name!r} ({ep.dist_label})")
                raise
            failure = (f"import of {ep.value!r} failed: {describe_failure(exc)}", exc)
        else:
            if not callable(func):
                failure = (
                    f"the entry point {ep.value!r} names {type(func).__name__} {func!r}, not a function; it must "
                    f"name the plugin's function (register() for a general plugin, activate() for a platform plugin)",
                    None,
                )
        if failure is not None:
            reason, error = failure
            _discard_hooks(ep)
            record = _record(ep, FAILED_IMPORT, reason, seconds=time.perf_counter() - start)
            _fail(report, record, strict, namespace.strict_env, error)
            continue
        loaded[ep.name] = (func, ep.dist_name)
    return loaded


def _discard_hooks(ep: PluginEntryPoint) -> None:
    """Drop hooks a failed plugin registered before failing, so nothing half-done gets applied."""
    active_registry().discard_source(_source_for(ep))


class _LoadState:
    """Per-process, per-namespace state of :func:`load_general_plugins`."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.report: LoadReport | None = None
        self.loading = False
        #: Plugins whose ``register()`` completed in an attempt that failed later (strict mode): a retry keeps
        #: their hooks and does not run them again, so each hook is registered once.
        self.done: dict[str, PluginRecord] = {}

    def after_fork(self) -> None:
        # The child inherits registered and applied hooks (they live in its copied memory), so a completed load
        # stays completed; an in-flight one (another thread of the parent) did not survive the fork.
        self.lock = threading.RLock()
        self.loading = False
        if self.report is not None and not self.report.completed:
            self.report = None
            self.done.clear()


_STATES: dict[str, _LoadState] = {}


def _state(namespace: PluginNamespace) -> _LoadState:
    return _STATES.setdefault(namespace.name, _LoadState())


def last_load_report(namespace: PluginNamespace) -> LoadReport | None:
    return _STATES[namespace.name].report if namespace.name in _STATES else None


def reset_load_state(namespace: PluginNamespace | None = None) -> None:
    """Forget that plugins were loaded (tests); hooks are reset separately via ``HookRegistry.reset()``."""
    for name, state in list(_STATES.items()):
        if namespace is None or name == namespace.name:
            with state.lock:
                state.report = None
                state.done.clear()


def load_general_plugins(namespace: PluginNamespace) -> LoadReport:
    """Load ``namespace``'s general plugins once per process, then apply the registered hooks.

    Idempotent: later calls only re-apply hooks (cheap; picks up hooks registered since). A re-entrant call
    from inside a plugin's ``register()`` returns the report in progress. If discovery itself fails, nothing
    is marked as loaded, so the next call tries again.
    """
    state = _state(namespace)
    with state.lock:
        if state.loading:
            assert state.report is not None
            return state.report
        if state.report is not None and state.report.completed:
            _apply_hooks(namespace)
            return state.report
        state.loading = True
        try:
            discovery = discover_entry_points()
            report = LoadReport(namespace.name)
            state.report = report
            plugins = load_entry_points(
                namespace.plugin_group,
                namespace,
                excluded_dists=unselected_platform_dists(namespace, discovery),
                apply_allowlist=True,
                report=report,
                discovery=discovery,
                skip=state.done,
            )
            eps = {ep.name: ep for ep in discovery.group(namespace.plugin_group)}
            for name, (func, _dist) in plugins.items():
                if _run_register(eps[name], func, namespace, report):
                    state.done[name] = report.records[-1]
            report.records.extend(record for name, record in state.done.items() if name not in plugins)
            report.completed = True
            state.done.clear()
        except BaseException:
            state.report = None
            raise
        finally:
            state.loading = False
    _apply_hooks(namespace)
    return report


def _apply_hooks(namespace: PluginNamespace) -> None:
    """Apply the registered hooks; the namespace's own strict variable makes failures raise."""
    active_registry().apply_hooks(strict=True if namespace.strict() else None)


def _run_register(
    ep: PluginEntryPoint, func: Callable[..., Any], namespace: PluginNamespace, report: LoadReport
) -> bool:
    """Run one plugin's function; return whether it completed (failures are recorded, or raised when strict)."""
    start = time.perf_counter()
    try:
        _attributed(ep, func)
    except BaseException as exc:
        if not is_plugin_failure(exc):
            note_interrupt(exc, f"{ep.value}() of plugin {ep.name!r} ({ep.dist_label})")
            raise
        _discard_hooks(ep)
        reason = f"{ep.value}() raised {describe_failure(exc)}"
        _fail(
            report,
            _record(ep, FAILED_REGISTER, reason, seconds=time.perf_counter() - start),
            namespace.strict(),
            namespace.strict_env,
            exc,
        )
        return False
    seconds = time.perf_counter() - start
    logger.info("Loaded general plugin %r (%s) in %.1f ms", ep.name, ep.dist_label, seconds * 1e3)
    report.records.append(_record(ep, LOADED, "", seconds=seconds))
    return True


@after_fork_in_child
def _after_fork() -> None:
    for state in _STATES.values():
        state.after_fork()
