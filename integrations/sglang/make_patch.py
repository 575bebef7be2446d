"""Write the adoption patch from two copies of SGLang's files: ``python make_patch.py BEFORE AFTER >
x.patch``.

BEFORE holds the released files, AFTER the edited ones, both with their ``sglang/...`` paths. The
output is a unified diff with three lines of context and no timestamps (Python's difflib), as
``patch -p1`` and the launcher read it.
"""

from __future__ import annotations

import difflib
import sys
from pathlib import Path


def make_patch(before: Path, after: Path) -> str:
    out: list[str] = []
    for relative in sorted(p.relative_to(after).as_posix() for p in after.rglob("*.py")):
        old = (before / relative).read_text(encoding="utf-8").splitlines(keepends=True)
        new = (after / relative).read_text(encoding="utf-8").splitlines(keepends=True)
        if old != new:
            out.append(f"diff -u a/{relative} b/{relative}\n")
            out.extend(difflib.unified_diff(old, new, f"a/{relative}", f"b/{relative}", n=3))
    return "".join(out)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python make_patch.py BEFORE AFTER > sglang-<version>.patch")
    sys.stdout.write(make_patch(Path(sys.argv[1]), Path(sys.argv[2])))
