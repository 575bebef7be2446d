"""The serving venv: SGLang's real server on the CPU, built once from the package index and cached,
for the ``sglang_server`` fixture where the Python running the tests has no SGLang server.

    python -m sglang_plugin_runtime.testing.serving [CACHE]   # build or find it; print it

What goes in ships with the runtime as data (``serve-requirements.txt`` beside this module):
released SGLang and everything its server imports on the CPU path, pinned and installed with
``--no-deps``, so no CUDA-only package comes in. torch and torchvision come first, from the
PyTorch CPU index where it can be reached; one line says where they came from and whether torch is
a CPU build. pip gets bounded retries and timeouts. torchvision's two fake-op registrations are
then guarded (PyPI's torchvision is a CUDA build whose compiled ops do not load beside a CPU
torch). The venv lives in the cache folder (``~/.cache/sglang-plugin-runtime``, or
``SGLANG_SERVER_CACHE``), named by a hash of the pins, this recipe and the Python version; building
a new one removes the older ones. :func:`server_options` says how the fixture runs the server with
the project under test installed.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._sglang_server import SGLangServerError, cache_root

logger = logging.getLogger(__name__)

#: The Python that runs the ``sglang_server`` fixture's server, when set (SGLang's server and the
#: plugin under test installed in it).
PYTHON_ENV = "SGLANG_SERVER_PYTHON"
#: The pinned set (data shipped with the runtime).
REQUIREMENTS = Path(__file__).with_name("serve-requirements.txt")
#: Where pip finds torch's CPU build (PyPI's torch is built for CUDA, gigabytes larger).
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
#: pip's patience with each index: bounded (its default retries 5 times).
PIP_OPTIONS = ("--retries", "1", "--timeout", "20")
_RECIPE = "serve-venv 2"  # change it when the way the venv is built changes

#: Run by the venv's Python once everything is installed: guards torchvision's registrations, checks
#: that no CUDA-only package came in, prints torch's version.
_FINISH = r"""
import importlib.metadata as md, pathlib, sys, sysconfig
path = pathlib.Path(sysconfig.get_paths()["purelib"], "torchvision", "_meta_registrations.py")
text = path.read_text(encoding="utf-8")
for op in ("nms", "qnms"):
    fake = f'torch.library.register_fake("torchvision::{op}")'
    guarded = f"({fake} if torchvision.extension._has_ops() else (lambda fn: fn))"
    note = f"# Guarded by the SGLang plugin kit: no compiled ops, no torchvision::{op}.\n"
    text = text.replace(f"@{fake}\n", f"{note}@{guarded}\n")
path.write_text(text, encoding="utf-8")
cuda_only = ("sglang-kernel", "flashinfer-python", "cuda-python", "nvidia-cuda-runtime-cu12",
             "nvidia-cuda-runtime", "torchaudio", "torch_memory_saver", "flash-attn-4", "deep-gemm")
present = [name for name in cuda_only if any(True for _ in md.distributions(name=name))]
if present:
    sys.exit(f"CUDA-only packages came into the serving venv: {present}")
print(md.version("torch"))
"""


def serving_venv_path(cache: Path | None = None) -> Path:
    """Where the serving venv of these pins, this recipe and this Python is (or will be) kept."""
    key = f"{REQUIREMENTS.read_text(encoding='utf-8')}{_RECIPE} python {sys.version_info[:2]}"
    return (cache or cache_root()) / f"serve-venv-{hashlib.sha256(key.encode()).hexdigest()[:12]}"


def serving_venv(cache: Path | None = None, report: Callable[[str], object] = logger.info) -> Path:
    """The serving venv's folder, built first when no complete one is cached (minutes; one builder
    at a time). ``report`` gets a line per step. Raises :class:`SGLangServerError` with pip's output
    when a step fails."""
    import fcntl

    pins = REQUIREMENTS.read_text(encoding="utf-8")
    venv = serving_venv_path(cache)
    root = venv.parent
    root.mkdir(parents=True, exist_ok=True)
    with open(root / "serve-venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second builder waits, then reuses the venv
        if (venv / ".complete").exists():
            report(f"reusing the serving venv {venv} ({(venv / '.complete').read_text().strip()})")
            return venv
        report(f"building the serving venv {venv} (once; a few minutes) ...")
        began = time.monotonic()
        shutil.rmtree(venv, ignore_errors=True)
        _run(sys.executable, "-m", "venv", str(venv))
        python = str(venv / "bin" / "python")
        torch = [pin for pin in pins.split() if pin.startswith(("torch==", "torchvision=="))]
        try:
            urllib.request.urlopen(TORCH_CPU_INDEX + "/", timeout=10).close()
            index: tuple[str, ...] = ("--extra-index-url", TORCH_CPU_INDEX)
            where = "the PyTorch CPU index"
        except OSError as exc:
            index, where = (), f"pip's other indexes ({TORCH_CPU_INDEX} cannot be reached: {exc})"
        pip = (python, "-m", "pip", "install", "--quiet", "--no-deps", *PIP_OPTIONS)
        _run(*pip, *index, *torch)
        _run(*pip, "-r", REQUIREMENTS)
        version = _run(python, "-c", _FINISH).strip()
        cpu = version.endswith("+cpu")
        said = f"torch {version} from {where}: {'a' if cpu else 'not a'} CPU build"
        (venv / ".complete").write_text(said + "\n", encoding="utf-8")
    for old in root.glob("serve-venv-*"):
        if old != venv and old.is_dir():
            shutil.rmtree(old, ignore_errors=True)
    report(f"built the serving venv in {time.monotonic() - began:.0f} s; {said}")
    return venv


def server_options(project: Path, report: Any, launcher: bool = False) -> dict[str, Any]:
    """How to run the server with ``project`` (a folder with ``pyproject.toml``) installed: with the
    Python of :data:`PYTHON_ENV`, or this one where it has SGLang's server; else with the serving
    venv (built on first use), the project pip-installed into a folder of its own on its
    ``PYTHONPATH`` (beside a copy of this runtime for the ``launcher``). ``report`` gets a line per
    step."""
    if os.environ.get(PYTHON_ENV):
        return {"python": os.environ[PYTHON_ENV]}
    if all(importlib.util.find_spec(name) for name in ("sglang", "uvicorn", "transformers")):
        return {}
    python = str(serving_venv(report=report) / "bin" / "python")
    site = cache_root() / "projects" / hashlib.sha256(bytes(project.resolve())).hexdigest()[:12]
    shutil.rmtree(site, ignore_errors=True)
    if (project / "pyproject.toml").is_file():
        report(f"installing {project} for the server (pip install --target {site})")
        pip = [python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation"]
        _run(*pip, "--target", str(site), str(project))
    if launcher:
        runtime = Path(__file__).resolve().parents[1]
        shutil.copytree(runtime, site / runtime.name, ignore=shutil.ignore_patterns("__pycache__"))
    return {"python": python, "paths": [site]}


def _run(*command: str | Path) -> str:
    done = subprocess.run([str(c) for c in command], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SGLangServerError(
            f"{' '.join(map(str, command))} failed (exit {done.returncode}):\n"
            f"{done.stdout[-3000:]}{done.stderr[-5000:]}"
        )
    return done.stdout


def main(argv: list[str] | None = None) -> int:
    """Build (or find) the serving venv and print its folder; the one optional argument is the
    cache folder."""
    args = sys.argv[1:] if argv is None else argv
    venv = serving_venv(Path(args[0]) if args else None, lambda line: print(line, file=sys.stderr))
    print(venv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
