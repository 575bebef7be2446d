"""``sglang-plugins run``: the in-memory patch, the finder, and what the launcher refuses, without a
real SGLang.

The real wheel is exercised in tests_sglang/test_launcher.py (``make test-sglang``); here fake
distributions stand in for SGLang so every refusal and the loading mechanism run in ``make test``.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _plugin_site import RUNTIME_SRC, PluginSite
from test_cli_doctor import cli

from sglang_plugin_runtime._launcher._adoption import Adoption, LaunchError, adoptions, parse
from sglang_plugin_runtime._launcher._finder import AdoptedSGLangFinder

REPO_ROOT = Path(__file__).resolve().parents[1]
RELEASES = REPO_ROOT / "runtime/sglang_plugin_runtime/_sglang_releases"

DIFF = """\
diff -u a/pkg/mod.py b/pkg/mod.py
--- a/pkg/mod.py
+++ b/pkg/mod.py
@@ -1,3 +1,3 @@
 first = 1
-second = 2
+second = 20
 third = 3
@@ -5,2 +5,3 @@
 fifth = 5
 sixth = 6
+seventh = 7
"""
SOURCE = "first = 1\nsecond = 2\nthird = 3\nfourth = 4\nfifth = 5\nsixth = 6\n"
PATCHED = "first = 1\nsecond = 20\nthird = 3\nfourth = 4\nfifth = 5\nsixth = 6\nseventh = 7\n"
WHOLE = """\
--- a/pkg/whole.py
+++ b/pkg/whole.py
@@ -1,2 +1,1 @@
-old = 1
-older = 2
+from elsewhere import new
"""


def adoption(way: str, diff: str = DIFF, source: str = SOURCE) -> Adoption:
    """How the launcher adopts ``source``: its way, its hash, the diff's hunks."""
    digest = hashlib.sha256(source.encode()).hexdigest()
    return Adoption(way, digest, next(iter(parse(diff).values())), "0.5.99")


# ---- the adoption of each release: data, and the one patch -------------------------------------


def test_a_patch_applies_as_written() -> None:
    assert adoption("patch").source(SOURCE.encode(), "pkg/mod.py") == PATCHED


def test_a_file_the_patch_replaces_whole_becomes_its_result_whatever_the_release_had() -> None:
    replaced = adoption("replace", WHOLE, "old = 1\nolder = 2\n")
    other = replaced._replace(sha256=hashlib.sha256(b"another release's file\n").hexdigest())
    assert other.source(b"another release's file\n", "whole.py") == "from elsewhere import new\n"


@pytest.mark.parametrize(
    ("path", "way"),
    [("sglang/__init__.py", "startup"), ("sglang/srt/platforms/__init__.py", "select")],
)
def test_the_release_keeps_its_own_file_where_the_way_changes_what_runs_around_it(
    path: str, way: str
) -> None:
    kept = adoptions("0.5.11")[path]
    assert kept.way == way and kept.hunks == ()


def test_a_file_is_adopted_only_with_the_hash_of_its_release() -> None:
    edited = SOURCE.replace("fourth = 4", "fourth = 44")  # outside every hunk
    with pytest.raises(
        ImportError,
        match=r"pkg/mod\.py is not the file of the released SGLang 0\.5\.99 .*reinstall "
        r"sglang==0\.5\.99",
    ):
        adoption("patch").source(edited.encode(), "pkg/mod.py")


def test_the_launcher_adopts_every_release_with_a_plugin_system_and_its_post_releases() -> None:
    releases = json.loads((RELEASES / "releases.json").read_text(encoding="utf-8"))["releases"]
    versions = [v for r in releases for v in (r["version"], *r["same_plugin_layer"])]
    data = json.loads((RELEASES / "launcher.json").read_text(encoding="utf-8"))
    assert sorted(data["releases"]) == sorted(versions)
    for release in releases:
        for post in release["same_plugin_layer"]:  # byte-identical plugin layers
            assert data["releases"][post] == data["releases"][release["version"]]


def test_the_patchs_release_is_adopted_by_the_patch_and_the_others_at_their_plugin_layer() -> None:
    ways = {path: a.way for path, a in adoptions("0.5.23").items()}
    assert set(ways.values()) == {"patch"} and len(ways) == 11
    assert {path: a.way for path, a in adoptions("0.5.11").items()} == {
        "sglang/__init__.py": "startup",
        "sglang/srt/platforms/__init__.py": "select",
        "sglang/srt/plugins/__init__.py": "patch",
        "sglang/srt/plugins/hook_registry.py": "replace",
    }


def test_the_launcher_carries_the_adoption_patch_as_package_data() -> None:
    pyproject = (REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"_launcher/patches/*.patch"' in pyproject, "the wheel must ship the patch"
    assert '"_sglang_releases/*.json"' in pyproject, "the wheel must ship the launcher's data"
    assert not list((REPO_ROOT / "integrations").rglob("*.patch")), (
        "the adoption patch has one copy, the launcher's"
    )
    assert set(adoptions("0.5.23")) == {
        "sglang/__init__.py",
        "sglang/multimodal_gen/runtime/platforms/plugins.py",
        "sglang/srt/platforms/__init__.py",
        "sglang/srt/platforms/device_mixin.py",
        "sglang/srt/platforms/interface.py",
        "sglang/srt/platforms/npu.py",
        "sglang/srt/plugins/__init__.py",
        "sglang/srt/plugins/hook_registry.py",
        "sglang/srt/server_args.py",
        "sglang/srt/ray/scheduler_actor.py",
        "sglang/srt/distributed/bootstrap.py",
    }


def test_an_unknown_sglang_version_names_the_adopted_ones() -> None:
    with pytest.raises(
        LaunchError,
        match=r"SGLang 0\.4\.0 is not a release this launcher adopts "
        r"\(it adopts 0\.5\.11, .*0\.5\.23\)",
    ):
        adoptions("0.4.0")


# ---- the finder, in one interpreter --------------------------------------------------------------


@pytest.fixture
def fake_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "mod.py").write_text(SOURCE, encoding="utf-8")
    (package / "other.py").write_text("value = 'as on disk'\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("pkg", "pkg.mod", "pkg.other"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    return package


@pytest.fixture
def finder(monkeypatch: pytest.MonkeyPatch) -> AdoptedSGLangFinder:
    found = AdoptedSGLangFinder({"pkg/mod.py": adoption("patch")})
    monkeypatch.setattr(sys, "meta_path", [found, *sys.meta_path])
    return found


def test_the_finder_loads_the_patched_module_and_leaves_the_others_to_disk(
    fake_package: Path, finder: AdoptedSGLangFinder
) -> None:
    import pkg.mod  # type: ignore[import-not-found]
    import pkg.other  # type: ignore[import-not-found]

    assert (pkg.mod.second, pkg.mod.seventh) == (20, 7)
    assert pkg.mod.__file__ == str(fake_package / "mod.py")
    assert pkg.other.value == "as on disk"
    assert set(finder.adoptions) == {"pkg.mod"}


def test_the_finder_refuses_a_file_that_differs_with_an_import_error_naming_it(
    fake_package: Path, finder: AdoptedSGLangFinder
) -> None:
    # outside every hunk: only the hash tells
    (fake_package / "mod.py").write_text(
        SOURCE.replace("fourth = 4", "fourth = 44"), encoding="utf-8"
    )
    with pytest.raises(
        ImportError,
        match=r"mod\.py is not the file of the released SGLang 0\.5\.99",
    ):
        import pkg.mod  # type: ignore[import-not-found]  # noqa: F401


# ---- the command line ----------------------------------------------------------------------------


def test_run_without_a_command_is_a_usage_error(site: PluginSite) -> None:
    result = cli(site, "run")
    assert result.code == 2 and "give the command to run" in result.err


def test_run_without_sglang_installed_is_a_usage_error(site: PluginSite) -> None:
    result = cli(site, "run", "--", sys.executable, "-c", "pass")
    assert result.code == 2 and "SGLang is not installed" in result.err


def test_run_with_an_sglang_release_it_does_not_adopt_is_a_usage_error(site: PluginSite) -> None:
    site.add("sglang", "0.4.0", modules={"sglang/__init__.py": ""})
    result = cli(site, "run", "--", sys.executable, "-c", "pass")
    assert result.code == 2
    assert "SGLang 0.4.0 is not a release this launcher adopts" in result.err
    assert "0.5.11" in result.err and "0.5.23" in result.err


@pytest.mark.fault(
    "cli",
    "sglang-plugins run with an installed SGLang file that is not its release's (a vendor's edit, "
    "a file of another release, a missing file)",
    "refused before anything runs (exit 2), naming the file and the release, checked by the "
    "sha256 the launcher's data records for that release's wheel; nothing runs half-adopted",
)
def test_run_refuses_a_file_that_is_not_its_releases_naming_the_file_and_release(
    site: PluginSite,
) -> None:
    site.add("sglang", "0.5.11", modules={"sglang/__init__.py": "# a vendor's edit\n"})
    result = cli(site, "run", "--", sys.executable, "-c", "print('ran')")
    assert result.code == 2 and "ran" not in result.out
    assert (
        f"{site.root / 'sglang' / '__init__.py'} is not the file of the released SGLang 0.5.11"
        in result.err
    )
    assert "reinstall sglang==0.5.11" in result.err


def test_run_refuses_an_isolated_python_that_would_ignore_the_shim(site: PluginSite) -> None:
    result = cli(site, "run", "--", sys.executable, "-I", "-c", "pass")
    assert result.code == 2 and "-I ignores PYTHONPATH" in result.err


def test_run_passes_an_sglang_that_already_imports_the_runtime_through_unchanged(
    site: PluginSite,
) -> None:
    add_adopted_sglang(site)
    code = textwrap.dedent("""
        import os, sys
        print(os.environ.get("SGLANG_PLUGINS_RUN_SHIM"))
        sys.exit(5)
    """)
    result = cli(site, "run", "--", sys.executable, "-c", code)
    assert result.code == 5
    assert result.out.strip() == "None"
    assert "already imports sglang_plugin_runtime; running the command as it is" in result.err


@pytest.mark.fault(
    "cli",
    "sglang-plugins run -- python with -I or -E after an option that takes a value, or combined "
    "with others (-X utf8 -I, -W ignore -E, -Ic, -sI)",
    "refused before anything runs, naming the option, as CPython parses its options (it ran SGLang "
    "unadopted)",
)
@pytest.mark.parametrize(
    ("options", "refused"),
    [
        (["-X", "utf8", "-I", "-c", "pass"], "-I"),
        (["-W", "ignore", "-E", "-c", "pass"], "-E"),
        (["-Ic", "pass"], "-I"),
        (["-sI", "-c", "pass"], "-I"),
        (["-Wignore", "-bE", "-c", "pass"], "-E"),
        (["--check-hash-based-pycs", "never", "-E", "-c", "pass"], "-E"),
    ],
)
def test_run_refuses_every_isolated_python(
    site: PluginSite, options: list[str], refused: str
) -> None:
    result = cli(site, "run", "--", sys.executable, *options)
    assert result.code == 2
    assert (
        f"{sys.executable} {refused} ignores PYTHONPATH" in result.err
        and f"drop {refused}" in result.err
    )


@pytest.mark.parametrize(
    "options", [["-c", "pass", "-I"], ["-m", "json.tool", "-E"], ["script.py", "-I"]]
)
def test_run_leaves_the_commands_own_options_alone(site: PluginSite, options: list[str]) -> None:
    result = cli(site, "run", "--", sys.executable, *options)
    assert (
        result.code == 2
        and "ignores PYTHONPATH" not in result.err
        and "SGLang is not installed" in result.err
    )


def test_run_help_after_the_separator_shows_the_usage(site: PluginSite) -> None:
    helped = cli(site, "run", "--", "--help")
    assert helped.code == 0 and "usage: sglang-plugins run [--] COMMAND" in helped.out
    assert "cannot start" not in helped.err
    option = cli(site, "run", "--", "--verbose")
    assert option.code == 2 and "'--verbose' is an option, not a command" in option.err


def add_adopted_sglang(site: PluginSite) -> None:
    """An SGLang that already imports the runtime: the launcher runs the command as it is."""
    site.add(
        "sglang",
        "0.6.0",
        modules={
            "sglang/__init__.py": "",
            "sglang/srt/plugins/hook_registry.py": (
                "from sglang_plugin_runtime.plugins.hook_registry import HookRegistry\n"
            ),
        },
    )


@pytest.mark.fault(
    "cli",
    "SIGINT, SIGTERM, SIGHUP or SIGQUIT sent to the pid of sglang-plugins run only (a supervisor, "
    "a container stop)",
    "forwarded to the command; the launcher exits with the command's status (SIGINT was swallowed "
    "and the command ran on; SIGQUIT killed the launcher alone)",
)
@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"])
def test_run_forwards_the_signals_sent_to_the_launcher(site: PluginSite, name: str) -> None:
    add_adopted_sglang(site)
    command = textwrap.dedent(f"""
        import signal, sys, time
        signal.signal(signal.{name}, lambda *args: sys.exit(42))
        print("ready", flush=True)
        time.sleep(60)
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_")}
    env["PYTHONPATH"] = os.pathsep.join([str(site.root), str(RUNTIME_SRC)])
    launcher = subprocess.Popen(
        [sys.executable, "-m", "sglang_plugin_runtime", "run", "--", sys.executable, "-c", command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=site.root,
        # A child of a background job inherits SIGINT and SIGQUIT ignored; the launcher's own
        # handling is tested.
        preexec_fn=lambda: [
            signal.signal(s, signal.SIG_DFL) for s in (signal.SIGINT, signal.SIGQUIT)
        ],
    )
    try:
        assert launcher.stdout is not None and launcher.stdout.readline().strip() == "ready"
        launcher.send_signal(getattr(signal, name))
        _, err = launcher.communicate(timeout=30)
    finally:
        launcher.kill()
    assert launcher.returncode == 42, err
