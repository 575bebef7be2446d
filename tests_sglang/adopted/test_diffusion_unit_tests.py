"""SGLang 0.5.23's own diffusion plugin tests, shipped in the wheel, run against the adopted SGLang.

All 32 pass on the released wheel (tests_sglang/test_adoption_patch.py runs them there). Against the
adopted SGLang each failure is classified below: a test that edits a private name the adoption
made a read-only snapshot (the behaviour it checks still holds, and a public-API twin in this file
proves it), or a real difference (asserted here as the new behaviour). The classification is
asserted, so it cannot drift, and it is the table in docs/sglang.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from adopted_kit import run_python
from generated_docs import sync_section
from wheel_unit_tests import DIFFUSION_TESTS, Outcome, run_wheel_tests

pytestmark = pytest.mark.subprocess

PRIVATE = "writes a private name"
REAL = "real difference"


@dataclass(frozen=True)
class Classified:
    kind: str  # PRIVATE or REAL
    evidence: str  # a fragment of the failure message that shows the cause
    why: str
    twin: str  # the test below that checks the same behaviour through public names


# Each registers its cleanup as ``HookRegistry._hooks.pop``: the runtime's ``_hooks`` is SGLang's
# shape as a read-only snapshot (real plugins read it), so a test that edits it stops there.
_HOOKS = "'mappingproxy' object has no attribute 'pop'"
_PLUGINS = "test_diffusion_plugins.py::TestDiffusionPlugins::"
CLASSIFICATION = {
    _PLUGINS + "test_hooks_registered_while_importing_a_plugin_keep_their_source": Classified(
        PRIVATE,
        _HOOKS,
        "cleans up by editing `HookRegistry._hooks` (a read-only snapshot in the runtime); "
        "the source it then reads is there, and `HookRegistry.describe()` reports it",
        "test_a_hook_registered_while_a_diffusion_plugin_is_imported_keeps_its_source",
    ),
    _PLUGINS + "test_failing_optional_callback_discards_its_registered_hooks": Classified(
        PRIVATE,
        _HOOKS,
        "registers its cleanup on `HookRegistry._hooks`; the discarding itself is "
        "`HookRegistry.discard_source()`",
        "test_a_failing_diffusion_callback_discards_the_hooks_it_registered",
    ),
    _PLUGINS + "test_failing_optional_import_discards_its_registered_hooks": Classified(
        PRIVATE,
        _HOOKS,
        "registers its cleanup on `HookRegistry._hooks`; the discarding itself is "
        "`HookRegistry.discard_source()`",
        "test_a_failing_diffusion_plugin_import_discards_the_hooks_it_registered",
    ),
    _PLUGINS + "test_an_unapplied_hook_from_the_selected_platform_aborts_startup": Classified(
        PRIVATE,
        _HOOKS,
        "cleans up by editing `HookRegistry._hooks`, and writes a hook straight into it and "
        "`_patched`; the check "
        "now reads `HookRegistry.describe()` (a target whose module is not imported yet is not "
        "a failure: it is patched on import)",
        "test_an_unappliable_hook_of_the_selected_platform_still_aborts_startup",
    ),
    _PLUGINS + "test_plugin_hook_uses_the_diffusion_registry": Classified(
        REAL,
        _HOOKS,
        "one registry per process: diffusion hooks and SRT hooks share the runtime's registry, "
        "each attributed to its plugin and distribution. In SGLang 0.5.23 only `sglang serve` "
        "loads both kinds in one process, and there both are applied before serving, as before",
        "test_diffusion_hooks_live_in_the_one_registry_attributed_to_their_plugin",
    ),
}


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    return run_wheel_tests(DIFFUSION_TESTS, tmp_path_factory.mktemp("wheel-diffusion-tests"))


def test_the_wheels_diffusion_tests_fail_exactly_as_classified(
    outcomes: dict[str, Outcome],
) -> None:
    assert len(outcomes) == 32, sorted(outcomes)
    failed = {test: o for test, o in outcomes.items() if o.status != "passed"}
    assert sorted(failed) == sorted(CLASSIFICATION), {t: o.message[:300] for t, o in failed.items()}
    for test, classified in CLASSIFICATION.items():
        assert classified.evidence in failed[test].message, (test, failed[test].message[:1000])


def test_every_classified_failure_names_a_twin_in_this_file() -> None:
    for classified in CLASSIFICATION.values():
        assert callable(globals().get(classified.twin)), classified.twin


def test_the_doc_carries_the_classification(outcomes: dict[str, Outcome]) -> None:
    failed = {t for t, o in outcomes.items() if o.status != "passed"}
    if failed != set(CLASSIFICATION):
        pytest.skip("the classification does not match this run (see the test above)")
    lines = [
        "| test (SGLang 0.5.23's own) | released wheel | adopted | why | proven by |",
        "|---|---|---|---|---|",
    ]
    for test, c in CLASSIFICATION.items():
        file, _, name = test.partition("::")
        lines.append(
            f"| `{file}` `{name.split('::')[-1]}` | passes | fails: {c.kind} | {c.why} | "
            f"`{c.twin}` |"
        )
    private = sum(c.kind == PRIVATE for c in CLASSIFICATION.values())
    lines += [
        "",
        f"{len(outcomes)} tests: {len(outcomes) - len(failed)} pass unchanged on the adopted "
        f"SGLang, {private} fail only because they edit a private name the runtime keeps "
        f"read-only, {len(failed) - private} shows a real difference.",
    ]
    sync_section(
        "diffusion-tests", "\n".join(lines), "tests_sglang/adopted/test_diffusion_unit_tests.py"
    )


# --------------------------------------------------------------------------------------------------
# The twins: the same behaviours, through names the adoption keeps
# --------------------------------------------------------------------------------------------------

COMMON = """
from types import SimpleNamespace
from unittest.mock import MagicMock, patch
from sglang.multimodal_gen.runtime.platforms import plugins
from sglang.srt.plugins.hook_registry import HookRegistry, HookSource, HookType

def entry_point(name, dist, load):
    ep = MagicMock(name=f"entry_point_{name}")
    ep.name, ep.value, ep.dist = name, f"twin:{name}", SimpleNamespace(name=dist)
    ep.load.side_effect = load
    return ep

def discover(*eps, selected="vendor-pkg"):
    with patch.object(plugins, "entry_points", return_value=list(eps)), \\
            patch.object(plugins, "_get_excluded_dists", return_value=set()), \\
            patch.object(plugins, "get_selected_platform_dist", return_value=selected):
        return plugins._discover()

def sources(target):
    return [[h.plugin, h.distribution] for r in HookRegistry.describe(target) for h in r.hooks]
"""


def test_a_hook_registered_while_a_diffusion_plugin_is_imported_keeps_its_source() -> None:
    out = run_python(
        COMMON
        + """
def load():
    plugins.plugin_hook("twin_module.import_time_target")(lambda result: result)
    return MagicMock()
discover(entry_point("vendor", "vendor-pkg", load))
report(sources("twin_module.import_time_target"))
"""
    )
    assert out.result == [["vendor", "vendor-pkg"]]


def test_a_failing_diffusion_callback_discards_the_hooks_it_registered() -> None:
    out = run_python(
        COMMON
        + """
def register_then_fail():
    plugins.plugin_hook("twin_module.partial_callback_target")(lambda result: result)
    raise RuntimeError("boom")
with patch.object(plugins, "_discover",
                  return_value={"broken": (register_then_fail, "optional-pkg")}), \\
        patch.object(plugins, "get_selected_platform_dist", return_value="vendor-pkg"):
    plugins._register_plugins_once()
report(sources("twin_module.partial_callback_target"))
"""
    )
    assert out.result == []


def test_a_failing_diffusion_plugin_import_discards_the_hooks_it_registered() -> None:
    out = run_python(
        COMMON
        + """
def load_then_fail():
    plugins.plugin_hook("twin_module.partial_import_target")(lambda result: result)
    raise RuntimeError("boom")
loaded = discover(entry_point("broken", "optional-pkg", load_then_fail))
report([loaded, sources("twin_module.partial_import_target")])
"""
    )
    assert out.result == [{}, []]


def test_an_unappliable_hook_of_the_selected_platform_still_aborts_startup() -> None:
    out = run_python(
        COMMON
        + """
import sys
assert "colorsys" not in sys.modules
keep = lambda result, *a, **k: result
HookRegistry.register("twin_missing_module.fn", keep, HookType.AFTER,
                      source=HookSource("v", "vendor-pkg"))
HookRegistry.register("json.dumps", keep, HookType.AFTER, source=HookSource("w", "applied-pkg"))
HookRegistry.register("colorsys.rgb_to_hsv", keep, HookType.AFTER,
                      source=HookSource("p", "pending-pkg"))
HookRegistry.apply_hooks()
result = {}
for dist in ("vendor-pkg", "applied-pkg", "pending-pkg", "other-pkg"):
    try:
        plugins._require_hooks_applied(dist)
        result[dist] = "ok"
    except RuntimeError as exc:
        result[dist] = str(exc)
report(result)
"""
    )
    assert (
        out["vendor-pkg"]
        == "Selected platform package 'vendor-pkg' could not apply hooks on: twin_missing_module.fn"
    )
    assert (out["applied-pkg"], out["pending-pkg"], out["other-pkg"]) == ("ok", "ok", "ok")


def test_diffusion_hooks_live_in_the_one_registry_attributed_to_their_plugin() -> None:
    out = run_python(
        COMMON
        + """
from sglang.srt.plugins.hook_registry import HookRegistry as SrtHookRegistry, _current_plugin_source
token = _current_plugin_source.set(HookSource("vendor", "vendor-pkg"))
try:
    plugins.plugin_hook("twin_module.target")(lambda result: result)
finally:
    _current_plugin_source.reset(token)
report([plugins.HookRegistry is SrtHookRegistry,
        [[h.plugin, h.distribution]
         for r in SrtHookRegistry.describe("twin_module.target") for h in r.hooks]])
"""
    )
    assert out.result == [True, [["vendor", "vendor-pkg"]]]
