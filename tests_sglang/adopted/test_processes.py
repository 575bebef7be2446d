"""SGLang's process model under the adopted SGLang: children started by spawn, fork and forkserver.

SGLang calls ``load_plugins()`` in each of its processes (server, scheduler, detokenizer). A forked
child inherits the parent's selected platform and applied hooks; a spawned or forkserver child
selects and loads again. Either way each child sees the generated platform through
``sglang.srt.platforms`` and the general plugin's hooks fire.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from adopted_kit import Installed, run_python

pytestmark = pytest.mark.subprocess

CHILD = """
import importlib
import sys
import types


def evs_core():
    # The AFTER hook's module, without its package's __init__ (which needs transformers, which
    # this venv leaves out): the package is a bare module over the same folder.
    if "sglang.srt.multimodal.evs" not in sys.modules:
        multimodal = importlib.import_module("sglang.srt.multimodal")
        package = types.ModuleType("sglang.srt.multimodal.evs")
        package.__path__ = [p + "/evs" for p in multimodal.__path__]
        sys.modules[package.__name__] = package
    return importlib.import_module("sglang.srt.multimodal.evs.evs_core")


def observe(device, package, call_load_plugins):
    from sglang_plugin_runtime.testing import simulated_device, SimulatedDevice
    import torch
    if getattr(torch, device, None) is None:  # a spawned child starts from nothing
        simulated_device(device, backend_module="torch_" + device, privateuse1=True).start()
    from sglang.srt.platforms import current_platform
    if call_load_plugins:
        from sglang.srt.plugins import load_plugins
        load_plugins()
    eviction = importlib.import_module("sglang.srt.lora.eviction_policy")
    return [type(current_platform).__name__, evs_core().compute_retained_tokens_count(5, 2, 0.0),
            eviction.LRUEvictionPolicy.__name__]
"""


def test_spawned_forked_and_forkserver_children_see_the_platform_and_the_hooks(
    installed: Installed, tmp_path: Path
) -> None:
    platform = installed.of_kind("platform")[0]
    general = next(
        c
        for c in installed.of_kind("general")
        if {"after", "replace_class"} <= set(dict(c.answers).get("example_hooks", []))
        and dict(c.answers).get("example_hooks_change_behaviour")
    )
    (tmp_path / "adopted_child.py").write_text(textwrap.dedent(CHILD), encoding="utf-8")
    out = run_python(
        f"""
        import multiprocessing as mp
        import adopted_child

        args = ({platform.device!r}, {general.package!r})
        here = adopted_child.observe(*args, call_load_plugins=True)

        def run(method, call_load_plugins):
            with mp.get_context(method).Pool(1) as pool:
                return pool.apply(adopted_child.observe, (*args, call_load_plugins))

        report({{
            "parent": here,
            "fork": run("fork", False),
            "fork+load_plugins": run("fork", True),
            "spawn": run("spawn", True),
            "forkserver": run("forkserver", True),
        }})
        """,
        paths=[installed.site, tmp_path],
        # every general package hooks the same SGLang targets
        env={"SGLANG_PLUGINS": general.entry_point},
    )
    # 10, plus one
    expected = [
        f"{platform.device.title()}SRTPlatform",
        11,
        "KeepBaseModelEvictionPolicy",
    ]
    assert out.result == {
        name: expected for name in ("parent", "fork", "fork+load_plugins", "spawn", "forkserver")
    }
