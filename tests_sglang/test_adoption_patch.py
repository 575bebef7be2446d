"""The adoption patch against the released wheel, in the plain venv (which it must never touch).

The adoption patch (runtime/sglang_plugin_runtime/_launcher/patches/sglang-0.5.23.patch: its one
copy, package data the launcher reads) is the upstream pull request: it applies to the wheel's files
exactly (no fuzz, no offset), the plain venv still holds the wheel's files byte for byte (RECORD
hashes), SGLang's own diffusion plugin tests pass there (the baseline the adopted tier compares
with), and its size is in docs/sglang.md.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pytest
from generated_docs import sync_section
from scenarios import ADOPTION_PATCH as PATCH
from scenarios import REPO_ROOT
from wheel_unit_tests import DIFFUSION_TESTS, run_wheel_tests, sglang_package_dir

from sglang_plugin_runtime._launcher._adoption import adoptions


@dataclass(frozen=True)
class FileChange:
    path: str  # relative to site-packages, e.g. sglang/srt/plugins/__init__.py
    added: int
    removed: int


def patch_files() -> list[FileChange]:
    changes: list[FileChange] = []
    path, added, removed = None, 0, 0
    for line in PATCH.read_text(encoding="utf-8").splitlines():
        if line.startswith("+++ "):
            if path is not None:
                changes.append(FileChange(path, added, removed))
            path, added, removed = re.sub(r"^\+\+\+ b/", "", line).split("\t")[0], 0, 0
        elif line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    if path is not None:
        changes.append(FileChange(path, added, removed))
    return changes


def site_packages() -> Path:
    return sglang_package_dir().parent


def test_the_patch_names_only_files_of_the_sglang_package() -> None:
    changes = patch_files()
    assert changes, f"{PATCH} changes nothing"
    for change in changes:
        assert change.path.startswith("sglang/") and change.path.endswith(".py"), change.path
        assert (site_packages() / change.path).is_file(), f"the wheel has no {change.path}"


def test_the_plain_venv_holds_the_wheels_files_unmodified() -> None:
    """RECORD's hashes: building the adopted venv never touched this one."""
    dist = metadata.distribution("sglang")
    record = {
        row[0]: row[1] for row in csv.reader((dist.read_text("RECORD") or "").splitlines()) if row
    }
    for change in patch_files():
        algorithm, _, expected = record[change.path].partition("=")
        digest = hashlib.new(algorithm, (site_packages() / change.path).read_bytes()).digest()
        assert base64.urlsafe_b64encode(digest).rstrip(b"=").decode() == expected, change.path


def test_the_patch_and_the_launcher_apply_to_the_released_wheel_exactly(tmp_path: Path) -> None:
    for change in patch_files():
        destination = tmp_path / change.path
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(site_packages() / change.path, destination)
    completed = subprocess.run(
        [
            "patch",
            "--strip=1",
            "--forward",
            "--batch",
            "--fuzz=0",
            "--no-backup-if-mismatch",
            "--reject-file=-",
            f"--input={PATCH}",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert not re.search(r"offset|fuzz", completed.stdout, re.IGNORECASE), completed.stdout
    # What the launcher compiles in memory is what the patch wrote, file for file.
    for path, adoption in adoptions("0.5.23").items():
        released = (site_packages() / path).read_bytes()
        patched = (tmp_path / path).read_text(encoding="utf-8")
        assert adoption.source(released, path) == patched, path


@pytest.mark.subprocess
def test_sglangs_own_diffusion_plugin_tests_all_pass_on_the_released_wheel(tmp_path: Path) -> None:
    outcomes = run_wheel_tests(DIFFUSION_TESTS, tmp_path)
    assert len(outcomes) == 32
    assert {t: o.message[:300] for t, o in outcomes.items() if o.status != "passed"} == {}


def test_the_doc_states_the_size_of_the_change() -> None:
    changes = patch_files()
    lines = ["| file (in the sglang wheel) | lines added | lines removed |", "|---|---:|---:|"]
    lines += [f"| `{c.path}` | {c.added} | {c.removed} |" for c in changes]
    added, removed = sum(c.added for c in changes), sum(c.removed for c in changes)
    lines.append(f"| **{len(changes)} files** | **{added}** | **{removed}** |")
    sync_section("adoption-size", "\n".join(lines), "tests_sglang/test_adoption_patch.py")


def test_make_patch_reproduces_the_committed_patch_from_the_released_and_patched_files(
    tmp_path: Path,
) -> None:
    """integrations/sglang/README.md's recipe round-trips: released files + patch -> make_patch.py
    -> same patch."""
    before, after = tmp_path / "a", tmp_path / "b"
    for change in patch_files():
        for root in (before, after):
            (root / change.path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(site_packages() / change.path, root / change.path)
    subprocess.run(
        ["patch", "--strip=1", "--batch", "--fuzz=0", f"--input={PATCH}"],
        cwd=after,
        check=True,
        capture_output=True,
    )
    made = subprocess.run(
        [
            sys.executable,
            str(REPO_ROOT / "integrations" / "sglang" / "make_patch.py"),
            str(before),
            str(after),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert made == PATCH.read_text(encoding="utf-8")
