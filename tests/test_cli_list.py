"""``sglang-plugins list``: what is installed and what the environment variables would do with it,
without importing a single plugin."""

from __future__ import annotations

from _plugin_site import PluginSite
from test_cli_doctor import add_general, cli

MARKER = """
import pathlib
pathlib.Path(__file__).with_name("{name}.imported").write_text("x")
"""


def add_marked_platform(site: PluginSite, dist: str, name: str) -> None:
    site.add(
        dist,
        entry_points={"sglang.srt.platforms": {name: f"{name}_platform:activate"}},
        modules={
            f"{name}_platform.py": MARKER.format(name=name) + "def activate():\n    return None\n"
        },
    )


def rows(report: dict, kind: str) -> dict[str, dict]:
    group = next(g for g in report["groups"] if g["kind"] == kind)
    return {ep["name"]: ep for ep in group["entry_points"]}


def test_list_shows_every_entry_point_with_distribution_version_and_target(
    site: PluginSite,
) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu")
    add_general(site, "timer-dist", "timer")
    result = cli(site, "list", "--json")
    report = result.json
    assert result.code == 0
    acme = rows(report, "platform")["acme"]
    assert (acme["distribution"], acme["version"], acme["value"], acme["status"]) == (
        "acme-npu",
        "1.0",
        "acme_platform:activate",
        "to-load",
    )
    assert acme["path"].endswith("acme_npu-1.0.dist-info")
    assert rows(report, "general")["timer"]["status"] == "to-load"


def test_list_imports_no_plugin(site: PluginSite) -> None:
    add_marked_platform(site, "acme-npu", "acme")
    assert cli(site, "list").code == 0
    assert not (site.root / "acme.imported").exists()


def test_list_predicts_explicit_selection(site: PluginSite) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu")
    site.add_platform("zeta-gpu", "zeta", "zetagpu")
    report = cli(site, "list", "--json", SGLANG_PLATFORM="zeta").json
    platforms = rows(report, "platform")
    assert platforms["zeta"]["status"] == "selected"
    assert platforms["acme"]["status"] == "not-selected"
    assert "never imported" in platforms["acme"]["reason"]


def test_list_predicts_allowlist_and_unselected_platform_skips(site: PluginSite) -> None:
    site.add(
        "zeta-gpu",
        entry_points={
            "sglang.srt.platforms": {"zeta": "zeta_platform:activate"},
            "sglang.srt.plugins": {"zeta_extras": "zeta_extras:register"},
        },
    )
    add_general(site, "one-dist", "one")
    add_general(site, "two-dist", "two")
    site.add_platform("acme-npu", "acme", "acmenpu")
    report = cli(
        site, "list", "--json", SGLANG_PLATFORM="acme", SGLANG_PLUGINS="one, zeta_extras"
    ).json
    general = rows(report, "general")
    assert general["one"]["status"] == "to-load"
    assert general["two"]["status"] == "skipped-allowlist"
    assert general["zeta_extras"]["status"] == "skipped-unselected-platform"


def test_list_reports_an_allowlisted_plugin_that_is_not_installed(site: PluginSite) -> None:
    result = cli(site, "list", "--json", SGLANG_PLUGINS="ghost")
    report = result.json
    assert rows(report, "general")["ghost"]["status"] == "not-installed"
    assert result.code == 0  # a warning
    assert cli(site, "list", "--strict", SGLANG_PLUGINS="ghost").code == 1


def test_list_flags_unknown_sglang_platform(site: PluginSite) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu")
    result = cli(site, "list", "--json", SGLANG_PLATFORM="nosuch")
    assert result.code == 1
    assert any(
        "'nosuch'" in p["message"] and "'acme'" in p["message"] for p in result.json["problems"]
    )


def test_list_shows_malformed_distributions_and_the_others(site: PluginSite) -> None:
    site.add("broken", entry_points_text="[sglang.srt.plugins]\nnot an entry point\n")
    site.add_platform("acme-npu", "acme", "acmenpu")
    result = cli(site, "list")
    assert result.code == 1
    assert "Malformed distributions" in result.out and "broken-1.0.dist-info" in result.out
    assert "acme-npu 1.0" in result.out
    malformed = cli(site, "list", "--json").json["malformed"]
    assert [m["path"].rsplit("/", 1)[-1] for m in malformed] == ["broken-1.0.dist-info"]


def test_list_shows_duplicate_names_with_both_distributions(site: PluginSite) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu")
    site.add("acme-fork", entry_points={"sglang.srt.platforms": {"acme": "acme_fork:activate"}})
    result = cli(site, "list", "--json")
    report = result.json
    assert result.code == 1
    assert report["duplicates"] == [
        {
            "group": "sglang.srt.platforms",
            "name": "acme",
            "distributions": ["acme-fork", "acme-npu"],
        }
    ]
    assert {ep["status"] for ep in report["groups"][0]["entry_points"]} == {"failed-duplicate"}


def test_list_human_output_is_an_aligned_table(site: PluginSite) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu")
    site.add_platform("z-very-long-distribution-name", "z", "zdev")
    out = cli(site, "list").out.splitlines()
    header = next(i for i, line in enumerate(out) if line.strip().startswith("NAME"))
    column = out[header].index("DISTRIBUTION")
    assert out[header + 1][column:].startswith("acme-npu 1.0")
    assert out[header + 2][column:].startswith("z-very-long-distribution-name 1.0")


def test_list_for_the_diffusion_namespace_uses_its_groups_and_variable(site: PluginSite) -> None:
    site.add(
        "mm-dist",
        entry_points={"sglang.multimodal_gen.platforms": {"mmdev": "mm_platform:activate"}},
    )
    site.add_platform("acme-npu", "acme", "acmenpu")
    report = cli(
        site,
        "list",
        "--json",
        "--namespace",
        "multimodal_gen",
        SGLANG_DIFFUSION_PLATFORM_OVERRIDE="mmdev",
    ).json
    assert report["namespace"] == "multimodal_gen"
    assert report["groups"][0]["group"] == "sglang.multimodal_gen.platforms"
    assert rows(report, "platform").keys() == {"mmdev"}
    assert rows(report, "platform")["mmdev"]["status"] == "selected"
    assert report["environment"]["SGLANG_DIFFUSION_PLATFORM_OVERRIDE"] == "mmdev"
