"""The interface table: data (one JSON row per line), consistent with the runtime's contract
classes, and shipped.

``tests_sglang/test_interface_table.py`` writes the rows from the real SGLang 0.5.23 wheel and
checks them against it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from sglang_plugin_runtime.platforms import _contract
from sglang_plugin_runtime.platforms._describe import find_override_problems, host_versions
from sglang_plugin_runtime.platforms.interface import SRTPlatform
from sglang_plugin_runtime.platforms.multimodal import MMPlatform

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "runtime" / "sglang_plugin_runtime" / "platforms" / "interface_table.jsonl"
CONTRACTS = {"srt": SRTPlatform, "diffusion": MMPlatform}


def rows(host: str | None = None) -> list[dict]:
    return [
        row for row in _contract.interface_rows() if "host" in row and host in (None, row["host"])
    ]


def other_version_names() -> dict[str, str]:
    return {row["name"]: row["origin"] for row in _contract.interface_rows() if "origin" in row}


def test_the_table_is_one_json_object_per_line() -> None:
    lines = DATA.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == list(_contract.interface_rows())
    for row in rows():
        assert {"name", "owner", "host", "kind", "signature", "versions"} <= set(row), row
        assert row["host"] in CONTRACTS and row.get("probe", "cheap") in ("cheap", "device"), row


@pytest.mark.parametrize("host", ["srt", "diffusion"])
def test_every_name_sglang_declares_is_in_the_runtimes_contract(host: str) -> None:
    declared = {row["name"] for row in rows(host) if "replacement" not in row}
    assert declared <= set(_contract.contract_members(CONTRACTS[host]))


def test_every_srt_contract_member_has_a_row() -> None:
    assert set(_contract.contract_members(SRTPlatform)) <= {row["name"] for row in rows("srt")}


@pytest.mark.parametrize("host", ["srt", "diffusion"])
def test_the_runtimes_own_contract_accepts_every_call_its_host_makes(host: str) -> None:
    """The base classes themselves pass the check: each recorded call binds to the contract's
    definition."""
    cls = CONTRACTS[host]
    assert [
        p
        for p in find_override_problems(type("Probe", (cls,), dict(vars_of_contract(cls))))
        if p.is_error
    ] == []


def vars_of_contract(cls: type) -> dict[str, object]:
    namespace = {}
    for klass in reversed(cls.__mro__[:-1]):
        namespace.update({k: v for k, v in vars(klass).items() if not k.startswith("_")})
    return namespace


def test_retired_hooks_name_their_replacement_and_who_serves_them() -> None:
    retired = [row for row in rows("srt") if "replacement" in row]
    assert [r["name"] for r in retired] == [
        "get_mha_kv_pool_cls",
        "get_mla_kv_pool_cls",
        "get_dsa_kv_pool_cls",
    ]
    for row in retired:
        assert row["replacement"].startswith("get_kv_pool_cls(self, *, kind)")
        assert row["served_by"] == ["0.5.23"] and row["versions"] == []


def test_names_of_other_versions_are_known_and_none_is_a_current_name() -> None:
    current = {row["name"] for row in rows()}
    assert not current & set(other_version_names())
    assert all(_contract.is_known_name(name) for name in other_version_names())
    assert not _contract.is_known_name("vendor_name")


def test_the_supported_host_versions_are_derived_from_the_rows() -> None:
    assert host_versions() == ("0.5.23", "main")


def test_rows_since_main_are_not_in_0_5_23() -> None:
    assert _contract.interface_row("is_mlu", "srt")["versions"] == ["main"]
    assert _contract.interface_row("is_cuda", "srt")["versions"] == ["0.5.23", "main"]


def test_every_call_names_where_it_is_made() -> None:
    for row in rows():
        for call in row.get("calls", ()):
            assert call["site"].startswith(("sglang/", "sglang_plugin_runtime.")), row
            assert _contract.render_call(call, row["name"]).startswith(
                ("platform.", "PlatformClass.")
            ), row


def test_the_contract_names_its_hosts_as_the_table_does() -> None:
    assert (_contract.hosts_of(SRTPlatform), _contract.hosts_of(MMPlatform)) == (
        ("srt",),
        ("diffusion",),
    )
    assert {row["host"] for row in rows()} == set(CONTRACTS)


def test_resolving_the_fallback_platform_does_not_read_the_interface_table(site) -> None:
    out = site.run_json(
        "import json\n"
        "from sglang_plugin_runtime.platforms import _contract, current_platform\n"
        "current_platform.device_name\n"
        "print(json.dumps(_contract.interface_rows.cache_info().currsize))\n"
    )
    assert out == 0


def test_defining_a_platform_class_reads_the_interface_table(site) -> None:
    out = site.run_json(
        "import json\n"
        "from sglang_plugin_runtime.platforms import _contract\n"
        "from sglang_plugin_runtime.platforms.interface import SRTPlatform\n"
        "class Plat(SRTPlatform):\n"
        "    def get_default_attention_backend(self):\n"
        "        return 'widget'\n"
        "print(json.dumps(_contract.interface_rows.cache_info().currsize))\n"
    )
    assert out == 1


@pytest.mark.slow
def test_the_wheel_ships_the_table_and_an_installed_wheel_reads_it(tmp_path: Path) -> None:
    """``python -m build`` puts the data file in the wheel; a class defined over a plain
    (non-editable) install of that wheel is checked against it."""
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(
        REPO / "runtime",
        source / "runtime",
        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"),
    )
    # The dev venv has setuptools (which builds wheels itself) but not the separate `wheel` package
    # pyproject lists.
    build = [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--skip-dependency-check"]
    subprocess.run(
        [*build, "--outdir", str(tmp_path / "dist"), str(source)], check=True, capture_output=True
    )
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    assert (
        "sglang_plugin_runtime/platforms/interface_table.jsonl" in zipfile.ZipFile(wheel).namelist()
    )
    target = tmp_path / "installed"
    install = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-deps",
        "--target",
        str(target),
        str(wheel),
    ]
    subprocess.run(install, check=True, capture_output=True, text=True)
    code = (
        "import sglang_plugin_runtime\nfrom sglang_plugin_runtime.platforms.interface import "
        "SRTPlatform\ntry:\n    class Plat(SRTPlatform):\n        def "
        "is_pin_memory_available(self): ...\nexcept TypeError as exc:\n    "
        "print(sglang_plugin_runtime.__file__, 'called from sglang/srt/utils/common.py' in "
        "str(exc))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": str(target)},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    location, refused = result.stdout.split()
    assert Path(location).is_relative_to(target) and refused == "True"
