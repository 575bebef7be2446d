"""The runtime's release workflow (.github/workflows/release.yml) builds what it would publish.

Its build job's ``run`` steps are read from the workflow and run, in order, on the current tag of a
clone of this repository (the ``released_runtime`` fixture; CHANGELOG.md gets its release section as
the release commit would). Publishing itself needs PyPI and a tag push: it is the one step not run
here.
"""

from __future__ import annotations

import email
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest
from conftest import RUNNER_PIP_ENV, release_changelog
from template_support import (
    REPO_ROOT,
    VirtualEnv,
    git,
    project_version,
    run_workflow_step,
    workflow_job,
    workflow_run_steps,
)

# The published cases of test_template_end_to_end.py install what the build job builds: one worker
# runs both.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("templates-ci-published")]

WORKFLOW = REPO_ROOT / ".github" / "workflows" / "release.yml"


def _dist(released: dict[str, Any], suffix: str) -> Path:
    (path,) = [Path(p) for p in released["dist"] if p.endswith(suffix)]
    return path


def test_release_runs_on_version_tags_and_publishes_with_trusted_publishing() -> None:
    import yaml

    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert workflow[True]["push"]["tags"] == ["v*"]  # YAML 1.1 reads the key `on` as true
    publish = workflow["jobs"]["publish"]
    assert publish["needs"] == "build"
    assert publish["permissions"] == {"id-token": "write"}
    assert [step["uses"] for step in publish["steps"]][-1].startswith(
        "pypa/gh-action-pypi-publish@"
    )


def test_build_job_builds_one_sdist_and_one_wheel_of_the_tagged_version(
    released_runtime: dict[str, Any],
) -> None:
    version = project_version()
    names = sorted(Path(p).name for p in released_runtime["dist"])
    assert names == [
        f"sglang_plugin_runtime-{version}-py3-none-any.whl",
        f"sglang_plugin_runtime-{version}.tar.gz",
    ]


def test_wheel_carries_the_runtime_its_data_its_entry_points_and_the_license(
    released_runtime: dict[str, Any],
) -> None:
    with zipfile.ZipFile(_dist(released_runtime, ".whl")) as wheel:
        names = set(wheel.namelist())
        (metadata_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = email.message_from_bytes(wheel.read(metadata_name))
        (entry_points_name,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        entry_points = wheel.read(entry_points_name).decode("utf-8")
    assert {
        "sglang_plugin_runtime/__init__.py",
        "sglang_plugin_runtime/py.typed",
        "sglang_plugin_runtime/cli-schema.json",
        # the serving venv's pins: the sglang_server fixture needs no checkout of the kit
        "sglang_plugin_runtime/testing/serve-requirements.txt",
    } <= names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert not [
        n for n in names if "__pycache__" in n or n.endswith(".pyc") or n.startswith("tests/")
    ]
    assert metadata["Name"] == "sglang-plugin-runtime" and metadata["Version"] == project_version()
    assert metadata["License-Expression"] == "Apache-2.0"
    assert "sglang-plugins = sglang_plugin_runtime._cli:main" in entry_points
    assert "sglang_plugin_runtime = sglang_plugin_runtime.testing" in entry_points


def test_sdist_carries_what_rebuilds_the_wheel(released_runtime: dict[str, Any]) -> None:
    with tarfile.open(_dist(released_runtime, ".tar.gz")) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    assert {
        "pyproject.toml",
        "LICENSE",
        "README.md",
        "runtime/sglang_plugin_runtime/__init__.py",
    } <= names


def test_the_workflow_checks_the_built_wheel_in_a_fresh_venv(
    released_runtime: dict[str, Any],
) -> None:
    (check,) = [
        name
        for name in released_runtime["steps"]
        if "wheel" in name.lower() and "check" in name.lower()
    ]
    assert "sglang.srt.platforms" in released_runtime["outputs"][check]  # `sglang-plugins list` ran


def test_a_tag_that_does_not_match_the_runtime_version_is_refused(
    released_runtime: dict[str, Any], tmp_path: Path
) -> None:
    (check, *_) = workflow_run_steps(WORKFLOW, "build", {"github.ref_name": "v9.9.9"})
    result = run_workflow_step(
        check,
        venv=VirtualEnv(tmp_path / "python"),
        cwd=Path(released_runtime["checkout"]),
        env=RUNNER_PIP_ENV,
        check=False,
    )
    assert result.returncode != 0
    assert f"tag v9.9.9 does not match version {project_version()}" in result.stderr


def test_a_release_without_its_changelog_section_is_refused(
    tmp_path: Path, kit_repository: dict[str, str]
) -> None:
    checkout = tmp_path / "checkout"
    git(
        tmp_path,
        "clone",
        "--quiet",
        "--branch",
        kit_repository["current"],
        kit_repository["path"],
        str(checkout),
    )
    (checkout / "CHANGELOG.md").write_text(
        "# Changelog\n\n## [Unreleased]\n\n- Something new.\n", encoding="utf-8"
    )
    (check, *_) = workflow_run_steps(
        WORKFLOW, "build", {"github.ref_name": kit_repository["current"]}
    )
    result = run_workflow_step(
        check, venv=VirtualEnv(tmp_path / "python"), cwd=checkout, check=False
    )
    assert result.returncode != 0
    assert "CHANGELOG.md has no" in result.stderr


def test_changelog_follows_keep_a_changelog_and_a_release_moves_unreleased_under_the_version() -> (
    None
):
    text = (REPO_ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert text.startswith("# Changelog\n")
    assert "keepachangelog.com" in text and "## [Unreleased]" in text
    released = release_changelog(text, "1.2.3")
    assert (
        released.index("## [Unreleased]") < released.index("## [1.2.3] - ") < released.index("### ")
    )


def test_build_job_steps_are_the_ones_this_test_runs() -> None:
    # The first steps are the runner's checkout and Python, which the fixture provides; every other
    # one runs.
    steps = workflow_job(WORKFLOW, "build")["steps"]
    assert [s.get("uses", "").split("@")[0] for s in steps[:2]] == [
        "actions/checkout",
        "actions/setup-python",
    ]
    assert [s["name"] for s in steps if "run" in s] == [
        s.name for s in workflow_run_steps(WORKFLOW, "build", {"github.ref_name": "v0"})
    ]
