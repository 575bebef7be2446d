"""The adoption patches the launcher carries (package data, one per released SGLang version: the
upstream change, ``patches/sglang-<version>.patch``), applied to file contents in memory exactly:
every hunk at its stated line, no fuzz, no offset.

The launcher must produce exactly what ``patch --fuzz=0`` produces from the released files, or
nothing: a source that differs anywhere a hunk touches is refused, so a different SGLang never runs
half-adopted.
"""

from __future__ import annotations

import re
from importlib.resources import files
from typing import NamedTuple

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class PatchError(ValueError):
    """The diff is malformed, or a source does not match it."""


class Hunk(NamedTuple):
    old_start: int  # 1-based; 0 for an empty source
    old: tuple[str, ...]  # context and removed lines, as in the source
    new: tuple[str, ...]  # context and added lines, as in the result


def supported_versions() -> tuple[str, ...]:
    names = (entry.name for entry in (files(__package__) / "patches").iterdir())
    return tuple(
        sorted(match[1] for n in names if (match := re.fullmatch(r"sglang-(.+)\.patch", n)))
    )


def patch_text(version: str) -> str:
    """The patch for SGLang ``version``; ``LookupError`` naming the supported versions if there is
    none."""
    resource = files(__package__) / "patches" / f"sglang-{version}.patch"
    if not resource.is_file():
        supported = ", ".join(supported_versions()) or "none"
        raise LookupError(
            f"no adoption patch for SGLang {version} (this runtime carries: {supported})"
        )
    return resource.read_text(encoding="utf-8")


def parse(diff: str) -> dict[str, tuple[Hunk, ...]]:
    """``{path after the a/ or b/ prefix: hunks}`` of a unified diff."""
    patches: dict[str, list[Hunk]] = {}
    lines = iter(diff.splitlines(keepends=True))
    for line in lines:
        match = _HUNK.match(line)
        if line.startswith("+++ "):
            path = line[4:].split("\t")[0].strip()
            hunks = patches.setdefault(re.sub("^[ab]/", "", path), [])
        elif match and not patches:
            raise PatchError(f"hunk {line.strip()!r} before any '+++' header")
        elif match:
            old: list[str] = []
            new: list[str] = []
            while len(old) < int(match[2] or 1) or len(new) < int(match[4] or 1):
                body = next(lines, None)
                if body is None:
                    raise PatchError(f"{path}: hunk '{line.strip()}' is cut short")
                tag, text = body[:1], body[1:]  # a line is never empty: it ends with its newline
                if tag not in " -+\\":  # "\ No newline at end of file" is skipped
                    raise PatchError(f"{path}: unexpected line in hunk '{line.strip()}': {body!r}")
                if tag in " -":
                    old.append(text)
                if tag in " +":
                    new.append(text)
            hunks.append(Hunk(int(match[1]), tuple(old), tuple(new)))
    return {p: tuple(h) for p, h in patches.items()}


def apply(source: str, hunks: tuple[Hunk, ...], *, name: str) -> str:
    """``source`` with ``hunks`` applied, or :class:`PatchError` naming the first line that
    differs."""
    lines = source.splitlines(keepends=True)
    out = []
    position = 0  # index into lines
    for hunk in hunks:
        start = max(hunk.old_start - 1, 0) if hunk.old else hunk.old_start
        if start < position:
            raise PatchError(f"{name}: hunks overlap or are out of order at line {hunk.old_start}")
        for number, want in enumerate(hunk.old, start + 1):
            got = lines[number - 1] if number <= len(lines) else "<end of file>\n"
            if want != got:
                raise PatchError(
                    f"{name}, line {number}: expected {want.rstrip()!r}, found {got.rstrip()!r}"
                )
        out += lines[position:start] + list(hunk.new)
        position = start + len(hunk.old)
    return "".join(out + lines[position:])
