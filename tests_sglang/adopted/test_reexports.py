"""After the patch, SGLang's plugin and platform-interface modules are the runtime's, and nothing
SGLang imports broke.

The second half reads every ``from sglang.srt.plugins... import`` and ``from sglang.srt.platforms...
import`` in the installed wheel (its own code and its shipped tests) and performs each one, name by
name, in a fresh process.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest
from adopted_kit import REEXPORTS, run_python, sglang_is_adopted

pytestmark = pytest.mark.subprocess


def _sglang_root() -> Path:
    spec = importlib.util.find_spec("sglang")
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations)))


def imports_in_the_wheel() -> dict[str, set[str]]:
    """``{module: {names}}`` for every from-import of ``sglang.srt.plugins*`` /
    ``sglang.srt.platforms*``."""
    found: dict[str, set[str]] = {}
    for path in _sglang_root().rglob("*.py"):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module
                and node.level == 0
                and node.module.startswith(("sglang.srt.plugins", "sglang.srt.platforms"))
            ):
                found.setdefault(node.module, set()).update(alias.name for alias in node.names)
    return found


@pytest.mark.no_sglang_import
def test_the_installed_sglang_carries_the_patch() -> None:
    assert sglang_is_adopted()


def test_every_reexported_name_is_the_runtimes_own_object() -> None:
    out = run_python(
        f"""
        import importlib
        pairs = {REEXPORTS!r}
        result = {{}}
        for theirs, ours in pairs.items():
            a, b = importlib.import_module(theirs), importlib.import_module(ours)
            names = [n for n in getattr(a, "__all__", []) if hasattr(b, n)]
            result[theirs] = {{"names": names,
                               "different": [n for n in names
                                             if getattr(a, n) is not getattr(b, n)]}}
        report(result)
        """
    )
    assert set(out.result) == set(REEXPORTS)
    for module, found in out.result.items():
        assert found["names"], f"{module} re-exports nothing from the runtime"
        assert found["different"] == [], (
            f"{module}: not the runtime's objects: {found['different']}"
        )


def test_the_key_names_are_reexported() -> None:
    out = run_python(
        """
        from sglang.srt.plugins import (
            load_plugins, load_plugins_by_group, PLATFORM_PLUGINS_GROUP, GENERAL_PLUGINS_GROUP,
            load_startup_plugins, STARTUP_PLUGINS_GROUP,
        )
        from sglang.srt.plugins.hook_registry import (
            HookRegistry, HookType, HookSource, plugin_hook, _current_plugin_source,
        )
        from sglang.srt.platforms.interface import SRTPlatform, PlatformCapabilities
        from sglang.srt.platforms.device_mixin import DeviceMixin, PlatformEnum
        import sglang_plugin_runtime.plugins as rp
        import sglang_plugin_runtime.plugins.hook_registry as rh
        import sglang_plugin_runtime.platforms as rpl
        report({
            "load_plugins": load_plugins is rp.load_plugins,
            "load_startup_plugins": load_startup_plugins is rp.load_startup_plugins,
            "HookRegistry": HookRegistry is rh.HookRegistry,
            "contextvar": _current_plugin_source is rh._current_plugin_source,
            "SRTPlatform": SRTPlatform is rpl.SRTPlatform,
            "DeviceMixin": DeviceMixin is rpl.DeviceMixin,
            "PlatformEnum": PlatformEnum is rpl.PlatformEnum,
            "groups": [PLATFORM_PLUGINS_GROUP, GENERAL_PLUGINS_GROUP, STARTUP_PLUGINS_GROUP],
        })
        """
    )
    groups = out.result.pop("groups")
    assert groups == ["sglang.srt.platforms", "sglang.srt.plugins", "sglang.srt.startup_plugins"]
    assert all(out.result.values()), out.result


def test_every_from_import_of_the_plugin_and_platform_modules_in_the_wheel_still_works() -> None:
    wanted = {module: sorted(names) for module, names in imports_in_the_wheel().items()}
    assert (
        "sglang.srt.plugins.hook_registry" in wanted and "sglang.srt.platforms.interface" in wanted
    )
    out = run_python(
        f"""
        import importlib
        missing = []
        for module, names in {wanted!r}.items():
            imported = importlib.import_module(module)
            for name in names:
                if name != "*" and not hasattr(imported, name):
                    missing.append(f"{{module}}.{{name}}")
        report(missing)
        """
    )
    assert out.result == [], f"names SGLang imports that the adopted modules lack: {out.result}"


def test_sglangs_in_tree_platforms_are_runtime_platforms_with_their_own_identity() -> None:
    out = run_python(
        """
        from sglang_plugin_runtime.platforms import SRTPlatform, PlatformEnum
        import sglang.srt.platforms as p
        classes = {c.__name__: c for c in (p.CpuSRTPlatform, p.CudaSRTPlatform, p.NPUSRTPlatform,
                                           p.RocmSRTPlatform, p.XpuSRTPlatform, p.MusaSRTPlatform,
                                           p.MpsSRTPlatform, p.SailSRTPlatform)}
        report({name: [issubclass(c, SRTPlatform), c._enum.name, c.device_name, c.device_type]
                for name, c in classes.items()})
        """
    )
    expected = {
        "CpuSRTPlatform": ["CPU", "cpu", "cpu"],
        "CudaSRTPlatform": ["CUDA", "cuda", "cuda"],
        "NPUSRTPlatform": ["NPU", "npu", "npu"],
        "RocmSRTPlatform": ["ROCM", "rocm", "cuda"],
        "XpuSRTPlatform": ["XPU", "xpu", "xpu"],
        "MusaSRTPlatform": ["MUSA", "musa", "musa"],
        "MpsSRTPlatform": ["MPS", "mps", "mps"],
        "SailSRTPlatform": ["SAIL", "sail", "cuda"],
    }
    assert out.result == {name: [True, *identity] for name, identity in expected.items()}


def test_npu_keeps_sglangs_zbal_distributed_backend_switch() -> None:
    code = """
        from sglang.srt.platforms.npu import NPUSRTPlatform
        report(NPUSRTPlatform().get_torch_distributed_backend_str())
        """
    assert run_python(code).result == "hccl"
    assert run_python(code, env={"SGLANG_ZBAL_LOCAL_MEM_SIZE": "1024"}).result == "zbal"
