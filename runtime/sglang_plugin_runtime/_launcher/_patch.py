"""Apply a unified diff to file contents in memory, exactly: every hunk at its stated line, no fuzz, no offset.

The launcher must produce exactly what ``patch --fuzz=0`` produces from the released files, or nothing: a source
that differs anywhere a hunk touches is refused, so a different SGLang never runs half-adopted.
"""

from __future__ import annotations

import re
from typing import NamedTuple

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class PatchError(ValueError):
    """The diff is malformed, or a source does not match it."""


class Hunk(NamedTuple):
    old_start: int  # 1-based; 0 for an empty source
    old: tuple[str, ...]  # context and removed lines, as in the source
    new: tuple[str, ...]  # context and added lines, as in the result


def parse(diff: str) -> dict[str, tuple[Hunk, ...]]:
    """``{path after the a/ or b/ prefix: hunks}`` of a unified diff."""
    files: dict[str, list[Hunk]] = {}
    lines = diff.splitlines(keepends=True)
    path: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("+++ "):
            path = line[4:].split("\t")[0].strip()
            path = path[2:] if path.startswith(("a/", "b/")) else path
            files.setdefault(path, [])
            i += 1
            continue
        match = _HUNK.match(line)
        if match is None:
            i += 1
            continue
        if path is None:
            raise PatchError(f"hunk before any '+++' header at diff line {i + 1}")
        old_count = int(match.group(2) or 1)
        new_count = int(match.group(4) or 1)
        old: list[str] = []
        new: list[str] = []
        i += 1
        while len(old) < old_count or len(new) < new_count:
            if i >= len(lines):
                raise PatchError(f"{path}: hunk '{line.strip()}' is cut short")
            body = lines[i]
            tag, text = body[:1], body[1:]
            if tag == " ":
                old.append(text)
                new.append(text)
            elif tag == "-":
                old.append(text)
            elif tag == "+":
                new.append(text)
            elif body.startswith("\\"):  # "\ No newline at end of file"
                i += 1
                continue
            else:
                raise PatchError(f"{path}: unexpected line in hunk '{line.strip()}': {body!r}")
            i += 1
        files[path].append(Hunk(int(match.group(1)), tuple(old), tuple(new)))
    return {p: tuple(h) for p, h in files.items()}


def apply(source: str, hunks: tuple[Hunk, ...], *, name: str) -> str:
    """``source`` with ``hunks`` applied, or :class:`PatchError` naming the first line that differs."""
    lines = source.splitlines(keepends=True)
    out: list[str] = []
    position = 0  # index into lines
    for hunk in hunks:
        start = max(hunk.old_start - 1, 0) if hunk.old else hunk.old_start
        if start < position:
            raise PatchError(f"{name}: hunks overlap or are out of order at line {hunk.old_start}")
        found = tuple(lines[start : start + len(hunk.old)])
        if found != hunk.old:
            padded = found + ("<end of file>\n",) * (len(hunk.old) - len(found))
            for offset, (want, got) in enumerate(zip(hunk.old, padded, strict=True)):
                if want != got:
                    raise PatchError(
                        f"{name}, line {start + offset + 1}: expected {want.rstrip()!r}, found {got.rstrip()!r}"
                    )
            raise PatchError(f"{name}: the file ends before line {start + len(hunk.old)}")
        out.extend(lines[position:start])
        out.extend(hunk.new)
        position = start + len(hunk.old)
    out.extend(lines[position:])
    return "".join(out)
