"""A project generated from an older template tag updates to a newer one with ``copier update``."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from template_support import copy_template, git, render_template

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("templates-update")]

NEW_IGNORE_LINE = "# v2 of the template ignores profiler traces too\n*.trace.json"
USER_LINE = "Notes from the vendor: keep this line across template updates."


@pytest.fixture
def updated_project(tmp_path: Path) -> Path:
    """Generate from tag v1 with custom answers, edit the project, tag v2 of the template, update."""
    from copier import run_update

    template = copy_template(tmp_path / "template")
    git(template, "init", "--quiet", "--initial-branch=main")
    git(template, "add", "-A")
    git(template, "commit", "--quiet", "-m", "template v1")
    git(template, "tag", "v1")

    project = render_template(
        template, tmp_path / "project", description='Keeps "my" answers \\ ✓', device_name="acme"
    )
    answers = yaml.safe_load((project / ".copier-answers.yml").read_text(encoding="utf-8"))
    assert answers["_commit"] == "v1"
    git(project, "init", "--quiet", "--initial-branch=main")
    git(project, "add", "-A")
    git(project, "commit", "--quiet", "-m", "generated from v1")
    readme = project / "README.md"
    readme.write_text(readme.read_text(encoding="utf-8") + f"\n{USER_LINE}\n", encoding="utf-8")
    git(project, "commit", "--quiet", "-am", "vendor edit")

    gitignore = template / "templates" / "_shared" / "gitignore.jinja"
    gitignore.write_text(gitignore.read_text(encoding="utf-8") + "\n" + NEW_IGNORE_LINE, encoding="utf-8")
    git(template, "commit", "--quiet", "-am", "template v2: ignore profiler traces")
    git(template, "tag", "v2")

    run_update(project, vcs_ref="v2", defaults=True, overwrite=True, unsafe=False, quiet=True)
    return project


def test_update_brings_in_the_new_template_content(updated_project: Path) -> None:
    assert NEW_IGNORE_LINE in (updated_project / ".gitignore").read_text(encoding="utf-8")


def test_update_keeps_the_vendor_edit(updated_project: Path) -> None:
    assert USER_LINE in (updated_project / "README.md").read_text(encoding="utf-8")


def test_update_keeps_the_answers_and_records_the_new_tag(updated_project: Path) -> None:
    answers = yaml.safe_load((updated_project / ".copier-answers.yml").read_text(encoding="utf-8"))
    assert answers["_commit"] == "v2"
    assert answers["description"] == 'Keeps "my" answers \\ ✓'
    assert answers["device_name"] == "acme"
    assert "class AcmeSRTPlatform" in next(updated_project.glob("*/platform.py")).read_text(encoding="utf-8")


def test_update_leaves_no_conflicts(updated_project: Path) -> None:
    for path in updated_project.rglob("*"):
        if ".git" in path.parts or not path.is_file():
            continue
        assert path.suffix != ".rej", path
        text = path.read_text(encoding="utf-8")
        assert "<<<<<<<" not in text and ">>>>>>>" not in text, path
