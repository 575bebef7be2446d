"""Write what ``sglang-plugins run`` does to each SGLang release, from the released wheels:
``python integrations/sglang/make_launcher_data.py WHEELS [--check]``.

WHEELS is a folder holding the wheel of every release in
``runtime/sglang_plugin_runtime/_sglang_releases/releases.json`` (each checked against the sha256
recorded there). The output, ``_sglang_releases/launcher.json``, names for each release every file
the launcher adopts, its sha256 in the wheel, and the way it is adopted (the launcher refuses a file
whose hash differs):

- ``patch``: the adoption patch's hunks (the upstream change, made for the patch's release), for a
  file that is byte for byte the one the patch was made for;
- ``replace``: the hook registry of a release whose file differs from the patch's: the patch
  replaces that file whole, so its result is the same module in every release;
- ``startup``: ``sglang/__init__.py`` of a release whose file differs from the patch's: the
  release's file, its startup plugins run first;
- ``select``: ``sglang/srt/platforms/__init__.py`` of every other release: the release's module,
  whose ``current_platform`` the runtime selects, with the release's own resolver (no platform
  plugin) as the fallback.

On the patch's release every file of the patch is adopted its way (``patch``); on the others the
platform base classes (``interface.py``, ``device_mixin.py``, ``npu.py``) stay the release's own:
its SGLang calls methods the runtime's classes, which mirror the patch's release, do not have.
``--check`` writes nothing and fails when the committed file differs.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import sys
import zipfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
RUNTIME = REPO_ROOT / "runtime" / "sglang_plugin_runtime"
RELEASES = RUNTIME / "_sglang_releases" / "releases.json"
OUTPUT = RUNTIME / "_sglang_releases" / "launcher.json"
PATCH = RUNTIME / "_launcher" / "patches" / "sglang-0.5.23.patch"
PATCH_RELEASE = "0.5.23"
#: The plugin layer: what the launcher adopts on a release other than the patch's (where it exists).
PLUGIN_LAYER = (
    "sglang/__init__.py",
    "sglang/multimodal_gen/runtime/platforms/plugins.py",
    "sglang/srt/platforms/__init__.py",
    "sglang/srt/plugins/__init__.py",
    "sglang/srt/plugins/hook_registry.py",
)
#: What the ``select`` way uses of a release's ``sglang/srt/platforms/__init__.py``.
RESOLVER_NAMES = {"_resolve_platform", "load_plugins_by_group", "__getattr__"}


def patched_files() -> dict[str, tuple[int, int]]:
    """``{path: (first line, last line)}`` each file's hunks cover in the patch's release."""
    covered: dict[str, tuple[int, int]] = {}
    path = ""
    for line in PATCH.read_text(encoding="utf-8").splitlines():
        if line.startswith("+++ "):
            path = line[4:].split("\t")[0].strip().removeprefix("b/")
        elif match := re.match(r"@@ -(\d+)(?:,(\d+))? ", line):
            first, count = int(match[1]), int(match[2] or 1)
            covered[path] = (covered.get(path, (first, 0))[0], first + count - 1)
    return covered


def wheel_files(wheel: Path, paths: list[str]) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        return {path: archive.read(path) for path in paths if path in names}


def names_defined(source: bytes) -> set[str]:
    tree = ast.parse(source)
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            defined.update(alias.asname or alias.name for alias in node.names)
    return defined


def adoption(version: str, files: dict[str, bytes], patch_release: dict[str, bytes]) -> dict:
    """``{path: [way, sha256]}`` for one release; ``ValueError`` saying why it cannot be adopted."""
    covered = patched_files()
    if version == PATCH_RELEASE:
        return {path: ["patch", hashlib.sha256(files[path]).hexdigest()] for path in covered}
    ways = {}
    for path in (p for p in PLUGIN_LAYER if p in files):
        data = files[path]
        if path == "sglang/srt/platforms/__init__.py":
            missing = RESOLVER_NAMES - names_defined(data)
            if missing:
                raise ValueError(f"SGLang {version}'s {path} has no {', '.join(sorted(missing))}")
            way = "select"
        elif data == patch_release[path]:
            way = "patch"
        elif path == "sglang/__init__.py":
            way = "startup"
        elif covered[path] == (1, len(patch_release[path].splitlines())):
            way = "replace"  # the patch's result does not depend on the file
        else:
            raise ValueError(
                f"SGLang {version}'s {path} is not the file the adoption patch was made for"
            )
        ways[path] = [way, hashlib.sha256(data).hexdigest()]
    return ways


def build(wheels: Path) -> str:
    releases = json.loads(RELEASES.read_text(encoding="utf-8"))["releases"]
    paths = sorted({*PLUGIN_LAYER, *patched_files()})
    read: dict[str, dict[str, bytes]] = {}
    for release in releases:
        for version in (release["version"], *release["same_plugin_layer"]):
            wheel = wheels / release["wheel"].replace(release["version"], version, 1)
            if version == release["version"]:
                digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
                if digest != release["sha256"]:
                    raise ValueError(f"{wheel} is not the released wheel (sha256 {digest})")
            read[version] = wheel_files(wheel, paths)
    data = {
        "about": "What `sglang-plugins run` adopts of each SGLang release: each file, its sha256 "
        "in the released wheel and the way it is adopted; written by "
        "integrations/sglang/make_launcher_data.py from the wheels (never by hand)",
        "patch": PATCH.relative_to(RUNTIME).as_posix(),
        "releases": {v: adoption(v, files, read[PATCH_RELEASE]) for v, files in read.items()},
    }
    text = json.dumps(data, indent=1)
    return re.sub(r'\[\n\s+("\w+"),\n\s+("\w+")\n\s+\]', r"[\1, \2]", text) + "\n"  # a line a file


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2) or argv[1:] not in ([], ["--check"]):
        sys.exit("usage: python make_launcher_data.py WHEELS [--check]")
    text = build(Path(argv[0]))
    if argv[1:] == ["--check"]:
        if OUTPUT.read_text(encoding="utf-8") != text:
            sys.exit(f"{OUTPUT} differs from what the wheels give: rerun without --check")
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
