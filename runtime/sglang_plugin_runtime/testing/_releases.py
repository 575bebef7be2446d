"""The SGLang releases a plugin's tests run against, from the runtime's data of the released wheels
(no SGLang needed): which releases a range holds, and whether a hook target exists in one."""

from __future__ import annotations

from .. import _sglang_releases as data


def sglang_releases(supported: str | None = None, *, distribution: str | None = None) -> list[str]:
    """The SGLang releases with a plugin system that the range ``supported`` holds (such as
    ``">=0.5.17,<0.6"``), or that installed ``distribution`` declares (its requirement on
    ``sglang``), oldest first; all of them with neither. For a test per release::

        @pytest.mark.parametrize("release", sglang_releases(distribution="sglang-mydevice"))
        def test_conforms(release):
            assert_platform_conformance(MySRTPlatform, release=release)

    ``ValueError`` when ``distribution`` declares no requirement on ``sglang`` or the range has a
    clause that cannot be read.
    """
    if distribution is not None:
        from importlib.metadata import requires

        supported = data.sglang_range(requires(distribution))
        if supported is None:
            raise ValueError(
                f"{distribution} declares no requirement on sglang; declare the supported range "
                "(e.g. sglang>=0.5.17,<0.6) in its pyproject.toml"
            )
    found = data.releases() if supported is None else data.releases_in(supported)
    if found is None:
        raise ValueError(f"cannot read the SGLang range {supported!r} (clauses such as >=0.5.17)")
    return list(found)


def missing_hook_target(target: str, release: str) -> str | None:
    """What SGLang ``release`` lacks of hook target ``target`` (``pkg.mod.Class.method`` or
    ``pkg.mod:Class.method``): the module or dotted name that is not there, or ``None`` when it is
    there (or the data cannot tell: a name made at run time, a member of a base outside SGLang)."""
    return data.missing(target, data.check_release(release))
