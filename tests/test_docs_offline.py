"""The built site works with no network: it carries the pinned mermaid.js its diagrams are drawn
with.

Material for MkDocs loads mermaid.js from a CDN unless a page already has it; a hardware lab offline
would see each diagram as its source text. The docs hook ships the pinned copy
(``docs/_hooks/mermaid_js.py``) with the site and loads it on every page.
``tests/test_docs_browser.py`` draws the diagrams in a browser that resolves no host name.
"""

from __future__ import annotations

import hashlib
import re
import sys

import pytest
from _docs_support import DOCS_DIR, REPO_ROOT, build_site, mermaid_blocks, page_html

sys.path.insert(0, str(REPO_ROOT / "docs" / "_hooks"))

from mermaid_js import SHA256

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("docs-site")]

DIAGRAM_PAGES = sorted(
    p.name for p in DOCS_DIR.glob("*.md") if mermaid_blocks(p.read_text(encoding="utf-8"))
)


def test_the_site_carries_the_pinned_mermaid_js() -> None:
    proc, site = build_site()
    assert proc.returncode == 0, proc.stderr[-3000:]
    carried = site / "javascripts" / "mermaid.min.js"
    assert hashlib.sha256(carried.read_bytes()).hexdigest() == SHA256


@pytest.mark.parametrize("page", DIAGRAM_PAGES)
def test_each_page_with_a_diagram_loads_the_carried_mermaid_js(page: str) -> None:
    proc, site = build_site()
    assert proc.returncode == 0, proc.stderr[-3000:]
    html = page_html(site, page).read_text(encoding="utf-8")
    scripts = re.findall(r'<script src="([^"]+)"', html)
    assert "../javascripts/mermaid.min.js" in scripts, scripts
    assert not [s for s in scripts if "mermaid" in s and s.startswith(("http:", "https:", "//"))], (
        scripts
    )
