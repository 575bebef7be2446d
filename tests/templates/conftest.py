"""Fixtures of the template tests: the template as a user gets it, rendering, and real virtual
environments.

Rendering goes through Copier's Python API exactly as ``copier copy`` does (no ``--trust``); the
template is snapshotted from the working tree (``copier.yml`` and ``templates/``) so that
uncommitted template changes are what is tested. Virtual environments are real (``python -m venv``,
no system site-packages); the runtime is installed into them from a snapshot of this repository's
source.
"""

from __future__ import annotations

import datetime
import fcntl
import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from template_support import (
    IGNORE,
    REPO_ROOT,
    Render,
    VirtualEnv,
    copy_template,
    git,
    project_version,
    render_template,
    run_workflow_step,
    snapshot_repository,
    workflow_run_steps,
)

#: The tags of the kit's snapshot clone: the older template, and the working tree as the current
#: release.
OLDER_TAG = "v0.0.1"


@pytest.fixture(scope="session")
def template_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The template, copied out of the working tree."""
    return copy_template(tmp_path_factory.mktemp("template"))


@pytest.fixture(scope="session")
def render(template_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Render:
    """``render(**answers)``: a freshly generated project in a new folder."""

    def _render(**answers: Any) -> Path:
        kind = str(answers.get("plugin_kind", "platform"))
        return render_template(template_dir, tmp_path_factory.mktemp(f"gen-{kind}"), **answers)

    return _render


@pytest.fixture(scope="session")
def runtime_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A snapshot of the runtime distribution's source, so pip never builds inside the shared
    checkout."""
    source = tmp_path_factory.mktemp("runtime-src")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (REPO_ROOT / name).exists():
            shutil.copy2(REPO_ROOT / name, source / name)
    shutil.copytree(REPO_ROOT / "runtime", source / "runtime", ignore=IGNORE)
    return source


@pytest.fixture(scope="session")
def make_venv(
    tmp_path_factory: pytest.TempPathFactory, runtime_source: Path
) -> Callable[..., VirtualEnv]:
    """``make_venv(name, *requirements)``: a new venv with the runtime and ``requirements``
    installed."""

    def _make(name: str, *requirements: Any, location: Path | None = None) -> VirtualEnv:
        env = VirtualEnv(location or tmp_path_factory.mktemp(f"venv-{name}"))
        env.pip_install(runtime_source, *requirements)
        return env

    return _make


@pytest.fixture(scope="session")
def build_once(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., dict[str, Any]]:
    """``build_once(name, build)``: run ``build(folder) -> dict`` once for the whole test run, even
    across xdist workers (a file lock in the folder the workers share), and return its (JSON) result
    to everyone.

    Expensive set-ups (a venv with torch) are then built once, whichever worker gets their tests
    first.
    """
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent

    def _build_once(name: str, build: Callable[[Path], dict[str, Any]]) -> dict[str, Any]:
        folder = root / f"shared-{name}"
        result_file = root / f"shared-{name}.json"
        with open(root / f"shared-{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                if result_file.exists():
                    return json.loads(result_file.read_text(encoding="utf-8"))
                shutil.rmtree(folder, ignore_errors=True)
                folder.mkdir()
                result = build(folder)
                result_file.write_text(json.dumps(result), encoding="utf-8")
                return result
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    return _build_once


@pytest.fixture(scope="session")
def kit_repository(build_once: Callable[..., dict[str, Any]]) -> dict[str, str]:
    """A clone of this repository with tags: ``older`` on the older template, ``current``
    (``v<version>``) on the working tree. Generating from it is generating from a tagged git
    repository, as a vendor does."""

    def build(folder: Path) -> dict[str, Any]:
        current = f"v{project_version()}"
        path = snapshot_repository(
            folder / "sglang-plugin-kit", older_tag=OLDER_TAG, current_tag=current
        )
        return {"path": str(path), "older": OLDER_TAG, "current": current}

    return build_once("kit-repository", build)


#: Settings of the machine the workflow steps run on, not of the workflows: no byte-compiling of
#: installed wheels (torch), and one retry for an index this machine cannot reach
#: (download.pytorch.org; the machine's pip configuration supplies torch from a local folder).
RUNNER_PIP_ENV = {"PIP_NO_COMPILE": "1", "PIP_RETRIES": "1"}


def release_changelog(text: str, version: str) -> str:
    """CHANGELOG.md as a release commit leaves it: the Unreleased entries under ``## [version] -
    date``."""
    today = datetime.date.today().isoformat()
    return re.sub(
        r"(?m)^## \[Unreleased\]$", f"## [Unreleased]\n\n## [{version}] - {today}", text, count=1
    )


@pytest.fixture(scope="session")
def released_runtime(
    build_once: Callable[..., dict[str, Any]], kit_repository: dict[str, str]
) -> dict[str, Any]:
    """The release workflow's build job, run on the current tag of the kit's clone (CHANGELOG.md
    released as the release commit does): its step outputs, and the sdist and wheel it built."""

    def build(folder: Path) -> dict[str, Any]:
        checkout = folder / "checkout"
        git(
            folder,
            "clone",
            "--quiet",
            "--branch",
            kit_repository["current"],
            kit_repository["path"],
            str(checkout),
        )
        changelog = checkout / "CHANGELOG.md"
        version = kit_repository["current"][1:]
        changelog.write_text(
            release_changelog(changelog.read_text(encoding="utf-8"), version), encoding="utf-8"
        )
        runner = VirtualEnv(folder / "setup-python")
        (folder / "runner-temp").mkdir()
        outputs = {}
        steps = workflow_run_steps(
            checkout / ".github" / "workflows" / "release.yml",
            "build",
            {"github.ref_name": kit_repository["current"]},
        )
        for step in steps:
            result = run_workflow_step(
                step,
                venv=runner,
                cwd=checkout,
                env={"RUNNER_TEMP": str(folder / "runner-temp"), **RUNNER_PIP_ENV},
            )
            outputs[step.name] = result.stdout + result.stderr
        dist = sorted(str(p) for p in (checkout / "dist").iterdir())
        return {
            "checkout": str(checkout),
            "dist": dist,
            "outputs": outputs,
            "steps": [s.name for s in steps],
        }

    return build_once("released-runtime", build)
