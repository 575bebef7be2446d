"""The built site as a reader sees it, in a real browser: nothing cut off at 1300 px, every diagram
drawn.

Optional: these tests run where a Chromium is installed (Debian: ``apt-get install chromium``) and
are skipped elsewhere. They never need the network:

- the code-block checks use the built pages as they are (the fonts fall back to the local ones,
  which have the same monospace advance as Roboto Mono);
- the site carries the pinned mermaid.js it draws diagrams with (``javascripts/mermaid.min.js``, see
  ``docs/_hooks/mermaid_js.py``), and Chromium resolves no host name here: every diagram drawn is
  drawn as a reader with no network sees it.

With ``SGLANG_DOCS_SCREENSHOTS=DIR`` each checked page, and each diagram on its own, is also saved
as a PNG in DIR (``make docs-check`` saves them in ``build/docs-check/``), for a person to look at.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from _docs_support import DOCS_DIR, build_site, mermaid_blocks, page_html

WIDTH = 1300
#: The pages whose code blocks must fit: the ones a newcomer reads first.
CODE_PAGES = ["index.md", "getting-started.md"]
DIAGRAM_PAGES = ["selection.md", "hooks.md", "processes.md"]
#: Pages whose tables are mostly identifiers (answers, variables, modules).
TABLE_PAGES = ["getting-started.md", "selection.md", "testing-kit.md"]
#: A diagram drawn smaller than this, to fit the column, has text too small to read.
MIN_DIAGRAM_SCALE = 0.8


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


pytestmark = [
    pytest.mark.slow,
    pytest.mark.xdist_group("docs-site"),
    pytest.mark.skipif(
        _chromium() is None, reason="no Chromium installed (apt-get install chromium)"
    ),
]

# Runs before the page's own scripts. Material draws each diagram into a closed shadow root; opening
# it lets the report below see the drawing. The report waits until every diagram is drawn (or the
# time budget runs out), then writes what it measured into the page, where --dump-dom prints it.
_PROBE = """
<script>
(() => {
  const attach = Element.prototype.attachShadow;
  Element.prototype.attachShadow = function (options) {
    return attach.call(this, {...options, mode: "open"});
  };
  const expected = %(diagrams)d;
  function visibleText(svg) {
    const copy = svg.cloneNode(true);
    copy.querySelectorAll("style").forEach(style => style.remove());
    return copy.textContent.replace(/\\s+/g, " ");
  }
  function report() {
    const blocks = [...document.querySelectorAll(".md-content pre > code")].map(code => ({
      first_line: code.textContent.split("\\n")[0].slice(0, 80),
      scroll_width: code.scrollWidth,
      client_width: code.clientWidth,
    }));
    const diagrams = [...document.querySelectorAll(".md-content div.mermaid")].map(box => {
      const svg = box.shadowRoot && box.shadowRoot.querySelector("svg");
      const drawn = svg ? svg.getBoundingClientRect() : null;
      const natural = svg && svg.viewBox && svg.viewBox.baseVal ? svg.viewBox.baseVal.width : 0;
      return {
        drawn: !!svg,
        text: svg ? visibleText(svg) : "",
        width: drawn ? drawn.width : 0,
        natural_width: natural,
        column_width: box.parentElement.getBoundingClientRect().width,
      };
    });
    const identifiers = [...document.querySelectorAll(".md-content td code")]
      .filter(code => !/\\s/.test(code.textContent))
      .map(code => ({text: code.textContent, lines: code.getClientRects().length}));
    const wraps = [...document.querySelectorAll(".md-content .md-typeset__scrollwrap")];
    const tables = wraps.map(wrap => ({
      first_cell: (wrap.querySelector("th, td") || wrap).textContent.trim().slice(0, 60),
      scroll_width: wrap.scrollWidth,
      client_width: wrap.clientWidth,
    }));
    const nav = [...document.querySelectorAll(".md-sidebar--primary .md-nav__link .md-ellipsis")]
      .filter(name => name.getClientRects().length > 0)
      .map(name => ({
        text: name.textContent.trim(),
        scroll_width: name.scrollWidth,
        client_width: name.clientWidth,
      }));
    const out = document.createElement("pre");
    out.id = "docs-check-report";
    const height = document.documentElement.scrollHeight;
    out.textContent = JSON.stringify({blocks, diagrams, identifiers, nav, tables, height});
    document.body.appendChild(out);
  }
  function wait(tries) {
    const drawn = [...document.querySelectorAll("div.mermaid")]
      .filter(box => box.shadowRoot && box.shadowRoot.querySelector("svg"));
    if (drawn.length >= expected || tries <= 0) {
      report();
    } else {
      setTimeout(() => wait(tries - 1), 100);
    }
  }
  window.addEventListener("load", () => setTimeout(() => wait(expected ? 150 : 0), 200));
})();
</script>
"""

# For a screenshot of one diagram: the drawn diagram alone, at the width it has in the page.
_ISOLATE = """
<script>
window.addEventListener("load", () => {
  function isolate(tries) {
    const box = document.querySelectorAll("div.mermaid")[%(index)d];
    if (!(box && box.shadowRoot && box.shadowRoot.querySelector("svg")) && tries > 0) {
      setTimeout(() => isolate(tries - 1), 100);
      return;
    }
    const width = box.getBoundingClientRect().width;
    const holder = document.createElement("article");
    holder.className = "md-typeset";
    holder.style.cssText = "width:" + width + "px;margin:16px";
    holder.appendChild(box);
    document.body.replaceChildren(holder);
  }
  setTimeout(() => isolate(150), 200);
});
</script>
"""


def _visible_texts(source: str) -> list[str]:
    """What a diagram's source says a reader will see: box and arrow labels, participants, notes,
    messages."""
    texts = re.findall(
        r'"([^"]+)"', "\n".join(l for l in source.splitlines() if not l.strip().startswith("%%"))
    )
    texts += re.findall(
        r"^\s*(?:participant \w+ as |Note over \w+: |\w+-?->>[+-]?\w+: )(.+)$", source, re.M
    )
    return texts


def _squeezed(text: str) -> str:
    return re.sub(r"\s+", "", re.sub(r"<[^>]+>", "", text))


class Browser:
    """Headless Chromium over the built site: load a page with extra scripts, read its DOM or
    screenshot it."""

    def __init__(self, executable: str, site: Path) -> None:
        self.executable = executable
        self.site = site
        self.profile = Path(tempfile.mkdtemp(prefix="sglang-docs-chromium-"))

    def _page_with(self, page: str, head: str) -> Path:
        source = page_html(self.site, page)
        probe = source.with_name(f"_check_{os.getpid()}.html")
        probe.write_text(
            source.read_text(encoding="utf-8").replace("<head>", "<head>" + head, 1),
            encoding="utf-8",
        )
        return probe

    def _run(
        self, url: str, *args: str, height: int = 1000, width: int = WIDTH
    ) -> subprocess.CompletedProcess[str]:
        command = [
            self.executable,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--allow-file-access-from-files",
            f"--user-data-dir={self.profile}",
            # No host name resolves: the page's CDN fonts and scripts fail at once, never wait on a
            # network.
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--virtual-time-budget=30000",
            f"--window-size={width},{height}",
            *args,
            url,
        ]
        return subprocess.run(command, capture_output=True, text=True, timeout=180)

    def measure(self, page: str, width: int = WIDTH) -> dict:
        diagrams = (
            page_html(self.site, page).read_text(encoding="utf-8").count('<pre class="mermaid">')
        )
        probe = self._page_with(page, _PROBE % {"diagrams": diagrams})
        try:
            proc = self._run(probe.as_uri(), "--dump-dom", width=width)
        finally:
            probe.unlink()
        found = re.search(r'<pre id="docs-check-report">(.*?)</pre>', proc.stdout, re.S)
        assert found, f"{page}: the page never reported (Chromium said: {proc.stderr[-2000:]})"
        import html

        return json.loads(html.unescape(found.group(1)))

    def screenshot(self, page: str, out: Path, height: int, head: str = "") -> None:
        probe = self._page_with(page, head)
        try:
            self._run(probe.as_uri(), f"--screenshot={out}", height=min(height, 16000))
        finally:
            probe.unlink()

    def close(self) -> None:
        shutil.rmtree(self.profile, ignore_errors=True)


@pytest.fixture(scope="module")
def browser():
    proc, site = build_site()
    if proc.returncode != 0:
        pytest.fail("the site did not build: see test_site_builds_strictly", pytrace=False)
    executable = _chromium()
    assert executable is not None
    chromium = Browser(executable, site)
    yield chromium
    chromium.close()


@pytest.fixture(scope="module")
def screenshots() -> Path | None:
    configured = os.environ.get("SGLANG_DOCS_SCREENSHOTS")
    if not configured:
        return None
    folder = Path(configured)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.mark.parametrize("page", CODE_PAGES)
def test_no_code_block_is_cut_off_at_1300_px(
    page: str, browser: Browser, screenshots: Path | None
) -> None:
    report = browser.measure(page)
    assert report["blocks"], f"{page}: no code block found"
    cut_off = [b for b in report["blocks"] if b["scroll_width"] > b["client_width"] + 1]
    if screenshots is not None:
        browser.screenshot(page, screenshots / f"{page.removesuffix('.md')}.png", report["height"])
    assert not cut_off, f"{page}: code blocks wider than their box at {WIDTH} px: " + json.dumps(
        cut_off, indent=1
    )


@pytest.mark.parametrize("page", TABLE_PAGES)
def test_no_identifier_in_a_table_is_broken_across_lines(page: str, browser: Browser) -> None:
    report = browser.measure(page)
    assert report["identifiers"], f"{page}: no code in a table found"
    broken = [code["text"] for code in report["identifiers"] if code["lines"] > 1]
    assert not broken, f"{page}: identifiers broken across lines at {WIDTH} px: {broken}"


@pytest.mark.parametrize("page", ["reference/device_mixin.md"])
def test_sidebar_names_are_shown_whole(page: str, browser: Browser) -> None:
    report = browser.measure(page)
    names = [name["text"] for name in report["nav"]]
    assert "platforms.device_mixin" in names and "plugins.hook_registry" in names, names
    cut = [
        name["text"] for name in report["nav"] if name["scroll_width"] > name["client_width"] + 1
    ]
    assert not cut, f"{page}: sidebar names cut off at {WIDTH} px: {cut}"


@pytest.mark.parametrize("page", DIAGRAM_PAGES)
def test_every_diagram_is_drawn_readably_with_no_network(
    page: str, browser: Browser, screenshots: Path | None
) -> None:
    report = browser.measure(page)
    expected = (
        page_html(browser.site, page).read_text(encoding="utf-8").count('<pre class="mermaid">')
    )
    diagrams = report["diagrams"]
    if screenshots is not None:
        stem = page.removesuffix(".md")
        browser.screenshot(page, screenshots / f"{stem}.png", report["height"])
        for index in range(len(diagrams)):
            browser.screenshot(
                page,
                screenshots / f"{stem}-diagram-{index + 1}.png",
                1600,
                _ISOLATE % {"index": index},
            )
    assert len(diagrams) == expected and all(d["drawn"] for d in diagrams), (
        f"{page}: not every diagram was drawn"
    )
    sources = mermaid_blocks((DOCS_DIR / page).read_text(encoding="utf-8"))
    for number, (diagram, source) in enumerate(zip(diagrams, sources, strict=True), start=1):
        where = f"{page}, diagram {number}"
        assert "Syntax error" not in diagram["text"], f"{where}: mermaid could not parse it"
        missing = [
            text
            for text in _visible_texts(source)
            if _squeezed(text) not in _squeezed(diagram["text"])
        ]
        assert not missing, f"{where}: drawn without {missing}"
        assert diagram["width"] <= diagram["column_width"] + 1, f"{where}: wider than the column"
        scale = diagram["width"] / diagram["natural_width"]
        assert scale >= MIN_DIAGRAM_SCALE, (
            f"{where}: drawn at {scale:.0%} of its size to fit, too small to read"
        )


@pytest.mark.parametrize("width", [1400, 1920])
def test_the_contract_page_fits_wide_screens(browser: Browser, width: int) -> None:
    # Issue 28: two of its tables and its class tree ran past the column at 1400 and 1920 px.
    report = browser.measure("platform-contract.md", width)
    wide = [t for t in report["tables"] if t["scroll_width"] > t["client_width"] + 1]
    wide += [b for b in report["blocks"] if b["scroll_width"] > b["client_width"] + 1]
    assert not wide, f"platform-contract.md at {width} px: " + json.dumps(wide, indent=1)
