"""Running plugin code: the one function that runs it, attributed, and the one outcome it returns.

Plugin code runs inside the host's start-up: an entry point's import, ``activate()``,
``register()``, a startup function, a platform class's constructor. :func:`run_plugin_code` is the
only way the runtime runs it. It times the call, names the plugin as the source of every hook the
code registers, turns whatever the code raises into that plugin's failure, discards the hooks of a
plugin that failed, and applies the failure policy: stop start-up, or log and skip.

A plugin's ``sys.exit()`` stops a host's start-up, as in SGLang (a plugin may mean it: orbitkv
does), after an ERROR naming the plugin; under the ``sglang-plugins`` CLI (``_marked``) it is that
plugin's failure, reported like any other.

A ``KeyboardInterrupt`` is how a user stops a slow start-up, so it propagates, with a note naming
the plugin that was running. Only where the host marks the interrupts that come from a signal (the
``sglang-plugins`` CLI sets ``_marked`` while plugins run) is a ``KeyboardInterrupt`` that a plugin
raised itself told apart, and then it is a plugin failure too.

The hook registry is imported by plugins that register hooks, never by this module: the registry
attaches itself here (:func:`attach_registry`) when it is imported.
"""

# No ``from __future__ import annotations`` here: typing.NamedTuple would compile a ForwardRef for
# every string annotation of its fields, a cost paid by every process at start-up.
import contextlib
import enum
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any, NamedTuple, Protocol

from ._discovery import PluginEntryPoint
from ._lazy_exports import old_attribute
from .errors import PluginError, PluginLoadError

logger = logging.getLogger(__name__)
_RUNTIME_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


class HookSource(NamedTuple):
    """Which plugin registered a hook, so diagnostics can name the culprit (SGLang's record)."""

    plugin_name: str
    dist_name: str | None


# documented (and pickled) there
HookSource.__module__ = "sglang_plugin_runtime.plugins.hook_registry"

#: The plugin whose code runs now (SGLang's ``_current_plugin_source``): a hook registered without a
#: source gets it.
plugin_source: ContextVar[HookSource | None] = ContextVar("_current_plugin_source", default=None)


class Status(str, enum.Enum):
    """What a load or a selection will do, or did, with one plugin; values are in the CLI's
    schema."""

    TO_LOAD = "to-load"  # a plan's: it will be imported and its function run
    SELECTED = "selected"  # a plan's: the platform plugin SGLANG_PLATFORM names
    NOT_SELECTED = "not-selected"  # a plan's: another platform is named, this one is never imported
    SKIPPED_ALLOWLIST = "skipped-allowlist"
    SKIPPED_PLATFORM = "skipped-unselected-platform"
    NOT_INSTALLED = "not-installed"
    FAILED_DUPLICATE = "failed-duplicate"
    LOADED = "loaded"  # its register() or startup function ran
    ACTIVATED = "activated"  # its activate() named a usable platform class
    UNAVAILABLE = "unavailable"  # its activate() returned None
    FAILED_IMPORT = "failed-import"
    FAILED_CALL = "failed-call"  # its function raised, or returned what cannot be used

    __str__ = str.__str__  # "loaded", not "Status.LOADED"
    __hash__ = str.__hash__

    def __eq__(self, other: object) -> bool:
        if other.__class__ is str and other in ("failed", "failed-register"):
            from ._deprecated import is_retired_status  # an old status: deprecated

            return is_retired_status(self, other)
        return str.__eq__(self, other)


class PluginOutcome(NamedTuple):
    """What one plugin's code did, or why it did not run."""

    plugin: str
    status: Status
    reason: str = ""
    distribution: str | None = None
    version: str | None = None
    value: str | None = None
    """The entry point's ``module:attr``."""
    result: str | None = None
    """The class ``activate()`` named (``repr`` of anything that is no class name)."""
    seconds: float = 0.0
    traceback: str | None = None
    """For a plugin whose code raised: the traceback, without the runtime's frames."""

    @property
    def ok(self) -> bool:
        return not self.status.startswith("failed") and self.status is not Status.NOT_INSTALLED

    def to_dict(self) -> dict[str, object]:
        return self._asdict()


# old attribute names, deprecated
PluginOutcome.__getattr__ = old_attribute  # type: ignore[attr-defined]


class PlannedPlugin(NamedTuple):
    """What a load or a selection will do with one entry point (or with a listed name not
    installed)."""

    name: str
    status: Status
    reason: str
    entry_point: PluginEntryPoint | None


def planned(ep: PluginEntryPoint, status: Status, reason: str = "", **more: Any) -> PluginOutcome:
    """An outcome of ``ep`` (``more``: ``result``, ``seconds``, ``traceback``)."""
    return PluginOutcome(ep.name, status, reason, ep.distribution, ep.version, ep.value, **more)


# ---------------------------------------------------------------- a plugin's failure, and its text


class InterruptFromSignal(KeyboardInterrupt):
    """A ``KeyboardInterrupt`` from the CLI's SIGINT handler: the user's, not a plugin's."""


_marked = False


def honoured_exit(exc: BaseException | None) -> bool:
    """Whether ``exc``, raised by plugin code, is a ``SystemExit`` that stops this process (a
    host's, not the CLI's)."""
    return isinstance(exc, SystemExit) and not _marked


def is_plugin_failure(exc: BaseException) -> bool:
    """Whether ``exc``, raised by plugin code, is the plugin failing (else: let it propagate). An
    ``asyncio.CancelledError`` (a task it waited on was cancelled) is; a plugin's own
    ``BaseException`` is not: it stops start-up, as in SGLang (qsa-hisparse fails closed so)."""
    interrupt = isinstance(exc, KeyboardInterrupt) and not isinstance(exc, InterruptFromSignal)
    asyncio = sys.modules.get("asyncio")  # no asyncio imported: nothing was cancelled
    cancelled = asyncio is not None and isinstance(exc, asyncio.CancelledError)
    return isinstance(exc, (Exception, SystemExit)) or cancelled or (_marked and interrupt)


class PluginCall:
    """The outcome of a :func:`guarded` block: ``error`` holds the plugin's failure, or ``None``."""

    error: BaseException | None = None


@contextlib.contextmanager
def guarded(where: str) -> Iterator[PluginCall]:
    """Run plugin code in the block; its failure is kept on the yielded :class:`PluginCall`, never
    raised. Anything else (a user's Ctrl-C) propagates, noting ``where`` (the hook registry guards a
    hook being applied with it too)."""
    call = PluginCall()
    try:
        yield call
    except BaseException as exc:
        if not is_plugin_failure(exc):
            # Python 3.11+ prints the notes; 3.10 keeps them readable on the same attribute.
            exc.__notes__ = [  # type: ignore[attr-defined]
                *getattr(exc, "__notes__", []),
                f"(raised while the runtime was running {where})",
            ]
            raise
        call.error = exc


def safe_text(value: object, convert: Callable[[object], str] = str) -> str:
    """``str(value)`` (or ``convert``), or a description of it when plugin code makes that raise."""
    try:
        return convert(value)
    except Exception as exc:
        return (
            f"<{type(value).__name__} object; its {convert.__name__}() raised {type(exc).__name__}>"
        )


def describe_failure(exc: BaseException) -> str:
    """``Type: message``, with advice where the exception type itself is the mistake."""
    if isinstance(exc, SystemExit):
        return (
            f"SystemExit({safe_text(exc.code, repr)}): plugin code called sys.exit() (it stops a "
            "host's start-up)"
        )
    if isinstance(exc, KeyboardInterrupt):
        return (
            "KeyboardInterrupt raised by the plugin's own code (not a Ctrl-C): it must not raise it"
        )
    return f"{type(exc).__name__}: {safe_text(exc)}"


def never_ran(result: object, name: str = "register") -> str | None:
    """Why calling the plugin's function ``name`` did nothing: it is a generator or an ``async``
    one."""
    import inspect

    if inspect.iscoroutine(result):
        result.close()  # its body never ran; closed, Python does not warn "never awaited" later
    elif not (inspect.isgenerator(result) or inspect.isasyncgen(result)):
        return None
    kind = "a generator" if inspect.isgenerator(result) else "an async"
    return (
        f"{name}() is {kind} function: calling it returned {type(result).__name__} and its body "
        f"never ran; make it a plain function (def {name}(): ...)"
    )


def plugin_traceback(exc: BaseException) -> str:
    """The traceback of ``exc`` (and its causes) without the runtime's frames: the plugin's
    lines."""
    import traceback

    summary = traceback.TracebackException.from_exception(exc)
    # The exception, its causes and contexts: a tree (from_exception wraps each exception once).
    parts = [summary]
    for part in parts:
        frames = [f for f in part.stack if not f.filename.startswith(_RUNTIME_DIR)]
        part.stack = traceback.StackSummary.from_list(frames)
        parts += filter(None, (part.__cause__, part.__context__))
    return "".join(summary.format())


# ---------------------------------------------------------------- the registry, once imported


class _Registry(Protocol):
    def apply_hooks(self, strict: bool = False) -> None: ...
    def discard_source(self, source: HookSource) -> int: ...
    def failed_targets(self, distribution: str) -> list[str]: ...


_active_registry: Callable[[], _Registry] | None = None
_hooks_applied = False


def attach_registry(active_registry: Callable[[], _Registry]) -> bool:
    """Called by the hook registry when it is imported; whether ``load_plugins()`` already ran (the
    registry then applies later registrations at once, as after its own ``apply_hooks()``)."""
    global _active_registry
    _active_registry = active_registry
    return _hooks_applied


def registry() -> _Registry | None:
    """The active hook registry, once a plugin (or the host) imported it."""
    return _active_registry() if _active_registry else None


def apply_hooks(strict: bool) -> None:
    """Apply the registered hooks (``load_plugins()`` does, once its plugins ran): hooks registered
    from now on apply at once."""
    global _hooks_applied
    _hooks_applied = True
    if hooks := registry():
        hooks.apply_hooks(strict)


def discard_hooks(ep: PluginEntryPoint) -> None:
    """Drop the hooks ``ep``'s code registered (it failed, or is a platform that was not
    selected), its wrappers of the host's resolution steps too."""
    source = HookSource(ep.name, ep.distribution)
    if hooks := registry():
        hooks.discard_source(source)
    for wrappers in resolution_wrappers().values():
        wrappers[:] = [w for w in wrappers if resolution_sources.get(id(w)) != source]


# ---------------------------------------------------------------- the host's resolution steps

#: Where SGLang (0.5.23 on) keeps the plugin wrappers of its named server-argument resolution steps
#: (``register_resolution_hook(name)``): a dict of lists, step name -> wrappers in registration
#: order, the last registered outermost.
RESOLUTION_HOOKS_MODULE = "sglang.srt.arg_groups.resolution_hooks"
#: The plugin whose code registered each of those wrappers, by ``id`` (SGLang's lists keep the
#: wrappers alive).
resolution_sources: dict[int, HookSource] = {}


def resolution_wrappers() -> dict[str, list[object]]:
    """SGLang's own lists of resolution-step wrappers (empty while its module is not imported)."""
    wrappers = getattr(sys.modules.get(RESOLUTION_HOOKS_MODULE), "_HOOKS", None)
    return wrappers if isinstance(wrappers, dict) else {}


def _wrapper_ids() -> set[int]:
    return {id(wrapper) for wrappers in resolution_wrappers().values() for wrapper in wrappers}


# ---------------------------------------------------------------- one thread at a time


class Running:
    """Plugin code that runs now (a :class:`Gate`'s owner runs it, when it has one)."""

    #: Set when the code re-entered the job it runs in (even if it caught the error).
    reentered: PluginError | None = None

    def __init__(self, ep: PluginEntryPoint, where: str) -> None:
        self.ep = ep
        self.where = where
        #: Threads alive when it started: one born since then was started by that code.
        self.threads = frozenset(threading.enumerate())


class Gate:
    """A once-per-process job that runs plugin code (a selection, a load): one thread does it,
    others wait. Plugin code that re-enters its job is told apart: in the owner's thread, or in a
    thread it started while the owner waits for that thread (a ``join``, a future's ``result()``): a
    deadlock."""

    owner: threading.Thread | None = None
    running: Running | None = None

    def __init__(self) -> None:
        self.lock = threading.RLock()

    def enter(self, refuse: Callable[["Gate"], PluginError]) -> bool:
        """Own the gate (``True``), or ``False`` when this thread owns it already. A thread the
        running code started raises ``refuse(self)`` when the owner waits in one of
        :mod:`threading`'s waits: the owner's innermost frame, in threading's code, the same twice
        50 ms apart."""
        me = threading.current_thread()
        running = self.running
        wait = None
        if self.owner is me:
            return False
        while not self.lock.acquire(timeout=0.05):
            if running and me not in running.threads and self.running is running:
                seen = wait
                frame = sys._current_frames().get(getattr(self.owner, "ident", 0) or 0)
                wait = frame if frame and frame.f_code.co_filename == threading.__file__ else None
                if wait is not None and wait is seen:
                    raise self.refused(refuse(self))
        self.owner = me
        return True

    def leave(self) -> None:
        self.owner = None
        self.lock.release()

    def refused(self, error: PluginError) -> PluginError:
        """``error``, remembered on the running code: a plugin that catches it is still reported."""
        if self.running:
            self.running.reentered = error
        return error


#: The innermost plugin code running now.
_running: Running | None = None


def current_source() -> HookSource | None:
    """The plugin whose code runs now: in this thread, or where this thread was started by that
    code (a helper thread of its ``register()``)."""
    running = _running
    if (
        (source := plugin_source.get())
        or not running
        or threading.current_thread() in running.threads
    ):
        return source
    return HookSource(running.ep.name, running.ep.distribution)


# ---------------------------------------------------------------- the one function


class Policy(NamedTuple):
    """What a failure of plugin code means: whether it stops start-up, and how it is told."""

    strict: bool
    strict_env: str
    required: str | None = None
    """The distribution whose failure stops start-up: the selected platform's (SGLang's diffusion
    loader's rule)."""
    why: str = "the selected platform's distribution: the process cannot run without it"
    level: int = logging.ERROR
    fatal: tuple[type[BaseException], ...] = ()
    """Errors that stop start-up as they are, whatever else the policy says."""
    stops: bool = False
    """Every failure stops start-up, for ``why`` (the startup phase's rule)."""


def run_plugin_code(
    ep: PluginEntryPoint,
    action: Callable[[], object],
    *,
    step: str,
    policy: Policy | None,
    gate: Gate | None = None,
    check: Callable[[object], str | None] | None = None,
) -> tuple[object, PluginOutcome]:
    """Run ``action``, one step of ``ep``'s code (``step``: ``"import"``, ``"activate()"``, ...),
    with ``ep`` as the source of the hooks it registers; return its value and its outcome.

    A failure (it raised, re-entered the job ``gate`` runs, or ``check`` says what is wrong with its
    value) gives a ``failed-import`` / ``failed-call`` outcome and value ``None``; the plugin's
    hooks are discarded; ``policy`` raises (:class:`~.errors.PluginLoadError`, or a ``fatal`` error
    as it is) or logs. With ``policy=None`` (the host's own start-up runs it) the error is raised as
    it is.
    """
    importing = step == "import"
    where = f"{'the import' if importing else step} of plugin {ep.name!r} (distribution {ep.label})"
    global _running
    outer = _running
    running = _running = Running(ep, where)
    source = HookSource(ep.name, ep.distribution)
    token = plugin_source.set(source)
    before = _wrapper_ids()
    if gate:
        gate.running = running
    start = time.perf_counter()
    try:
        with guarded(where) as call:
            value = action()
    except BaseException:  # a user's Ctrl-C: the hooks the code registered go first
        discard_hooks(ep)
        raise
    finally:
        seconds = time.perf_counter() - start
        plugin_source.reset(token)
        _running = outer
        if gate:
            gate.running = None
        resolution_sources.update(dict.fromkeys(_wrapper_ids() - before, source))
    if honoured_exit(call.error):
        discard_hooks(ep)
        logger.error(
            "%s called sys.exit(%s): start-up stops, as the plugin asks",
            where,
            safe_text(call.error.code, repr),  # type: ignore[union-attr]
        )
        raise call.error  # type: ignore[misc]
    error = running.reentered or call.error
    reason = describe_failure(error) if error else check(value) if check else None
    if reason is None:
        return value, planned(ep, Status.LOADED, seconds=seconds)
    if error:
        reason = f"import failed: {reason}" if importing else f"{step} raised {reason}"
    status = Status.FAILED_IMPORT if importing else Status.FAILED_CALL
    trace = plugin_traceback(error) if error else None
    outcome = planned(ep, status, reason, seconds=seconds, traceback=trace)
    discard_hooks(ep)
    if policy is None:
        if error:
            raise error
        return None, outcome
    # the failure policy: raise, or log that the plugin was skipped
    message = f"Plugin {ep.name!r} (distribution {ep.label}) failed: {reason}"
    stops = policy.stops or ep.distribution == policy.required
    if isinstance(error, policy.fatal) and isinstance(error, PluginError):
        error.outcomes += (outcome,)
        raise error
    if stops or policy.strict:
        why = policy.why if stops else f"{policy.strict_env}=1 makes it an error"
        raised = PluginLoadError(f"{message} ({why})", plugin=ep.name, distribution=ep.distribution)
        raised.outcomes = (outcome,)
        raise raised from error
    trace = f"\n{trace.rstrip()}" if trace else ""
    skipped = f"It was skipped; set {policy.strict_env}=1 to stop instead."
    logger.log(policy.level, "%s. %s%s", message, skipped, trace)
    return None, outcome
