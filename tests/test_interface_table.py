"""The interface table: consistent with the runtime's contract classes, and rendered into the docs.

``tests_sglang/test_interface_table.py`` checks the rows against the real SGLang 0.5.23 wheel.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sglang_plugin_runtime.platforms import _contract
from sglang_plugin_runtime.platforms import _interface_table as table
from sglang_plugin_runtime.platforms.interface import SRTPlatform
from sglang_plugin_runtime.platforms.multimodal import MMPlatform

DOC = Path(__file__).resolve().parents[1] / "docs" / "platform-contract.md"
START, END = "<!-- interface-table:start -->", "<!-- interface-table:end -->"
CONTRACTS = {table.SRT: SRTPlatform, table.DIFFUSION: MMPlatform}


@pytest.mark.parametrize("host", [table.SRT, table.DIFFUSION])
def test_every_name_sglang_declares_is_in_the_runtimes_contract(host: str) -> None:
    declared = {row.name for row in table.entries(host) if not row.retired}
    assert declared <= set(_contract.contract_members(CONTRACTS[host]))


def test_every_srt_contract_member_has_a_row() -> None:
    assert set(_contract.contract_members(SRTPlatform)) <= {row.name for row in table.entries(table.SRT)}


@pytest.mark.parametrize("host", [table.SRT, table.DIFFUSION])
def test_the_runtimes_own_contract_accepts_every_call_its_host_makes(host: str) -> None:
    """The base classes themselves pass the check: each recorded call binds to the contract's definition."""
    cls = CONTRACTS[host]
    assert [
        p for p in _contract.find_override_problems(type("Probe", (cls,), dict(vars_of_contract(cls)))) if p.is_error
    ] == []


def vars_of_contract(cls: type) -> dict[str, object]:
    namespace = {}
    for klass in reversed(cls.__mro__[:-1]):
        namespace.update({k: v for k, v in vars(klass).items() if not k.startswith("_")})
    return namespace


def test_retired_hooks_name_their_replacement_and_who_serves_them() -> None:
    retired = table.retired_entries()
    assert [r.name for r in retired] == ["get_mha_kv_pool_cls", "get_mla_kv_pool_cls", "get_dsa_kv_pool_cls"]
    for row in retired:
        assert row.replacement.startswith("get_kv_pool_cls(self, *, kind)")
        assert row.served_by == ("0.5.23",) and row.versions == ()


def test_names_of_other_versions_are_known_and_none_is_a_current_name() -> None:
    current = {row.name for row in table.entries()}
    assert not current & set(table.OTHER_VERSION_NAMES)
    assert all(table.is_known_name(name) for name in table.OTHER_VERSION_NAMES)
    assert not table.is_known_name("vendor_name")


def test_rows_since_main_are_not_in_0_5_23() -> None:
    (mlu,) = [row for row in table.entries(table.SRT) if row.name == "is_mlu"]
    assert mlu.versions == ("main",)
    assert table.entry("is_cuda", table.SRT).versions == ("0.5.23", "main")


def test_every_call_names_where_it_is_made() -> None:
    for row in table.entries():
        for call in row.calls:
            assert call.site, row
            assert call.render(row.name).startswith(("platform.", "PlatformClass."))


def test_the_doc_carries_the_generated_interface_table() -> None:
    """docs/platform-contract.md between the markers is exactly ``render_markdown()``; rewritten when stale."""
    text = DOC.read_text(encoding="utf-8")
    assert START in text and END in text, f"{DOC} lost its interface-table markers"
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    generated = (
        f"{head}{START}\n<!-- generated from sglang_plugin_runtime/platforms/_interface_table.py by "
        f"tests/test_interface_table.py: do not edit -->\n\n{table.render_markdown()}\n{END}{tail}"
    )
    if generated != text:
        DOC.write_text(generated, encoding="utf-8")
        pytest.fail(
            f"{DOC.name} was out of date with the interface table; it has been rewritten: review and commit it",
            pytrace=False,
        )


def test_the_contract_names_its_hosts_as_the_table_does() -> None:
    from sglang_plugin_runtime.platforms import _contract, _interface_table

    assert _contract._HOSTS == {"SRTPlatform": (_interface_table.SRT,), "MMPlatform": (_interface_table.DIFFUSION,)}


def test_resolving_the_fallback_platform_does_not_read_the_interface_table(site) -> None:
    out = site.run_json(
        "import json, sys\n"
        "from sglang_plugin_runtime.platforms import current_platform\n"
        "print(json.dumps('sglang_plugin_runtime.platforms._interface_table' in sys.modules))\n"
    )
    assert out is False
