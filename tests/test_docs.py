"""The docs cannot drift: every Python example in README.md and docs/ runs, and the site builds
strictly.

Conventions: docs/contributing.md. Machinery: tests/_docs_support.py; its own test:
tests/test_docs_machinery.py.
"""

from __future__ import annotations

import html
import importlib.util
import re
from pathlib import Path

import pytest
from _docs_support import (
    DOCS_DIR,
    REPO_ROOT,
    build_site,
    collect,
    doc_files,
    invalid_settings,
    mermaid_blocks,
    page_html,
    run_example,
)

FILES = doc_files()
EXAMPLES = collect(FILES)


def _load_demo_site_module():
    spec = importlib.util.spec_from_file_location(
        "sglang_docs_demo_site", DOCS_DIR / "_hooks" / "demo_site.py"
    )
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


_FENCE = re.compile(
    r"^(?P<indent> *)```(?P<info>[^\n]*)\n(?P<body>.*?)^(?P=indent)```", re.M | re.S
)


def test_shown_command_output_comes_from_running_the_command() -> None:
    """A ``console`` block that is not executed at build time may show commands, never their
    output."""
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
                        f"{path.relative_to(REPO_ROOT)}:{line + offset}: output in a console block "
                        "that is not "
                        f'exec="on": {stripped!r}'
                    )
                    break
    assert not problems, "\n".join(problems)


def test_readme_links_resolve() -> None:
    """README.md is read on the forge, outside the site: its relative links must point at files that
    exist."""
    readme = REPO_ROOT / "README.md"
    missing = []
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme.read_text(encoding="utf-8")):
        if "://" in target or target.startswith("mailto:"):
            continue
        if not (REPO_ROOT / target).exists():
            missing.append(target)
    assert not missing, f"README.md links to missing files: {missing}"


@pytest.mark.slow
@pytest.mark.xdist_group("docs-site")
def test_site_builds_strictly() -> None:
    """``make docs``: a strict MkDocs build (broken links, missing pages, failing exec blocks all
    fail it)."""
    proc, _ = build_site()
    if proc.returncode != 0:
        output = (proc.stdout + proc.stderr).splitlines()
        lines = [line for line in output if line.startswith(("WARNING", "ERROR", "  "))]
        pytest.fail("mkdocs build --strict failed:\n" + "\n".join(lines[-80:]), pytrace=False)


def _built_site() -> Path:
    proc, site = build_site()
    if proc.returncode != 0:
        pytest.fail("the site did not build: see test_site_builds_strictly", pytrace=False)
    return site


DIAGRAM_PAGES = [
    path
    for path in FILES
    if path.parent == DOCS_DIR and mermaid_blocks(path.read_text(encoding="utf-8"))
]


@pytest.mark.slow
@pytest.mark.xdist_group("docs-site")
@pytest.mark.parametrize("path", DIAGRAM_PAGES, ids=[p.name for p in DIAGRAM_PAGES])
def test_each_diagrams_source_reaches_its_built_page(path: Path) -> None:
    """A ```` ```mermaid ```` fence becomes ``<pre class="mermaid">`` with its source, which the
    browser draws.

    Read from the HTML alone: no browser, no network (tests/test_docs_browser.py checks the
    drawing).
    """
    built = page_html(_built_site(), path.name).read_text(encoding="utf-8")
    shown = [
        html.unescape(m)
        for m in re.findall(r'<pre class="mermaid"><code>(.*?)</code></pre>', built, re.S)
    ]
    assert [s.strip() for s in shown] == [
        s.strip() for s in mermaid_blocks(path.read_text(encoding="utf-8"))
    ]


def test_selection_hooks_and_processes_pages_carry_diagrams() -> None:
    assert {p.name for p in DIAGRAM_PAGES} >= {"selection.md", "hooks.md", "processes.md"}
