"""A vendor's way to their own hook in SGLang's real server, without the kit's checkout: the
generated README's real-server section followed as written, and the generated CI's
``sglang-server`` job run as a runner runs it.

Each package is generated from a git clone of the kit (as from its repository's URL), so its runtime
requirement names that clone at a commit and pip builds the runtime from it. The testing kit's
``sglang_server`` fixture then builds the serving venv in its cache folder, or reuses it:
``SGLANG_SERVER_CACHE`` names this tier's cache, where ``scripts/test-serve.sh`` built the venv of
the same pins, recipe and Python with the same code. Nothing else of this checkout is used.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from conftest import VENV
from template_support import (
    VirtualEnv,
    render_template,
    run_workflow_step,
    snapshot_repository,
    workflow_run_steps,
)
from vendor_recipe import HOOK_LINE, add_own_hook, section_commands

pytestmark = pytest.mark.serve

#: Settings of this machine (no byte-compiling of installed wheels; one retry for an index it
#: cannot reach), as in the template tests.
MACHINE = {"PIP_NO_COMPILE": "1", "PIP_RETRIES": "1"}


@pytest.fixture(scope="module")
def kit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return snapshot_repository(
        tmp_path_factory.mktemp("kit") / "sglang-plugin-kit", older_tag="v0.0.1", current_tag="v9"
    )


def _generate(kit: Path, destination: Path) -> Path:
    return render_template(kit, destination, vcs_ref="v9", plugin_kind="general")


def _environment() -> dict[str, str]:
    """A clean machine's: Python 3.11 first on PATH (this venv's), the tier's cache folder."""
    path = f"{VENV / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    drop = ("SGLANG_", "VIRTUAL_ENV", "PYTHONPATH", "PIP_DISABLE")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    return {**env, **MACHINE, "PATH": path, "SGLANG_SERVER_CACHE": str(VENV.parent)}


def test_the_readmes_real_server_section_takes_a_fresh_venv_to_the_vendors_own_hook(
    kit: Path, tmp_path: Path
) -> None:
    project = _generate(kit, tmp_path / "my-hooks")
    add_own_hook(project)
    commands = section_commands((project / "README.md").read_text(encoding="utf-8"))
    assert commands[-1] == "pytest -m sglang_server"  # the one command
    completed = subprocess.run(
        ["bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-c", "\n".join(commands)],
        cwd=project,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output[-6000:]
    # served; the example timer and the vendor's own hook ran in SGLang's scheduler; no failure
    assert re.search(r"\b4 passed\b", output), output[-3000:]
    log = (project / ".sglang-server" / "server.log").read_text(encoding="utf-8")
    assert re.search(r"first call of hook log_scheduler_start in pid \d+", log)
    assert HOOK_LINE in log
    assert "sglang_server: reusing the serving venv" in output  # this tier's, found by its key


def test_the_generated_ci_sglang_server_job_passes(kit: Path, tmp_path: Path) -> None:
    checkout = _generate(kit, tmp_path / "checkout")
    runner = VirtualEnv(tmp_path / "setup-python")
    steps = workflow_run_steps(checkout / ".github" / "workflows" / "ci.yml", "sglang-server")
    assert [step.name for step in steps] == ["Install", "Real-server tests"]
    env = {"SGLANG_SERVER_CACHE": str(VENV.parent), **MACHINE}
    outputs = [run_workflow_step(step, venv=runner, cwd=checkout, env=env).stdout for step in steps]
    assert re.search(r"\b3 passed, \d+ deselected\b", outputs[-1]), outputs[-1][-3000:]
