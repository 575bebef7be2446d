"""Each SGLang release's contract, as data (``_sglang_releases``, written from the wheels by
``scripts/sglang_releases.py``), and a platform class judged against the releases: the testing
kit's per-release conformance check, hook targets, the definition-time check where an older release
is installed. Every rule runs on the real data of the releases;
``tests_sglang/test_release_data.py`` regenerates the data from the wheels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _plugin_site import PluginSite

from sglang_plugin_runtime import _sglang_releases as data
from sglang_plugin_runtime.platforms._describe import release_problems
from sglang_plugin_runtime.platforms.device_mixin import DeviceCapability, PlatformEnum
from sglang_plugin_runtime.platforms.interface import SRTPlatform
from sglang_plugin_runtime.testing import (
    assert_platform_conformance,
    check_platform_conformance,
    missing_hook_target,
    sglang_releases,
    write_fake_distribution,
)

DATA = Path(data.__file__).parent
TABLE = DATA.parent / "platforms" / "interface_table.jsonl"
SCHEDULER = "sglang.srt.managers.scheduler"


class ModernPlatform(SRTPlatform):
    """A platform with what SGLang 0.5.22 and later require (and the runtime's contract): none of
    0.5.21's required factories."""

    _enum = PlatformEnum.OOT
    device_name = device_type = "widget"

    def get_default_attention_backend(self) -> str:
        return "torch_native"

    def get_default_speculative_draft_attention_backend(self, algorithm: str) -> str:
        return "torch_native"

    def get_device_total_memory(self, device_id: int = 0) -> int:
        return 1 << 30

    def get_current_memory_usage(self, device: object = None) -> float:
        return 0.0

    def get_device(self, device_id: int = 0) -> str:
        return "cpu"

    def set_device(self, device: object) -> None:
        pass

    def get_device_name(self, device_id: int = 0) -> str:
        return "widget"

    def get_device_uuid(self, device_id: int = 0) -> str:
        return "widget-0"

    def get_device_capability(self, device_id: int = 0) -> DeviceCapability | None:
        return None

    def get_available_memory(self, device_id: int = 0) -> tuple[int, int]:
        return (1 << 29, 1 << 30)

    def get_torch_profiler_activity_str(self) -> str:
        return "CPU"

    def get_torch_profiler_activity(self) -> object:
        return "CPU"


class EveryReleasePlatform(ModernPlatform):
    """The same, with what SGLang 0.5.11 to 0.5.21 require too (each release calls what it has)."""

    def get_graph_runner_cls(self) -> type | None:
        return None

    def get_mha_kv_pool_cls(self) -> type:
        return dict

    def get_mla_kv_pool_cls(self) -> type:
        return dict

    def get_dsa_kv_pool_cls(self) -> type:
        return dict

    def get_nsa_kv_pool_cls(self) -> type:
        return dict

    def get_kv_pool_cls(self, *, kind: str) -> type | None:
        return dict

    def get_paged_allocator_cls(self) -> type | None:
        return None

    def get_piecewise_backend_cls(self) -> type | None:
        return None

    def get_torch_distributed_backend_str(self) -> str:  # required up to 0.5.13
        return "gloo"


# --- the data -------------------------------------------------------------------------------------


def test_the_releases_are_every_release_with_a_plugin_system_oldest_first() -> None:
    assert data.releases() == tuple(f"0.5.{n}" for n in range(11, 24))
    assert data.release_of("0.5.12.post1") == "0.5.12"  # same plugin layer, byte for byte
    assert data.release_of("0.5.10") is None


def test_every_span_in_the_contract_names_known_releases() -> None:
    text = (DATA / "contract.json").read_text(encoding="utf-8")
    spans = {value for key, value in _pairs(json.loads(text)) if key == "in"}
    assert spans and all(data.held(span) for span in spans)


def _pairs(node: object) -> list[tuple[str, object]]:
    if isinstance(node, dict):
        return [*node.items(), *(p for v in node.values() for p in _pairs(v))]
    return [p for v in node for p in _pairs(v)] if isinstance(node, list) else []


def test_the_interface_table_is_the_newest_releases_contract() -> None:
    """The table's rows of the newest release are the data's: names, kinds, signatures, and the
    calls the scan finds (one scan writes both)."""
    newest = data.releases()[-1]
    rows = [json.loads(line) for line in TABLE.read_text(encoding="utf-8").splitlines()]
    for host in data.OWNERS:
        declared = data.contract(newest, host)
        table = {r["name"]: r for r in rows if r.get("host") == host and newest in r["versions"]}
        assert {n: (r["kind"], r["signature"]) for n, r in table.items()} == {
            n: (s["kind"], s["signature"]) for n, s in declared.items()
        }
        calls = data.sections(newest)[f"{host} calls"]
        scanned = {
            n: sorted((c.get("args", 0), c.get("kwargs", [])) for c in r.get("calls", ()))
            for n, r in table.items()
            if not any(c.get("read") or c.get("indirect") for c in r.get("calls", ()))
            and not any(c["site"].startswith("sglang_plugin_runtime") for c in r.get("calls", ()))
        }
        for name, forms in scanned.items():
            assert forms == sorted((c["args"], c["kwargs"]) for c in calls.get(name, ())), name


def test_a_name_only_older_releases_declare_is_a_known_name_of_the_table() -> None:
    rows = [json.loads(line) for line in TABLE.read_text(encoding="utf-8").splitlines()]
    names = {row["name"] for row in rows}
    for host in data.OWNERS:
        assert set(data.declared(host)) <= names


def test_the_0_5_21_contract_requires_the_factories_0_5_22_gives_defaults() -> None:
    required = {n for n, s in data.contract("0.5.21", "srt").items() if s.get("required")}
    assert {"get_paged_allocator_cls", "get_piecewise_backend_cls"} <= required
    newer = data.contract("0.5.22", "srt")
    assert newer["get_paged_allocator_cls"] == {
        "kind": "method",
        "signature": "(self)",
        "default": None,
    }


def test_the_diff_of_two_releases_lists_what_changed() -> None:
    changes = {(c["section"], c["name"]): c for c in data.diff("0.5.22", "0.5.23")}
    assert changes[("PlatformEnum", "SAIL")]["change"] == "added"
    assert changes[("capabilities", "supports_pynccl")]["after"] == {"default": False}
    worker = changes[("SRTPlatform", "get_speculative_worker_cls")]
    assert (worker["change"], worker["after"]["signature"]) == ("added", "(self, algorithm)")
    (call,) = changes[("srt calls", "get_speculative_worker_cls")]["after"]
    assert (call["args"], call["kwargs"]) == (0, ["algorithm"])
    assert data.diff("0.5.23", "0.5.23") == []


def test_the_diff_of_a_release_that_does_not_exist_names_the_releases() -> None:
    with pytest.raises(ValueError, match=r"'0\.5\.9' is no release .* 0\.5\.11, 0\.5\.12"):
        data.diff("0.5.9", "0.5.23")


# --- ranges ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requires", "declared"),
    [
        (["sglang>=0.5.17"], ">=0.5.17"),
        (['sglang[srt] (>=0.5.17,<0.6) ; extra == "sglang"'], ">=0.5.17,<0.6"),
        (["SGLang>=0.5.20"], ">=0.5.20"),
        (["sglang"], ""),
        (["sglang-router>=0.2", "torch"], None),
        (["sglang-router>=0.2", "sglang==0.5.21"], "==0.5.21"),
    ],
)
def test_the_requirement_on_sglang_is_read_by_its_exact_name(
    requires: list[str], declared: str | None
) -> None:
    assert data.sglang_range(requires) == declared


def test_a_range_holds_the_releases_it_admits() -> None:
    assert sglang_releases(">=0.5.20,<0.5.23") == ["0.5.20", "0.5.21", "0.5.22"]
    assert sglang_releases("~=0.5.22") == ["0.5.22", "0.5.23"]
    assert sglang_releases() == list(data.releases())


def test_a_distributions_declared_range_gives_its_releases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dist_info = write_fake_distribution(tmp_path, "sglang-widget", "1.0")
    metadata = dist_info / "METADATA"
    requirement = 'Requires-Dist: sglang>=0.5.21; extra == "sglang"\n'
    metadata.write_text(
        metadata.read_text().replace("Version: 1.0\n", f"Version: 1.0\n{requirement}")
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert sglang_releases(distribution="sglang-widget") == ["0.5.21", "0.5.22", "0.5.23"]


@pytest.mark.fault(
    "testing",
    "sglang_releases() for a distribution that declares no requirement on sglang, or a range "
    "clause it cannot read",
    "ValueError saying what to declare (no silent 'every release')",
)
def test_a_distribution_without_a_range_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_fake_distribution(tmp_path, "sglang-widget", "1.0")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match="sglang-widget declares no requirement on sglang"):
        sglang_releases(distribution="sglang-widget")
    with pytest.raises(ValueError, match="cannot read the SGLang range 'latest'"):
        sglang_releases("latest")


# --- hook targets ---------------------------------------------------------------------------------


def test_a_misspelled_module_is_in_no_release() -> None:
    target = "sglang.srt.managers.schedulr.Scheduler.event_loop_normal"
    assert {missing_hook_target(target, r) for r in data.releases()} == {
        "sglang.srt.managers.schedulr"
    }


def test_a_method_a_class_inherits_from_a_mixin_in_sglang_exists() -> None:
    # Scheduler defines neither: they come from its mixin bases
    for name in ("process_batch_result", "__init__", "event_loop_normal"):
        assert missing_hook_target(f"{SCHEDULER}.Scheduler.{name}", "0.5.23") is None, name


def test_a_member_no_class_in_the_mro_defines_is_missing() -> None:
    target = f"{SCHEDULER}:Scheduler.event_loop_normall"
    assert missing_hook_target(target, "0.5.23") == f"{SCHEDULER}.Scheduler.event_loop_normall"


def test_a_target_of_a_newer_module_is_missing_before_it() -> None:
    target = "sglang.srt.arg_groups.resolution_hooks.run_hook"
    held = [r for r in data.releases() if missing_hook_target(target, r) is None]
    assert held and held == list(data.releases()[data.releases().index(held[0]) :])
    older = data.releases()[data.releases().index(held[0]) - 1]
    assert missing_hook_target(target, older) == "sglang.srt.arg_groups.resolution_hooks"


def test_a_hook_target_in_an_unknown_release_is_refused() -> None:
    with pytest.raises(ValueError, match="'0.6.0' is no release with a plugin system"):
        missing_hook_target(f"{SCHEDULER}.Scheduler", "0.6.0")


# --- a platform class judged against releases -----------------------------------------------------


@pytest.mark.fault(
    "testing",
    "a platform class that leaves a method to its base that an SGLang release in range requires "
    "(0.5.21's get_paged_allocator_cls(), get_piecewise_backend_cls())",
    "check_platform_conformance(cls, release=...) fails for that release, naming the method and "
    "the release; it passes for a release that gives the method a default",
)
def test_a_class_lacking_0_5_21s_required_methods_fails_for_0_5_21_and_passes_for_0_5_22() -> None:
    problems = check_platform_conformance(ModernPlatform, release="0.5.21")
    lacking = {p.attribute for p in problems if p.kind == "not_implemented"}
    assert {"get_paged_allocator_cls", "get_piecewise_backend_cls"} <= lacking
    message = next(p.message for p in problems if p.attribute == "get_paged_allocator_cls")
    assert "required by SGLang 0.5.21" in message and "NotImplementedError" in message
    assert check_platform_conformance(ModernPlatform, release="0.5.22") == []
    assert check_platform_conformance(ModernPlatform) == []  # the runtime's own contract


def test_a_class_with_each_releases_methods_conforms_to_every_release() -> None:
    for release in data.releases():
        assert_platform_conformance(EveryReleasePlatform, release=release)


def test_the_failure_names_the_release_it_was_judged_against() -> None:
    with pytest.raises(AssertionError, match="contract of SGLang 0.5.17 "):
        assert_platform_conformance(ModernPlatform, release="0.5.17")


@pytest.mark.fault(
    "testing",
    "an override whose signature cannot accept a call an SGLang release makes (and the runtime's "
    "contract never makes)",
    "the conformance check judged against that release fails with the call and its site; other "
    "releases pass",
)
def test_an_override_that_cannot_take_an_older_releases_call_fails_for_that_release() -> None:
    class GraphFlagPlatform(EveryReleasePlatform):
        def support_cuda_graph(self, batch_size: int) -> bool:  # 0.5.21 calls it with nothing
            return False

    (problem,) = check_platform_conformance(GraphFlagPlatform, release="0.5.21")
    assert problem.kind == "signature" and problem.attribute == "support_cuda_graph"
    assert "SGLang 0.5.21, sglang/" in problem.message
    assert check_platform_conformance(GraphFlagPlatform, release="0.5.22") == []


def test_an_override_no_judged_release_has_is_uncalled_information() -> None:
    found = {(p.attribute, p.kind): p for p in release_problems(EveryReleasePlatform, ["0.5.22"])}
    retired = found[("get_mha_kv_pool_cls", "uncalled")]
    assert retired.releases == ("0.5.22",)
    assert "never called by SGLang 0.5.22: a platform member of SGLang up to 0.5.21" in (
        retired.message
    )
    # information for the kit: a class serving several releases has such overrides
    assert check_platform_conformance(EveryReleasePlatform, release="0.5.22") == []


def test_an_unknown_release_is_a_usage_error_of_the_check() -> None:
    with pytest.raises(ValueError, match="'0.5.99' is no release"):
        check_platform_conformance(ModernPlatform, release="0.5.99")


# --- the definition-time check follows the installed release --------------------------------------

_KV_POOL_WITHOUT_KIND = """
    from sglang_plugin_runtime.platforms.interface import SRTPlatform
    class Old(SRTPlatform):
        def get_kv_pool_cls(self):
            return None
    print("defined")
"""


@pytest.mark.fault(
    "selection",
    "an older SGLang release is installed (0.5.17) and a platform class defines a method the way "
    "that release never calls (get_kv_pool_cls without kind)",
    "the class is defined (that SGLang would run it); without SGLang, the runtime's own contract "
    "refuses it with the call it cannot take",
)
def test_the_definition_check_judges_against_the_installed_release(site: PluginSite) -> None:
    site.add("sglang", "0.5.17")
    assert site.run(_KV_POOL_WITHOUT_KIND, check=True).stdout.strip() == "defined"


def test_without_sglang_the_runtimes_contract_refuses_the_same_class(site: PluginSite) -> None:
    result = site.run(_KV_POOL_WITHOUT_KIND)
    assert result.returncode != 0
    assert "get_kv_pool_cls" in result.stderr and "kind=..." in result.stderr


def test_an_installed_release_the_data_does_not_know_keeps_the_runtimes_contract(
    site: PluginSite,
) -> None:
    site.add("sglang", "0.6.0.dev0")
    assert site.run(_KV_POOL_WITHOUT_KIND).returncode != 0
