"""The demo installation the docs' CLI output is produced against.

A folder of fake installed distributions (``*.dist-info`` + modules, exactly what ``pip install``
leaves behind), written with the testing kit's ``write_fake_distribution``. The docs build
(``docs/_hooks/sglang_docs.py``) puts it on ``PYTHONPATH`` for every ``exec="on"`` shell block, and
``tests/test_docs.py`` does the same for Python examples fenced with ``site="demo"``. Docs pages
describe what is in it (docs/contributing.md); change both together.

What is installed:

- ``acme-npu`` 1.2.0: platform plugin ``acme`` whose ``activate()`` finds its (simulated) hardware
  and returns ``acme_npu.platform:AcmeSRTPlatform``; it also ships general plugin ``acme_npu_ops``.
- ``bolt-accel`` 0.3.0: platform plugin ``bolt`` whose ``activate()`` returns ``None`` (no Bolt card
  here).
- ``acme-tools`` 1.0.0: general plugin ``acme_timing`` that registers an AROUND hook on
  ``demo_engine.Engine.step`` (``demo_engine`` is a stand-in for the host's module).
"""

from __future__ import annotations

from pathlib import Path

ACME_INIT = '''
"""Acme NPU platform plugin for SGLang (demo)."""


def activate():
    """Return the platform class when an Acme NPU is present, else None."""
    # A real plugin probes cheaply here (a device node, a driver library); the demo's card is
    # always present.
    return "acme_npu.platform:AcmeSRTPlatform"


def register_ops():
    """General plugin shipped by the same distribution."""
'''

ACME_PLATFORM = """
from sglang_plugin_runtime.platforms.device_mixin import PlatformEnum
from sglang_plugin_runtime.platforms.interface import SRTPlatform


class AcmeSRTPlatform(SRTPlatform):
    _enum = PlatformEnum.OOT
    device_name = "acme"
    device_type = "npu"

    def get_default_attention_backend(self) -> str:
        return "acme_attn"
"""

BOLT_INIT = '''
"""Bolt accelerator platform plugin for SGLang (demo)."""
import os


def activate():
    """Return the platform class when a Bolt card is present, else None."""
    if not os.path.exists("/dev/bolt0"):
        return None
    return "bolt_accel.platform:BoltSRTPlatform"
'''

ACME_TOOLS = '''
"""Timing hooks for SGLang (demo general plugin)."""
import time

from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookType


def time_step(original, *args, **kwargs):
    start = time.perf_counter()
    try:
        return original(*args, **kwargs)
    finally:
        time_step.last_seconds = time.perf_counter() - start


def register():
    HookRegistry.register("demo_engine.Engine.step", time_step, HookType.AROUND)
'''

DEMO_ENGINE = '''
"""A stand-in for a host module (SGLang's scheduler, say) that the demo's hooks target."""


class Engine:
    def step(self, batch):
        return [item * 2 for item in batch]
'''


def build_demo_site(root: str | Path) -> Path:
    """Write the demo installation into ``root`` (created if needed) and return it."""
    from sglang_plugin_runtime.testing import write_fake_distribution

    root = Path(root)
    write_fake_distribution(
        root,
        "acme-npu",
        "1.2.0",
        entry_points={
            "sglang.srt.platforms": {"acme": "acme_npu:activate"},
            "sglang.srt.plugins": {"acme_npu_ops": "acme_npu:register_ops"},
        },
        modules={"acme_npu/__init__.py": ACME_INIT, "acme_npu/platform.py": ACME_PLATFORM},
    )
    write_fake_distribution(
        root,
        "bolt-accel",
        "0.3.0",
        entry_points={"sglang.srt.platforms": {"bolt": "bolt_accel:activate"}},
        modules={"bolt_accel/__init__.py": BOLT_INIT},
    )
    write_fake_distribution(
        root,
        "acme-tools",
        "1.0.0",
        entry_points={"sglang.srt.plugins": {"acme_timing": "acme_tools:register"}},
        modules={"acme_tools.py": ACME_TOOLS},
    )
    write_fake_distribution(root, "demo-engine", "0.1.0", modules={"demo_engine.py": DEMO_ENGINE})
    return root


PLUGIN_GROUPS = (
    "sglang.srt.platforms",
    "sglang.srt.plugins",
    "sglang.multimodal_gen.platforms",
    "sglang.multimodal_gen.plugins",
)


def foreign_plugins() -> list[str]:
    """Plugin entry points installed in this Python environment itself (not in the demo site).

    The docs show what the demo installation does; a plugin left in the dev venv (``scripts/demo.py
    --keep``, a manual ``pip install -e``) would change every output and example, so the build and
    the doc tests refuse to run over one and say which.
    """
    from importlib.metadata import entry_points

    found = []
    for group in PLUGIN_GROUPS:
        for ep in entry_points(group=group):
            dist = ep.dist.name if ep.dist is not None else "?"
            found.append(f"{dist} ({group}: {ep.name} = {ep.value})")
    return sorted(found)


def unclean_environment_message(found: list[str]) -> str:
    return (
        "The docs are built and tested against the demo installation only, but this Python "
        "environment has plugins installed itself:\n  - "
        + "\n  - ".join(found)
        + "\nUninstall them (`.venv/bin/python -m pip uninstall "
        "<distribution>`; `scripts/demo.py` does so unless run with --keep), then build or test "
        "again."
    )
