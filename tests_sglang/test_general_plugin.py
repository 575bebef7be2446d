"""A generated SGLang-host general plugin, loaded by the real ``sglang.srt.plugins.load_plugins()``.

The package is generated with its example hooks (BEFORE, AFTER, AROUND timer by decorator, class
REPLACE; on SGLang targets, stand-ins in place as in its own tests), then edited as a vendor would:
one more module points hooks at real SGLang code (a function ~30 SGLang modules copied with ``from x
import f``, and a method of ``SRTPlatform``). It is pip-installed, and a fresh subprocess of the
SGLang venv calls SGLang's ``load_plugins()``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import GENERAL_ANSWERS, GeneratedPackage
from scenarios import clean_env, generated_stand_ins, run_python

pytestmark = pytest.mark.subprocess

SGLANG_TARGETS = '''\
"""Hooks on real SGLang code (added after generation, as the README says)."""

from sglang.srt.plugins.hook_registry import HookRegistry, HookType, plugin_hook

CALLS: list[str] = []

GET_PLATFORM_TARGET = "sglang.srt.runtime_context.get_platform"
COMPILE_BACKEND_TARGET = "sglang.srt.platforms.interface.SRTPlatform.get_compile_backend"


def register_sglang_hooks() -> None:
    def count_get_platform(result, *args, **kwargs):
        CALLS.append("get_platform")

    HookRegistry.register(GET_PLATFORM_TARGET, count_get_platform, HookType.AFTER)

    @plugin_hook(COMPILE_BACKEND_TARGET, type=HookType.AROUND)
    def tag_backend(original, self, *args, **kwargs):
        CALLS.append("get_compile_backend")
        return "probe:" + original(self, *args, **kwargs)
'''


def _add_sglang_targets(project: Path) -> None:
    package = project / GENERAL_ANSWERS["package_name"]
    (package / "sglang_targets.py").write_text(SGLANG_TARGETS, encoding="utf-8")
    init = package / "__init__.py"
    text = init.read_text(encoding="utf-8")
    anchor = "    register_hooks()\n"
    assert anchor in text, "the general template's register() changed; update this test"
    text = text.replace(
        anchor,
        anchor
        + "    from .sglang_targets import register_sglang_hooks\n\n    register_sglang_hooks()\n",
    )
    init.write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def general_plugin(generate) -> GeneratedPackage:
    return generate(GENERAL_ANSWERS, host="sglang", edit=_add_sglang_targets)


LOAD = textwrap.dedent(
    """
    import sys
    # the modules holding `from sglang.srt.runtime_context import get_platform`
    import sglang.srt.server_args
    from sglang.srt.plugins import load_plugins
    from sglang.srt.plugins.hook_registry import HookRegistry, HookSource
    from sglang.srt.platforms.interface import SRTPlatform
    from sglang.srt.platforms.cpu import CpuSRTPlatform

    load_plugins()
    load_plugins()  # idempotent

    from sglang_probe_hooks import hooks, sglang_targets
    result = {
        "normalize": resolve_target(hooks.PROMPT_TARGET)("  hello  "),
        "count": resolve_target(hooks.COUNT_TARGET)(1, 2, 0.0),
        "batch": target_owner(hooks.TIMER_TARGET)().run_batch(["a", "b"]),
        "timings": hooks.TIMINGS[hooks.TIMER_TARGET].calls,
        "policy_replaced":
            resolve_target(hooks.EVICTION_TARGET).__name__ == "KeepBaseModelEvictionPolicy",
        "compile_backend": SRTPlatform().get_compile_backend(),
        "cpu_compile_backend": CpuSRTPlatform().get_compile_backend(),
        "stale_copy": sys.modules["sglang.srt.utils.common"].get_platform() is not None,
        "calls": sglang_targets.CALLS,
        "sources": sorted({tuple(src)
                           for hooks_ in HookRegistry._hooks.values() for _t, _h, src in hooks_}),
        "registered": sorted(HookRegistry._hooks),
    }
    report(result)
    """
)


def test_sglang_load_plugins_applies_the_generated_hooks(general_plugin: GeneratedPackage) -> None:
    out = run_python(
        generated_stand_ins(general_plugin.project) + LOAD, paths=[general_plugin.site]
    )
    assert out["normalize"] == "hello"  # BEFORE
    assert out["count"] == 3  # AFTER
    assert out["batch"] == 2 and out["timings"] == 1  # AROUND timer, registered with @plugin_hook
    assert out["policy_replaced"] is True  # class REPLACE
    # ... and on real SGLang code:
    assert out["compile_backend"] == "probe:inductor"
    assert out["cpu_compile_backend"] == "probe:inductor"
    assert out["stale_copy"] is True
    assert out["calls"] == ["get_compile_backend", "get_compile_backend", "get_platform"]
    # Every hook is attributed to the plugin (SGLang sets the source while register() runs).
    assert out["sources"] == [["probe", "sglang-probe-hooks"]]
    assert "sglang.srt.runtime_context.get_platform" in out["registered"]


def test_sglang_plugins_allowlist_can_switch_it_off(general_plugin: GeneratedPackage) -> None:
    code = """
    from sglang.srt.plugins import load_plugins
    from sglang.srt.plugins.hook_registry import HookRegistry
    load_plugins()
    import sys
    report({"registered": sorted(HookRegistry._hooks),
            "imported": "sglang_probe_hooks" in sys.modules})
    """
    out = run_python(code, paths=[general_plugin.site], env={"SGLANG_PLUGINS": "someone_else"})
    assert out["registered"] == []
    assert out["imported"] is False


def test_doctor_checks_released_sglangs_registry_as_its_apply_hooks_will(
    general_plugin: GeneratedPackage,
) -> None:
    # A plugin written for released SGLang registers with SGLang's own HookRegistry: doctor checks
    # each of its targets as SGLang's apply_hooks() will resolve it (each module found, without
    # importing it).
    outcome = run_python(
        """
        import io, json, contextlib
        from sglang_plugin_runtime._cli import main
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(["doctor", "--json", "--strict"])
        report({"code": code, "doctor": json.loads(out.getvalue())})
        """,
        paths=[general_plugin.site],
    )
    assert outcome["code"] == 0, outcome["doctor"]["problems"]
    assert (
        "sglang.srt.runtime_context.get_platform"
        in outcome["doctor"]["hooks"]["sglang_registry_targets"]
    )


def test_doctor_under_the_launcher_shows_the_hooks_sglang_plugins_register(
    general_plugin: GeneratedPackage,
) -> None:
    """With the runtime as SGLang's plugin layer (the launcher), the same plugin's hooks are the
    runtime's."""
    script = Path(sys.executable).with_name("sglang-plugins")
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "sglang_plugin_runtime",
            "run",
            "--",
            str(script),
            "doctor",
            "--json",
        ],
        env=clean_env([general_plugin.site]),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    report = json.loads(completed.stdout)
    targets = {t["target"]: t for t in report["hooks"]["targets"]}
    assert "sglang.srt.runtime_context.get_platform" in targets, completed.stderr
    assert {
        h["source"]["plugin"] for h in targets["sglang.srt.runtime_context.get_platform"]["hooks"]
    } == {"probe"}
    assert report["hooks"]["sglang_registry_targets"] == []
    assert "runs with sglang_plugin_runtime" in completed.stderr
