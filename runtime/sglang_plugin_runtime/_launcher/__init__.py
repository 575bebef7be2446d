"""``sglang-plugins run -- COMMAND``: a released SGLang, with this runtime as its plugin layer, for one process tree.

Nothing installed is modified and nothing outside the command's process tree changes. :func:`plan` checks, before
anything runs, that the installed SGLang is a release this runtime carries the adoption patch for and that the
patch applies to its files exactly; it then writes a shim folder (one ``sglang/__init__.py``) to a fresh temporary
directory and puts it first on the command's ``PYTHONPATH``. In every interpreter of the tree the shim installs
:class:`~._finder.AdoptedSGLangFinder` and hands over to the real ``sglang`` package (see ``_finder``).
:func:`execute` runs the command, forwards SIGTERM/SIGHUP to it, returns its exit status and removes the shim.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from ._finder import SHIM_ENV, VERSION_ENV
from ._patch import PatchError, apply, parse
from ._versions import patch_text

__all__ = ["LaunchError", "Plan", "execute", "plan"]

SHIM_SOURCE = """\
# Written by `sglang-plugins run` for one process tree, and removed when the command ends.
import sys

try:
    from sglang_plugin_runtime._launcher._finder import enter_from_shim
except ImportError as exc:
    raise ImportError(
        "sglang-plugins run: this Python (%s) cannot import sglang_plugin_runtime; install the runtime into the "
        "environment that runs SGLang" % sys.executable
    ) from exc
enter_from_shim(sys.modules[__name__])
"""


#: The interpreter's switches that take no value (``python -bBdEhiIOPqRsSuvVx``).
_PYTHON_SWITCHES = frozenset("bBdEhiIOPqRsSuvVx")


class LaunchError(Exception):
    """The command cannot run with the runtime as SGLang's plugin layer; the message says why and what to do."""


@dataclass
class Plan:
    """What :func:`execute` runs: the command, its environment, and the shim folder to remove afterwards."""

    command: list[str]
    env: dict[str, str]
    sglang_version: str
    note: str
    shim_dir: Path | None = None
    adopted_modules: tuple[str, ...] = field(default_factory=tuple)


def _installed_sglang() -> tuple[str, Path]:
    try:
        dist = metadata.distribution("sglang")
    except metadata.PackageNotFoundError:
        raise LaunchError(
            "sglang-plugins run: SGLang is not installed in this environment; install it, or run sglang-plugins from "
            "the environment that has it"
        ) from None
    return dist.version, Path(str(dist.locate_file("")))


def _refuse_isolated_python(command: list[str]) -> None:
    """``python -I``/``-E`` ignore PYTHONPATH: the shim would never load and SGLang would run unadopted, silently."""
    if not command or not os.path.basename(command[0]).startswith("python"):
        return
    for arg in command[1:]:
        letters = arg[1:]
        if not arg.startswith("-") or not letters or not set(letters) <= _PYTHON_SWITCHES:
            return  # the script, -m/-c, or an option with a value: the interpreter's own switches end here
        if "I" in letters or "E" in letters:
            raise LaunchError(
                f"sglang-plugins run: {command[0]} {arg} ignores PYTHONPATH, so SGLang would run without the runtime; "
                f"drop {arg}"
            )


def plan(command: list[str], environ: dict[str, str] | None = None) -> Plan:
    """Check everything that can be checked before ``command`` runs; :class:`LaunchError` says what is wrong."""
    if not command:
        raise LaunchError(
            "sglang-plugins run: give the command to run, e.g. sglang-plugins run -- python -m "
            "sglang.launch_server --model-path ..."
        )
    _refuse_isolated_python(command)
    env = dict(os.environ if environ is None else environ)
    version, site = _installed_sglang()
    hook_registry = site / "sglang" / "srt" / "plugins" / "hook_registry.py"
    if hook_registry.is_file() and "sglang_plugin_runtime" in hook_registry.read_text(encoding="utf-8"):
        return Plan(
            command,
            env,
            version,
            f"sglang-plugins run: SGLang {version} already imports sglang_plugin_runtime; running the command as it is",
        )
    try:
        patches = parse(patch_text(version))
    except LookupError as exc:
        raise LaunchError(f"sglang-plugins run: {exc}; install a supported SGLang release") from None
    for path, hunks in patches.items():
        installed = site / path
        try:
            apply(installed.read_text(encoding="utf-8"), hunks, name=str(installed))
        except (OSError, PatchError) as exc:
            raise LaunchError(
                f"sglang-plugins run: the installed SGLang {version} differs from the released files the adoption "
                f"patch was made for ({exc}); reinstall sglang=={version}, or run the command without the launcher"
            ) from None
    shim_dir = Path(tempfile.mkdtemp(prefix="sglang-plugins-run-"))
    (shim_dir / "sglang").mkdir()
    (shim_dir / "sglang" / "__init__.py").write_text(SHIM_SOURCE, encoding="utf-8")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(shim_dir), env.get("PYTHONPATH", "")) if p)
    env[VERSION_ENV] = version
    env[SHIM_ENV] = str(shim_dir)
    modules = tuple(sorted(path[: -len(".py")].replace("/", ".").removesuffix(".__init__") for path in patches))
    from .. import __version__

    note = (
        f"sglang-plugins run: SGLang {version} runs with sglang_plugin_runtime {__version__} as its plugin layer "
        f"in this process tree ({len(modules)} modules adopted in memory; nothing installed is changed)"
    )
    return Plan(command, env, version, note, shim_dir, modules)


def execute(prepared: Plan) -> int:
    """Run the planned command; its exit status (128 + N when it died of signal N). The shim is always removed."""
    forwarded = (signal.SIGTERM, signal.SIGHUP)
    previous = {}
    try:
        try:
            child = subprocess.Popen(prepared.command, env=prepared.env)
        except OSError as exc:
            raise LaunchError(f"sglang-plugins run: cannot start {prepared.command[0]!r}: {exc}") from None

        def forward(signum: int, _frame: object) -> None:
            child.send_signal(signum)

        for signum in forwarded:
            previous[signum] = signal.signal(signum, forward)
        while True:
            try:
                status = child.wait()
                break
            except KeyboardInterrupt:  # the child got the same Ctrl-C from the terminal; wait for it to end
                continue
        return 128 - status if status < 0 else status
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if prepared.shim_dir is not None:
            shutil.rmtree(prepared.shim_dir, ignore_errors=True)
