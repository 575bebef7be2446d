"""The contract's tables live in the Markdown files themselves (GitHub's view reads them) and match
the code.

``python docs/_hooks/contract_tables.py`` rewrites them; this test fails when one differs from the
code.
"""

from __future__ import annotations

import html
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sglang_plugin_runtime.platforms import DeviceMixin, MMPlatform, SRTPlatform, describe_contract

REPO = Path(__file__).resolve().parents[1]
TOOL = REPO / "docs" / "_hooks" / "contract_tables.py"


def _tool():
    spec = importlib.util.spec_from_file_location("contract_tables", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


contract_tables = _tool()


def test_the_contract_pages_carry_their_generated_tables() -> None:
    names = {str(p.relative_to(REPO)) for p in contract_tables.pages()}
    assert {"docs/platform-contract.md", "docs/reference/contract.md"} <= names
    text = (REPO / "docs" / "platform-contract.md").read_text(encoding="utf-8")
    for target in (
        "device_mixin:DeviceMixin own",
        "interface:SRTPlatform own",
        "multimodal:MMPlatform own",
    ):
        assert f"<!-- contract-table:start sglang_plugin_runtime.platforms.{target} -->" in text
    assert "<!-- interface-table:start -->" in text


@pytest.mark.parametrize("page", contract_tables.pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_each_generated_table_matches_the_code(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert contract_tables.sync(text) == text, (
        f"{page.relative_to(REPO)} has a table that differs from the code: run `python "
        "docs/_hooks/contract_tables.py` and commit the result"
    )


def test_no_page_leaves_a_table_to_the_site_build() -> None:
    """The old form, a placeholder line the site build replaced, is gone: GitHub's view showed no
    table there."""
    for page in (REPO / "docs").rglob("*.md"):
        assert not re.search(
            r"^<!-- sglang-docs: contract-table", page.read_text(encoding="utf-8"), re.M
        ), page


def test_the_command_rewrites_a_stale_table(tmp_path: Path) -> None:
    start = (
        "<!-- contract-table:start sglang_plugin_runtime.platforms.interface:SRTPlatform own -->"
    )
    stale = f"# P\n\n{start}\nold\n<!-- contract-table:end -->\n"
    generated = contract_tables.sync(stale)
    assert (
        "old" not in generated
        and "| <code>get_kv_pool_cls(<wbr>&#42;, <wbr>kind: KVPoolKind) " in generated
    )
    assert contract_tables.sync(generated) == generated


def test_the_check_mode_changes_nothing_and_passes_on_this_checkout() -> None:
    result = subprocess.run(
        [sys.executable, str(TOOL), "--check"], capture_output=True, text=True, cwd=REPO
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("cls", [DeviceMixin, SRTPlatform, MMPlatform], ids=lambda c: c.__name__)
def test_every_contract_member_says_what_it_does_by_default(cls: type) -> None:
    for member in describe_contract(cls):
        assert contract_tables.default_behaviour(member), member.qualname


def test_defaults_read_as_the_code_behaves() -> None:
    members = {m.name: m for m in describe_contract(MMPlatform)}
    default = contract_tables.default_behaviour
    assert default(members["get_device"]) == "raises `NotImplementedError`: override it"
    assert default(members["init_backend"]) == "does nothing"
    assert default(members["get_compile_options"]) == "returns <code>None</code>"
    assert default(members["dispatch_key"]) == "<code>''</code>"
    assert default(members["reindex_device_id"]) == "yields ``device_id`` unchanged."


@pytest.mark.parametrize("page", contract_tables.pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_generated_row_has_its_headers_cells_as_github_splits_them(page: Path) -> None:
    """GitHub splits a row at every unescaped ``|``, even inside a code span: each row keeps its
    header's shape."""
    for region in re.findall(
        r"^<!-- \S+:start.*?^<!-- \S+:end -->", page.read_text(encoding="utf-8"), re.M | re.S
    ):
        table: list[int] = []
        for line in region.splitlines() + [""]:
            if line.startswith("|"):
                table.append(len(re.split(r"(?<!\\)\|", line.strip())))
            elif table:
                assert set(table) == {table[0]}, (
                    f"{page.name}: a row has more or fewer cells than its header"
                )
                table = []


@pytest.mark.slow
@pytest.mark.xdist_group("docs-site")
@pytest.mark.skipif(
    shutil.which("chromium") is None, reason="no Chromium installed (apt-get install chromium)"
)
@pytest.mark.parametrize(
    "page", ["platform-contract.md", "reference/contract.md", "getting-started.md", "sglang.md"]
)
def test_no_identifier_in_a_table_breaks_across_lines_at_1300_px(page: str, tmp_path: Path) -> None:
    from _docs_support import build_site, page_html

    proc, site = build_site()
    assert proc.returncode == 0, "the site did not build: see test_site_builds_strictly"
    source = page_html(site, page)
    probe = source.with_name(f"_wrap_{tmp_path.name}.html")
    probe.write_text(
        source.read_text(encoding="utf-8").replace("<head>", "<head>" + _WRAP_PROBE, 1),
        encoding="utf-8",
    )
    try:
        command = [
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--allow-file-access-from-files",
        ]
        command += [
            f"--user-data-dir={tmp_path / 'profile'}",
            "--host-resolver-rules=MAP * ~NOTFOUND",
        ]
        command += [
            "--virtual-time-budget=10000",
            "--window-size=1300,1000",
            "--dump-dom",
            probe.as_uri(),
        ]
        result = subprocess.run(command, capture_output=True, text=True, timeout=180)
    finally:
        probe.unlink()
    found = re.search(r'<pre id="wrap-report">(.*?)</pre>', result.stdout, re.S)
    assert found, f"{page}: the page never reported ({result.stderr[-1000:]})"
    report = json.loads(html.unescape(found.group(1)))
    assert report["identifiers"] > 0 and report["broken"] == [], report["broken"]


# Each identifier (a run of letters, digits, ``_`` and ``.``) in a table's code spans must sit on
# one line.
_WRAP_PROBE = """<script>
window.addEventListener("load", () => setTimeout(() => {
  const broken = [];
  let identifiers = 0;
  for (const code of document.querySelectorAll(".md-content table code")) {
    const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const match of node.textContent.matchAll(/[A-Za-z_][\\w.]*/g)) {
        identifiers++;
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const tops = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
        if (tops.size > 1) broken.push(match[0]);
      }
    }
  }
  const out = document.createElement("pre");
  out.id = "wrap-report";
  out.textContent = JSON.stringify({identifiers, broken});
  document.body.appendChild(out);
}, 300));
</script>"""
