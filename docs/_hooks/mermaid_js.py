"""The pinned mermaid.js the built site carries, so that its diagrams draw with no network.

Material for MkDocs draws ```` ```mermaid ```` blocks with mermaid.js, which it loads from a CDN
unless the page already has it. The docs hook (``sglang_docs.py``) ships this pinned copy with the
site instead: fetched once with npm (``npm pack mermaid@VERSION``, from the npm registry) into
``.cache/mermaid/``, and checked against its SHA-256 every time it is used.
``$SGLANG_DOCS_MERMAID_JS`` names another copy (an offline machine's); it is checked the same.

Run as a script (``python docs/_hooks/mermaid_js.py``), it fetches and checks the copy and prints
its path.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

VERSION = "11.17.2"
SHA256 = "581ed7d74bd9048d0e3a91363927d72ef22942d7722546b27f7cc29e35390eb8"
REPO_ROOT = Path(__file__).resolve().parents[2]
CACHED = REPO_ROOT / ".cache" / "mermaid" / "package" / "dist" / "mermaid.min.js"
MEMBER = "package/dist/mermaid.min.js"


class MermaidUnavailable(RuntimeError):
    """The pinned mermaid.js is neither here nor fetchable."""


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _fetch(destination: Path) -> None:
    """``npm pack mermaid@VERSION`` and unpack ``mermaid.min.js`` to ``destination``
    (atomically)."""
    npm = shutil.which("npm")
    if npm is None:
        raise MermaidUnavailable(f"npm is not installed, so mermaid@{VERSION} cannot be fetched")
    with tempfile.TemporaryDirectory(prefix="sglang-docs-mermaid-") as scratch:
        packed = subprocess.run(
            [npm, "pack", "--silent", f"mermaid@{VERSION}"],
            cwd=scratch,
            capture_output=True,
            text=True,
            timeout=300,
        )
        tarballs = list(Path(scratch).glob("mermaid-*.tgz"))
        if packed.returncode != 0 or not tarballs:
            raise MermaidUnavailable(
                f"npm pack mermaid@{VERSION} failed: {(packed.stderr or packed.stdout).strip()}"
            )
        with tarfile.open(tarballs[0]) as archive:
            member = archive.extractfile(MEMBER)
            if member is None:
                raise MermaidUnavailable(f"the npm package mermaid@{VERSION} has no {MEMBER}")
            destination.parent.mkdir(parents=True, exist_ok=True)
            partial = destination.with_name(f".{destination.name}.{os.getpid()}")
            partial.write_bytes(member.read())
            os.replace(partial, destination)


def pinned_mermaid_js(*, fetch: bool = True) -> Path:
    """The path of mermaid.js ``VERSION``, checked against ``SHA256``; fetched into the cache when
    missing."""
    configured = os.environ.get("SGLANG_DOCS_MERMAID_JS")
    path = Path(configured) if configured else CACHED
    if not path.is_file():
        if configured or not fetch:
            raise MermaidUnavailable(f"{path} does not exist")
        _fetch(path)
    digest = _digest(path)
    if digest != SHA256:
        raise MermaidUnavailable(
            f"{path} is not mermaid.js {VERSION}: its SHA-256 is {digest}, not {SHA256}"
            + ("" if configured else "; delete it and build again to fetch it afresh")
        )
    return path


def main() -> int:
    try:
        print(pinned_mermaid_js())
    except MermaidUnavailable as exc:
        print(f"mermaid.js: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
