"""``sglang-plugins``: see what was discovered, selected, loaded and patched, and why.

Exit statuses (stable, documented in docs/cli.md):

- 0: no problem found (warnings allowed unless ``--strict``)
- 1: problems found (an error, or with ``--strict`` any warning)
- 2: usage error, or the check could not run (bad arguments, unknown namespace, ``--simulate``
  without torch)
- 3: a bug in sglang-plugins itself (the message says where to report it)

Expected failures never print a traceback; ``-v`` adds the runtime's log lines on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from .. import __version__, _launcher

__all__ = ["main"]

logger = logging.getLogger(__name__)
EXIT_USAGE, EXIT_INTERNAL = 2, 3
#: SIGPIPE's number is 13 on every POSIX system: what a shell shows for ``yes | head``.
EXIT_BROKEN_PIPE = 128 + 13
_RUN = (
    "run COMMAND (e.g. python -m sglang.launch_server ...) with this runtime as a released "
    "SGLang's plugin layer"
)


class UsageError(Exception):
    """Bad input the user can fix (an argument, a target, a ``--compare`` file); the message says
    what and how."""


class _Parser(argparse.ArgumentParser):
    # argparse would call sys.exit(2) itself; let main() decide
    def error(self, message: str) -> Any:
        raise UsageError(f"{self.prog}: {message}\nRun '{self.prog} --help' for the options.")


def _parser() -> argparse.ArgumentParser:
    from .._namespace import known_namespaces

    parser = _Parser(
        prog="sglang-plugins",
        description=__doc__.split("\n")[0].strip("`"),
        epilog="Exit status: 0 healthy, 1 problems found, 2 usage error or the check could not "
        "run, 3 internal error. The options of a command are accepted before it too.",
    )
    # The commands' options, accepted before the command too: a command's own copy defaults to
    # nothing, so it never overrides a value given before the command.
    common = _Parser(add_help=False, argument_default=argparse.SUPPRESS)
    for holder in (parser, common):
        add = holder.add_argument
        add(
            "--namespace",
            "-n",
            choices=[n.name for n in known_namespaces()],
            help="(default srt)",
        )
        add(
            "--json",
            action="store_true",
            help="print one JSON document (its schema: 'sglang-plugins schema')",
        )
        add(
            "--strict",
            action="store_true",
            help="warnings fail too; doctor also runs the conformance check",
        )
        add("--verbose", "-v", action="count", help="log to stderr (-v INFO, -vv DEBUG)")
        add(
            "--simulate",
            metavar="DEVICE_TYPE",
            help="run on a simulated torch.DEVICE_TYPE (needs torch)",
        )
        add(
            "--simulate-backend",
            metavar="MODULE",
            help="also a fake vendor module (e.g. torch_npu)",
        )
        add("--simulate-count", metavar="N", type=int, help="simulated device count (default 1)")
    parser.set_defaults(namespace="srt", verbose=0)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.add_parser(
        "list", parents=[common], help="what is installed and what the environment does with it"
    )
    doctor = commands.add_parser(
        "doctor",
        parents=[common],
        help="run startup plugins, selection, load_plugins(); report each step",
    )
    explain = commands.add_parser(
        "explain", parents=[common], help="the hooks on one target, in the order they run"
    )
    explain.add_argument(
        "target",
        metavar="TARGET",
        help="pkg.mod.func, pkg.mod.Class.method or pkg.mod:Class.method",
    )
    for command in (doctor, explain):
        command.add_argument(
            "--import-targets", action="store_true", help="import hooked modules: hooks apply now"
        )
    fingerprint = commands.add_parser(
        "fingerprint", parents=[common], help="this node's plugin fingerprint"
    )
    fingerprint.add_argument(
        "--compare", metavar="FILE|DIGEST", help="another node's 'fingerprint --json' file"
    )
    contract = commands.add_parser(
        "contract", parents=[common], help="the SGLang releases and their platform contracts"
    )
    contract.add_argument(
        "--diff", nargs=2, metavar=("FROM", "TO"), help="what changed from release FROM to TO"
    )
    schema = commands.add_parser("schema", help="print the JSON schema of --json output")
    schema.add_argument("--json", action="store_true", help="(accepted: the schema is JSON)")
    run = commands.add_parser(
        "run", help=_RUN, description=_RUN, usage="%(prog)s [--] COMMAND [ARG ...]"
    )
    run.add_argument(
        "argv", nargs=argparse.REMAINDER, metavar="COMMAND", help="the command and its arguments"
    )
    return parser


@contextlib.contextmanager
def _plugins_running(for_good: bool) -> Iterator[list[str]]:
    """The block runs plugins in this process: whatever they print (from Python, or from native code
    on file descriptor 1) goes to standard error, and what the block puts in the yielded list is
    then written to the real stdout, escaping what its encoding cannot show. ``for_good`` (the CLI's
    own process): stdout stays standard error to the end, so a plugin's ``atexit`` handler or thread
    printing later cannot add to the report either.

    In the block a real Ctrl-C raises :class:`~.._plugin_code.InterruptFromSignal`, so any other
    ``KeyboardInterrupt`` comes from plugin code and is reported as that plugin's failure (main
    thread only)."""
    from .. import _plugin_code

    def interrupt(signum: int, frame: Any) -> None:
        raise _plugin_code.InterruptFromSignal()

    main_thread = threading.current_thread() is threading.main_thread()
    # Ignored (e.g. a job started in the background), SIGINT cannot arrive; off the main thread it
    # cannot be handled.
    previous = signal.getsignal(signal.SIGINT) if main_thread else signal.SIG_IGN
    if previous is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, interrupt)
    _plugin_code._marked = main_thread
    report: list[str] = []
    real = sys.stdout
    real.flush()
    try:
        saved: int | None = os.dup(1)
        os.dup2(2, 1)
    except OSError:  # no file descriptor 1 at all: only Python-level output can be redirected
        saved = None
    sys.stdout = sys.stderr
    try:
        yield report
    finally:
        _plugin_code._marked = False
        if previous is not signal.SIG_IGN:
            signal.signal(signal.SIGINT, previous or signal.SIG_DFL)  # None: not set from Python
        # fflush(NULL): native bytes go to stderr now
        with contextlib.suppress(OSError, AttributeError, TypeError):
            import ctypes

            ctypes.CDLL(None).fflush(None)
        encoding = getattr(real, "encoding", None) or "utf-8"
        text = "".join(report).encode(encoding, "backslashreplace").decode(encoding)
        if for_good and saved is not None:
            with open(saved, "w", encoding=encoding) as out:
                out.write(text)
        else:
            if saved is not None:
                os.dup2(saved, 1)
                os.close(saved)
            sys.stdout = real
            real.write(text)
            real.flush()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status instead of exiting, so it can be called from Python.

    Called without ``argv`` (the console script, ``python -m``), the process is the CLI's own:
    stdout carries the report and nothing else, and the process ends with the report's status as
    soon as it is written, so that plugin code (a thread left running, an ``atexit`` handler calling
    ``os._exit``) cannot hold it or change it.
    """
    if sys.stdout is None:  # started with stdout closed (>&-): the report goes nowhere, its
        # exit status still says what it found (the file lives as long as the process)
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115
    status = _run(argv)
    if argv is None:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(status)
    return status


def _run(argv: Sequence[str] | None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help(sys.stderr)
            return EXIT_USAGE
        if args.command == "schema":
            from importlib.resources import files

            sys.stdout.write(
                (files("sglang_plugin_runtime") / "cli-schema.json").read_text(encoding="utf-8")
            )
            return 0
        if args.command == "run":
            command = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
            if command[:1] in (["-h"], ["--help"]):
                parser.parse_args(["run", "--help"])
            return _launcher.execute(command, *_launcher.plan(command))
        if not args.verbose:
            # The report shows every problem and the warnings plugins logged; a handler on the root
            # logger keeps Python's last-resort handler from also printing them on the terminal.
            logging.getLogger().addHandler(logging.NullHandler())
        else:
            logging.basicConfig(  # on standard error
                level=logging.INFO if args.verbose == 1 else logging.DEBUG,
                format="%(levelname)s %(name)s: %(message)s",
            )
        from ._reports import InputError, encode, report
        from ._text import render

        with _plugins_running(for_good=argv is None) as out:
            try:
                document = report(args)
            except InputError as exc:
                raise UsageError(str(exc)) from None
            out.append(
                json.dumps(encode(document), indent=2) + "\n" if args.json else render(document)
            )
        return document.exit_status
    except SystemExit as exc:  # --help and --version
        return int(exc.code or 0)
    except (UsageError, _launcher.LaunchError) as exc:
        sys.stderr.write(f"{exc}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write("sglang-plugins: interrupted\n")
        return 130
    # the reader left (| head): nothing more can be said; quiet, as any Unix tool
    except BrokenPipeError:
        return EXIT_BROKEN_PIPE
    except Exception as exc:
        logger.debug("internal error", exc_info=True)
        sys.stderr.write(
            f"sglang-plugins: internal error: {type(exc).__name__}: {exc}\nThis is a bug in "
            "sglang-plugins, not in your plugins; rerun with -vv for the traceback and report it.\n"
        )
        return EXIT_INTERNAL
