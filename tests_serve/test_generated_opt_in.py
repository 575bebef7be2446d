"""The testing kit's ``sglang_server`` fixture and a generated package's opt-in real-server test,
in a clean venv: the serving set as ``make test-serve`` pins it, the kit's runtime, and the
generated package installed with a real ``pip install``, nothing else.

The venv is a hard-linked copy of the serving venv (pip writes new files, so the serving venv is
never changed through a link), into which the package generated with every default answer goes.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from conftest import VENV
from scenarios import clean_env, render

pytestmark = pytest.mark.serve


@pytest.fixture(scope="module")
def clean_venv_with_the_package(
    template_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path]:
    """(the venv's Python, the generated project) after ``pip install`` of the project into it."""
    answers = {
        "plugin_kind": "general",
        "project_name": "Laptop Hooks",
        "distribution_name": "laptop-hooks",
        "package_name": "laptop_hooks",
        "entry_point_name": "laptop_hooks",
    }
    project = render(template_dir, tmp_path_factory.mktemp("laptop-hooks"), answers)
    venv = tmp_path_factory.mktemp("clean") / "venv"
    subprocess.run(["cp", "-al", str(VENV), str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation"]
    installed = subprocess.run(
        [*pip, str(project)],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert installed.returncode == 0, installed.stderr
    return python, project


def _pytest(python: Path, project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = clean_env(SGLANG_SERVER_CACHE=os.environ.get("SGLANG_SERVER_CACHE", ""))
    return subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_the_real_server_test_is_off_in_a_plain_run(
    clean_venv_with_the_package: tuple[Path, Path],
) -> None:
    completed = _pytest(*clean_venv_with_the_package)
    assert completed.returncode == 0, completed.stdout[-3000:]
    # (SGLang's own import warns on the CPU where a test imports the example hook's module)
    summary = r"\d+ passed, 3 deselected(, \d+ warnings?)? in"
    assert re.search(summary, completed.stdout), completed.stdout[-1000:]


def test_the_generated_real_server_test_passes_with_the_kits_fixture(
    clean_venv_with_the_package: tuple[Path, Path],
) -> None:
    completed = _pytest(*clean_venv_with_the_package, "-m", "sglang_server")
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    # served, the timer hook ran in SGLang's scheduler, no failure logged
    assert re.search(r"\b3 passed\b", completed.stdout), completed.stdout[-1000:]
