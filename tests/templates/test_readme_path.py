"""The generated README, followed literally, from a clean machine: every step passes, for both
kinds.

Each kind is generated with its default answers, and general packages also with other example sets
(none; BEFORE and the class REPLACE), from the kit's tagged git clone (``kit_repository``), so the
README's runtime step installs the runtime from that clone, as it would from the kit's repository.
The shell steps of the README's section "From a clean machine to a tested, built package" are
extracted in order and run as they are written, in one ``bash -e`` session at the project's root,
with Python 3.11 first on ``PATH`` and nothing installed: the README's own first step makes the
virtual environment (Python 3.11's ``venv``, with the pip it bundles: 23.2 for 3.11.7), and every
later step runs in it.

This machine does not reach the PyTorch CPU index (pip's configuration adds a find-links folder);
``--extra-index-url https://download.pytorch.org/whl/cpu`` is tried as written, fails to resolve,
and pip takes torch's CPU wheel from the find-links folder, as it would from that index; the next
step says which torch came.
``PIP_RETRIES=1`` and ``PIP_NO_COMPILE=1`` are settings of this machine (``RUNNER_PIP_ENV``), not of
the README.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import RUNNER_PIP_ENV
from template_support import clean_env, git, render_template

pytestmark = pytest.mark.slow

SECTION = "## From a clean machine to a tested, built package"
STEP_MARK = "::readme-step::"
#: The READMEs followed: each kind with its defaults, and general packages with other example sets.
VARIANTS: dict[str, dict[str, Any]] = {
    "platform": {"plugin_kind": "platform"},
    "general": {"plugin_kind": "general"},
    "general-no-examples": {"plugin_kind": "general", "example_hooks": []},
    "general-before-and-replace": {
        "plugin_kind": "general",
        "example_hooks": ["before", "replace_class"],
    },
}


def _python311() -> Path | None:
    """A Python 3.11 as a clean machine has it: pyenv's build with its bundled pip, else
    ``python3.11``."""
    pyenv = sorted(Path("/root/.pyenv/versions").glob("3.11.*/bin/python3.11"))
    found = pyenv[-1] if pyenv else shutil.which("python3.11")
    return Path(found) if found else None


PYTHON311 = _python311()


def readme_steps(readme: str) -> list[str]:
    """The shell commands of the README's path section, in order (comments dropped, ``\\`` lines
    joined)."""
    start = readme.index(SECTION)
    end = readme.find("\n## ", start + len(SECTION))
    section = readme[start : end if end != -1 else len(readme)]
    commands: list[str] = []
    for block in re.findall(r"^```(?:bash|sh|console)\n(.*?)^```", section, re.M | re.S):
        pending = ""
        for line in block.splitlines():
            if not pending and (not line.strip() or line.lstrip().startswith("#")):
                continue
            pending += line
            if pending.endswith("\\"):
                pending = pending[:-1] + " "
                continue
            commands.append(pending.strip())
            pending = ""
    return commands


@dataclass
class ReadmeRun:
    project: Path
    steps: list[str]
    outputs: list[str]  # what each step printed, stdout and stderr together
    returncode: int
    answers: dict[str, Any]

    @property
    def failed_step(self) -> str | None:
        return None if self.returncode == 0 else self.steps[len(self.outputs) - 1]

    def output_of(self, command: str) -> str:
        return self.outputs[self.steps.index(command)]


def _follow_readme(project: Path, env: dict[str, str]) -> tuple[list[str], list[str], int]:
    steps = readme_steps((project / "README.md").read_text(encoding="utf-8"))
    script = "exec 2>&1\n" + "".join(f"echo {STEP_MARK}\n{command}\n" for command in steps)
    result = subprocess.run(
        ["bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-c", script],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    outputs = result.stdout.split(f"{STEP_MARK}\n")[1:]
    return steps, outputs, result.returncode


def _readme_run(request: pytest.FixtureRequest, variant: str) -> ReadmeRun:
    if PYTHON311 is None:
        pytest.skip("no Python 3.11 here (pyenv's 3.11.x or python3.11 on PATH)")
    build_once: Callable[..., dict[str, Any]] = request.getfixturevalue("build_once")
    kit: dict[str, str] = request.getfixturevalue("kit_repository")

    def build(folder: Path) -> dict[str, Any]:
        import yaml

        project = render_template(
            Path(kit["path"]), folder / "project", vcs_ref=kit["current"], **VARIANTS[variant]
        )
        env = clean_env(
            PATH=f"{PYTHON311.parent}{os.pathsep}{os.environ.get('PATH', '')}", **RUNNER_PIP_ENV
        )
        env.pop("PIP_DISABLE_PIP_VERSION_CHECK", None)  # a clean machine has no such setting
        steps, outputs, returncode = _follow_readme(project, env)
        answers = yaml.safe_load((project / ".copier-answers.yml").read_text(encoding="utf-8"))
        return {
            "project": str(project),
            "steps": steps,
            "outputs": outputs,
            "returncode": returncode,
            "answers": answers,
        }

    result = build_once(f"readme-path-{variant}", build)
    return ReadmeRun(
        Path(result["project"]),
        result["steps"],
        result["outputs"],
        result["returncode"],
        result["answers"],
    )


@pytest.fixture(
    params=[pytest.param(v, marks=pytest.mark.xdist_group(f"readme-path-{v}")) for v in VARIANTS]
)
def readme_run(request: pytest.FixtureRequest) -> ReadmeRun:
    return _readme_run(request, request.param)


def test_every_step_of_the_readme_passes_from_a_clean_machine(readme_run: ReadmeRun) -> None:
    if readme_run.failed_step is not None:
        pytest.fail(
            f"README step {readme_run.failed_step!r} failed (exit {readme_run.returncode}) in "
            f"{readme_run.project}:\n{readme_run.outputs[-1][-6000:]}",
            pytrace=False,
        )
    assert len(readme_run.outputs) == len(readme_run.steps)


def test_the_path_is_complete_in_order(
    readme_run: ReadmeRun, kit_repository: dict[str, str]
) -> None:
    commit = git(
        Path(kit_repository["path"]), "rev-parse", f"{kit_repository['current']}^{{commit}}"
    ).strip()
    expected = [
        "python3 -m venv .venv",
        ". .venv/bin/activate",
        "python -m pip install --upgrade pip",
    ]
    if readme_run.answers["plugin_kind"] == "platform":
        expected += [
            "pip install --retries 1 --timeout 20 torch==2.13.0 "
            "--extra-index-url https://download.pytorch.org/whl/cpu",
            "python -c \"import torch; print('torch', torch.__version__, '(a CPU build)' if "
            "torch.__version__.endswith('+cpu') else '(not a CPU build)')\"",
        ]
    requirement = f"sglang-plugin-runtime @ {readme_run.answers['runtime_source']}@{commit}"
    assert requirement in (readme_run.project / ".github" / "runtime-requirements.txt").read_text(
        encoding="utf-8"
    )
    expected += [
        "pip install -r .github/runtime-requirements.txt",
        'pip install -e ".[test]"',
        "pytest",
        "sglang-plugins doctor --strict --simulate mydevice --simulate-backend torch_mydevice"
        if readme_run.answers["plugin_kind"] == "platform"
        else "sglang-plugins doctor --strict",
        "python -m build",
    ]
    assert readme_run.steps == expected


def test_the_readme_starts_on_the_pip_python_3_11_bundles(readme_run: ReadmeRun) -> None:
    assert PYTHON311 is not None
    bundled = subprocess.run(
        [PYTHON311, "-c", "import ensurepip; print(ensurepip.version())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert f"Successfully uninstalled pip-{bundled}" in readme_run.output_of(
        "python -m pip install --upgrade pip"
    )


def test_the_editable_install_is_quiet(readme_run: ReadmeRun) -> None:
    output = readme_run.output_of('pip install -e ".[test]"')
    assert "BuildBackendWarning" not in output and "same name as your package" not in output, output


def test_the_tests_pass_without_warnings(readme_run: ReadmeRun) -> None:
    summary = readme_run.output_of("pytest").strip().splitlines()[-1]
    assert " passed" in summary and not re.search(r"failed|error|warning|skipped", summary), summary


def test_the_doctor_gate_passes(readme_run: ReadmeRun) -> None:
    doctor = next(s for s in readme_run.steps if s.startswith("sglang-plugins doctor --strict"))
    assert "exit status 0" in readme_run.output_of(doctor)
    # the CPU build of torch's warning headed --simulate runs
    assert "NumPy" not in readme_run.output_of(doctor)


def test_the_build_leaves_an_sdist_and_a_wheel(readme_run: ReadmeRun) -> None:
    built = sorted(p.suffix for p in (readme_run.project / "dist").iterdir())
    assert built == [".gz", ".whl"]


@pytest.mark.xdist_group("readme-path-platform")
def test_the_platform_readme_says_which_torch_came(request: pytest.FixtureRequest) -> None:
    platform = _readme_run(request, "platform")  # only a platform package's README installs torch
    said = next(s for s in platform.steps if s.startswith('python -c "import torch'))
    # the PyTorch CPU index is out of this machine's reach; its pip configuration has a +cpu wheel
    assert platform.output_of(said).strip().endswith("2.13.0+cpu (a CPU build)")


def test_the_built_wheel_carries_no_local_path(
    readme_run: ReadmeRun, kit_repository: dict[str, str]
) -> None:
    # Issue 36: the README is the long description; its git+file:// lines reached the wheel.
    (wheel,) = (readme_run.project / "dist").glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = archive.read(name).decode("utf-8")
    assert "Description-Content-Type: text/markdown" in metadata  # the README is in it
    assert "file://" not in metadata and kit_repository["path"] not in metadata
