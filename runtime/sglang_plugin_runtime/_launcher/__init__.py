"""``sglang-plugins run -- COMMAND``: a released SGLang, with this runtime as its plugin layer, for
one process tree.

Nothing installed is modified and nothing outside the command's process tree changes. :func:`plan`
checks, before anything runs, that the installed SGLang is a release the launcher adopts and that
each file it adopts is that release's (by hash, ``_adoption``); it then writes a shim folder
(one ``sglang/__init__.py``) to a fresh temporary directory and puts it first on the command's
``PYTHONPATH``. In every interpreter of the tree the shim installs
:class:`~._finder.AdoptedSGLangFinder` and hands over to the real ``sglang`` package (see
``_finder``).
:func:`execute` runs the command, forwards the signals sent to the launcher, returns the command's
exit status and removes the shim.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

from ._adoption import LaunchError as LaunchError
from ._adoption import adoptions
from ._finder import ADOPTED_MARKER, ENTERED_MARKER, MARKERS, SHIM_ENV, VERSION_ENV, find_sglang

SHIM_SOURCE = """\
# Written by `sglang-plugins run` for one process tree, and removed when the command ends.
import sys
try:
    from sglang_plugin_runtime._launcher._finder import enter_from_shim
except ImportError as exc:
    raise ImportError(f"sglang-plugins run: this Python ({sys.executable}) cannot import "
                      "sglang_plugin_runtime; install the runtime into the environment that runs "
                      "SGLang") from exc
enter_from_shim()
"""

#: ``si_code`` of a signal the kernel sent, as a terminal sends Ctrl-C to its whole foreground
#: process group: the command got it too, so it is not sent again.
_SI_KERNEL = 0x80


def isolating_option(command: list[str]) -> str | None:
    """The option with which ``python ...`` ignores ``PYTHONPATH`` (``-I``, ``-E``, also combined:
    ``-sI``, ``-Ic``), read as CPython reads its options: ``-c``/``-m``, the script or ``--`` end
    them; ``-W``/``-X`` take a value."""
    if not command or not os.path.basename(command[0]).startswith("python"):
        return None
    arguments = iter(command[1:])
    for argument in arguments:
        if argument in ("-", "--") or not argument.startswith("-"):
            return None
        flags = "" if argument.startswith("--") else argument[1:]
        # the flags after it are its value
        letter = next((flag for flag in flags if flag in "IEcmWX"), "")
        if letter in ("I", "E"):
            return f"-{letter}"
        if letter in ("c", "m"):
            return None
        # -W or -X last, or --check-hash-based-pycs: the next argument is its value
        if argument == "--check-hash-based-pycs" or (letter and not flags.partition(letter)[2]):
            next(arguments, None)
    return None


def plan(command: list[str]) -> tuple[dict[str, str], Path | None]:
    """Check everything that can be checked before ``command`` runs (:class:`LaunchError` says what
    is wrong); the command's environment, and the shim folder to remove when it ends (``None``:
    SGLang runs as it is)."""
    if not command or command[0].startswith("-"):
        got = f" ({command[0]!r} is an option, not a command)" if command else ""
        raise LaunchError(
            f"sglang-plugins run: give the command to run after '--'{got}, e.g. sglang-plugins run "
            "-- python -m sglang.launch_server --model-path ...; 'sglang-plugins run --help' shows "
            "the usage"
        )
    if isolating := isolating_option(command):
        raise LaunchError(
            f"sglang-plugins run: {command[0]} {isolating} ignores PYTHONPATH, so SGLang would run "
            f"without the runtime; drop {isolating}"
        )
    env = dict(os.environ)
    outer = env.get(SHIM_ENV, "")
    # ("" is never a folder: no outer launcher)
    if outer in env.get("PYTHONPATH", "").split(os.pathsep) and os.path.isdir(outer):
        # A second shim would hand `import sglang` back to this one, and each to the other, forever.
        print(
            f"sglang-plugins run: already inside 'sglang-plugins run' (shim {outer}); running the "
            "command as it is",
            file=sys.stderr,
            flush=True,
        )
        return env, None
    try:
        version = metadata.version("sglang")
    except metadata.PackageNotFoundError:
        raise LaunchError(
            "sglang-plugins run: SGLang is not installed in this environment; install it, or run "
            "sglang-plugins from the environment that has it"
        ) from None
    spec = find_sglang()
    if spec is None or spec.origin is None:
        raise LaunchError(
            f"sglang-plugins run: SGLang {version} is installed but Python finds no sglang "
            f"package; reinstall sglang=={version}"
        )
    # Where `import sglang` finds it: site-packages (a wheel), the checkout (an editable install).
    site = Path(spec.origin).parent.parent
    hook_registry = site / "sglang/srt/plugins/hook_registry.py"
    if hook_registry.is_file() and "sglang_plugin_runtime" in hook_registry.read_text(
        encoding="utf-8"
    ):
        print(
            f"sglang-plugins run: SGLang {version} already imports sglang_plugin_runtime; running "
            "the command as it is",
            file=sys.stderr,
            flush=True,
        )
        return env, None
    for path, adoption in adoptions(version).items():
        file = site / path
        try:
            adoption.source(file.read_bytes() if file.is_file() else b"", file)
        except ImportError as exc:
            raise LaunchError(str(exc)) from None
    shim_dir = Path(tempfile.mkdtemp(prefix="sglang-plugins-run-"))
    (shim_dir / "sglang").mkdir()
    (shim_dir / "sglang/__init__.py").write_text(SHIM_SOURCE, encoding="utf-8")
    (shim_dir / MARKERS).mkdir()
    # A command that drops privileges (setpriv, gosu, runuser) runs SGLang as another user: it
    # reads the shim, which only its owner may change, and writes its markers (sticky: no user
    # removes another's).
    for made, mode in (
        (shim_dir, 0o755),
        (shim_dir / "sglang", 0o755),
        (shim_dir / "sglang/__init__.py", 0o644),
        (shim_dir / MARKERS, 0o1733),
    ):
        made.chmod(mode)
    env.update(
        {
            "PYTHONPATH": os.pathsep.join(filter(None, (str(shim_dir), env.get("PYTHONPATH")))),
            VERSION_ENV: version,
            SHIM_ENV: str(shim_dir),
        }
    )
    return env, shim_dir


def _not_adopted(command: list[str], shim_dir: Path) -> str:
    """Why no process of ``command`` adopted SGLang, blaming only what the run shows."""
    if (shim_dir / MARKERS / ENTERED_MARKER).exists():
        return "SGLang was not adopted: its import failed in the command (the error above says why)"
    words = " ".join(command).split()
    isolated = next(filter(None, (isolating_option(words[i:]) for i in range(len(words)))), None)
    said = "no process of the command imported SGLang through the launcher"
    return (
        f"{said}: its {isolated} ignores PYTHONPATH, so SGLang is imported without the launcher"
        if isolated
        else said
    )


def execute(command: list[str], env: dict[str, str], shim_dir: Path | None) -> int:
    """Run ``command`` as :func:`plan` prepared it; its exit status (128 + N when it died of signal
    N). The shim is always removed."""
    # the signals a supervisor or a container stop sends the launcher: the command gets them
    forwarded = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT}
    waited = forwarded | {signal.SIGCHLD}
    # Blocked, the signals wait for sigtimedwait(), which says who sent each (where it exists: not
    # on macOS).
    blocking = hasattr(signal, "sigtimedwait")
    # (unused where nothing is blocked)
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, waited) if blocking else set()
    try:
        try:
            child = subprocess.Popen(
                command,
                env=env,
                preexec_fn=(lambda: signal.pthread_sigmask(signal.SIG_SETMASK, previous))
                if blocking
                else None,
            )
        except OSError as exc:
            raise LaunchError(f"sglang-plugins run: cannot start {command[0]!r}: {exc}") from None
        for signum in () if blocking else forwarded:
            signal.signal(signum, lambda number, _frame: child.send_signal(number))
        while child.poll() is None:
            info = signal.sigtimedwait(waited, 1.0) if blocking else child.wait()
            if (
                isinstance(info, signal.struct_siginfo)
                and info.si_signo in forwarded
                and info.si_code != _SI_KERNEL
            ):
                child.send_signal(info.si_signo)
        if shim_dir and not (shim_dir / MARKERS / ADOPTED_MARKER).exists():
            print(f"sglang-plugins run: {_not_adopted(command, shim_dir)}", file=sys.stderr)
        return 128 - child.returncode if child.returncode < 0 else child.returncode
    finally:
        if blocking:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        if shim_dir:
            shutil.rmtree(shim_dir, ignore_errors=True)
