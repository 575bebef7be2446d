"""`make demo`: each step prints its time, and `make demo KEEP=1` keeps the generated packages (the
README says so).

The demo itself installs into the dev venv, so it is never run from the test suite (it would change
the environment other tests scan); these tests check how it is wired and what it promises.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def _make_dry_run(*args: str) -> str:
    result = subprocess.run(
        ["make", "-n", "--no-print-directory", "demo", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout


def test_make_demo_keep_1_passes_keep_to_the_demo() -> None:
    assert "scripts/demo.py --keep" in _make_dry_run("KEEP=1")


def test_make_demo_without_keep_cleans_up() -> None:
    assert "--keep" not in _make_dry_run()


def test_demo_offers_keep() -> None:
    result = subprocess.run(
        [sys.executable, str(REPO_ROOT / "scripts" / "demo.py"), "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "--keep" in result.stdout


def test_readme_tells_how_to_keep_the_demo_packages() -> None:
    assert "make demo KEEP=1" in (REPO_ROOT / "README.md").read_text(encoding="utf-8")


def test_make_demo_serve_1_ends_in_the_real_server() -> None:
    assert "--serve" in _make_dry_run("SERVE=1").split("scripts/demo.py", 1)[1]
    assert "--serve" not in _make_dry_run()


def test_make_serve_venv_builds_only_the_kits_serving_venv() -> None:
    result = subprocess.run(
        ["make", "-n", "--no-print-directory", "serve-venv"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "-m sglang_plugin_runtime.testing.serving" in result.stdout
