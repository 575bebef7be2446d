"""Nothing on disk other than the installed distributions decides which plugin code a process
imports.

The runtime once kept a saved discovery scan in the user's cache folder; a forged file there could
name any module as a plugin. These tests pin down that no file outside the installed distributions
is even read: every file a process opens while it discovers, selects and loads plugins is inside a
``sys.path`` entry, and nothing is opened for writing.
"""

from __future__ import annotations

import marshal
import os

import pytest
from _plugin_site import PluginSite

ATTACKER = """
import json, os, sys
def activate():
    open(os.environ["PWNED"], "w").close()
    return None
def register():
    open(os.environ["PWNED"], "w").close()
"""

AUDITED_START = """
import json, os, sys
events = []

# relative paths are resolved here, against this process's working directory
def audit(event, args):
    if event == "open":
        path, mode, flags = args
        if isinstance(path, (str, bytes)):
            events.append(("open", os.path.abspath(os.fsdecode(path)), str(mode), flags))
    elif event in ("os.listdir", "os.scandir"):
        events.append((event, os.path.abspath(os.fsdecode(args[0]) if args[0] is not None else "."),
                       "", 0))

sys.addaudithook(audit)
from sglang_plugin_runtime.platforms import current_platform_selection
from sglang_plugin_runtime.plugins import load_plugins
selection = current_platform_selection()
report = load_plugins()
print(json.dumps({
    "platform": selection.plugin,
    "plugins": [r.plugin for r in report.outcomes],
    "events": events,
    "path": [os.path.realpath(p or os.getcwd()) for p in sys.path],
}))
"""


def forged_cache(folder) -> None:
    """What the removed saved scan looked like, naming an attacker's module as a platform and a
    general plugin, plus a FIFO and a file that never ends: none of it may be read, let alone hang
    the process."""
    folder.mkdir(parents=True, exist_ok=True)
    groups = {
        "sglang.srt.platforms": ("acme", "attacker:activate", "acme-npu", "1.0", str(folder)),
        "sglang.srt.plugins": ("timer", "attacker:register", "timer-dist", "1.0", str(folder)),
    }
    for name in ("0000000000000001.discovery", "ffffffffffffffff.discovery"):
        (folder / name).write_bytes(marshal.dumps(((1,), (), groups, 2)))
    os.mkfifo(folder / "fifo.discovery")
    os.symlink("/dev/zero", folder / "zero.discovery")


@pytest.fixture
def attacked_site(site: PluginSite, tmp_path):
    site.add_platform("acme-npu", "acme", "acmenpu")
    site.add(
        "timer-dist",
        entry_points={"sglang.srt.plugins": {"timer": "timer_plugin:register"}},
        modules={"timer_plugin.py": "def register():\n    pass\n"},
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "attacker.py").write_text(ATTACKER)
    home = tmp_path / "home"
    for folder in (
        home / ".cache" / "sglang-plugin-runtime",
        tmp_path / "xdg" / "sglang-plugin-runtime",
        tmp_path / "cachedir",
    ):
        forged_cache(folder)
    env = {
        "HOME": str(home),
        "XDG_CACHE_HOME": str(tmp_path / "xdg"),
        "SGLANG_PLUGIN_CACHE_DIR": str(tmp_path / "cachedir"),
        "PWNED": str(tmp_path / "pwned"),
    }
    return site, env, tmp_path


@pytest.mark.fault(
    "security",
    "a forged saved-scan file (in ~/.cache, $XDG_CACHE_HOME or $SGLANG_PLUGIN_CACHE_DIR) names an "
    "attacker's module as a plugin; a FIFO and /dev/zero sit beside it",
    "ignored: no such file is read; the installed plugins are selected and loaded; nothing hangs",
)
def test_forged_cache_files_do_not_change_which_plugins_run(attacked_site) -> None:
    site, env, tmp_path = attacked_site
    result = site.run(AUDITED_START, env)
    assert result.returncode == 0, result.stderr
    out = __import__("json").loads(result.stdout.splitlines()[-1])
    assert out["platform"] == "acme" and out["plugins"] == ["timer"]
    assert not (tmp_path / "pwned").exists()


@pytest.mark.fault(
    "security",
    "which files a process reads while it discovers, selects and loads plugins (audited with "
    "sys.addaudithook)",
    "only files inside sys.path entries (distribution metadata, the modules imported); nothing is "
    "opened for writing; the cache folders are never touched",
)
def test_only_files_inside_sys_path_are_read_and_none_is_written(attacked_site) -> None:
    site, env, tmp_path = attacked_site
    result = site.run(AUDITED_START, env)
    assert result.returncode == 0, result.stderr
    out = __import__("json").loads(result.stdout.splitlines()[-1])
    roots = tuple(root.rstrip(os.sep) + os.sep for root in out["path"])
    events = out["events"]
    assert any(kind == "open" and "entry_points.txt" in path for kind, path, _m, _f in events)
    for kind, path, mode, flags in events:
        real = os.path.realpath(path)
        assert real.startswith(roots) or real.rstrip(os.sep) + os.sep in roots, (
            f"{kind} outside sys.path: {path}"
        )
        assert str(tmp_path / "home") not in real and str(tmp_path / "xdg") not in real
        if kind == "open":
            assert not set(mode) & set("wax+"), f"opened for writing: {path} ({mode})"
            assert not flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT), (
                f"opened for writing: {path} ({flags})"
            )
