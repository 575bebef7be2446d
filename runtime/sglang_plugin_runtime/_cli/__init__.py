"""``sglang-plugins``: see what was discovered, selected, loaded and patched, and why.

Exit statuses (stable, documented in docs/cli.md):

- 0: no problem found (warnings allowed unless ``--strict``)
- 1: problems found (an error, or with ``--strict`` any warning)
- 2: usage error, or the check could not run (bad arguments, unknown namespace, ``--simulate`` without torch)
- 3: a bug in sglang-plugins itself (the message says where to report it)

Expected failures never print a traceback; ``-v`` adds the runtime's log lines on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib.util
import json
import logging
import os
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from .. import __version__
from .._launcher import LaunchError
from .._simulated_device import TORCH_INSTALL

__all__ = ["main"]

logger = logging.getLogger(__name__)
EXIT_USAGE, EXIT_INTERNAL = 2, 3
_EXIT_STATUSES = "Exit status: 0 healthy, 1 problems found, 2 usage error or the check could not run, 3 internal error."
_RUN = "run COMMAND (e.g. python -m sglang.launch_server ...) with this runtime as a released SGLang's plugin layer"


class _UsageError(Exception):
    """Bad input the user can fix; the message says what and how."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse would call sys.exit(2) itself; let main() decide
        raise _UsageError(f"{self.prog}: {message}\nRun '{self.prog} --help' for the options.")


def _parser() -> argparse.ArgumentParser:
    from .._namespace import known_namespaces

    common = _Parser(add_help=False)
    add = common.add_argument
    add("--namespace", "-n", default="srt", help=f"{', '.join(n.name for n in known_namespaces())} (default srt)")
    add("--json", action="store_true", help="print one JSON document (its schema: 'sglang-plugins schema')")
    add("--strict", action="store_true", help="warnings fail too; doctor also runs the conformance check")
    add("--verbose", "-v", action="count", default=0, help="log to stderr (-v INFO, -vv DEBUG)")
    add("--simulate", metavar="DEVICE_TYPE", help="run on a simulated torch.DEVICE_TYPE (needs torch)")
    add("--simulate-backend", metavar="MODULE", help="also a fake vendor module (e.g. torch_npu)")
    add("--simulate-count", metavar="N", type=int, default=1, help="simulated device count (default 1)")
    parser = _Parser(prog="sglang-plugins", description=__doc__.split("\n")[0].strip("`"), epilog=_EXIT_STATUSES)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.add_parser("list", parents=[common], help="what is installed and what the environment does with it")
    doctor = commands.add_parser("doctor", parents=[common], help="select, load_plugins() here; report every step")
    explain = commands.add_parser("explain", parents=[common], help="the hooks on one target, in the order they run")
    explain.add_argument("target", metavar="TARGET", help="pkg.mod.func, pkg.mod.Class.method or pkg.mod:Class.method")
    for command in (doctor, explain):
        command.add_argument("--import-targets", action="store_true", help="import hooked modules: hooks apply now")
    fingerprint = commands.add_parser("fingerprint", parents=[common], help="this node's plugin fingerprint")
    fingerprint.add_argument("--compare", metavar="FILE|DIGEST", help="another node's 'fingerprint --json' file")
    commands.add_parser("schema", help="print the JSON schema of --json output")
    run = commands.add_parser("run", help=_RUN, description=_RUN, usage="%(prog)s [--] COMMAND [ARG ...]")
    run.add_argument("argv", nargs=argparse.REMAINDER, metavar="COMMAND", help="the command and its arguments")
    return parser


def _simulation(args: argparse.Namespace) -> dict[str, Any] | None:
    """``--simulate``'s device, checked: a device type torch lacks, a backend module that is not installed."""
    device, backend = args.simulate, args.simulate_backend
    if device is None and backend is not None:
        raise _UsageError("--simulate-backend needs --simulate DEVICE_TYPE")
    if device is None:
        return None
    if not device.isidentifier():
        raise _UsageError(f"--simulate {device!r}: a torch device type is an identifier such as 'npu'")
    if args.simulate_count < 1:
        raise _UsageError(f"--simulate-count {args.simulate_count}: it must be at least 1")
    try:
        import torch
    except ImportError:
        raise _UsageError(f"--simulate needs torch to attach the simulated device to: {TORCH_INSTALL}") from None
    if device in ("cpu", "cuda", "meta") or hasattr(torch, device):
        free = ", ".join(name for name in ("npu", "mlu", "musa", "hpu", "gcu") if not hasattr(torch, name))
        how = f"simulate a device type torch does not have (a vendor's: {free}, ...)"
        raise _UsageError(
            f"--simulate {device}: {device} is one of torch's own device types, it cannot be simulated; {how}"
        )
    if backend is not None and (
        not backend.isidentifier() or backend in sys.modules or importlib.util.find_spec(backend)
    ):
        how = "give the name of a vendor module that is not installed here (e.g. torch_npu)"
        raise _UsageError(f"--simulate-backend {backend}: {how}; a fake one would hide an installed module")
    return {"device_type": device, "device_count": args.simulate_count, "backend_module": backend}


def _report(args: argparse.Namespace) -> dict[str, Any]:
    from .._namespace import get_namespace
    from . import _reports

    try:
        namespace = get_namespace(args.namespace)
    except ValueError as exc:
        raise _UsageError(f"--namespace: {exc}") from None
    if args.command == "list":
        step: Any = _reports.list_step
    elif args.command == "doctor":
        step = functools.partial(_reports.doctor_step, import_targets=args.import_targets, strict=args.strict)
    elif args.command == "explain":
        from ..plugins.hook_registry import _parse_target

        try:
            _parse_target(args.target)
        except (ValueError, TypeError) as exc:
            raise _UsageError(
                f"explain: {args.target!r} is not a hook target ({exc}); use pkg.mod.func, pkg.mod.Class.method or "
                f"pkg.mod:Class.method"
            ) from None
        step = functools.partial(_reports.explain_step, target=args.target, import_targets=args.import_targets)
    try:
        if args.command == "fingerprint":
            other = _reports.load_comparison(args.compare) if args.compare is not None else None
            step = functools.partial(_reports.fingerprint_step, other=other)
        return _reports.report(args.command, namespace, _simulation(args), args.strict, step)
    except _reports.ComparisonInputError as exc:
        raise _UsageError(f"fingerprint: {exc}") from None


@contextlib.contextmanager
def _report_stdout(for_good: bool) -> Iterator[list[str]]:
    """Standard output for the report only: while the block runs (plugins run in it, and print from Python or from
    native code on file descriptor 1), stdout is standard error; then what the block put in the yielded list is
    written to the real stdout, escaping what its encoding cannot show. ``for_good`` (the CLI's own process):
    stdout stays standard error to the end, so a plugin's ``atexit`` handler or thread printing later cannot add
    to the report either."""
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
        with contextlib.suppress(OSError, AttributeError, TypeError):  # fflush(NULL): native bytes go to stderr now
            import ctypes

            ctypes.CDLL(None).fflush(None)
        text = "".join(report)
        if for_good and saved is not None:
            with open(saved, "w", encoding=real.encoding or "utf-8", errors="backslashreplace") as out:
                out.write(text)
        else:
            if saved is not None:
                os.dup2(saved, 1)
                os.close(saved)
            sys.stdout = real
            encoding = getattr(real, "encoding", None) or "utf-8"
            real.write(text.encode(encoding, "backslashreplace").decode(encoding))
            real.flush()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status instead of exiting, so it can be called from Python.

    Called without ``argv`` (the console script, ``python -m``), the process is the CLI's own: stdout carries the
    report and nothing else until the process ends.
    """
    parser = _parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help(sys.stderr)
            return EXIT_USAGE
        if args.command == "schema":
            from importlib.resources import files

            sys.stdout.write(files("sglang_plugin_runtime").joinpath("cli-schema.json").read_text(encoding="utf-8"))
            return 0
        if args.command == "run":
            from .. import _launcher

            command = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
            if command[:1] in (["-h"], ["--help"]):
                parser.parse_args(["run", "--help"])
            return _launcher.execute(_launcher.plan(command))
        if args.verbose <= 0:
            # The report shows every problem and the warnings plugins logged; a handler on the root logger keeps
            # Python's last-resort handler from also printing them on the terminal.
            logging.getLogger().addHandler(logging.NullHandler())
        else:
            level = logging.INFO if args.verbose == 1 else logging.DEBUG
            logging.basicConfig(stream=sys.stderr, level=level, format="%(levelname)s %(name)s: %(message)s")
        from .._plugin_code import signal_interrupts_marked
        from ._text import render

        # Plugins run in this process: whatever they print goes to stderr, and a KeyboardInterrupt they raise
        # themselves is their failure, not the user's Ctrl-C.
        with _report_stdout(for_good=argv is None) as out, signal_interrupts_marked():
            report = _report(args)
            out.append(json.dumps(report, indent=2) + "\n" if args.json else render(report))
        return int(report["exit_status"])
    except SystemExit as exc:  # --help and --version
        return int(exc.code or 0)
    except (_UsageError, LaunchError) as exc:
        sys.stderr.write(f"{exc}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write("sglang-plugins: interrupted\n")
        return 130
    except Exception as exc:
        logger.debug("internal error", exc_info=True)
        sys.stderr.write(
            f"sglang-plugins: internal error: {type(exc).__name__}: {exc}\n"
            "This is a bug in sglang-plugins, not in your plugins; rerun with -vv for the traceback and report it.\n"
        )
        return EXIT_INTERNAL
