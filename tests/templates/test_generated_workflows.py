"""The generated GitHub Actions workflows: they pass actionlint, and the commands of each job run as
written.

The ``test`` job's steps run in ``test_template_end_to_end.py``. Here, each in a fresh venv standing
in for ``actions/setup-python`` and a copy of the project standing in for ``actions/checkout``:

- ``test-sglang``: released SGLang's platform and plugin layers (the pinned set), the package's own
  tests on them and the gate, for both kinds;
- ``device``: on a runner whose Python has a vendor's torch extension: here a stand-in extension
  module that registers a simulated ``torch.mydevice`` when imported (this machine has no such
  device);
- the release workflow's ``build`` job: the tag check, the build, and the wheel installed without
  the runtime.

The ``sglang-server`` job needs SGLang's whole serving stack; its tests are the real-server tier's
(marker ``sglang_server``), and here it is checked by actionlint and its shape.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import RUNNER_PIP_ENV
from template_support import (
    PLATFORM_REALISTIC,
    TORCH_REQUIREMENT,
    VirtualEnv,
    git,
    render_template,
    run_workflow_step,
    workflow_run_steps,
)

LINT_CASES: dict[str, dict[str, Any]] = {
    "platform-defaults": {"plugin_kind": "platform"},
    "general-defaults": {"plugin_kind": "general"},
    "platform-realistic": PLATFORM_REALISTIC,
    "platform-proprietary-hpu-py313": {
        "plugin_kind": "platform",
        "device_name": "Gaudi-2.x",
        "device_type": "hpu",
        "license": "LicenseRef-Proprietary",
        "python_min": "3.13",
    },
    "general-sglang-host-no-hooks": {
        "plugin_kind": "general",
        "host_api": "sglang",
        "example_hooks": [],
    },
    "general-from-the-index": {"plugin_kind": "general", "runtime_source": ""},
}


def _actionlint() -> str:
    found = shutil.which("actionlint", path=str(Path(sys.executable).parent)) or shutil.which(
        "actionlint"
    )
    if found is None:
        pytest.fail(
            "actionlint is not installed: requirements-dev.txt pins it (make venv)", pytrace=False
        )
    return found


@pytest.mark.parametrize("name", sorted(LINT_CASES))
def test_generated_workflows_pass_actionlint(template_dir: Path, tmp_path: Path, name: str) -> None:
    project = render_template(template_dir, tmp_path / "project", **LINT_CASES[name])
    git(project, "init", "--quiet")  # actionlint finds the workflows of a repository
    result = subprocess.run(
        [_actionlint(), "-color=false"], cwd=project, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert sorted(p.name for p in (project / ".github" / "workflows").iterdir()) == [
        "ci.yml",
        "release.yml",
        "sglang-release.yml",
    ]


def _jobs(project: Path, workflow: str = "ci.yml") -> dict[str, Any]:
    return yaml.safe_load(
        (project / ".github" / "workflows" / workflow).read_text(encoding="utf-8")
    )["jobs"]


@pytest.mark.parametrize("kind", ["platform", "general"])
def test_ci_has_a_job_per_world_and_the_opt_in_ones_wait_to_be_asked(
    render: Callable[..., Path], kind: str
) -> None:
    jobs = _jobs(render(plugin_kind=kind))
    expected = {"test", "test-sglang", "sglang-main"} | (
        {"device"} if kind == "platform" else {"sglang-server"}
    )
    assert set(jobs) == expected
    assert jobs["test-sglang"]["strategy"]["matrix"]["release"] == ["oldest", "newest"]
    assert jobs["sglang-main"]["continue-on-error"] is True
    assert "schedule" in jobs["sglang-main"]["if"]
    if kind == "platform":
        assert jobs["device"]["runs-on"] == ["self-hosted", "mydevice"]
        assert jobs["device"]["if"] == "vars.MYDEVICE_RUNNER == 'true'"
        assert "python -m pytest -m device" in [s.get("run") for s in jobs["device"]["steps"]]
    else:
        assert "vars.SGLANG_SERVER_TESTS == 'true'" in jobs["sglang-server"]["if"]
        assert "python -m pytest -m sglang_server" in [
            s.get("run") for s in jobs["sglang-server"]["steps"]
        ]


def test_release_publishes_on_a_tag_with_trusted_publishing(render: Callable[..., Path]) -> None:
    project = render(plugin_kind="general")
    workflow = yaml.safe_load(
        (project / ".github" / "workflows" / "release.yml").read_text(encoding="utf-8")
    )
    assert workflow[True]["push"]["tags"] == ["v*"]  # YAML 1.1 reads the key `on` as true
    publish = workflow["jobs"]["publish"]
    assert publish["needs"] == "build" and publish["permissions"] == {"id-token": "write"}
    assert publish["steps"][-1]["uses"].startswith("pypa/gh-action-pypi-publish@")


# ---- the commands of each job, run


def _checkout(project: Path, folder: Path) -> Path:
    checkout = folder / project.name
    shutil.copytree(project, checkout)
    return checkout


def _distribution(project: Path) -> str:
    return str(
        yaml.safe_load((project / ".copier-answers.yml").read_text(encoding="utf-8"))[
            "distribution_name"
        ]
    )


def _run_job(steps: list[Any], runner: VirtualEnv, checkout: Path, **env: str) -> dict[str, str]:
    outputs = {}
    for step in steps:
        result = run_workflow_step(step, venv=runner, cwd=checkout, env={**RUNNER_PIP_ENV, **env})
        outputs[step.name] = result.stdout + result.stderr
    return outputs


@pytest.fixture(scope="session")
def sglang_job(
    build_once: Callable[..., dict[str, Any]], kit_repository: dict[str, str]
) -> dict[str, dict[str, str]]:
    """The ``test-sglang`` job of both kinds (default answers), one after the other on one
    runner."""

    def build(folder: Path) -> dict[str, Any]:
        runner = VirtualEnv(folder / "setup-python")
        outputs = {}
        for kind in ("platform", "general"):
            project = render_template(
                Path(kit_repository["path"]),
                folder / f"generated-{kind}",
                vcs_ref=kit_repository["current"],
                plugin_kind=kind,
            )
            checkout = _checkout(project, folder / f"checkout-{kind}")
            steps = workflow_run_steps(
                checkout / ".github" / "workflows" / "ci.yml",
                "test-sglang",
                {"matrix.release": "newest"},
            )
            outputs[kind] = _run_job(steps, runner, checkout)
            # The next kind's job starts as on a fresh runner, but for the pinned set (installed
            # once, here).
            runner.run("-m", "pip", "uninstall", "--yes", "--quiet", _distribution(project))
        return outputs

    return build_once("sglang-job", build)


@pytest.mark.slow
@pytest.mark.xdist_group("templates-sglang-job")
@pytest.mark.parametrize("kind", ["platform", "general"])
def test_the_sglang_job_passes_on_released_sglang(
    sglang_job: dict[str, dict[str, str]], kind: str
) -> None:
    outputs = sglang_job[kind]
    assert list(outputs) == [
        "Install released SGLang's platform and plugin layers",
        "Test on released SGLang",
        "Gate on released SGLang",
    ]
    summary = outputs["Test on released SGLang"].strip().splitlines()[-1]
    assert " passed" in summary and not any(w in summary for w in ("failed", "error", "skipped")), (
        summary
    )
    assert "exit status 0" in outputs["Gate on released SGLang"]
    assert "Supported SGLang (installed: 0.5.23)" in outputs["Gate on released SGLang"]


#: A vendor's torch extension as the device runner's Python has it: importing it registers
#: torch.mydevice (here a simulated one, from the testing kit: this machine has no such device).
FAKE_BACKEND = '''\
"""Stand-in for a vendor's torch extension: importing it registers torch.mydevice."""
from sglang_plugin_runtime.testing import simulated_device

_device = simulated_device("mydevice", device_count=2, privateuse1=True).start()
'''


@pytest.mark.slow
@pytest.mark.xdist_group("templates-device-job")
def test_the_device_job_runs_the_device_tests_on_the_runners_device(
    kit_repository: dict[str, str], tmp_path: Path
) -> None:
    project = render_template(
        Path(kit_repository["path"]),
        tmp_path / "generated",
        vcs_ref=kit_repository["current"],
        plugin_kind="platform",
    )
    checkout = _checkout(project, tmp_path / "checkout")
    # the runner's Python: torch and the vendor's extension
    runner = VirtualEnv(tmp_path / "runner-python")
    runner.pip_install(TORCH_REQUIREMENT)
    site = runner.run(
        "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    ).stdout.strip()
    (Path(site) / "torch_mydevice.py").write_text(FAKE_BACKEND, encoding="utf-8")
    outputs = _run_job(
        workflow_run_steps(checkout / ".github" / "workflows" / "ci.yml", "device"),
        runner,
        checkout,
    )
    summary = outputs["Tests on the device"].strip().splitlines()[-1]
    # only the tests marked device
    assert " 4 passed, " in summary and " deselected" in summary, summary
    assert "exit status 0" in outputs["Gate on the device"]
    assert "sglang_mydevice_platform.platform.MydeviceSRTPlatform" in outputs["Gate on the device"]


@pytest.mark.slow
@pytest.mark.xdist_group("templates-release-job")
def test_the_release_build_job_installs_the_wheel_without_the_runtime(
    kit_repository: dict[str, str], tmp_path: Path
) -> None:
    project = render_template(
        Path(kit_repository["path"]),
        tmp_path / "generated",
        vcs_ref=kit_repository["current"],
        plugin_kind="general",
    )
    checkout = _checkout(project, tmp_path / "checkout")
    (tmp_path / "runner-temp").mkdir()
    steps = workflow_run_steps(
        checkout / ".github" / "workflows" / "release.yml", "build", {"github.ref_name": "v0.1.0"}
    )
    outputs = _run_job(
        steps,
        VirtualEnv(tmp_path / "setup-python"),
        checkout,
        RUNNER_TEMP=str(tmp_path / "runner-temp"),
    )
    assert "Install the wheel without the plugin kit's runtime" in outputs
    check = tmp_path / "runner-temp" / "check" / "bin" / "python"
    installed = subprocess.run(
        [check, "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True, check=True
    ).stdout
    assert "sglang-example-hooks==0.1.0" in installed and "sglang-plugin-runtime" not in installed
    wrong = workflow_run_steps(
        checkout / ".github" / "workflows" / "release.yml", "build", {"github.ref_name": "v9"}
    )
    refused = run_workflow_step(
        wrong[0], venv=VirtualEnv(tmp_path / "other"), cwd=checkout, check=False
    )
    assert refused.returncode == 1 and "tag v9 does not match version 0.1.0" in refused.stderr
