"""The docs cannot drift: every Python example in README.md and docs/ runs, and the site builds strictly.

Conventions: docs/contributing.md. Machinery: tests/_docs_support.py; its own test: tests/test_docs_machinery.py.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from _docs_support import DOCS_DIR, REPO_ROOT, collect, doc_files, invalid_settings, run_example

FILES = doc_files()
EXAMPLES = collect(FILES)


def _load_demo_site_module():
    spec = importlib.util.spec_from_file_location("sglang_docs_demo_site", DOCS_DIR / "_hooks" / "demo_site.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def demo_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    module = _load_demo_site_module()
    found = module.foreign_plugins()
    if found:
        pytest.fail(module.unclean_environment_message(found), pytrace=False)
    return module.build_demo_site(tmp_path_factory.mktemp("demo") / "site-packages")


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.label() for e in EXAMPLES])
def test_doc_example(example, demo_site: Path) -> None:
    if example.skip_reason:
        pytest.skip(f"{example.label()}: {example.skip_reason}")
    result = run_example(example, demo_site=demo_site)
    if not result.ok:
        pytest.fail(result.report(example.label()), pytrace=False)


def test_fence_options_are_known() -> None:
    problems = invalid_settings(FILES)
    assert not problems, "unknown doc-test options:\n" + "\n".join(problems)


_FENCE = re.compile(r"^(?P<indent> *)```(?P<info>[^\n]*)\n(?P<body>.*?)^(?P=indent)```", re.M | re.S)


def test_shown_command_output_comes_from_running_the_command() -> None:
    """A ``console`` block that is not executed at build time may show commands, never their output."""
    problems = []
    for path in FILES:
        text = path.read_text(encoding="utf-8")
        for match in _FENCE.finditer(text):
            info = match.group("info").strip()
            if not info.startswith("console") or re.search(r'exec="(1|on|true|yes)"', info):
                continue
            line = text[: match.start()].count("\n") + 1
            for offset, body_line in enumerate(match.group("body").splitlines(), start=1):
                stripped = body_line.strip()
                if stripped and not stripped.startswith(("$ ", "# ")) and stripped != "$":
                    problems.append(
                        f"{path.relative_to(REPO_ROOT)}:{line + offset}: output in a console block that is not "
                        f'exec="on": {stripped!r}'
                    )
                    break
    assert not problems, "\n".join(problems)


def test_readme_links_resolve() -> None:
    """README.md is read on the forge, outside the site: its relative links must point at files that exist."""
    readme = REPO_ROOT / "README.md"
    missing = []
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme.read_text(encoding="utf-8")):
        if "://" in target or target.startswith("mailto:"):
            continue
        if not (REPO_ROOT / target).exists():
            missing.append(target)
    assert not missing, f"README.md links to missing files: {missing}"


@pytest.mark.slow
def test_site_builds_strictly(tmp_path: Path) -> None:
    """``make docs``: a strict MkDocs build (broken links, missing pages, failing exec blocks all fail it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_")}
    env["NO_MKDOCS_2_WARNING"] = "1"
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600,
    )
    if proc.returncode != 0:
        lines = [l for l in (proc.stdout + proc.stderr).splitlines() if l.startswith(("WARNING", "ERROR")) or l.startswith("  ")]
        pytest.fail("mkdocs build --strict failed:\n" + "\n".join(lines[-80:]), pytrace=False)
