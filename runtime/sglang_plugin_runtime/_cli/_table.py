"""Aligned plain-text tables: columns padded to their widest cell, no box drawing, so output pastes anywhere."""

from __future__ import annotations

from collections.abc import Sequence


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]], indent: str = "  ") -> list[str]:
    """Lines of a table; ``None`` cells show as ``-``; the last column is never padded (no trailing spaces)."""
    cells = [[_cell(value) for value in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        for i, value in enumerate(row):
            widths[i] = max(widths[i], len(value))
    lines = []
    for row in [list(headers), *cells]:
        padded = [value.ljust(widths[i]) for i, value in enumerate(row[:-1])] + [row[-1]]
        lines.append((indent + "  ".join(padded)).rstrip())
    return lines


def _cell(value: object) -> str:
    if value is None:
        return "-"
    return " ".join(str(value).split())  # one line per row: newlines in error messages would break alignment
