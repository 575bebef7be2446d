"""Helpers of the template tests: rendering, subprocesses, real virtual environments, git."""

from __future__ import annotations

import os
import shutil
import subprocess
import venv
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
TORCH_REQUIREMENT = "torch==2.13.0"
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".pytest_cache", ".ruff_cache")

Render = Callable[..., Path]

#: What a generated package depends on, per ``host_api`` answer (the runtime, or the released SGLang).
HOST_REQUIREMENTS = {
    "runtime": "sglang-plugin-runtime>=0.1,<0.2",
    "sglang": "sglang>=0.5.23,<0.6",
}
#: The package a generated package's own code imports its platform classes and hook registry from.
HOST_API_PACKAGES = {"runtime": "sglang_plugin_runtime", "sglang": "sglang.srt"}


def copy_template(destination: Path) -> Path:
    """Copy the template (``copier.yml`` and ``templates/``) to ``destination``; return it."""
    destination.mkdir(parents=True, exist_ok=True)
    shutil.copy2(REPO_ROOT / "copier.yml", destination / "copier.yml")
    shutil.copytree(REPO_ROOT / "templates", destination / "templates", ignore=IGNORE)
    return destination


def render_template(template: Path, destination: Path, **answers: Any) -> Path:
    """Render ``template`` into ``destination`` with ``answers`` (defaults for the rest), as a user would."""
    from copier import run_copy

    run_copy(
        str(template),
        destination,
        data=answers,
        defaults=True,
        unsafe=False,
        quiet=True,
        overwrite=True,
    )
    return destination


def clean_env(**overrides: str) -> dict[str, str]:
    """The environment for subprocesses: no plugin selection leaking in, no venv of ours activated."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_")}
    for key in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PIP_REQUIRE_VIRTUALENV"):
        env.pop(key, None)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env.update(overrides)
    return env


def run(
    args: list[Any],
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run a command, capturing text output; on failure (with ``check``) show everything it printed."""
    result = subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        env=env if env is not None else clean_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    if check and result.returncode != 0:
        pytest.fail(
            f"command failed ({result.returncode}): {' '.join(map(str, args))}\n"
            f"--- stdout ---\n{result.stdout[-6000:]}\n--- stderr ---\n{result.stderr[-6000:]}",
            pytrace=False,
        )
    return result


class VirtualEnv:
    """A real virtual environment (no system site-packages)."""

    def __init__(self, path: Path, *, create: bool = True) -> None:
        self.path = path
        if create:
            venv.EnvBuilder(with_pip=True, system_site_packages=False, clear=True).create(path)
        self.python = path / ("Scripts" if os.name == "nt" else "bin") / "python"

    @classmethod
    def existing(cls, path: Path) -> VirtualEnv:
        """A venv created earlier (by another xdist worker, for example)."""
        return cls(path, create=False)

    def pip_install(self, *requirements: Any) -> None:
        run([self.python, "-m", "pip", "install", "--quiet", *requirements])

    def run(
        self, *args: Any, cwd: Path | None = None, check: bool = True, **env: str
    ) -> subprocess.CompletedProcess[str]:
        return run([self.python, *args], cwd=cwd, env=clean_env(**env), check=check)


def git(cwd: Path, *args: str) -> str:
    """Run git with a fixed identity; return its stdout."""
    env = clean_env(
        GIT_AUTHOR_NAME="Template Tests",
        GIT_AUTHOR_EMAIL="tests@example.org",
        GIT_COMMITTER_NAME="Template Tests",
        GIT_COMMITTER_EMAIL="tests@example.org",
    )
    return run(["git", *args], cwd=cwd, env=env).stdout
