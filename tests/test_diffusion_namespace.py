"""The diffusion namespace where it follows SGLang 0.5.23's diffusion engine: built-in platform
names are reserved, and an override naming no plugin is a ``ValueError`` (the differences kept on
purpose are in docs/sglang.md)."""

from __future__ import annotations

import json
from typing import Any

from _plugin_site import PluginSite

MM_PLATFORM = """
from sglang_plugin_runtime.platforms.device_mixin import PlatformEnum
from sglang_plugin_runtime.platforms.multimodal import MMPlatform


class WidgetMMPlatform(MMPlatform):
    _enum = PlatformEnum.OOT
    device_name = "widget"
    device_type = "widget"
    dispatch_key = "PrivateUse1"


def activate():
    return "{module}.WidgetMMPlatform"
"""

SELECT = """
import json, sys
from sglang_plugin_runtime.platforms import current_platform_selection
try:
    out = current_platform_selection("multimodal_gen").to_dict()
except Exception as exc:
    out = {"error": type(exc).__name__, "value_error": isinstance(exc, ValueError),
           "runtime_error": isinstance(exc, RuntimeError), "message": str(exc)}
out["imported"] = sorted(m for m in sys.modules if m.startswith("mm_"))
print(json.dumps(out))
"""


def add_mm(site: PluginSite, dist: str, name: str) -> None:
    module = f"mm_{dist.replace('-', '_')}"
    site.add(
        dist,
        entry_points={"sglang.multimodal_gen.platforms": {name: f"{module}:activate"}},
        modules={f"{module}.py": MM_PLATFORM.replace("{module}", module)},
    )


def select(site: PluginSite, **env: str) -> dict[str, Any]:
    result = site.run(SELECT, env, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_a_plugin_named_like_a_builtin_is_refused_before_import(site: PluginSite) -> None:
    add_mm(site, "acme-xpu", "XPU")
    out = select(site)
    assert (out["error"], out["runtime_error"]) == ("PluginError", True)
    assert "cannot be names of the host's built-in platforms" in out["message"]
    assert "'XPU' (acme-xpu" in out["message"]
    assert out["imported"] == []


def test_a_builtin_name_is_refused_also_when_selected_by_the_override(site: PluginSite) -> None:
    add_mm(site, "acme-cuda", "cuda")
    out = select(site, SGLANG_DIFFUSION_PLATFORM_OVERRIDE="cuda")
    assert out["error"] == "PluginError" and out["imported"] == []


def test_other_names_are_selected(site: PluginSite) -> None:
    add_mm(site, "acme-widget", "widget")
    out = select(site)
    assert out["platform_class"] == "mm_acme_widget.WidgetMMPlatform"


def test_override_naming_no_plugin_is_a_value_error_and_a_runtime_error(site: PluginSite) -> None:
    add_mm(site, "acme-widget", "widget")
    out = select(site, SGLANG_DIFFUSION_PLATFORM_OVERRIDE="nosuch")
    assert (out["error"], out["value_error"], out["runtime_error"]) == (
        "PlatformNotFoundError",
        True,
        True,
    )
    assert "'widget' (acme-widget" in out["message"]


def test_srt_keeps_no_reserved_names(site: PluginSite) -> None:
    site.add_platform("acme-cuda", "cuda", "acmecuda")
    out = site.run_json(
        "import json; from sglang_plugin_runtime.platforms import current_platform_selection as s; "
        "print(json.dumps(s().to_dict()))"
    )
    assert out["plugin"] == "cuda"
