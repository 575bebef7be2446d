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
    """Generate from tag v1 with custom answers, edit the project, tag v2 of the template,
    update."""
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
    gitignore.write_text(
        gitignore.read_text(encoding="utf-8") + "\n" + NEW_IGNORE_LINE, encoding="utf-8"
    )
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
    assert "class AcmeSRTPlatform" in next(updated_project.glob("*/platform.py")).read_text(
        encoding="utf-8"
    )


def test_update_leaves_no_conflicts(updated_project: Path) -> None:
    for path in updated_project.rglob("*"):
        if ".git" in path.parts or not path.is_file():
            continue
        assert path.suffix != ".rej", path
        text = path.read_text(encoding="utf-8")
        assert "<<<<<<<" not in text and ">>>>>>>" not in text, path


# ---- generated from an untagged commit, which a release tag lands on afterwards

CI_NOTE = "# v2 of the template: the runner's Python is set up by actions/setup-python."


@pytest.fixture
def updated_after_tag(tmp_path: Path) -> tuple[Path, Path]:
    """Generate from an untagged commit, tag that commit (the release), make and tag v2, update to
    it.

    Returns the updated project and a fresh generation from v2 with the same answers."""
    from copier import run_update

    template = copy_template(tmp_path / "template")
    git(template, "init", "--quiet", "--initial-branch=main")
    git(template, "add", "-A")
    git(template, "commit", "--quiet", "-m", "template before the release")
    git(template, "tag", "v0.9.0")
    readme = template / "templates" / "_shared" / "readme_update.md.jinja"
    readme.write_text(readme.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    git(
        template,
        "commit",
        "--quiet",
        "-am",
        "the release candidate (untagged when the vendor generates)",
    )

    project = render_template(template, tmp_path / "project", vcs_ref="HEAD", plugin_kind="general")
    commit = yaml.safe_load((project / ".copier-answers.yml").read_text(encoding="utf-8"))[
        "_commit"
    ]
    assert commit.startswith("v0.9.0-1-g"), commit  # one commit past the last tag: untagged
    git(project, "init", "--quiet", "--initial-branch=main")
    git(project, "add", "-A")
    git(project, "commit", "--quiet", "-m", "generated from an untagged commit")

    git(template, "tag", "v1.0.0")  # the release lands on the commit the vendor generated from
    ci = template / "templates" / "_shared" / "ci.yml.jinja"
    text = ci.read_text(encoding="utf-8")
    text = text.replace("      - name: Install\n", f"      {CI_NOTE}\n      - name: Install\n", 1)
    ci.write_text(text, encoding="utf-8")
    gitignore = template / "templates" / "_shared" / "gitignore.jinja"
    gitignore.write_text(
        gitignore.read_text(encoding="utf-8") + "\n" + NEW_IGNORE_LINE, encoding="utf-8"
    )
    git(template, "commit", "--quiet", "-am", "template v1.1.0")
    git(template, "tag", "v1.1.0")

    run_update(project, vcs_ref="v1.1.0", defaults=True, overwrite=True, unsafe=False, quiet=True)
    fresh = render_template(template, tmp_path / "fresh", vcs_ref="v1.1.0", plugin_kind="general")
    return project, fresh


@pytest.mark.fault(
    "templates",
    "copier update after a release tag landed on the commit a project was generated from",
    "no conflict: the runtime pin names the commit, whatever tags point at it",
)
def test_update_after_a_tag_landed_on_the_generating_commit_leaves_no_conflict(
    updated_after_tag: tuple[Path, Path],
) -> None:
    project, fresh = updated_after_tag
    status = git(project, "status", "--porcelain")
    assert not [
        line for line in status.splitlines() if line[:2] in {"UU", "AA", "DU", "UD", "AU", "UA"}
    ], status
    for path in project.rglob("*"):
        if ".git" in path.parts or not path.is_file():
            continue
        relative = path.relative_to(project)
        assert path.suffix != ".rej", relative
        if relative.as_posix() == ".copier-answers.yml":
            continue
        # Untouched by the vendor: exactly what v1.1.0 generates.
        assert path.read_text(encoding="utf-8") == (fresh / relative).read_text(encoding="utf-8"), (
            relative
        )
    assert CI_NOTE in (project / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8")


# ---- an update that conflicts with the vendor's edit

VENDOR_GITIGNORE = "# the vendor's own ignore list\n*.log\n"


@pytest.mark.fault(
    "templates",
    "copier update where the template and the vendor changed the same lines (issue 28: "
    "it printed only 'Updating to template version' and exited 0)",
    "Copier's closing message says conflict markers may be in files and how to find them: "
    "git diff --check exits 2, naming each file and line",
)
def test_a_conflicting_update_says_how_to_find_the_conflict_markers(tmp_path: Path) -> None:
    import subprocess
    import sys

    from template_support import clean_env

    template = copy_template(tmp_path / "template")
    git(template, "init", "--quiet", "--initial-branch=main")
    git(template, "add", "-A")
    git(template, "commit", "--quiet", "-m", "template v1")
    git(template, "tag", "v1")
    project = render_template(template, tmp_path / "project", plugin_kind="general")
    git(project, "init", "--quiet", "--initial-branch=main")
    git(project, "add", "-A")
    git(project, "commit", "--quiet", "-m", "generated from v1")
    (project / ".gitignore").write_text(VENDOR_GITIGNORE, encoding="utf-8")
    git(project, "commit", "--quiet", "-am", "vendor edit")
    gitignore = template / "templates" / "_shared" / "gitignore.jinja"
    gitignore.write_text("# v2 of the template\n*.trace.json", encoding="utf-8")
    git(template, "commit", "--quiet", "-am", "template v2")
    git(template, "tag", "v2")

    updated = subprocess.run(
        [sys.executable, "-m", "copier", "update", "--defaults", "--vcs-ref", "v2"],
        cwd=project,
        env=clean_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    said = updated.stdout + updated.stderr
    assert updated.returncode == 0, said  # Copier itself does not fail on a conflict
    assert "<<<<<<< before updating" in (project / ".gitignore").read_text(encoding="utf-8")
    assert "find them with:" in said and "git diff --check" in said, said
    check = subprocess.run(
        ["git", "diff", "--check"], cwd=project, capture_output=True, text=True, check=False
    )
    assert (
        check.returncode == 2 and ".gitignore" in check.stdout and "conflict marker" in check.stdout
    )
