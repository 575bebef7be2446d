"""The contract's tables live in the Markdown files themselves (GitHub's view reads them) and match the code.

``python docs/_hooks/contract_tables.py`` rewrites them; this test fails when one differs from the code.
"""

from __future__ import annotations

import importlib.util
import re
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
    for target in ("device_mixin:DeviceMixin own", "interface:SRTPlatform own", "multimodal:MMPlatform own"):
        assert f"<!-- contract-table:start sglang_plugin_runtime.platforms.{target} -->" in text
    assert "<!-- interface-table:start -->" in text


@pytest.mark.parametrize("page", contract_tables.pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_each_generated_table_matches_the_code(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert contract_tables.sync(text) == text, (
        f"{page.relative_to(REPO)} has a table that differs from the code: run `python docs/_hooks/contract_tables.py`"
        " and commit the result"
    )


def test_no_page_leaves_a_table_to_the_site_build() -> None:
    """The old form, a placeholder line the site build replaced, is gone: GitHub's view showed no table there."""
    for page in (REPO / "docs").rglob("*.md"):
        assert not re.search(r"^<!-- sglang-docs: contract-table", page.read_text(encoding="utf-8"), re.M), page


def test_the_command_rewrites_a_stale_table(tmp_path: Path) -> None:
    start = "<!-- contract-table:start sglang_plugin_runtime.platforms.interface:SRTPlatform own -->"
    stale = f"# P\n\n{start}\nold\n<!-- contract-table:end -->\n"
    generated = contract_tables.sync(stale)
    assert "old" not in generated and "| `get_kv_pool_cls(*, kind: KVPoolKind) -> type | None` |" in generated
    assert contract_tables.sync(generated) == generated


def test_the_check_mode_changes_nothing_and_passes_on_this_checkout() -> None:
    result = subprocess.run([sys.executable, str(TOOL), "--check"], capture_output=True, text=True, cwd=REPO)
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
    assert default(members["get_compile_options"]) == "returns `None`"
    assert default(members["dispatch_key"]) == "`''`"
    assert default(members["reindex_device_id"]) == "yields ``device_id`` unchanged."
