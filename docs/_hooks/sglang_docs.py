"""MkDocs hooks of the SGLang plugin kit's docs (listed under ``hooks:`` in mkdocs.yml).

- ``on_config``: writes the demo installation (``demo_site.py``) into a temporary ``site-packages``
  folder and sets the environment every ``exec="on"`` block runs in: that folder on ``PYTHONPATH``,
  the venv's ``bin`` first on ``PATH`` (so ``sglang-plugins`` is the one of this checkout), no
  ``SGLANG_*`` variables, a fixed width, no colour. So the CLI output on the site is produced by
  running the command, at every build.
- ``on_page_markdown``: gives each page with ``exec="on"`` blocks a fresh working directory, runs
  the page's ``setup="on"`` Python blocks there (in order, as scripts), and runs its shell blocks
  there, so a page can create a playground (``write_fake_distribution("site", ...)``) and then show
  ``$ PYTHONPATH=site sglang-plugins list``. It also fills the generated contract tables (``<!--
  contract-table:start ... -->``, ``<!-- interface-table:start -->``; ``contract_tables.py``) from
  the code, so the site never shows a stale one, and strips the doc-test options (``test="..."``,
  ``group="..."``, ``site="..."``) from code fences so they never reach the page.
- ``on_config`` / ``on_files``: the site carries the pinned mermaid.js (``mermaid_js.py``: fetched
  once with npm, checked by SHA-256) as ``javascripts/mermaid.min.js``, loaded on every page, so
  Material draws the diagrams with it instead of fetching one from a CDN: the built site works with
  no network. Without it the build warns (and ``--strict`` fails), saying why.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from contract_tables import sync as sync_contract_tables
from demo_site import build_demo_site, foreign_plugins, unclean_environment_message
from mermaid_js import VERSION as MERMAID_VERSION
from mermaid_js import MermaidUnavailable, pinned_mermaid_js

_state: dict[str, Any] = {}

# A fence opener with our doc-test options: ```py test="skip" / ```python group="tour" site="demo".
_DOC_TEST_OPTION = re.compile(r'\s+(?:test|group|site|reason|setup)="[^"]*"')
# A whole fenced block: indent, fence, info string, body.
_FENCE = re.compile(
    r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>[^\n]*)\n(?P<body>.*?)^(?P=indent)(?P=fence)[ "
    r"\t]*$",
    re.M | re.S,
)
_EXEC_ON = re.compile(r'\bexec="(?:1|on|true|yes)"')
_SHELL_LANGUAGES = {"console", "bash", "sh"}
#: Where the site carries mermaid.js.
MERMAID_URI = "javascripts/mermaid.min.js"


def on_config(config: Any) -> Any:
    found = foreign_plugins()
    if found:
        from mkdocs.exceptions import PluginError

        raise PluginError(unclean_environment_message(found))
    old = _state.pop("tmp", None)
    if old:
        shutil.rmtree(old, ignore_errors=True)
    tmp = tempfile.mkdtemp(prefix="sglang-docs-")
    _state["tmp"] = tmp
    site = build_demo_site(Path(tmp) / "site-packages")
    for name in [k for k in os.environ if k.startswith("SGLANG_")]:
        del os.environ[name]
    os.environ["PYTHONPATH"] = str(site)
    os.environ["PATH"] = os.pathsep.join(
        [str(Path(sys.executable).parent), os.environ.get("PATH", "")]
    )
    os.environ["SGLANG_DOCS_DEMO_SITE"] = str(site)
    os.environ["COLUMNS"] = "100"
    os.environ["NO_COLOR"] = "1"
    os.environ.pop("FORCE_COLOR", None)
    _state.pop("mermaid", None)
    try:
        _state["mermaid"] = pinned_mermaid_js()
    except MermaidUnavailable as exc:
        import logging

        logging.getLogger("mkdocs.hooks.sglang_docs").warning(
            "the site would load mermaid.js from a CDN, so its diagrams would not draw offline: "
            "%s. Build where npm reaches its registry once (the copy is kept in .cache/mermaid/), "
            "or set SGLANG_DOCS_MERMAID_JS to a copy of mermaid.js %s",
            exc,
            MERMAID_VERSION,
        )
    else:
        if MERMAID_URI not in [str(script) for script in config.extra_javascript]:
            config.extra_javascript.append(MERMAID_URI)
    return config


def on_files(files: Any, config: Any) -> Any:
    mermaid = _state.get("mermaid")
    if mermaid is not None:
        from mkdocs.structure.files import File

        files.append(File.generated(config, MERMAID_URI, abs_src_path=str(mermaid)))
    return files


def on_shutdown() -> None:
    tmp = _state.pop("tmp", None)
    if tmp:
        shutil.rmtree(tmp, ignore_errors=True)


def _page_workdir(page: Any) -> Path:
    slug = re.sub(r"\W+", "_", page.file.src_uri)
    workdir = Path(_state["tmp"]) / "pages" / slug
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    return workdir


def _run_setup_blocks(markdown: str, page: Any, workdir: Path) -> None:
    """Run the page's ``setup="on"`` Python blocks, in order, in the page's working directory."""
    import logging
    import subprocess
    import textwrap

    log = logging.getLogger("mkdocs.hooks.sglang_docs")
    for number, match in enumerate(_FENCE.finditer(markdown)):
        info = match.group("info").strip()
        if not re.match(r"(py|python|python3)\b", info) or 'setup="on"' not in info:
            continue
        script = workdir / f"_setup_{number}.py"
        script.write_text(textwrap.dedent(match.group("body")), encoding="utf-8")
        line = markdown[: match.start()].count("\n") + 1
        proc = subprocess.run(
            [sys.executable, script.name], cwd=workdir, capture_output=True, text=True, timeout=300
        )
        script.unlink()
        if proc.returncode != 0:
            log.warning(
                "%s:%d: the setup block failed (exit %d):\n%s",
                page.file.src_uri,
                line,
                proc.returncode,
                textwrap.indent(proc.stdout + proc.stderr, "  "),
            )


def _rewrite_fences(markdown: str, workdir: Path | None) -> str:
    """Strip the doc-test options from each fence's info string; point exec'd shell blocks at
    ``workdir``.

    Only real fences are touched: a fence shown inside a longer one (```` ````markdown ````) is body
    text.
    """

    def rewrite(match: re.Match[str]) -> str:
        info = match.group("info")
        new_info = _DOC_TEST_OPTION.sub("", info)
        words = new_info.strip().split()
        if (
            workdir is not None
            and words
            and words[0] in _SHELL_LANGUAGES
            and _EXEC_ON.search(new_info)
            and "workdir=" not in new_info
        ):
            new_info = f'{new_info} workdir="{workdir}"'
        if new_info == info:
            return match.group(0)
        start = match.start("info") - match.start()
        whole = match.group(0)
        return whole[:start] + new_info + whole[start + len(info) :]

    return _FENCE.sub(rewrite, markdown)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    markdown = sync_contract_tables(markdown)
    workdir = None
    if _EXEC_ON.search(markdown):
        workdir = _page_workdir(page)
        _run_setup_blocks(markdown, page, workdir)
    return _rewrite_fences(markdown, workdir)
