"""What the launcher does to each SGLang release: data, and the one adoption patch.

``_sglang_releases/launcher.json`` (written from the released wheels by
``integrations/sglang/make_launcher_data.py``) names, for every release, each file the launcher
adopts, its sha256 in the wheel and its way: ``patch`` (the adoption patch's hunks, for the file
they were made for), ``replace`` (the patch's result for a file it replaces whole, the hook
registry), ``startup`` (the release's ``sglang/__init__.py``, its startup plugins run first) or
``select`` (the release's ``sglang.srt.platforms``, its platform selected by the runtime). A file is
adopted only while its hash is the release's, so the hunks apply at their stated lines exactly, as
``patch --fuzz=0`` applies them; anything else is refused (before the command runs, and again at
each import).
"""

import hashlib
import importlib.util
import json
import re
from importlib.resources import files
from typing import NamedTuple

#: A hunk's header, and the lines around it: ``re.split`` gives (start, count, body) per hunk.
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\S+ @@.*\n", re.MULTILINE)


#: A hunk: the index of the first line it replaces (or inserts before), how many it replaces, the
#: lines it puts there (context and added lines, as in the result).
Hunk = tuple[int, int, list[str]]


class LaunchError(Exception):
    """The command cannot run with the runtime as SGLang's plugin layer; the message says why and
    what to do."""


class Adoption(NamedTuple):
    way: str
    sha256: str
    hunks: tuple[Hunk, ...]
    release: str

    def source(self, data: bytes, path: object) -> str:
        """The module's adopted source, from the release's file (``data``, read from ``path``):
        the hunks at their stated lines (for ``replace``, which covers the patch's whole file, on
        nothing); ``ImportError`` when the file is not the release's."""
        if hashlib.sha256(data).hexdigest() != self.sha256:
            raise ImportError(
                f"sglang-plugins run: {path} is not the file of the released SGLang "
                f"{self.release} (the launcher adopts only the files it has the hash of); "
                f"reinstall sglang=={self.release}, or run the command without the launcher"
            )
        # the file as the import system reads it (PEP 263, universal newlines)
        source = importlib.util.decode_source(data)
        lines = [] if self.way == "replace" else source.splitlines(keepends=True)
        out: list[str] = []
        position = 0  # index into lines
        for start, old_count, new in self.hunks:
            out += lines[position:start] + new
            position = start + old_count
        return "".join(out + lines[position:])


def parse(diff: str) -> dict[str, tuple[Hunk, ...]]:
    """``{path: hunks}`` of a unified diff as ``make_patch.py`` writes it (``b/`` paths, no
    timestamps)."""
    patches = {}
    for part in diff.split("\n+++ b/")[1:]:
        path, *split = _HUNK.split(part)
        patches[path.strip()] = tuple(
            # a hunk that removes nothing inserts after its line
            (
                int(start) - (count != "0"),
                int(count or 1),
                [line[1:] for line in body.splitlines(keepends=True) if line[0] in " +"],
            )
            for start, count, body in zip(split[::3], split[1::3], split[2::3], strict=True)
        )
    return patches


def adoptions(version: str) -> dict[str, Adoption]:
    """``{file under site-packages: how it is adopted}`` for SGLang ``version``;
    :class:`LaunchError` naming the releases the launcher adopts when it is none of them."""
    root = files("sglang_plugin_runtime")
    data = json.loads((root / "_sglang_releases/launcher.json").read_text(encoding="utf-8"))
    if version not in data["releases"]:
        raise LaunchError(
            f"sglang-plugins run: SGLang {version} is not a release this launcher adopts (it "
            f"adopts {', '.join(data['releases'])}); install one of them"
        )
    patch = parse((root / data["patch"]).read_text(encoding="utf-8"))
    return {
        path: Adoption(way, digest, patch[path] if way in ("patch", "replace") else (), version)
        for path, (way, digest) in data["releases"][version].items()
    }
