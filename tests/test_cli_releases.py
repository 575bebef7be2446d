"""``doctor``, ``explain`` and ``contract`` judging plugins against the SGLang releases, in real
subprocesses over fake installed distributions, without SGLang installed: hook targets against the
modules of every release (a misspelled ``sglang.srt`` module fails ``doctor --strict``), a
platform class against each release its distribution declares, and what changed in the platform
contract between two releases."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from _plugin_site import PluginSite
from test_cli_doctor import add_general, cli, messages

MISSPELLED = "sglang.srt.managers.schedulr:Scheduler.run_batch"
SPELLED = "sglang.srt.managers.scheduler:Scheduler.run_batch"
#: A module of SGLang 0.5.21 and later (the general template's example once hooked it).
NEWER = "sglang.srt.multimodal.deepseek_v41_image_processing.num_image_tokens"


def declare(dist_info: Path, supported: str, name: str = "sglang") -> None:
    """Make the distribution at ``dist_info`` require ``name`` (``supported``), as pip installs a
    generated package's extra ``sglang``."""
    metadata = dist_info / "METADATA"
    text = metadata.read_text()
    head, _, body = text.partition("\n\n")
    requirement = f'Requires-Dist: {name}{supported}; extra == "sglang"\nProvides-Extra: sglang'
    metadata.write_text(f"{head}\n{requirement}\n\n{body}")


def hooking(site: PluginSite, target: str, supported: str | None = None) -> None:
    body = f"HookRegistry.register({target!r}, lambda *a, **k: None, HookType.BEFORE)"
    add_general(site, "hooks-dist", "hooks", body)
    if supported is not None:
        declare(next(site.root.glob("hooks_dist-*.dist-info")), supported)


# --- hook targets ---------------------------------------------------------------------------------


@pytest.mark.fault(
    "cli",
    "a hook target under sglang. names a module no SGLang release has (sglang.srt.managers."
    "schedulr), and SGLang is not installed",
    "doctor warns (so --strict fails), naming the target and the missing module; it was reported "
    "pending and passed",
)
def test_doctor_strict_without_sglang_fails_a_misspelled_sglang_module(site: PluginSite) -> None:
    hooking(site, MISSPELLED)
    assert cli(site, "doctor").code == 0  # a warning: SGLang main may have it
    result = cli(site, "doctor", "--strict", "--json")
    assert result.code == 1
    (problem,) = result.json["problems"]
    assert (problem["severity"], problem["step"], problem["target"]) == (
        "warning",
        "hooks",
        MISSPELLED,
    )
    assert (
        "'sglang.srt.managers.schedulr' is in no SGLang release with a plugin system "
        "(0.5.11 to 0.5.23)" in problem["message"]
    )


def test_doctor_strict_without_sglang_passes_the_same_target_spelled_right(
    site: PluginSite,
) -> None:
    hooking(site, SPELLED, ">=0.5.11")
    assert cli(site, "doctor", "--strict").code == 0


@pytest.mark.fault(
    "cli",
    "a hook target exists only in some releases of the range its distribution declares "
    "(a module new in 0.5.21, range >=0.5.17)",
    "doctor warns which releases lack it and where it exists ('exists in SGLang from 0.5.21 "
    "only; the declared range starts at 0.5.17')",
)
def test_doctor_warns_of_a_target_missing_from_the_start_of_the_declared_range(
    site: PluginSite,
) -> None:
    hooking(site, NEWER, ">=0.5.17")
    result = cli(site, "doctor", "--json")
    assert result.code == 0
    (problem,) = result.json["problems"]
    assert problem["severity"] == "warning" and problem["plugin"] == "hooks"
    assert problem["message"] == (
        f"hooks on {NEWER!r} (from hooks) never apply on SGLang 0.5.17 to 0.5.20: "
        "'sglang.srt.multimodal.deepseek_v41_image_processing' exists in SGLang from 0.5.21 "
        "only; the declared range starts at 0.5.17"
    )
    assert result.json["sglang"]["plugins"][0]["releases"] == [f"0.5.{n}" for n in range(17, 24)]
    hooking(site, NEWER, ">=0.5.21")  # the same plugin, declaring what it supports
    assert cli(site, "doctor", "--strict").code == 0


@pytest.mark.fault(
    "cli",
    "a distribution requires sglang-router (another distribution whose name starts with sglang)",
    "it declares no SGLang range: the requirement's name is read exactly (PEP 503), never by "
    "prefix",
)
def test_a_requirement_on_sglang_router_is_no_sglang_range(site: PluginSite) -> None:
    hooking(site, NEWER)
    declare(next(site.root.glob("hooks_dist-*.dist-info")), ">=0.1", name="sglang-router")
    (row,) = cli(site, "doctor", "--json").json["sglang"]["plugins"]
    assert (row["supports"], row["releases"]) == (None, [])


def test_explain_lists_the_releases_that_have_the_target(site: PluginSite) -> None:
    hooking(site, NEWER, ">=0.5.21")
    result = cli(site, "explain", NEWER, "--json")
    assert result.code == 0 and result.json["releases"] == ["0.5.21", "0.5.22", "0.5.23"]
    assert "Releases  from 0.5.21" in cli(site, "explain", NEWER).out


def test_explain_of_a_target_no_release_has_says_so(site: PluginSite) -> None:
    result = cli(site, "explain", MISSPELLED, "--json")
    assert result.json["releases"] == []
    assert "is in no SGLang release with a plugin system" in messages(result.json, "warning")


# --- a platform against the releases it declares --------------------------------------------------

MODERN_PLATFORM = """
    from sglang_plugin_runtime.platforms.device_mixin import PlatformEnum
    from sglang_plugin_runtime.platforms.interface import SRTPlatform

    class WidgetPlatform(SRTPlatform):
        _enum = PlatformEnum.OOT
        device_name = device_type = "widget"
        {extra}

    def activate():
        return __name__ + ".WidgetPlatform"
"""


def platform(site: PluginSite, supported: str, extra: str = "pass") -> None:
    source = textwrap.dedent(MODERN_PLATFORM).replace("{extra}", extra)
    dist_info = site.add(
        "widget-dist",
        "1.0",
        entry_points={"sglang.srt.platforms": {"widget": "widget_platform:activate"}},
        modules={"widget_platform.py": source},
    )
    declare(dist_info, supported)


@pytest.mark.fault(
    "cli",
    "the selected platform class leaves to its base a method that releases of its declared range "
    "require (0.5.21's get_paged_allocator_cls(): its base raises NotImplementedError)",
    "doctor warns, naming the method and the releases (so --strict fails); a range that starts "
    "after them passes",
)
def test_doctor_warns_of_methods_releases_in_range_require(site: PluginSite) -> None:
    platform(site, ">=0.5.17")
    result = cli(site, "doctor", "--json")
    assert result.code == 0
    found = messages(result.json, "warning")
    assert (
        "WidgetPlatform.get_paged_allocator_cls() is required by SGLang 0.5.17 to 0.5.21 (its base "
        "raises NotImplementedError) and the class leaves it to SRTPlatform: override it"
    ) in found
    assert {p["step"] for p in result.json["problems"]} == {"sglang"}


def test_doctor_judges_a_platform_by_its_range_only(site: PluginSite) -> None:
    platform(site, ">=0.5.22")  # 0.5.22 gives get_paged_allocator_cls() a default
    found = messages(cli(site, "doctor", "--json").json, "warning")
    assert "get_device_total_memory() is required by SGLang from 0.5.22" in found  # every release
    assert "get_paged_allocator_cls" not in found


def test_an_override_some_releases_in_range_call_is_information(site: PluginSite) -> None:
    platform(site, ">=0.5.21", "def get_full_graph_backend_cls(self):\n            return None")
    platform_report = cli(site, "doctor", "--json").json["platform"]
    assert all(o["kind"] != "uncalled" for o in platform_report["overrides"])
    platform(
        site, ">=0.5.17", "def get_mha_kv_pool_cls(self):\n            return dict"
    )  # called by 0.5.17 to 0.5.21, not 0.5.22 and later
    report = cli(site, "doctor", "--json").json
    (uncalled,) = [o for o in report["platform"]["overrides"] if o["kind"] == "uncalled"]
    assert "never called by SGLang from 0.5.22" in uncalled["message"]
    assert "never called" not in messages(report, "warning")


def test_an_override_no_release_in_range_calls_is_a_warning(site: PluginSite) -> None:
    platform(site, ">=0.5.22", "def support_cuda_graph(self):\n            return True")
    found = messages(cli(site, "doctor", "--json").json, "warning")
    assert (
        "WidgetPlatform.support_cuda_graph: never called by SGLang from 0.5.22: a platform member "
        "of SGLang up to 0.5.21 only"
    ) in found


# --- contract --diff ------------------------------------------------------------------------------


def test_contract_diff_shows_what_changed_between_two_releases(site: PluginSite) -> None:
    result = cli(site, "contract", "--diff", "0.5.17", "0.5.23")
    assert result.code == 0, result.err
    rows = [line.split() for line in result.out.splitlines()]
    assert [
        "SRTPlatform",
        "get_mha_kv_pool_cls",
        "removed",
        "method",
        "(self),",
        "required",
    ] in rows
    assert ["PlatformEnum", "SAIL", "added", "present"] in rows
    changed = "get_paged_allocator_cls changed method (self), required => method (self) -> None"
    assert f"SRTPlatform {changed}" in {" ".join(r) for r in rows}
    assert "The platform contract from SGLang 0.5.17 to 0.5.23:" in result.out


def test_contract_diff_as_json(site: PluginSite) -> None:
    document = cli(site, "contract", "--diff", "0.5.21", "0.5.22", "--json").json
    assert document["diff"]["from"] == "0.5.21" and document["installed"] is None
    changed = {c["name"]: c for c in document["diff"]["changes"] if c["section"] == "SRTPlatform"}
    allocator = changed["get_paged_allocator_cls"]
    assert (allocator["change"], allocator["before"]["required"], allocator["after"]) == (
        "changed",
        True,
        {"kind": "method", "signature": "(self)", "default": None},
    )


def test_contract_lists_the_releases(site: PluginSite) -> None:
    document = cli(site, "contract", "--json").json
    assert document["releases"][0] == "0.5.11" and document["diff"] is None


@pytest.mark.fault(
    "cli",
    "contract --diff names a release that has no data (0.5.9, a typo)",
    "usage error (exit status 2) listing the releases there are",
)
def test_contract_diff_of_an_unknown_release_is_a_usage_error(site: PluginSite) -> None:
    result = cli(site, "contract", "--diff", "0.5.9", "0.5.23")
    assert result.code == 2
    assert "'0.5.9' is no release with a plugin system: one of 0.5.11, 0.5.12" in result.err
