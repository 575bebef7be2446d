"""The four real plugins themselves: their unmodified sources, installed with pip, held to their
shapes' verdicts.

Runs where ``REAL_PLUGIN_SOURCES`` names a folder of snapshots (see :mod:`real_plugins`);
elsewhere (CI) every test here is skipped with that reason and ``test_real_plugin_shapes.py`` proves
the behaviours. Each plugin is exported from its snapshot at the commit that was read (``git
archive``), installed with a real ``pip install --target``, and run in fresh processes on SGLang
0.5.23 and under ``sglang-plugins run``.

This venv has SGLang's plugin and platform layers, not its serving stack (no transformers, no
torchvision): where a real plugin imports that stack before it reaches the behaviour, the test
asserts that it fails the same way in both worlds and leaves no hook behind, and says so."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from real_plugins import (
    BEHAVIOURS,
    LOAD,
    MLU_KV_POOLS,
    PLUGINS,
    WORLDS,
    export_sources,
    run,
    stopped,
    strip_paths,
)
from scenarios import Outcome, pip_install_target

pytestmark = pytest.mark.subprocess

EXPECTED = {behaviour.id: behaviour for behaviour in BEHAVIOURS}
Site = Callable[[str], Path]


@pytest.fixture(scope="module")
def real_site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    """``real_site(key)``: the real plugin ``key`` exported from its snapshot and pip-installed
    (once)."""
    installed: dict[str, Path] = {}

    def install(key: str) -> Path:
        if key not in installed:
            folder = tmp_path_factory.mktemp(f"sources-{key}")
            sources = export_sources(PLUGINS[key], folder / "tree")
            installed[key] = pip_install_target(sources, tmp_path_factory.mktemp(f"real-{key}"))
        return installed[key]

    return install


def expect(behaviour_id: str, world: str, outcome: str) -> None:
    """The real plugin's outcome is its shape's (a pending runtime expectation: a strict xfail)."""
    behaviour = EXPECTED[behaviour_id]
    wanted = getattr(behaviour, world)
    if world == "runtime" and behaviour.pending and outcome != wanted:
        pytest.xfail(f"{behaviour.pending}: today {outcome!r}")
    assert strip_paths(outcome) == wanted, f"{behaviour.title} [{world}]"


MISSING_MODULE = re.compile(r"No module named '([\w.]+)'")


def missing_serving_stack(out: Outcome, own_package: str) -> str | None:
    """The module of SGLang's serving stack the plugin could not import here, if that is how it
    failed."""
    text = " ".join(out.result.get("messages", [])) + out.stderr
    found = [m for m in MISSING_MODULE.findall(text) if not m.startswith(own_package)]
    return found[0] if found else None


# --------------------------------------------------------------------------------------------------
# sglang-mlu
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("world", WORLDS)
def test_real_sglang_mlu_pin_memory_gets_its_shapes_verdict(world: str, real_site: Site) -> None:
    expect("mlu_pin_memory", world, EXPECTED["mlu_pin_memory"].observe(world, [real_site("mlu")]))


def test_real_sglang_mlu_retired_kv_pool_hooks_are_served_by_sglang_once_warned_each(
    real_site: Site,
) -> None:
    """On SGLang (the runtime refuses the class before: see the test above)."""
    out = run("sglang", MLU_KV_POOLS, [real_site("mlu")]).result
    assert out["served"] == {
        "mha": "MLUMHATokenToKVPool",
        "mla": "MLUMLATokenToKVPool",
        "dsa": "MLUDSATokenToKVPool",
    }
    retired = [m for m in out["messages"] if m.startswith("WARNING:") and "_kv_pool_cls()" in m]
    assert len(retired) == 3, out["messages"]


# --------------------------------------------------------------------------------------------------
# orbitkv
# --------------------------------------------------------------------------------------------------


def test_real_orbitkv_turns_every_failure_of_register_into_system_exit(real_site: Site) -> None:
    """What the shape copies, read from the real source: ``register()`` is ``try: _register()`` with
    every ``Exception`` raised again as ``SystemExit``; ``_register()`` checks
    ``HookRegistry._patched``."""
    hooks = real_site("orbitkv") / "orbitkv_sglang" / "plugin" / "hooks.py"
    tree = ast.parse(hooks.read_text(encoding="utf-8"))
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    guard = functions["register"].body[0]
    assert isinstance(guard, ast.Try) and ast.unparse(guard.body[0]) == "_register()"
    (handler,) = guard.handlers
    assert ast.unparse(handler.type) == "Exception"
    raised = handler.body[0]
    assert isinstance(raised, ast.Raise) and ast.unparse(raised.exc).startswith("SystemExit(")
    register = ast.unparse(functions["_register"])
    assert "HookRegistry._patched" in register and "register_radix_cache_backend" in register
    assert {"HookType.REPLACE", "HookType.AROUND"} <= set(re.findall(r"HookType\.\w+", register))


@pytest.mark.parametrize("world", WORLDS)
def test_real_orbitkv_register_gets_its_shapes_verdict(world: str, real_site: Site) -> None:
    code = LOAD + "report({'stopped': False, 'messages': messages})\n"
    out = run(world, code, [real_site("orbitkv")])
    missing = missing_serving_stack(out, "orbitkv_sglang")
    if missing is None:
        expect(
            "orbitkv_system_exit",
            world,
            EXPECTED["orbitkv_system_exit"].observe(world, [real_site("orbitkv")]),
        )
        return
    # Here register() imports SGLang's serving stack before its own checks: the same failure in both
    # worlds.
    assert stopped(out) is None, out.stderr[-2000:]
    failed = [m for m in out["messages"] if m.startswith("ERROR") and f"'{missing}'" in m]
    named = all("orbitkv_manager" in m for m in failed) or world == "sglang"
    assert failed and named, out["messages"]


# --------------------------------------------------------------------------------------------------
# sglang-kunlun
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("world", WORLDS)
def test_real_sglang_kunlun_platform_gets_its_shapes_verdict(world: str, real_site: Site) -> None:
    expect(
        "kunlun_unavailable",
        world,
        EXPECTED["kunlun_unavailable"].observe(world, [real_site("kunlun")]),
    )


KUNLUN_HOOKS = (
    LOAD
    + """
from sglang.srt.plugins.hook_registry import HookRegistry
def kunlun(source):
    return getattr(source, "plugin", getattr(source, "plugin_name", None)) == "kunlun_hooks"
if hasattr(HookRegistry, "describe"):
    left = [r.target for r in HookRegistry.describe() if any(kunlun(h) for h in r.hooks)]
else:
    left = [t for t, hooks in HookRegistry._hooks.items() if any(kunlun(h[2]) for h in hooks)]
failed = [m for m in messages if m.startswith("ERROR") and "kunlun_hooks" in m]
report({"stopped": False, "failed": bool(failed), "hooks": sorted(left), "messages": messages})
"""
)


def test_real_sglang_kunlun_general_plugin_fails_alike_and_leaves_no_hook_on_the_runtime(
    real_site: Site,
) -> None:
    """Kunlun not selected (no XPU): ``kunlun_hooks`` still loads, as on SGLang; when it fails here,
    the runtime discards its hooks (the shape's "fails half-way" row)."""
    theirs, ours = (run(world, KUNLUN_HOOKS, [real_site("kunlun")]) for world in WORLDS)
    assert stopped(theirs) is None and stopped(ours) is None, (
        theirs.stderr[-2000:],
        ours.stderr[-2000:],
    )
    assert theirs["failed"] == ours["failed"]
    if ours["failed"]:
        assert ours["hooks"] == [], ours["hooks"]


SITECUSTOMIZE_RAN = """
import sys
report({"sitecustomize": getattr(sys.modules.get("sitecustomize"), "__file__", "") or ""})
"""


@pytest.mark.parametrize("world", WORLDS)
def test_real_sglang_kunlun_sitecustomize_runs_in_both_worlds(world: str, real_site: Site) -> None:
    site = real_site("kunlun")
    out = run(world, SITECUSTOMIZE_RAN, [site], {"SGLANG_PLATFORM": "kunlun"})
    assert out["sitecustomize"] == str(site / "sitecustomize.py")


# --------------------------------------------------------------------------------------------------
# qsa-hisparse
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("world", WORLDS)
def test_real_qsa_hisparse_left_off_gets_its_shapes_verdict(world: str, real_site: Site) -> None:
    expect("qsa_registry", world, EXPECTED["qsa_registry"].observe(world, [real_site("qsa")]))


def test_real_qsa_hisparse_switched_on_stops_start_up_in_both_worlds(
    real_site: Site,
) -> None:
    env = {"SGLANG_PLUGINS": "qsa_hisparse", "SGLANG_QSA_MODEL_COMPAT": "1"}
    code = LOAD + "report({'stopped': False, 'messages': messages})\n"
    theirs, ours = (run(world, code, [real_site("qsa")], env) for world in WORLDS)
    assert stopped(theirs) is not None and stopped(theirs) == stopped(ours), (
        theirs.result,
        ours.result,
    )
