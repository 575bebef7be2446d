"""``sglang-plugins doctor`` on the selected platform class's public names: a likely misspelling is
a warning with "did you mean", the vendor's own API and other SGLang versions' names are listed as
not called."""

from __future__ import annotations

from _plugin_site import PluginSite
from test_cli_doctor import cli, messages

PLATFORM = """
from sglang_plugin_runtime.platforms.device_mixin import PlatformEnum
from sglang_plugin_runtime.platforms.interface import SRTPlatform


class AcmePlatform(SRTPlatform):
    _enum = PlatformEnum.OOT
    device_name = "acme"
    device_type = "acme"

    def get_default_attention_backend(self):
        return "torch_native"

    def synchronise(self):
        pass

    @property
    def vendor_name(self):
        return "Acme"

    def support_cuda_graph(self):
        return False


def activate():
    return "acme_platform.AcmePlatform"
"""


def _site_with_platform(site: PluginSite) -> PluginSite:
    site.add(
        "acme-npu",
        entry_points={"sglang.srt.platforms": {"acme": "acme_platform:activate"}},
        modules={"acme_platform.py": PLATFORM},
    )
    return site


def test_misspelling_is_a_warning_and_other_names_are_listed_in_json(site: PluginSite) -> None:
    result = cli(_site_with_platform(site), "doctor", "--json")
    report = result.json
    assert result.code == 0, "SGLang runs such a class: a warning, not an error"
    assert report["platform"]["status"] == "selected"
    overrides = {o["attribute"]: o["kind"] for o in report["platform"]["overrides"]}
    assert overrides == {
        "synchronise": "misspelled",
        "vendor_name": "unknown",
        "support_cuda_graph": "unknown",
    }
    assert (
        "AcmePlatform.synchronise: not a name SGLang calls; did you mean 'synchronize'?"
        in messages(report, "warning")
    )


def test_strict_doctor_fails_on_the_misspelling(site: PluginSite) -> None:
    result = cli(_site_with_platform(site), "doctor", "--strict", "--json")
    assert result.code != 0 and not result.json["healthy"]


def test_human_output_lists_names_sglang_does_not_call(site: PluginSite) -> None:
    out = cli(_site_with_platform(site), "doctor").out
    section = out.split("Platform class: public names SGLang does not call", 1)[1]
    assert "did you mean 'synchronize'?" in section
    assert (
        "vendor_name" in section
        and "the platform's own API; not called by SGLang 0.5.23" in section
    )
    assert "support_cuda_graph" in section and "SRTPlatform before 0.5.23" in section


def test_a_platform_without_extra_names_lists_none(site: PluginSite) -> None:
    site.add_platform("plain-npu", "plain", "plainnpu")
    result = cli(site, "doctor", "--json")
    assert result.json["platform"]["overrides"] == []
    assert "public names SGLang does not call" not in cli(site, "doctor").out
