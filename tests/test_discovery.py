"""Discovery: one cached scan, the same answer as importlib.metadata, on every supported Python."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from _plugin_site import RUNTIME_SRC, PluginSite, find_python

from sglang_plugin_runtime._discovery import (
    MalformedEntryPoints,
    normalize_distribution_name,
    parse_entry_points_text,
    scan_distributions,
)

# Compares our scan with importlib.metadata over the whole sys.path, for every group, in the running
# interpreter.
COMPARE_WITH_IMPORTLIB = """
import importlib.metadata as md, json, sys
from sglang_plugin_runtime._discovery import (
    discover_entry_points, normalize_distribution_name as norm)
ours = {(ep.group, ep.name, ep.value, ep.distribution, ep.version)
        for eps in discover_entry_points().entry_points.values() for ep in eps}
groups = {ep.group for dist in md.distributions() for ep in dist.entry_points}
theirs = {(ep.group, ep.name, ep.value, norm(ep.dist.name), ep.dist.version)
          for group in groups for ep in md.entry_points(group=group)}
print(json.dumps({"python": sys.version_info[:2], "same": ours == theirs, "count": len(ours),
                  "diff": sorted(map(list, ours ^ theirs))}))
"""


def _populate(site: PluginSite) -> None:
    site.add(
        "Acme_NPU.Plugin",
        "1.2.3",
        {
            "sglang.srt.platforms": {"acme": "acme:activate"},
            "console_scripts": {"acme-tool": "acme.cli:main"},
        },
    )
    site.add("zeta", "0.1", {"sglang.srt.plugins": {"zeta_hooks": "zeta.hooks:register"}})
    site.add("no-entry-points", "2.0")
    egg = site.root / "legacy_pkg.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: legacy-pkg\nVersion: 0.9\n\n")
    (egg / "entry_points.txt").write_text("[sglang.srt.plugins]\nlegacy = legacy_pkg:register\n")


@pytest.mark.parametrize("version", ["3.10", "3.11", "3.12", "3.13"])
def test_scan_matches_importlib_metadata_on_each_python(site: PluginSite, version: str) -> None:
    python = find_python(version)
    if python is None:
        pytest.skip(f"python{version} is not installed here (looked on PATH and under pyenv)")
    _populate(site)
    out = site.run_json(COMPARE_WITH_IMPORTLIB, python=python)
    assert out["python"] == [int(part) for part in version.split(".")]
    assert out["same"], out["diff"]
    assert out["count"] >= 4


def test_entry_points_carry_normalised_distribution_name_and_version(site: PluginSite) -> None:
    _populate(site)
    result = scan_distributions([str(site.root)])
    (acme,) = result.group("sglang.srt.platforms")
    assert (acme.distribution, acme.version, acme.module, acme.value) == (
        "acme-npu-plugin",
        "1.2.3",
        "acme",
        "acme:activate",
    )


def test_egg_info_version_is_read_from_its_metadata(site: PluginSite) -> None:
    _populate(site)
    legacy = [
        ep
        for ep in scan_distributions([str(site.root)]).group("sglang.srt.plugins")
        if ep.name == "legacy"
    ]
    assert [(ep.distribution, ep.version) for ep in legacy] == [("legacy-pkg", "0.9")]


def test_entry_points_are_sorted_by_distribution_then_name(site: PluginSite) -> None:
    site.add("zzz", entry_points={"g": {"b": "m:f", "a": "m:f"}})
    site.add("aaa", entry_points={"g": {"z": "m:f"}})
    eps = scan_distributions([str(site.root)]).group("g")
    assert [(ep.distribution, ep.name) for ep in eps] == [("aaa", "z"), ("zzz", "a"), ("zzz", "b")]


@pytest.mark.fault(
    "discovery",
    "two copies of one distribution on sys.path",
    "the first on the path wins, as in importlib.metadata",
)
def test_first_distribution_of_a_name_on_the_path_wins(site: PluginSite, tmp_path) -> None:
    other = PluginSite(tmp_path / "other")
    other.add("acme", "9.9", {"g": {"x": "m:f"}})
    site.add("acme", "1.0", {"g": {"x": "m:f"}})
    eps = scan_distributions([str(site.root), str(other.root)]).group("g")
    assert [ep.version for ep in eps] == ["1.0"]


@pytest.mark.fault(
    "discovery",
    "two distributions offer the same entry-point name in one group",
    "reported as a duplicate naming both distributions",
)
def test_duplicate_names_across_distributions_are_reported_with_both(site: PluginSite) -> None:
    site.add("one", entry_points={"g": {"same": "m:f"}})
    site.add("two", entry_points={"g": {"same": "n:f"}})
    duplicates = scan_distributions([str(site.root)]).duplicates("g")
    assert {ep.distribution for ep in duplicates["same"]} == {"one", "two"}


@pytest.mark.parametrize(
    "text",
    [
        "[g]\nno equals sign here\n",
        "[g\nx = m:f\n",
        "x = m:f\n",
        "[g]\nx = not a module path\n",
        "[g]\n = m:f\n",
    ],
)
@pytest.mark.fault(
    "discovery",
    "a malformed entry_points.txt (no '=', broken section header, entry outside a section, a value "
    "that is not module[:attr], an empty name)",
    "that distribution is skipped with its path in the WARNING and the report; the others are "
    "found",
)
def test_malformed_entry_points_file_is_skipped_with_its_path(site: PluginSite, text: str) -> None:
    bad = site.add("bad", entry_points_text=text)
    site.add("good", entry_points={"g": {"ok": "m:f"}})
    result = scan_distributions([str(site.root)])
    assert [ep.name for ep in result.group("g")] == ["ok"]
    assert [m.path for m in result.malformed] == [str(bad)]


@pytest.mark.fault(
    "discovery",
    "an entry_points.txt that is not valid UTF-8",
    "reported as malformed ('unreadable') with its path; the scan goes on",
)
def test_unreadable_entry_points_file_is_reported_not_raised(site: PluginSite) -> None:
    bad = site.add("bad", entry_points_text="[g]\nx = m:f\n")
    (bad / "entry_points.txt").write_bytes(b"[g]\nx = m:\xff\n")
    result = scan_distributions([str(site.root)])
    assert result.malformed and "unreadable" in result.malformed[0].reason


def test_parse_accepts_comments_extras_and_blank_lines() -> None:
    text = "# comment\n[g]\n\n; other comment\nx = pkg.mod:obj.attr [extra1, extra2]\n"
    assert list(parse_entry_points_text(text)) == [("g", "x", "pkg.mod:obj.attr [extra1, extra2]")]


def test_parse_rejects_an_entry_point_outside_a_section() -> None:
    with pytest.raises(MalformedEntryPoints, match="outside any"):
        list(parse_entry_points_text("x = m:f\n"))


def test_normalisation_follows_pep_503() -> None:
    assert normalize_distribution_name("Foo__Bar.baz-Qux") == "foo-bar-baz-qux"


def test_zip_entries_on_sys_path_are_read_through_importlib(site: PluginSite, tmp_path) -> None:
    import zipfile

    archive = tmp_path / "plugins.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(
            "zipped-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: zipped\nVersion: 1.0\n\n"
        )
        zf.writestr("zipped-1.0.dist-info/entry_points.txt", "[g]\nz = zipped_mod:f\n")
    eps = scan_distributions([str(archive)]).group("g")
    assert [(ep.name, ep.distribution, ep.version) for ep in eps] == [("z", "zipped", "1.0")]


def _add_a_platform_and_a_general_plugin(site: PluginSite) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu")
    site.add(
        "zeta",
        entry_points={"sglang.srt.plugins": {"zeta": "zeta_hooks:register"}},
        modules={"zeta_hooks.py": "def register():\n    pass\n"},
    )


def test_one_scan_serves_platform_selection_and_plugin_loading(site: PluginSite) -> None:
    _add_a_platform_and_a_general_plugin(site)
    out = site.run_json(
        """
        import json, importlib.metadata as md
        calls = []
        original = md.entry_points
        md.entry_points = lambda *a, **k: calls.append(1) or original(*a, **k)
        from sglang_plugin_runtime._discovery import _CACHE
        from sglang_plugin_runtime.platforms import current_platform, current_platform_selection
        from sglang_plugin_runtime.plugins import load_plugins, load_plugins_by_group
        current_platform
        load_plugins()
        load_plugins_by_group("sglang.srt.platforms")
        current_platform_selection("multimodal_gen")
        print(json.dumps([_CACHE.scans, len(calls)]))
        """
    )
    assert out == [1, 0]


@pytest.mark.fault(
    "discovery",
    "a process forks after it scanned",
    "the child scans again on first use (the in-memory scan is keyed by pid)",
)
def test_cache_is_dropped_in_a_forked_child(site: PluginSite) -> None:
    out = site.run_json(
        """
        import json, os
        from sglang_plugin_runtime._discovery import _CACHE, discover_entry_points
        discover_entry_points()
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            discover_entry_points()
            os.write(write, str(_CACHE.scans).encode()); os._exit(0)
        os.waitpid(pid, 0)
        child = int(os.read(read, 16))
        discover_entry_points()
        print(json.dumps([_CACHE.scans, child]))
        """
    )
    assert out == [1, 2]


@pytest.mark.fault(
    "discovery",
    "sys.path changes after the first scan",
    "the next look-up scans again and sees the new folder",
)
def test_changing_sys_path_triggers_a_rescan(site: PluginSite, tmp_path) -> None:
    late = PluginSite(tmp_path / "late")
    late.add("late-plugin", entry_points={"g": {"late": "m:f"}})
    out = site.run_json(
        f"""
        import json, sys
        from sglang_plugin_runtime._discovery import discover_entry_points
        before = [ep.name for ep in discover_entry_points().group("g")]
        sys.path.append({str(late.root)!r})
        after = [ep.name for ep in discover_entry_points().group("g")]
        print(json.dumps([before, after]))
        """
    )
    assert out == [[], ["late"]]


@pytest.mark.fault(
    "discovery",
    "a versionless *.egg-info (as `setup.py develop` writes) whose PKG-INFO is Latin-1, offering a "
    "console script and no plugin",
    "never read: selection, loading and the other plugins are unaffected",
)
def test_a_latin1_egg_info_without_plugins_does_not_break_selection_or_loading(
    site: PluginSite,
) -> None:
    egg = site.root / "oldpkg.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_bytes(
        b"Metadata-Version: 1.1\nName: oldpkg\nAuthor: Jos\xe9 Mar\xeda\n\n"
    )
    (egg / "entry_points.txt").write_text("[console_scripts]\noldtool = oldpkg.cli:main\n")
    _add_a_platform_and_a_general_plugin(site)
    out = site.run_json(
        """
        import json
        from sglang_plugin_runtime.platforms import current_platform
        from sglang_plugin_runtime.plugins import load_plugins
        print(json.dumps([current_platform.device_name,
                          [(r.plugin, r.status) for r in load_plugins().outcomes]]))
        """
    )
    assert out == ["acmenpu", [["zeta", "loaded"]]]


@pytest.mark.fault(
    "discovery",
    "a distribution offering a plugin whose METADATA cannot be decoded (Latin-1)",
    "that distribution is skipped with its path in the WARNING and the report; the others load",
)
def test_a_plugin_distribution_with_undecodable_metadata_is_skipped_with_its_path(
    site: PluginSite,
) -> None:
    bad = site.add("bad", entry_points={"g": {"bad": "m:f"}})
    (bad / "METADATA").write_bytes(
        b"Metadata-Version: 2.1\nName: bad\nVersion: 1.0\nAuthor: Jos\xe9\n\n"
    )
    site.add("good", entry_points={"g": {"ok": "m:f"}})
    result = scan_distributions([str(site.root)])
    assert [ep.name for ep in result.group("g")] == ["ok"]
    assert [m.path for m in result.malformed] == [str(bad)]
    assert "UnicodeDecodeError" in result.malformed[0].reason


@pytest.mark.fault(
    "discovery",
    "an entry_points.txt that is not valid UTF-8 inside a zip file on sys.path",
    "that distribution is reported with the zip's path; the scan goes on",
)
def test_an_undecodable_entry_points_file_in_a_zip_is_reported_not_raised(
    site: PluginSite, tmp_path
) -> None:
    import zipfile

    archive = tmp_path / "plugins.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(
            "zipped-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: zipped\nVersion: 1.0\n\n"
        )
        zf.writestr("zipped-1.0.dist-info/entry_points.txt", b"[g]\nz = zipped_mod:f \xff\n")
    site.add("good", entry_points={"g": {"ok": "m:f"}})
    result = scan_distributions([str(archive), str(site.root)])
    assert [ep.name for ep in result.group("g")] == ["ok"]
    assert len(result.malformed) == 1 and str(archive) in result.malformed[0].path


@pytest.mark.fault(
    "discovery",
    "the working directory was deleted while '' is on sys.path (python -c, a REPL)",
    "that entry finds nothing; every other entry is scanned and plugins load",
)
def test_a_deleted_working_directory_on_sys_path_is_skipped(site: PluginSite, tmp_path) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu")
    gone = tmp_path / "gone"
    gone.mkdir()
    out = site.run_json(
        f"""
        import json, os, sys
        os.chdir({str(gone)!r}); os.rmdir({str(gone)!r})
        sys.path.insert(0, "")
        from sglang_plugin_runtime.platforms import current_platform
        from sglang_plugin_runtime.plugins import load_plugins
        load_plugins()
        print(json.dumps(current_platform.device_name))
        """
    )
    assert out == "acmenpu"


DOCTOR_JSON = """
import sys
from sglang_plugin_runtime._cli import main
sys.exit(main(["doctor", "--json"]))
"""
STALE_COPY_SCAN = """
import json, logging
logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
from sglang_plugin_runtime._discovery import discover_entry_points
found = discover_entry_points()
[ep] = found.group("sglang.srt.plugins")
print(json.dumps([ep.version, ep.value, [list(bad) for bad in found.malformed]]))
"""


@pytest.mark.parametrize("versions", [("1.9", "1.10"), ("1.10", "1.9")])
@pytest.mark.fault(
    "discovery",
    "two metadata folders of one project in one sys.path folder (timer_dist-1.9.dist-info and "
    "timer_dist-1.10.dist-info, as a failed upgrade leaves them)",
    "the highest version by folder name is used, whatever the directory order; a WARNING names "
    "both folders and which is used, and doctor reports it as a problem (which one won depended on "
    "the directory order, silently)",
)
def test_two_metadata_folders_of_one_project_in_one_folder_are_reported(
    site: PluginSite, versions: tuple[str, str]
) -> None:
    folders = {}
    for version in versions:
        module = f"timer_{version.replace('.', '_')}"
        folders[version] = site.add(
            "timer-dist",
            version,
            entry_points={"sglang.srt.plugins": {"timer": f"{module}:register"}},
            modules={f"{module}.py": "def register():\n    pass\n"},
        )
    result = site.run(STALE_COPY_SCAN, check=True)
    version, value, malformed = json.loads(result.stdout)
    assert (version, value) == ("1.10", "timer_1_10:register")
    assert [path for path, _ in malformed] == [str(folders["1.9"])]
    warning = next(line for line in result.stderr.splitlines() if line.startswith("WARNING"))
    assert str(folders["1.9"]) in warning and f"{folders['1.10']} is used" in warning
    doctor = site.run(DOCTOR_JSON)
    report = json.loads(doctor.stdout)
    assert doctor.returncode == 1
    assert [p["step"] for p in report["problems"]] == ["discovery"]
    assert str(folders["1.9"]) in report["problems"][0]["message"]


@pytest.mark.fault(
    "discovery",
    "a FIFO (named pipe) on sys.path, before the plugins' folder",
    "skipped, as Python's import system skips it: selection and loading find the plugins (was: "
    "discovery opened it and waited forever)",
)
def test_a_fifo_on_sys_path_is_skipped_not_waited_on(site: PluginSite) -> None:
    fifo = site.root.parent / "a-fifo"
    os.mkfifo(fifo)
    _add_a_platform_and_a_general_plugin(site)
    code = f"""
        import json, sys
        sys.path.insert(0, {str(fifo)!r})
        from sglang_plugin_runtime.platforms import current_platform
        from sglang_plugin_runtime.plugins import load_plugins
        print(json.dumps([current_platform.device_name,
                          [(r.plugin, r.status) for r in load_plugins().outcomes]]))
        """
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site.root), str(RUNTIME_SRC)])}
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert json.loads(result.stdout) == ["acmenpu", [["zeta", "loaded"]]], result.stderr
