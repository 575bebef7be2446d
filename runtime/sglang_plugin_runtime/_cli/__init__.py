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
import json
import logging
import os
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from .. import __version__
from ._report import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, Simulation

logger = logging.getLogger(__name__)

EXIT_INTERNAL = 3

__all__ = ["main"]


class _UsageError(Exception):
    """Bad input the user can fix; the message says what and how."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse would call sys.exit(2) itself; let main() decide
        raise _UsageError(f"{self.prog}: {message}\nRun '{self.prog} --help' for the options.")


def _namespace_names() -> list[str]:
    from .._namespace import known_namespaces

    return [ns.name for ns in known_namespaces()]


def _build_parser() -> argparse.ArgumentParser:
    common = _Parser(add_help=False)
    common.add_argument(
        "--namespace",
        "-n",
        default="srt",
        metavar="NAME",
        help=f"plugin namespace ({', '.join(_namespace_names())}; default: srt)",
    )
    common.add_argument("--json", action="store_true", help="print one JSON document (schema: 'sglang-plugins schema')")
    common.add_argument(
        "--strict", action="store_true", help="treat warnings (pending hooks, missing allowlisted plugins) as problems"
    )
    common.add_argument("--verbose", "-v", action="count", default=0, help="log to stderr (-v INFO, -vv DEBUG)")
    sim = common.add_argument_group("simulation (for machines without the hardware)")
    sim.add_argument(
        "--simulate",
        metavar="DEVICE_TYPE",
        help="install a simulated torch.DEVICE_TYPE first (needs torch); output is labelled SIMULATED",
    )
    sim.add_argument("--simulate-backend", metavar="MODULE", help="also register a fake vendor module (e.g. torch_npu)")
    sim.add_argument("--simulate-count", metavar="N", type=int, default=1, help="simulated device count (default 1)")

    parser = _Parser(
        prog="sglang-plugins",
        description="Show what SGLang plugins are installed, which platform is selected and why, "
        "and which hooks are applied.",
        epilog="Exit status: 0 healthy, 1 problems found, 2 usage error or the check could not run, 3 internal error.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.add_parser(
        "list",
        parents=[common],
        help="installed plugin entry points and what the environment variables do with them (imports nothing)",
    )
    doctor = commands.add_parser(
        "doctor",
        parents=[common],
        help="run platform selection and load_plugins() here and report every step; non-zero exit on problems",
    )
    doctor.add_argument(
        "--import-targets",
        action="store_true",
        help="import the modules of pending hook targets so their hooks are applied and checked now",
    )
    explain = commands.add_parser(
        "explain", parents=[common], help="the hooks on one target, in the order they run, with their sources"
    )
    explain.add_argument("target", metavar="TARGET", help="pkg.mod.func, pkg.mod.Class.method or pkg.mod:Class.method")
    explain.add_argument(
        "--import-targets", action="store_true", help="import the target's module so its hooks are applied now"
    )
    fingerprint = commands.add_parser(
        "fingerprint",
        parents=[common],
        help="this node's plugin fingerprint (what ranks of a job compare); --compare another node's",
    )
    fingerprint.add_argument(
        "--compare",
        metavar="FILE|DIGEST",
        help="a file written by 'fingerprint --json' on another node (or its digest): list what differs, exit 1 if so",
    )
    commands.add_parser("schema", help="print the JSON schema of --json output")
    run = commands.add_parser(
        "run",
        help="run a command (e.g. python -m sglang.launch_server ...) with this runtime as the plugin layer of a "
        "released SGLang, for that command's process tree only",
        description="Run COMMAND so that SGLang, in COMMAND and every process it starts (spawn, fork, forkserver, "
        "subprocesses), imports this runtime as its plugin and platform layer, as the adoption patch in "
        "integrations/sglang makes it. Nothing installed is changed.",
        usage="%(prog)s [--] COMMAND [ARG ...]",
    )
    run.add_argument("argv", nargs=argparse.REMAINDER, metavar="COMMAND", help="the command and its arguments")
    return parser


def _configure_logging(verbosity: int) -> None:
    if verbosity <= 0:
        # The report shows every problem and the warnings plugins logged; a handler on the root logger keeps
        # Python's last-resort handler from also printing them on the terminal.
        logging.getLogger().addHandler(logging.NullHandler())
        return
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.INFO if verbosity == 1 else logging.DEBUG,
        format="%(levelname)s %(name)s: %(message)s",
    )


def _simulation(args: argparse.Namespace) -> Simulation | None:
    if args.simulate is None:
        if args.simulate_backend is not None:
            raise _UsageError("--simulate-backend needs --simulate DEVICE_TYPE")
        return None
    if not args.simulate.isidentifier():
        raise _UsageError(f"--simulate {args.simulate!r}: a torch device type is an identifier such as 'npu'")
    if args.simulate_count < 1:
        raise _UsageError(f"--simulate-count {args.simulate_count}: it must be at least 1")
    try:
        import torch  # noqa: F401  (only to say clearly when it is missing)
    except ImportError:
        raise _UsageError(
            "--simulate needs torch to attach the simulated device to; install it (pip install torch) or run "
            "without --simulate"
        ) from None
    return Simulation(args.simulate, args.simulate_count, args.simulate_backend)


def _validate_target(target: str) -> None:
    from ..plugins._hooks._targets import parse_target

    try:
        parse_target(target)
    except (ValueError, TypeError) as exc:
        raise _UsageError(
            f"explain: {target!r} is not a hook target ({exc}); use pkg.mod.func, pkg.mod.Class.method or "
            f"pkg.mod:Class.method"
        ) from None


def _schema_text() -> str:
    from importlib.resources import files

    return files("sglang_plugin_runtime").joinpath("cli-schema.json").read_text(encoding="utf-8")


def _run(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    from .._namespace import get_namespace
    from . import _render

    try:
        namespace = get_namespace(args.namespace)
    except ValueError as exc:
        raise _UsageError(f"--namespace: {exc}") from None
    simulation = _simulation(args)
    if args.command == "list":
        from ._list import list_report

        report = list_report(namespace, simulation=simulation, strict=args.strict)
        return report, _render.render_list(report)
    if args.command == "doctor":
        from ._doctor import doctor_report

        report = doctor_report(namespace, simulation=simulation, import_targets=args.import_targets, strict=args.strict)
        return report, _render.render_doctor(report)
    if args.command == "fingerprint":
        from ._fingerprint import ComparisonInputError, fingerprint_report, load_comparison, render_fingerprint

        try:
            comparison = load_comparison(args.compare) if args.compare is not None else None
        except ComparisonInputError as exc:
            raise _UsageError(f"fingerprint: {exc}") from None
        report = fingerprint_report(namespace, simulation=simulation, strict=args.strict, comparison=comparison)
        return report, render_fingerprint(report)
    _validate_target(args.target)
    from ._explain import explain_report

    report = explain_report(
        namespace, args.target, simulation=simulation, import_targets=args.import_targets, strict=args.strict
    )
    return report, _render.render_explain(report)


@contextlib.contextmanager
def _stdout_kept_for_the_report() -> Iterator[None]:
    """Send everything written to standard output while plugins run to standard error instead.

    Plugins run in this process and may print, from Python (``sys.stdout``) or from native code (file descriptor
    1, C ``printf``). File descriptor 1 is pointed at standard error for the block and C stdio buffers are flushed
    before it is restored, so the report (JSON above all) is the only thing on standard output.
    """
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no file descriptor 1 at all: only Python-level output can be redirected
        with contextlib.redirect_stdout(sys.stderr):
            yield
        return
    os.dup2(2, 1)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        _flush_c_stdio()
        os.dup2(saved, 1)
        os.close(saved)


def _flush_c_stdio() -> None:
    """``fflush(NULL)``: bytes a native library left in C's stdout buffer go to standard error, not the report."""
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)
    except (ImportError, OSError, AttributeError, TypeError):  # no C library to flush (e.g. some embedded builds)
        pass


def _run_command(argv: list[str]) -> int:
    from .. import _launcher

    command = argv[1:] if argv[:1] == ["--"] else argv
    try:
        plan = _launcher.plan(command)
        sys.stderr.write(plan.note + "\n")
        sys.stderr.flush()
        return _launcher.execute(plan)
    except _launcher.LaunchError as exc:
        sys.stderr.write(f"{exc}\n")
        return EXIT_USAGE


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status instead of exiting, so it can be called from Python."""
    parser = _build_parser()
    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # --help and --version
            return int(exc.code or 0)
        if args.command is None:
            parser.print_help(sys.stderr)
            return EXIT_USAGE
        if args.command == "schema":
            sys.stdout.write(_schema_text())
            return EXIT_OK
        if args.command == "run":
            return _run_command(args.argv)
        _configure_logging(args.verbose)
        from .._plugin_code import signal_interrupts_marked

        # Plugins run in this process: whatever they print goes to stderr, and a KeyboardInterrupt they raise
        # themselves is their failure, not the user's Ctrl-C.
        with _stdout_kept_for_the_report(), signal_interrupts_marked():
            report, text = _run(args)
        sys.stdout.write(json.dumps(report, indent=2) + "\n" if args.json else text)
        sys.stdout.flush()
        return EXIT_PROBLEMS if report["exit_status"] else EXIT_OK
    except _UsageError as exc:
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
