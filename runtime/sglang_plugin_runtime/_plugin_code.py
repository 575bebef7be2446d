"""Running code that belongs to a plugin: which exceptions are the plugin's failure, and how to describe them.

Plugin code runs inside the host's start-up (an entry point's import, ``activate()``, ``register()``, a hook being
applied). Whatever it raises must end up as a failure attributed to that plugin, never as something that ends
the host silently: ``sys.exit()`` in a plugin is a plugin failure like any other exception. A
``KeyboardInterrupt`` is different: it is how a user stops a slow start-up, so it propagates, with a note naming
the plugin that was running. Only where the host marks the interrupts that come from a signal (the
``sglang-plugins`` CLI does, setting ``_marked`` while plugins run) can a ``KeyboardInterrupt`` that a plugin raised
itself be told apart, and then it is a plugin failure too.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

_RUNTIME_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


class InterruptFromSignal(KeyboardInterrupt):
    """A ``KeyboardInterrupt`` from the CLI's SIGINT handler (``_cli._plugins_running``): the user's, not a plugin's."""


_marked = False


def is_plugin_failure(exc: BaseException) -> bool:
    """Whether ``exc``, raised by plugin code, is the plugin failing (else: let it propagate)."""
    if isinstance(exc, (Exception, SystemExit)):
        return True
    return _marked and isinstance(exc, KeyboardInterrupt) and not isinstance(exc, InterruptFromSignal)


class PluginCall:
    """The outcome of a :func:`guarded` block: ``error`` holds the plugin's failure, or ``None``."""

    __slots__ = ("error",)

    def __init__(self) -> None:
        self.error: BaseException | None = None


@contextlib.contextmanager
def guarded(where: str) -> Iterator[PluginCall]:
    """Run plugin code in the block; its failure is kept on the yielded :class:`PluginCall`, never raised.

    The one guard around every call into plugin code (an entry point's import, ``activate()``, ``register()``, a
    platform class's import or constructor, a hook being applied). What counts as the plugin's failure is
    :func:`is_plugin_failure`'s rule; anything else (a user's Ctrl-C) propagates with a note naming ``where``.
    """
    call = PluginCall()
    try:
        yield call
    except BaseException as exc:
        if not is_plugin_failure(exc):
            note_interrupt(exc, where)
            raise
        call.error = exc


def describe_failure(exc: BaseException) -> str:
    """``Type: message``, with advice where the exception type itself is the mistake."""
    if isinstance(exc, SystemExit):
        return (
            f"SystemExit({exc.code!r}): plugin code called sys.exit(); a plugin must raise an exception "
            f"(or, in activate(), return None) instead of ending the process"
        )
    if isinstance(exc, KeyboardInterrupt):
        return "KeyboardInterrupt raised by the plugin's own code (not a Ctrl-C): a plugin must not raise it"
    return f"{type(exc).__name__}: {exc}"


def plugin_traceback(exc: BaseException) -> str:
    """The traceback of ``exc`` (with its causes) without the runtime's own frames: the plugin's lines only."""
    import traceback

    summary = traceback.TracebackException.from_exception(exc)
    seen: set[int] = set()
    pending: list[traceback.TracebackException | None] = [summary]
    while pending:  # the exception and its causes and contexts
        part = pending.pop()
        if part is None or id(part) in seen:
            continue
        seen.add(id(part))
        kept = [frame for frame in part.stack if not frame.filename.startswith(_RUNTIME_DIR)]
        part.stack = traceback.StackSummary.from_list(kept)
        pending += [part.__cause__, part.__context__]
    return "".join(summary.format())


def note_interrupt(exc: BaseException, where: str) -> None:
    """Record on a propagating ``KeyboardInterrupt`` which plugin code it interrupted (Python 3.11+ notes)."""
    note = f"(raised while the runtime was running {where})"
    if sys.version_info >= (3, 11):
        exc.add_note(note)
    else:  # the same attribute, which Python 3.10 does not print but callers can read
        exc.__notes__ = [*getattr(exc, "__notes__", ()), note]  # type: ignore[attr-defined]
