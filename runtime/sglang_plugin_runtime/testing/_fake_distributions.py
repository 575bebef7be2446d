"""Fake installed distributions: a ``*.dist-info`` folder with ``entry_points.txt``, plus module
files, on disk.

Exactly what ``pip install`` leaves behind, minus the copying, so discovery (ours and
``importlib.metadata``) sees them as installed once their folder is on ``sys.path``.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping
from pathlib import Path

EntryPoints = Mapping[str, Mapping[str, str]]
"""``{group: {entry-point name: "module:attr"}}``."""


def write_fake_distribution(
    root: str | Path,
    name: str,
    version: str = "1.0",
    entry_points: EntryPoints | None = None,
    modules: Mapping[str, str] | None = None,
    *,
    entry_points_text: str | None = None,
) -> Path:
    """Write distribution ``name`` into ``root`` and return its ``.dist-info`` folder.

    ``modules`` maps paths relative to ``root`` (``"my_plugin/__init__.py"``) to source text,
    dedented. ``entry_points_text`` writes ``entry_points.txt`` verbatim instead (to test malformed
    files).
    """
    root = Path(root)
    dist_info = root / f"{re.sub(r'[-_.]+', '_', name)}-{version}.dist-info"  # the wheel's escaping
    files = {
        dist_info / "METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\n",
        dist_info / "INSTALLER": "sglang-plugin-runtime-testing\n",
    }
    if entry_points_text is None and entry_points:
        entry_points_text = "\n".join(
            f"[{group}]\n" + "".join(f"{ep_name} = {value}\n" for ep_name, value in eps.items())
            for group, eps in entry_points.items()
        )
    if entry_points_text is not None:
        files[dist_info / "entry_points.txt"] = entry_points_text
    files.update({root / path: textwrap.dedent(text) for path, text in (modules or {}).items()})
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return dist_info
