"""Scenario subprocesses of an SGLang venv, and the template rendered and pip-installed for them.

Shared by the launcher tests (plain venv) and the adopted tier. Each scenario is a fresh interpreter
of this venv with exactly the scenario's folders on ``PYTHONPATH``; ``report(obj)`` inside it sends
one JSON result back.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

RESULT_MARK = "@@SCENARIO@@"
#: The release of this venv (``make test-releases`` runs the ``every_release`` tests in each).
SGLANG_VERSION = metadata.version("sglang")


def clean_env(paths: Iterable[Path | str] = (), **overrides: str) -> dict[str, str]:
    """A scenario's environment: no SGLANG_* leaking in, only ``paths`` added to ``sys.path``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_")}
    for key in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"):
        env.pop(key, None)
    joined = os.pathsep.join(str(p) for p in paths)
    if joined:
        env["PYTHONPATH"] = joined
    env.update(overrides)
    return env


@dataclass
class Outcome:
    """What a scenario subprocess reported (its JSON result) and printed."""

    result: Any
    returncode: int
    stdout: str
    stderr: str

    def __getitem__(self, key: str) -> Any:
        return self.result[key]


class ScenarioError(AssertionError):
    """A scenario subprocess ended without reporting a result."""


def run_python(
    code: str,
    *,
    paths: Iterable[Path | str] = (),
    env: dict[str, str] | None = None,
    timeout: float = 240,
    launcher: bool = False,
) -> Outcome:
    """Run ``code`` in a fresh interpreter of this venv; ``report(obj)`` in the code sends back a
    JSON result.

    ``launcher=True`` runs it as ``sglang-plugins run -- python -c CODE``.
    """
    prelude = textwrap.dedent(
        f"""
        import json as _json, sys as _sys
        def report(obj):
            print({RESULT_MARK!r} + _json.dumps(obj, default=repr), flush=True)
        """
    )
    command = [sys.executable, "-c", prelude + textwrap.dedent(code)]
    if launcher:
        command = [sys.executable, "-m", "sglang_plugin_runtime", "run", "--", *command]
    completed = subprocess.run(
        command,
        env=clean_env(paths, **(env or {})),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    result = None
    for line in completed.stdout.splitlines():
        if line.startswith(RESULT_MARK):
            result = json.loads(line[len(RESULT_MARK) :])
    if result is None:
        raise ScenarioError(
            f"scenario subprocess reported nothing (exit {completed.returncode})\n--- stdout "
            f"---\n{completed.stdout[-4000:]}\n--- stderr ---\n{completed.stderr[-6000:]}"
        )
    return Outcome(result, completed.returncode, completed.stdout, completed.stderr)


def pip_install_target(sources: Path | Iterable[Path], target: Path) -> Path:
    """One real ``pip install --target`` of the project(s) ``sources`` (no dependencies, no build
    isolation)."""
    if isinstance(sources, Path):
        sources = [sources]
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            *map(str, sources),
        ],
        env=clean_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        raise AssertionError(
            f"pip install into {target} failed:\n{completed.stdout}\n{completed.stderr}"
        )
    return target


def render(template: Path, destination: Path, data: dict[str, Any]) -> Path:
    """The template rendered with ``data`` (the other answers take their defaults)."""
    from copier import run_copy

    run_copy(
        str(template),
        destination,
        data=data,
        defaults=True,
        unsafe=False,
        quiet=True,
        overwrite=True,
    )
    return destination


def generated_stand_ins(project: Path) -> str:
    """Scenario code putting a generated general package's stand-ins (its
    ``tests/sglang_stand_ins.py``) in place of the SGLang modules its hooks target, as its own tests
    do (this venv lacks what some of those modules import); it defines ``resolve_target`` and
    ``target_owner``."""
    return textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(project / "tests")!r})
        from sglang_plugin_runtime.testing import StandInModules, resolve_target, target_owner
        from sglang_stand_ins import put_stand_ins
        put_stand_ins(StandInModules().start())
        """
    )


REPO_ROOT = Path(__file__).resolve().parents[1]
#: The adoption patch the adopted tier applies to the released wheel.
ADOPTION_PATCH = REPO_ROOT / "runtime/sglang_plugin_runtime/_launcher/patches/sglang-0.5.23.patch"
_CACHES = shutil.ignore_patterns(
    "__pycache__", "*.pyc", "*.egg-info", ".pytest_cache", ".ruff_cache"
)


def copy_of_the_template(destination: Path) -> Path:
    """``copier.yml`` and ``templates/`` of this checkout copied into ``destination`` (without
    caches): the template as it stands, uncommitted edits included."""
    shutil.copy2(REPO_ROOT / "copier.yml", destination / "copier.yml")
    shutil.copytree(REPO_ROOT / "templates", destination / "templates", ignore=_CACHES)
    return destination
