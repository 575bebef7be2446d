"""The adoption patches the launcher carries, one per released SGLang version.

Each is a copy of ``integrations/sglang/sglang-<version>.patch`` (the upstream change); a test keeps them identical.
"""

from __future__ import annotations

from importlib.resources import files


def supported_versions() -> tuple[str, ...]:
    names = [entry.name for entry in files(__package__).joinpath("patches").iterdir()]
    patches = [n for n in names if n.startswith("sglang-") and n.endswith(".patch")]
    return tuple(sorted(n[len("sglang-") : -len(".patch")] for n in patches))


def patch_text(version: str) -> str:
    """The patch for SGLang ``version``; ``LookupError`` naming the supported versions if there is none."""
    resource = files(__package__).joinpath("patches").joinpath(f"sglang-{version}.patch")
    if not resource.is_file():
        supported = ", ".join(supported_versions()) or "none"
        raise LookupError(f"no adoption patch for SGLang {version} (this runtime carries: {supported})")
    return resource.read_text(encoding="utf-8")
