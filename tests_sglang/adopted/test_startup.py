"""The adopted SGLang runs startup plugins (``sglang.srt.startup_plugins``) when its package is
imported, before its own imports: a vendor's early patches need no ``.pth`` file or
``sitecustomize``."""

from __future__ import annotations

from pathlib import Path

from scenarios import run_python

from sglang_plugin_runtime.testing import write_fake_distribution

EARLY_SHIM = """
import sys
SEEN = {}
def register():
    from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookType
    SEEN.update(torch="torch" in sys.modules, srt_utils="sglang.srt.utils" in sys.modules, ran=True)
    HookRegistry.register("sglang.srt.utils.common.get_bool_env_var",
                          lambda result, *a, **k: True, HookType.AFTER)
"""


def test_startup_plugins_run_before_sglangs_own_imports(tmp_path: Path) -> None:
    write_fake_distribution(
        tmp_path,
        "early-shim",
        entry_points={"sglang.srt.startup_plugins": {"early": "early_shim:register"}},
        modules={"early_shim.py": EARLY_SHIM},
    )
    out = run_python(
        """
        import sglang, early_shim
        from sglang.srt.utils.common import get_bool_env_var
        from sglang.srt.plugins import load_plugins
        load_plugins()
        report({**early_shim.SEEN, "hooked": get_bool_env_var("SGLANG_NO_SUCH_VARIABLE")})
        """,
        paths=[tmp_path],
    )
    assert out.result == {"torch": False, "srt_utils": False, "ran": True, "hooked": True}, (
        out.stderr
    )
