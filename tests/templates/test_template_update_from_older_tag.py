"""A vendor's project generated from an older tag of the template updates cleanly to the current
one.

The older tag is the template before packages bound to SGLang where it is installed
(``host_api=runtime`` by default, the diffusion class inside ``platform.py``, a placeholder
description); the current tag is this working tree (``kit_repository``: a clone of this repository
with both tags). The vendor generates from the older tag, commits, edits the project the way vendors
do (a README note, a private helper, a tool section, a test of their own), commits, and runs
``copier update --defaults`` (to the newest tag). The update must merge without a conflict, keep
every vendor edit, move the retired ``host_api=runtime`` answer to the new default, and leave
exactly what a fresh generation with the same answers gives, plus the vendor's edits.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from template_support import git, render_template

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("templates-update-from-older-tag")]

README_NOTE = "\nNotes from the vendor: keep this paragraph across template updates.\n"
TOOL_SECTION = '\n[tool.acme]\nfirmware = "2.1"\n'
VENDOR_TEST = (
    "def test_vendor_owned_file_survives_updates() -> None:\n    assert True is not False\n"
)

PLATFORM_ANSWERS = {
    "plugin_kind": "platform",
    "device_name": "acme",
    "description": 'Keeps "my" answers \\ ✓',
}
DEVICE_HELPER = (
    "\n    @classmethod\n"
    "    def _firmware_version(cls) -> str:\n"
    '        """The vendor\'s own helper (private, so the contract check leaves it alone)."""\n'
    '        return "2.1"\n'
)
GENERAL_ANSWERS = {
    "plugin_kind": "general",
    "distribution_name": "acme-hooks",
    "example_hooks": ["around_timer"],
}
VENDOR_HOOK = (
    "\n\ndef vendor_hook(result, *args, **kwargs):\n"
    '    """The vendor\'s own AFTER hook, next to the examples."""\n'
    "    return result\n"
)
REGISTER_HOOKS = "\n\ndef register_hooks() -> None:"


@dataclass(frozen=True)
class Edit:
    """Text the vendor put in a file: before the first ``anchor``, at the end without one (or as a
    new file)."""

    text: str
    anchor: str | None = None

    def apply(self, content: str) -> str:
        if self.anchor is None:
            return content + self.text
        assert self.anchor in content, f"the anchor {self.anchor!r} is gone; update this test"
        return content.replace(self.anchor, self.text + self.anchor, 1)


@dataclass
class Update:
    project: Path
    fresh: Path  # a fresh generation from the current tag with the answers the update recorded
    answers_before: dict[str, Any]
    answers_after: dict[str, Any]
    edits: dict[str, Edit]
    status: str  # `git status --porcelain` after the update


def _answers(project: Path) -> dict[str, Any]:
    return yaml.safe_load((project / ".copier-answers.yml").read_text(encoding="utf-8"))


def _update(
    kit: dict[str, str], tmp_path: Path, answers: dict[str, Any], edits: dict[str, Edit]
) -> Update:
    from copier import run_update

    project = render_template(
        Path(kit["path"]), tmp_path / "project", vcs_ref=kit["older"], **answers
    )
    before = _answers(project)
    git(project, "init", "--quiet", "--initial-branch=main")
    git(project, "add", "-A")
    git(project, "commit", "--quiet", "-m", f"generated from {kit['older']}")
    for relative, edit in edits.items():
        path = project / relative
        path.write_text(
            edit.apply(path.read_text(encoding="utf-8") if path.exists() else ""), encoding="utf-8"
        )
    git(project, "add", "-A")
    git(project, "commit", "--quiet", "-m", "vendor edits")

    # to the newest tag
    run_update(project, defaults=True, overwrite=True, unsafe=False, quiet=True)

    after = _answers(project)
    recorded = {k: v for k, v in after.items() if not k.startswith("_")}
    fresh = render_template(
        Path(kit["path"]), tmp_path / "fresh", vcs_ref=kit["current"], **recorded
    )
    status = git(project, "status", "--porcelain")
    return Update(project, fresh, before, after, edits, status)


def _files(root: Path) -> set[str]:
    return {
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and ".git" not in p.parts
    }


@pytest.fixture(scope="module")
def platform_update(
    kit_repository: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Update:
    edits = {
        "README.md": Edit(README_NOTE),
        "pyproject.toml": Edit(TOOL_SECTION),
        # The device mixin ends device.py in both versions: the helper goes there.
        "sglang_mydevice_platform/device.py": Edit(DEVICE_HELPER),
        "tests/test_vendor.py": Edit(VENDOR_TEST),
    }
    return _update(
        kit_repository, tmp_path_factory.mktemp("update-platform"), PLATFORM_ANSWERS, edits
    )


@pytest.fixture(scope="module")
def general_update(
    kit_repository: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Update:
    edits = {
        "README.md": Edit(README_NOTE),
        "acme_hooks/hooks.py": Edit(VENDOR_HOOK, anchor=REGISTER_HOOKS),
        "tests/test_vendor.py": Edit(VENDOR_TEST),
    }
    return _update(
        kit_repository, tmp_path_factory.mktemp("update-general"), GENERAL_ANSWERS, edits
    )


@pytest.fixture(params=["platform", "general"])
def update(request: pytest.FixtureRequest) -> Update:
    return request.getfixturevalue(f"{request.param}_update")


def test_the_older_tag_is_the_template_before_host_binding(platform_update: Update) -> None:
    assert platform_update.answers_before["_commit"] == "v0.0.1"
    assert platform_update.answers_before["host_api"] == "runtime"


def test_update_goes_to_the_newest_tag(update: Update, kit_repository: dict[str, str]) -> None:
    assert update.answers_after["_commit"] == kit_repository["current"]


def test_update_merges_without_conflicts(update: Update) -> None:
    unmerged = [
        line
        for line in update.status.splitlines()
        if line[:2] in {"UU", "AA", "DU", "UD", "AU", "UA"}
    ]
    assert unmerged == []
    for relative in _files(update.project):
        assert not relative.endswith(".rej"), relative
        text = (update.project / relative).read_text(encoding="utf-8")
        assert "<<<<<<<" not in text and ">>>>>>>" not in text, relative


def test_update_keeps_every_vendor_edit(update: Update) -> None:
    for relative, edit in update.edits.items():
        assert edit.text in (update.project / relative).read_text(encoding="utf-8"), relative


def test_update_keeps_the_answers(update: Update) -> None:
    for key, value in update.answers_before.items():
        if key not in {"_commit", "host_api"}:
            assert update.answers_after[key] == value, key


def test_retired_host_api_runtime_moves_to_the_new_default(update: Update) -> None:
    assert update.answers_after["host_api"] == "auto"
    package = update.answers_after["package_name"]
    assert 'HOST_PACKAGE = "sglang.srt" if SGLANG_INSTALLED else "sglang_plugin_runtime"' in (
        update.project / package / "host.py"
    ).read_text(encoding="utf-8")


def test_platform_update_moves_the_diffusion_class_into_its_own_module(
    platform_update: Update,
) -> None:
    assert platform_update.answers_after["with_mm_platform"] is True  # the older default, kept
    package = platform_update.project / "sglang_mydevice_platform"
    assert "MMPlatform" not in (package / "platform.py").read_text(encoding="utf-8")
    assert "class AcmeMMPlatform(host.MMPlatform, AcmeDeviceMixin):" in (
        package / "diffusion.py"
    ).read_text(encoding="utf-8")


def test_updated_project_is_a_fresh_generation_plus_the_vendor_edits(update: Update) -> None:
    new_files = {relative for relative in update.edits if not (update.fresh / relative).exists()}
    assert _files(update.project) == _files(update.fresh) | new_files
    for relative in new_files:
        assert (update.project / relative).read_text(encoding="utf-8") == update.edits[
            relative
        ].text
    for relative in sorted(_files(update.fresh)):
        expected = (update.fresh / relative).read_text(encoding="utf-8")
        if relative in update.edits:
            expected = update.edits[relative].apply(expected)
        assert (update.project / relative).read_text(encoding="utf-8") == expected, relative
