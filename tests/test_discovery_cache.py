"""The discovery scan saved on disk: reused by the next process, never trusted after a change.

Every test runs real processes over a fake site (``PluginSite``) with the cache switched on and pointed at a
temporary folder. A scan is only saved once the folders it read are two seconds old, so the tests backdate the
site instead of sleeping.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from _plugin_site import PluginSite, backdate

from sglang_plugin_runtime import _discovery_cache

REPORT = """
import json
from sglang_plugin_runtime._discovery import discover_entry_points, scan_count
result = discover_entry_points()
print(json.dumps({
    "origin": result.origin,
    "scans": scan_count(),
    "count": result.distribution_count,
    "plugins": {g: [list(ep) for ep in eps] for g, eps in result.entry_points.items() if g.startswith("sglang")},
}))
"""


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    return tmp_path / "discovery-cache"


@pytest.fixture
def cached(cache_dir: Path) -> dict[str, str]:
    """The environment of a process with the on-disk cache switched on (the test suite switches it off)."""
    return {"SGLANG_PLUGIN_NO_CACHE": "", "SGLANG_PLUGIN_CACHE_DIR": str(cache_dir)}


def populate(site: PluginSite) -> None:
    site.add_platform("acme-npu-plugin", "acme", "npu")
    site.add("acme-tools", entry_points={"sglang.srt.plugins": {"tools": "acme_tools:register"}})
    site.add("unrelated", entry_points={"console_scripts": {"unrelated": "unrelated:main"}})
    site.add("no-entry-points")


def test_the_next_process_reads_the_saved_scan_and_sees_the_same_plugins(site: PluginSite, cached) -> None:
    populate(site)
    backdate(site.root)
    first = site.run_json(REPORT, env=cached)
    second = site.run_json(REPORT, env=cached)
    assert first["origin"] == "scan" and first["scans"] == 1
    assert second["origin"].endswith(".discovery") and second["scans"] == 0
    assert second["plugins"] == first["plugins"] and second["count"] == first["count"]
    assert [ep[1] for ep in second["plugins"]["sglang.srt.plugins"]] == ["tools"]


def test_installing_a_distribution_invalidates_the_saved_scan(site: PluginSite, cached) -> None:
    populate(site)
    backdate(site.root)
    site.run_json(REPORT, env=cached)
    site.add("late-plugin", entry_points={"sglang.srt.plugins": {"late": "late:register"}})
    after = site.run_json(REPORT, env=cached)
    assert after["origin"] == "scan"
    assert [ep[1] for ep in after["plugins"]["sglang.srt.plugins"]] == ["tools", "late"]


def test_removing_a_distribution_invalidates_the_saved_scan(site: PluginSite, cached) -> None:
    populate(site)
    backdate(site.root)
    site.run_json(REPORT, env=cached)
    for path in sorted(site.root.glob("acme_tools-*.dist-info/*")):
        path.unlink()
    next(site.root.glob("acme_tools-*.dist-info")).rmdir()
    after = site.run_json(REPORT, env=cached)
    assert after["origin"] == "scan" and "sglang.srt.plugins" not in after["plugins"]


def test_editing_an_entry_points_file_in_place_invalidates_the_saved_scan(site: PluginSite, cached) -> None:
    populate(site)
    backdate(site.root)
    site.run_json(REPORT, env=cached)
    (entry_points,) = site.root.glob("acme_tools-*.dist-info/entry_points.txt")
    entry_points.write_text("[sglang.srt.plugins]\nrenamed = acme_tools:register\n")
    after = site.run_json(REPORT, env=cached)
    assert after["origin"] == "scan"
    assert [ep[1] for ep in after["plugins"]["sglang.srt.plugins"]] == ["renamed"]


def test_an_egg_info_folder_that_gains_entry_points_invalidates_the_saved_scan(site: PluginSite, cached) -> None:
    egg = site.root / "legacy_pkg.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: legacy-pkg\nVersion: 0.9\n\n")
    backdate(site.root)
    before = site.run_json(REPORT, env=cached)
    (egg / "entry_points.txt").write_text("[sglang.srt.plugins]\nlegacy = legacy:register\n")
    after = site.run_json(REPORT, env=cached)
    assert "sglang.srt.plugins" not in before["plugins"]
    assert after["origin"] == "scan" and [ep[1] for ep in after["plugins"]["sglang.srt.plugins"]] == ["legacy"]


def test_a_folder_changed_less_than_two_seconds_ago_is_not_saved(site: PluginSite, cached, cache_dir) -> None:
    populate(site)
    first = site.run_json(REPORT, env=cached)
    second = site.run_json(REPORT, env=cached)
    assert first["origin"] == second["origin"] == "scan"
    assert not list(cache_dir.glob("*.discovery"))


def test_no_cache_variable_turns_the_cache_off(site: PluginSite, cache_dir) -> None:
    populate(site)
    backdate(site.root)
    env = {"SGLANG_PLUGIN_NO_CACHE": "1", "SGLANG_PLUGIN_CACHE_DIR": str(cache_dir)}
    origins = [site.run_json(REPORT, env=env)["origin"] for _ in range(2)]
    assert origins == ["scan", "scan"] and not cache_dir.exists()


def test_a_scan_with_a_malformed_distribution_is_not_saved(site: PluginSite, cached, cache_dir) -> None:
    populate(site)
    site.add("broken", entry_points_text="[sglang.srt.plugins]\nno equals sign here\n")
    backdate(site.root)
    runs = [site.run(REPORT, env=cached, check=True) for _ in range(2)]
    assert all("broken" in run.stderr and "malformed" in run.stderr for run in runs)
    assert not list(cache_dir.glob("*.discovery"))


def test_a_damaged_cache_file_is_a_miss_and_is_rewritten(site: PluginSite, cached, cache_dir) -> None:
    populate(site)
    backdate(site.root)
    site.run_json(REPORT, env=cached)
    (saved,) = cache_dir.glob("*.discovery")
    saved.write_bytes(b"\x00not marshal data")
    after = site.run_json(REPORT, env=cached)
    again = site.run_json(REPORT, env=cached)
    assert after["origin"] == "scan" and again["origin"] == str(saved)


def test_an_unwritable_cache_folder_costs_a_scan_and_no_error(site: PluginSite, tmp_path) -> None:
    populate(site)
    backdate(site.root)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    env = {"SGLANG_PLUGIN_NO_CACHE": "", "SGLANG_PLUGIN_CACHE_DIR": str(blocker / "cache")}
    runs = [site.run(REPORT, env=env, check=True) for _ in range(2)]
    assert all('"origin": "scan"' in run.stdout for run in runs)
    assert all("Traceback" not in run.stderr for run in runs)


def test_refresh_discovery_rescans_even_when_a_saved_scan_is_valid(site: PluginSite, cached) -> None:
    populate(site)
    backdate(site.root)
    site.run_json(REPORT, env=cached)
    out = site.run_json(
        """
        import json
        from sglang_plugin_runtime._discovery import discover_entry_points, refresh_discovery
        first = discover_entry_points().origin
        refresh_discovery()
        print(json.dumps([first, discover_entry_points().origin, discover_entry_points(refresh=True).origin]))
        """,
        env=cached,
    )
    assert out[0].endswith(".discovery") and out[1:] == ["scan", "scan"]


def test_a_different_sys_path_uses_a_different_saved_scan(site: PluginSite, cached, tmp_path) -> None:
    populate(site)
    other = PluginSite(tmp_path / "other")
    other.root.mkdir()
    other.add("other-plugin", entry_points={"sglang.srt.plugins": {"other": "other:register"}})
    backdate(site.root, other.root)
    site.run_json(REPORT, env=cached)
    code = "import sys; sys.path.insert(0, " + repr(str(other.root)) + ")\n" + REPORT
    out = site.run_json(code, env=cached)
    assert out["origin"] == "scan"
    assert [ep[1] for ep in out["plugins"]["sglang.srt.plugins"]] == ["tools", "other"]


def test_the_cache_folder_keeps_at_most_64_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SGLANG_PLUGIN_CACHE_DIR", str(tmp_path / "cache"))
    written = []
    for index in range(70):
        entry = tmp_path / f"entry{index}"
        entry.mkdir()
        backdate(entry)
        written.append(_discovery_cache.store([str(entry)], {}, 0, [], time.time()))
    remaining = sorted((tmp_path / "cache").glob("*.discovery"))
    assert all(written) and len(remaining) == 64


def test_default_cache_folder_follows_xdg_cache_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("SGLANG_PLUGIN_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert _discovery_cache.cache_directory() == str(tmp_path / "sglang-plugin-runtime")


def test_a_file_with_the_right_key_but_a_wrong_layout_is_a_miss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import marshal

    monkeypatch.setenv("SGLANG_PLUGIN_CACHE_DIR", str(tmp_path / "cache"))
    entries = [str(tmp_path)]
    path = Path(_discovery_cache.cache_file(entries))
    path.parent.mkdir()
    for stamps, groups in [(7, {}), ((str(tmp_path), 1), {}), ((), {"g": ("only", "four", "of", "five")})]:
        path.write_bytes(marshal.dumps((_discovery_cache.cache_key(entries), stamps, groups, 0)))
        assert _discovery_cache.load(entries) is None
