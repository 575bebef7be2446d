"""The platform decision tree, branch by branch, each in a fresh process over fake installed
distributions."""

from __future__ import annotations

import json
from typing import Any

import pytest
from _plugin_site import PluginSite, platform_module

SELECT = """
import json, logging, sys
logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
from sglang_plugin_runtime.platforms import current_platform_selection
try:
    out = current_platform_selection().to_dict()
except Exception as exc:
    out = {
        "error": type(exc).__name__,
        "is_runtime_error": isinstance(exc, RuntimeError),
        "message": str(exc),
        "cause": type(exc.__cause__).__name__ if exc.__cause__ else None,
    }
out["imported"] = sorted(m for m in sys.modules if m.endswith("_platform"))
print(json.dumps(out))
"""


def select(site: PluginSite, **env: str) -> dict[str, Any]:
    result = site.run(SELECT, env)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    out["stderr"] = result.stderr
    return out


# --- SGLANG_PLATFORM unset ------------------------------------------------------------------------


def test_no_plugin_installed_falls_back_to_base_srt_platform(site: PluginSite) -> None:
    out = select(site)
    assert out["platform_class"] == "sglang_plugin_runtime.platforms.interface.SRTPlatform"
    assert out["rule"] == "fallback"
    assert "no platform plugin is installed" in out["reason"]


def test_single_activated_plugin_is_selected_with_provenance(site: PluginSite) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu")
    out = select(site)
    assert out["platform_class"] == "acme_platform.AcmePlatform"
    assert (out["rule"], out["plugin"], out["distribution"], out["version"]) == (
        "single-activated",
        "acme",
        "acme-npu",
        "1.0",
    )
    assert out["activations"][0]["status"] == "activated"
    assert out["activations"][0]["seconds"] >= 0


def test_plugin_returning_none_leads_to_fallback_and_is_recorded_unavailable(
    site: PluginSite,
) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu", "return None")
    out = select(site)
    assert out["rule"] == "fallback"
    assert out["activations"][0]["status"] == "unavailable"
    assert out["problems"] == []


@pytest.mark.fault(
    "selection",
    "two platform plugins activate, SGLANG_PLATFORM unset",
    "AmbiguousPlatformError naming both plugins and distributions and telling to set "
    "SGLANG_PLATFORM",
)
def test_two_activated_plugins_raise_naming_both_and_the_env_var(site: PluginSite) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu")
    site.add_platform("zeta-mlu", "zeta", "zetamlu")
    out = select(site)
    assert out["error"] == "AmbiguousPlatformError" and out["is_runtime_error"]
    assert "'acme' (acme-npu 1.0)" in out["message"] and "'zeta' (zeta-mlu 1.0)" in out["message"]
    assert "SGLANG_PLATFORM" in out["message"]


@pytest.mark.fault(
    "selection",
    "a platform plugin's module fails to import, auto mode",
    "WARNING naming the plugin, its distribution and the exception; skipped; recorded in the "
    "selection's problems",
)
def test_plugin_whose_module_fails_to_import_is_warned_and_skipped(site: PluginSite) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu")
    site.add(
        "broken-dist",
        entry_points={"sglang.srt.platforms": {"broken": "broken_platform:activate"}},
        modules={"broken_platform.py": "raise ImportError('libbroken.so not found')\n"},
    )
    out = select(site)
    assert out["plugin"] == "acme"
    assert (
        "WARNING" in out["stderr"]
        and "'broken'" in out["stderr"]
        and "broken-dist" in out["stderr"]
    )
    assert "libbroken.so not found" in out["stderr"]
    assert len(out["problems"]) == 1 and "libbroken.so" in out["problems"][0]
    assert [a["status"] for a in out["activations"]] == ["activated", "failed-import"]


@pytest.mark.fault(
    "selection",
    "activate() raises, auto mode",
    "WARNING naming the plugin and distribution; skipped; the reason says plugins failed",
)
def test_plugin_whose_activate_raises_is_warned_and_skipped(site: PluginSite) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu", "raise RuntimeError('driver too old')")
    out = select(site)
    assert out["rule"] == "fallback"
    assert "driver too old" in out["stderr"] and "acme-npu" in out["stderr"]
    assert "failed and were skipped" in out["reason"]


@pytest.mark.fault(
    "selection",
    "activate() raises with SGLANG_PLUGINS_STRICT=1",
    "PluginLoadError naming plugin and distribution, chained to the plugin's exception",
)
def test_strict_mode_turns_an_activate_failure_into_an_error(site: PluginSite) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu", "raise RuntimeError('driver too old')")
    out = select(site, SGLANG_PLUGINS_STRICT="1")
    assert out["error"] == "PluginLoadError" and out["cause"] == "RuntimeError"
    assert "'acme'" in out["message"] and "acme-npu" in out["message"]


def test_strict_mode_turns_an_import_failure_into_an_error(site: PluginSite) -> None:
    site.add(
        "broken-dist",
        entry_points={"sglang.srt.platforms": {"broken": "broken_platform:activate"}},
        modules={"broken_platform.py": "import does_not_exist\n"},
    )
    out = select(site, SGLANG_PLUGINS_STRICT="1")
    assert out["error"] == "PluginLoadError" and out["cause"] == "ModuleNotFoundError"


# --- SGLANG_PLATFORM set --------------------------------------------------------------------------


def test_explicit_platform_is_selected_and_no_other_plugin_module_is_imported(
    site: PluginSite,
) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu")
    marker = site.root / "zeta-was-imported"
    site.add(
        "zeta-mlu",
        entry_points={"sglang.srt.platforms": {"zeta": "zeta_platform:activate"}},
        modules={
            "zeta_platform.py": (
                f"open({str(marker)!r}, 'w').close()\ndef activate():\n    return None\n"
            )
        },
    )
    out = select(site, SGLANG_PLATFORM="acme")
    assert (out["rule"], out["plugin"]) == ("explicit", "acme")
    assert out["imported"] == ["acme_platform"]
    assert not marker.exists()


def test_explicit_platform_name_tolerates_surrounding_whitespace(site: PluginSite) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu")
    assert select(site, SGLANG_PLATFORM="  acme ")["plugin"] == "acme"


@pytest.mark.fault(
    "selection",
    "SGLANG_PLATFORM names no installed plugin",
    "PlatformNotFoundError listing the available names and how to install a plugin",
)
def test_unknown_explicit_platform_lists_available_names_and_how_to_install(
    site: PluginSite,
) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu")
    out = select(site, SGLANG_PLATFORM="nvidia")
    assert out["error"] == "PlatformNotFoundError" and out["is_runtime_error"]
    assert "'nvidia'" in out["message"] and "'acme' (acme-npu 1.0)" in out["message"]
    assert "pip install" in out["message"]
    assert out["imported"] == []


def test_unknown_explicit_platform_with_nothing_installed_says_so(site: PluginSite) -> None:
    out = select(site, SGLANG_PLATFORM="acme")
    assert "none installed" in out["message"]


@pytest.mark.fault(
    "selection",
    "the plugin SGLANG_PLATFORM names returns None",
    "PlatformUnavailableError: its hardware is not here (never a silent fallback)",
)
def test_explicit_platform_returning_none_is_a_hardware_unavailable_error(site: PluginSite) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu", "return None")
    out = select(site, SGLANG_PLATFORM="acme")
    assert out["error"] == "PlatformUnavailableError" and out["is_runtime_error"]
    assert "returned None" in out["message"] and "acme-npu" in out["message"]


@pytest.mark.fault(
    "selection",
    "the plugin SGLANG_PLATFORM names raises in activate()",
    "PluginLoadError naming plugin and distribution, chained to the original exception",
)
def test_explicit_platform_whose_activate_raises_propagates_chained_with_plugin_and_dist(
    site: PluginSite,
) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu", "raise OSError('no /dev/acme0')")
    out = select(site, SGLANG_PLATFORM="acme")
    assert out["error"] == "PluginLoadError" and out["cause"] == "OSError"
    assert (
        "'acme'" in out["message"]
        and "acme-npu 1.0" in out["message"]
        and "no /dev/acme0" in out["message"]
    )


def test_explicit_platform_whose_module_fails_to_import_propagates_chained(
    site: PluginSite,
) -> None:
    site.add(
        "acme-npu",
        entry_points={"sglang.srt.platforms": {"acme": "acme_platform:activate"}},
        modules={
            "acme_platform.py": "raise ImportError('libacme.so: cannot open shared object file')\n"
        },
    )
    out = select(site, SGLANG_PLATFORM="acme")
    assert out["error"] == "PluginLoadError" and out["cause"] == "ImportError"
    assert "libacme.so" in out["message"]


# --- what activate() returns ----------------------------------------------------------------------

BAD_RESULTS = {
    "non_str": ("return 42", "returned 42"),
    "empty": ("return '  '", "qualified class name"),
    "no_module": ("return 'AcmePlatform'", "qualified class name"),
    "unresolvable": ("return 'acme_nowhere.mod:Cls'", "cannot be imported"),
    "not_a_subclass": ("return 'collections:OrderedDict'", "not a subclass"),
    "not_a_class": ("return 'os.path:join'", "not a subclass"),
}


@pytest.mark.parametrize("case", sorted(BAD_RESULTS))
def test_bad_activate_result_is_an_error_naming_the_plugin_when_selected(
    site: PluginSite, case: str
) -> None:
    body, expected = BAD_RESULTS[case]
    site.add_platform("acme-npu", "acme", "acmenpu", body)
    out = select(site, SGLANG_PLATFORM="acme")
    assert out["error"] == "InvalidPlatformError" and out["is_runtime_error"]
    assert (
        expected in out["message"] and "'acme'" in out["message"] and "acme-npu" in out["message"]
    )


@pytest.mark.parametrize("case", sorted(BAD_RESULTS))
@pytest.mark.fault(
    "selection",
    "activate() returns something that is not a usable class name, auto mode",
    "InvalidPlatformError naming the plugin (no fallback: the plugin claims its hardware is here)",
)
def test_bad_activate_result_is_an_error_in_auto_mode_too(site: PluginSite, case: str) -> None:
    # The plugin claims its hardware is present; falling back would run on the wrong device.
    body, expected = BAD_RESULTS[case]
    site.add_platform("acme-npu", "acme", "acmenpu", body)
    out = select(site)
    assert out["error"] == "InvalidPlatformError"
    assert expected in out["message"] and "'acme'" in out["message"]


@pytest.mark.fault(
    "selection",
    "the named class does not set _enum = PlatformEnum.OOT",
    "InvalidPlatformError saying what is missing",
)
def test_class_without_oot_enum_is_rejected(site: PluginSite) -> None:
    site.add(
        "acme-npu",
        entry_points={"sglang.srt.platforms": {"acme": "acme_platform:activate"}},
        modules={
            "acme_platform.py": """
            from sglang_plugin_runtime.platforms.interface import SRTPlatform

            class AcmePlatform(SRTPlatform):
                device_name = "acme"
                device_type = "acme"

            def activate():
                return "acme_platform.AcmePlatform"
            """
        },
    )
    out = select(site, SGLANG_PLATFORM="acme")
    assert out["error"] == "InvalidPlatformError"
    assert "PlatformEnum.OOT" in out["message"]


@pytest.mark.fault(
    "selection",
    "the named class has an empty device_type",
    "InvalidPlatformError saying what is missing",
)
def test_class_with_empty_device_type_is_rejected(site: PluginSite) -> None:
    site.add_platform("acme-npu", "acme", "")
    out = select(site, SGLANG_PLATFORM="acme")
    assert out["error"] == "InvalidPlatformError"
    assert "device_type" in out["message"] and "device_name" in out["message"]


def test_class_that_is_no_platform_names_the_base_it_must_subclass(site: PluginSite) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu", "return 'collections:OrderedDict'")
    out = select(site, SGLANG_PLATFORM="acme")
    assert out["error"] == "InvalidPlatformError"
    assert (
        "not a subclass of sglang_plugin_runtime.platforms.interface.SRTPlatform" in out["message"]
    )


def test_colon_form_of_the_class_name_is_accepted(site: PluginSite) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu", "return 'acme_platform:AcmePlatform'")
    assert select(site)["platform_class"] == "acme_platform.AcmePlatform"


# --- distributions --------------------------------------------------------------------------------


@pytest.mark.fault(
    "selection",
    "one platform name offered by two distributions",
    "DuplicatePluginError naming both distributions",
)
def test_same_platform_name_from_two_distributions_is_an_error_naming_both(
    site: PluginSite,
) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu")
    site.add(
        "acme-fork",
        "2.0",
        entry_points={"sglang.srt.platforms": {"acme": "acme_fork_platform:activate"}},
        modules={"acme_fork_platform.py": "def activate():\n    return None\n"},
    )
    for env in ({}, {"SGLANG_PLATFORM": "acme"}):
        out = select(site, **env)
        assert out["error"] == "DuplicatePluginError"
        assert "acme-npu 1.0" in out["message"] and "acme-fork 2.0" in out["message"]


@pytest.mark.fault(
    "selection",
    "a malformed distribution sits beside a good platform plugin",
    "the good plugin is selected; the malformed one is reported",
)
def test_malformed_distribution_is_reported_and_does_not_hide_a_good_plugin(
    site: PluginSite,
) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu")
    bad = site.add(
        "garbled", entry_points_text="[sglang.srt.platforms]\nthis line has no equals sign\n"
    )
    out = select(site)
    assert out["plugin"] == "acme"
    assert str(bad) in out["stderr"] and "malformed" in out["stderr"]


# --- the singleton --------------------------------------------------------------------------------


def test_current_platform_is_an_instance_of_the_selected_class(site: PluginSite) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu")
    out = site.run_json(
        """
        import json
        from sglang_plugin_runtime.platforms import current_platform
        print(json.dumps([type(current_platform).__name__, current_platform.is_out_of_tree()]))
        """
    )
    assert out == ["AcmePlatform", True]


def add_slow_counting_platform(site: PluginSite, seconds: float) -> None:
    """Platform plugin ``acme``: its ``activate()`` takes ``seconds``, counting its calls in
    ``acme_platform.CALLS``."""
    body = f"import time; time.sleep({seconds}); CALLS.append(1); return __name__ + '.{{cls}}'"
    site.add_platform("acme-npu", "acme", "acmenpu", body)
    (site.root / "acme_platform.py").write_text(
        "CALLS = []\n" + (site.root / "acme_platform.py").read_text()
    )


@pytest.mark.fault(
    "processes",
    "many threads read current_platform at once",
    "one selection, one instance, every thread gets it",
)
def test_current_platform_is_resolved_once_across_threads(site: PluginSite) -> None:
    add_slow_counting_platform(site, seconds=0.05)
    out = site.run_json(
        """
        import json, threading
        import sglang_plugin_runtime.platforms as platforms
        seen = []
        threads = [threading.Thread(target=lambda: seen.append(id(platforms.current_platform)))
                   for _ in range(8)]
        [t.start() for t in threads]; [t.join() for t in threads]
        import acme_platform
        print(json.dumps([len(set(seen)), len(acme_platform.CALLS)]))
        """
    )
    assert out == [1, 1]


@pytest.mark.fault(
    "processes",
    "the selection runs in a helper thread, and threads that arrive while activate() runs wait "
    "longer than a poll",
    "they wait for it: one activate(), no false re-entry error (every helper thread starts in "
    "threading's code)",
)
def test_threads_waiting_on_a_selection_made_in_a_helper_thread_get_its_platform(
    site: PluginSite,
) -> None:
    add_slow_counting_platform(site, seconds=0.3)
    out = site.run_json(
        """
        import json, threading, time
        from sglang_plugin_runtime.platforms import get_current_platform
        seen, errors = [], []
        def read():
            try:
                seen.append(id(get_current_platform()))
            except Exception as exc:
                errors.append(type(exc).__name__)
        first = threading.Thread(target=read)
        first.start()
        time.sleep(0.1)  # the first thread is inside activate() now
        later = [threading.Thread(target=read) for _ in range(3)]
        [t.start() for t in later]; [t.join() for t in [first, *later]]
        import acme_platform
        print(json.dumps([len(seen), len(set(seen)), len(acme_platform.CALLS), errors]))
        """
    )
    assert out == [4, 1, 1, []]


def test_override_and_reset_replace_and_forget_the_current_platform(site: PluginSite) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu")
    out = site.run_json(
        """
        import json
        from sglang_plugin_runtime import platforms
        from sglang_plugin_runtime.platforms.interface import SRTPlatform
        first = type(platforms.current_platform).__name__
        platforms.set_current_platform(SRTPlatform)
        overridden = (type(platforms.current_platform).__name__,
                      platforms.current_platform_selection().rule)
        platforms.reset_current_platform()
        print(json.dumps([first, overridden, type(platforms.current_platform).__name__]))
        """
    )
    assert out == ["AcmePlatform", ["SRTPlatform", "override"], "AcmePlatform"]


def test_resolving_the_platform_imports_no_torch(site: PluginSite) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu")
    out = site.run_json(
        """
        import json, sys
        from sglang_plugin_runtime.platforms import current_platform
        current_platform.get_torch_distributed_backend_str()
        print(json.dumps("torch" in sys.modules))
        """
    )
    assert out is False


def test_multimodal_namespace_selects_with_its_own_group_and_env_var(site: PluginSite) -> None:
    site.add(
        "acme-npu",
        entry_points={"sglang.multimodal_gen.platforms": {"acme": "acme_mm:activate"}},
        modules={
            "acme_mm.py": """
            from sglang_plugin_runtime.platforms import MMPlatform, PlatformEnum

            class AcmeMMPlatform(MMPlatform):
                _enum = PlatformEnum.OOT
                device_name = "acme"
                device_type = "acme"

            def activate():
                return "acme_mm:AcmeMMPlatform"
            """
        },
    )
    out = site.run_json(
        """
        import json
        from sglang_plugin_runtime.platforms import current_platform_selection
        mm = current_platform_selection("multimodal_gen")
        srt = current_platform_selection()
        print(json.dumps([mm.class_path, mm.rule, srt.rule]))
        """,
        {"SGLANG_DIFFUSION_PLATFORM_OVERRIDE": "acme"},
    )
    assert out == ["acme_mm.AcmeMMPlatform", "explicit", "fallback"]


def test_a_host_declares_its_own_namespace_with_its_own_group_env_and_fallback(
    site: PluginSite,
) -> None:
    site.add(
        "acme-npu",
        entry_points={"myhost.platforms": {"acme": "acme_host:activate"}},
        modules={
            "acme_host.py": """
            from sglang_plugin_runtime.platforms import PlatformEnum, SRTPlatform

            class HostBase(SRTPlatform):
                pass

            class AcmeHostPlatform(HostBase):
                _enum = PlatformEnum.OOT
                device_name = "acme"
                device_type = "acme"

            def activate():
                return "acme_host:AcmeHostPlatform"
            """
        },
    )
    out = site.run_json(
        """
        import json
        from sglang_plugin_runtime.platforms import (
            PluginNamespace, current_platform_selection, get_current_platform, register_namespace,
        )
        host = register_namespace(PluginNamespace(
            name="myhost", platform_group="myhost.platforms", plugin_group="myhost.plugins",
            base_class="acme_host:HostBase", fallback_class="acme_host:HostBase",
            platform_env="MYHOST_PLATFORM",
        ))
        chosen = current_platform_selection("myhost")
        print(json.dumps([chosen.class_path, chosen.rule, type(get_current_platform(host)).__name__,
                          current_platform_selection().rule]))
        """,
        {"MYHOST_PLATFORM": "acme"},
    )
    assert out == ["acme_host.AcmeHostPlatform", "explicit", "AcmeHostPlatform", "fallback"]


# --- plugin code that misbehaves ------------------------------------------------------------------


def stopped_by_exit(site: PluginSite, status: int, plugin: str, dist: str, **env: str) -> str:
    """Run a selection that a plugin's sys.exit() stops; its one ERROR line, naming the plugin."""
    result = site.run(SELECT, env)
    assert result.returncode == status and result.stdout == "", result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1 and f"{plugin!r}" in errors[0] and f"{dist} 1.0" in errors[0]
    assert "start-up stops" in errors[0]
    return errors[0]


@pytest.mark.fault(
    "selection",
    "activate() calls sys.exit(2), SGLANG_PLATFORM unset (a host process)",
    "start-up stops, as in SGLang: one ERROR naming the plugin and its distribution, then the "
    "SystemExit (exit status 2); no fallback",
)
def test_activate_calling_sys_exit_stops_start_up_in_auto_mode(site: PluginSite) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu", "import sys; sys.exit(2)")
    error = stopped_by_exit(site, 2, "acme", "acme-npu")
    assert "activate() of plugin 'acme'" in error and "sys.exit(2)" in error


@pytest.mark.fault(
    "selection",
    "activate() calls sys.exit(3) for the platform SGLANG_PLATFORM names (a host process)",
    "start-up stops with exit status 3 after one ERROR naming the plugin and its distribution",
)
def test_activate_calling_sys_exit_stops_start_up_when_selected(site: PluginSite) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu", "import sys; sys.exit(3)")
    assert "sys.exit(3)" in stopped_by_exit(site, 3, "acme", "acme-npu", SGLANG_PLATFORM="acme")


@pytest.mark.fault(
    "selection",
    "a platform plugin's module calls sys.exit('no device') while it is imported (a host process)",
    "start-up stops (exit status 1, Python prints 'no device') after one ERROR naming the plugin "
    "and its distribution; the other platform plugins are not activated",
)
def test_platform_module_calling_sys_exit_at_import_stops_start_up(site: PluginSite) -> None:
    site.add(
        "exiting-dist",
        entry_points={"sglang.srt.platforms": {"exiting": "exiting_platform:activate"}},
        modules={"exiting_platform.py": "import sys\nsys.exit('no device')\n"},
    )
    error = stopped_by_exit(site, 1, "exiting", "exiting-dist")
    assert "the import of plugin 'exiting'" in error


@pytest.mark.fault(
    "selection",
    "activate() reads current_platform, SGLANG_PLATFORM unset",
    "one ReentrantSelectionError naming the plugin and saying what to do instead; no nested "
    "selections, no 'falling back' line",
)
def test_activate_reading_current_platform_is_one_clear_error_in_auto_mode(
    site: PluginSite,
) -> None:
    body = (
        "from sglang_plugin_runtime.platforms import current_platform; return __name__ + '.{cls}'"
    )
    site.add_platform("acme-npu", "acme", "acmenpu", body)
    out = select(site)
    assert out["error"] == "ReentrantSelectionError" and out["is_runtime_error"]
    assert (
        "'acme'" in out["message"]
        and "acme-npu" in out["message"]
        and "probe the hardware directly" in out["message"]
    )
    assert len(out["message"]) < 1000
    assert "RecursionError" not in out["stderr"] and "alling back" not in out["stderr"]


@pytest.mark.fault(
    "selection",
    "activate() reads current_platform, its plugin named by SGLANG_PLATFORM",
    "the same single error, under 1,000 characters (it was about 20,000)",
)
def test_activate_reading_current_platform_is_one_short_error_when_selected(
    site: PluginSite,
) -> None:
    body = (
        "from sglang_plugin_runtime.platforms import current_platform; return __name__ + '.{cls}'"
    )
    site.add_platform("acme-npu", "acme", "acmenpu", body)
    out = select(site, SGLANG_PLATFORM="acme")
    assert out["error"] == "ReentrantSelectionError"
    assert out["message"].count("current_platform") <= 3 and len(out["message"]) < 1000


@pytest.mark.fault(
    "selection",
    "activate() reads current_platform inside try/except and returns its class anyway",
    "still the re-entry error: an answer computed from a selection that cannot exist yet is not "
    "used",
)
def test_activate_that_swallows_the_reentry_error_is_still_refused(site: PluginSite) -> None:
    body = (
        "try:\n"
        "                from sglang_plugin_runtime.platforms import current_platform\n"
        "            except Exception:\n"
        "                pass\n"
        "            return __name__ + '.{cls}'"
    )
    site.add_platform("acme-npu", "acme", "acmenpu", body)
    out = select(site)
    assert out["error"] == "ReentrantSelectionError" and "'acme'" in out["message"]


@pytest.mark.fault(
    "selection",
    "the selected platform class's constructor reads current_platform",
    "ReentrantSelectionError naming the constructor of that class",
)
def test_platform_constructor_reading_current_platform_is_a_clear_error(site: PluginSite) -> None:
    site.add(
        "acme-npu",
        entry_points={"sglang.srt.platforms": {"acme": "acme_platform:activate"}},
        modules={
            "acme_platform.py": platform_module(
                "AcmePlatform",
                "acmenpu",
                extra="""
                def _init(self):
                    from sglang_plugin_runtime.platforms import current_platform
                AcmePlatform.__init__ = _init
                """,
            )
        },
    )
    out = select(site)
    assert out["error"] == "ReentrantSelectionError"
    assert "constructor of platform class acme_platform.AcmePlatform" in out["message"]


@pytest.mark.fault(
    "selection",
    "an entry point that names a string, not a function",
    "'the entry point names str ..., not a function' with the fix, instead of \"'str' object is "
    'not callable"',
)
def test_entry_point_naming_a_non_callable_says_what_it_names(site: PluginSite) -> None:
    site.add(
        "acme-npu",
        entry_points={"sglang.srt.platforms": {"acme": "acme_platform:NAME"}},
        modules={"acme_platform.py": "NAME = 'acme_platform.AcmePlatform'\n"},
    )
    out = select(site, SGLANG_PLATFORM="acme")
    assert out["error"] == "InvalidPlatformError"
    assert "names str 'acme_platform.AcmePlatform', not a function" in out["message"]
    assert "'acme_platform:activate'" in out["message"] and "not callable" not in out["message"]


@pytest.mark.fault(
    "selection",
    "SGLANG_PLATFORM unset, and another distribution's platform entry point names a string, not a "
    "function (other = other_plat:PLATFORM_CLASS)",
    "that plugin is failed-import and skipped with a WARNING, the working plugin is selected (was: "
    "InvalidPlatformError out of the whole selection)",
)
def test_an_unrelated_entry_point_naming_a_non_function_is_skipped_in_auto_mode(
    site: PluginSite,
) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu")
    site.add(
        "other-npu",
        entry_points={"sglang.srt.platforms": {"other": "other_plat:PLATFORM_CLASS"}},
        modules={"other_plat.py": "PLATFORM_CLASS = 'other_plat.OtherPlatform'\n"},
    )
    out = select(site)
    assert (out["platform_class"], out["rule"]) == (
        "acme_platform.AcmePlatform",
        "single-activated",
    )
    other = next(a for a in out["activations"] if a["plugin"] == "other")
    assert other["status"] == "failed-import" and "not a function" in other["reason"]
    assert "Plugin 'other' (distribution other-npu 1.0) failed" in out["stderr"]


@pytest.mark.parametrize("env", [{}, {"SGLANG_PLATFORM": "acme"}])
@pytest.mark.fault(
    "selection",
    "message: activate() written as `async def` (its body never runs)",
    "InvalidPlatformError naming the plugin and saying to make it a plain function (def "
    "activate(): ...); no 'coroutine was never awaited' warning (was: only 'returned <coroutine "
    "...>')",
)
def test_an_async_activate_is_told_to_be_a_plain_function(
    site: PluginSite, env: dict[str, str]
) -> None:
    site.add(
        "acme-npu",
        entry_points={"sglang.srt.platforms": {"acme": "acme_platform:activate"}},
        modules={"acme_platform.py": "async def activate():\n    return 'acme_platform.X'\n"},
    )
    result = site.run("import warnings\nwarnings.simplefilter('error')\n" + SELECT, env)
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["error"] == "InvalidPlatformError" and "'acme'" in out["message"]
    assert "is an async function" in out["message"]
    assert "make it a plain function (def activate(): ...)" in out["message"]
    assert "never awaited" not in result.stderr


@pytest.mark.parametrize("asked", ["acme-npu", "ACME_NPU", "Acme.Npu"])
@pytest.mark.fault(
    "selection",
    "SGLANG_PLATFORM spelled with other case or separators (acme-npu, ACME_NPU)",
    "PlatformNotFoundError saying: did you mean SGLANG_PLATFORM='acme_npu'?",
)
def test_platform_name_with_other_case_or_separators_suggests_the_installed_name(
    site: PluginSite, asked: str
) -> None:
    site.add_platform("acme-npu-platform", "acme_npu", "acmenpu")
    out = select(site, SGLANG_PLATFORM=asked)
    assert out["error"] == "PlatformNotFoundError"
    assert "Did you mean SGLANG_PLATFORM='acme_npu'?" in out["message"]


@pytest.mark.fault(
    "selection",
    "SGLANG_PLATFORM names an installed general plugin (group sglang.srt.plugins)",
    "PlatformNotFoundError saying it is installed, naming its distribution, as a general plugin, "
    "not a platform plugin (it said: install the plugin's package)",
)
def test_platform_name_of_a_general_plugin_says_it_is_a_general_plugin(site: PluginSite) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu")
    site.add("timer-dist", entry_points={"sglang.srt.plugins": {"timer": "timer_mod:register"}})
    out = select(site, SGLANG_PLATFORM="timer")
    assert out["error"] == "PlatformNotFoundError" and out["imported"] == []
    assert "'timer' is installed (timer-dist 1.0) as a general plugin" in out["message"]
    assert "group 'sglang.srt.plugins'), not a platform plugin" in out["message"]
    assert "Install the plugin's package" not in out["message"]


@pytest.mark.fault(
    "selection",
    "SGLANG_PLATFORM=x while a distribution's METADATA cannot be decoded (Latin-1)",
    "PlatformNotFoundError naming the skipped distribution's folder and why it was skipped (it "
    "said 'none installed' and named nothing)",
)
def test_unknown_platform_names_the_distribution_discovery_skipped(site: PluginSite) -> None:
    bad = site.add("vendor-npu", entry_points={"sglang.srt.platforms": {"x": "x_mod:activate"}})
    (bad / "METADATA").write_bytes(
        b"Metadata-Version: 2.1\nName: vendor-npu\nVersion: 1.0\nAuthor: Jos\xe9\n\n"
    )
    out = select(site, SGLANG_PLATFORM="x")
    assert out["error"] == "PlatformNotFoundError"
    assert "available: none installed" in out["message"] and str(bad) in out["message"]
    assert "Skipped by discovery" in out["message"] and "UnicodeDecodeError" in out["message"]


@pytest.mark.fault(
    "selection",
    "SGLANG_PLATFORM names the distribution instead of its entry point",
    "PlatformNotFoundError suggesting the distribution's platform entry point",
)
def test_platform_name_given_as_the_distribution_suggests_its_entry_point(site: PluginSite) -> None:
    site.add_platform("vendor-accel-plugin", "vaccel", "vaccel")
    out = select(site, SGLANG_PLATFORM="vendor_accel_plugin")
    assert "Did you mean SGLANG_PLATFORM='vaccel'?" in out["message"]
    assert "entry-point names, not distribution names" in out["message"]


@pytest.mark.fault(
    "selection",
    "activate() raises KeyboardInterrupt itself, in a host process",
    "it propagates as KeyboardInterrupt (a library cannot tell it from Ctrl-C), noting which "
    "plugin was running",
)
def test_keyboard_interrupt_in_activate_propagates_with_the_plugin_named(site: PluginSite) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu", "raise KeyboardInterrupt")
    code = """
        import json, sys
        from sglang_plugin_runtime.platforms import current_platform_selection
        try:
            current_platform_selection()
        except KeyboardInterrupt as exc:
            print(json.dumps({"notes": getattr(exc, "__notes__", [])}))
    """
    out = site.run_json(code)
    assert any("activate() of plugin 'acme'" in note for note in out["notes"]), out


@pytest.mark.fault(
    "selection",
    "activate() names 'vendor_pkg.platform.VendorPlatform' and that module fails to import (a "
    "missing dependency)",
    "InvalidPlatformError carrying the real import error (No module named 'vendor_runtime'), not "
    "'module has no attribute platform'",
)
def test_class_in_a_module_with_a_missing_dependency_reports_the_import_error(
    site: PluginSite,
) -> None:
    site.add(
        "vendor-npu",
        entry_points={"sglang.srt.platforms": {"vendor": "vendor_pkg:activate"}},
        modules={
            "vendor_pkg/__init__.py": (
                "def activate():\n    return 'vendor_pkg.platform.VendorPlatform'\n"
            ),
            "vendor_pkg/platform.py": "import vendor_runtime\n",
        },
    )
    out = select(site, SGLANG_PLATFORM="vendor")
    assert out["error"] == "InvalidPlatformError"
    assert (
        "No module named 'vendor_runtime'" in out["message"]
        and "has no attribute" not in out["message"]
    )


# --- a host's own fallback (SGLang's in-tree chain) -----------------------------------------------

HOST_FALLBACK = """
import json
from sglang_plugin_runtime.platforms import (
    SRTPlatform, current_platform_selection, set_fallback_platform)

calls = []

class HostCpuPlatform(SRTPlatform):
    device_name = "cpu"

def detect():
    calls.append("detect")
    return HostCpuPlatform

set_fallback_platform(detect)
chosen = current_platform_selection()
print(json.dumps([chosen.platform_class.__name__, chosen.rule, calls]))
"""


def test_a_host_fallback_is_called_only_when_no_plugin_activates(site: PluginSite) -> None:
    assert site.run_json(HOST_FALLBACK) == ["HostCpuPlatform", "fallback", ["detect"]]


def test_an_activated_plugin_wins_over_the_host_fallback_which_is_never_called(
    site: PluginSite,
) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu")
    assert site.run_json(HOST_FALLBACK) == ["AcmePlatform", "single-activated", []]


def test_set_fallback_platform_after_a_fallback_selection_warns_and_applies_after_reset(
    site: PluginSite,
) -> None:
    result = site.run(
        """
        import json
        from sglang_plugin_runtime.platforms import (
            SRTPlatform, current_platform_selection, reset_current_platform, set_fallback_platform,
        )
        class HostPlatform(SRTPlatform):
            pass
        before = current_platform_selection().platform_class.__name__
        set_fallback_platform(HostPlatform)
        kept = current_platform_selection().platform_class.__name__
        reset_current_platform()
        after = current_platform_selection().platform_class.__name__
        set_fallback_platform(None)
        reset_current_platform()
        print(json.dumps([before, kept, after,
                          current_platform_selection().platform_class.__name__]))
        """,
        check=True,
    )
    assert json.loads(result.stdout.strip().splitlines()[-1]) == [
        "SRTPlatform",
        "SRTPlatform",
        "HostPlatform",
        "SRTPlatform",
    ]
    assert "came after the platform was resolved to the fallback" in result.stderr


def test_a_namespace_that_names_its_own_fallback_keeps_it_over_the_host_fallback(
    site: PluginSite,
) -> None:
    out = site.run_json(
        """
        import json
        from sglang_plugin_runtime.platforms import (
            PluginNamespace, SRTPlatform, select_platform, set_fallback_platform)
        class Own(SRTPlatform):
            pass
        class Host(SRTPlatform):
            pass
        ns = PluginNamespace(name="own", platform_group="sglang.srt.platforms",
                             plugin_group="sglang.srt.plugins",
                             base_class="sglang_plugin_runtime.platforms.interface:SRTPlatform",
                             fallback_class=lambda: Own)
        set_fallback_platform(Host, ns)
        print(json.dumps(select_platform(ns).platform_class.__name__))
        """
    )
    assert out == "Own"


HOST_NAMESPACE = """
import json, sys
from sglang_plugin_runtime.platforms import (
    PluginNamespace, current_platform_selection, register_namespace)
ns = register_namespace(PluginNamespace(
    name="hosted", platform_group="hosted.platforms", plugin_group="hosted.plugins",
    base_class="sglang_plugin_runtime.platforms.interface:SRTPlatform",
    platform_env="HOSTED_PLATFORM", host_base_class="fakehost.platforms.interface:HostPlatform",
    host_distribution="fakehost",
))
selection = current_platform_selection(ns)
host_modules = sorted(m for m in sys.modules if m.startswith("fakehost"))
print(json.dumps({"class": selection.class_path, "host_modules": host_modules}))
"""

HOST_PACKAGE = {
    "fakehost/__init__.py": "",
    "fakehost/platforms/__init__.py": "",
    "fakehost/platforms/interface.py": (
        "from sglang_plugin_runtime.platforms.device_mixin import PlatformEnum\nclass "
        "HostPlatform:\n    _enum = None\n"
    ),
}


def test_a_plugin_built_on_the_installed_hosts_own_base_is_selected(site: PluginSite) -> None:
    site.add("fakehost", modules=HOST_PACKAGE)
    site.add(
        "vendor-npu",
        entry_points={"hosted.platforms": {"vendor": "vendor_platform:activate"}},
        modules={
            "vendor_platform.py": (
                "from fakehost.platforms.interface import HostPlatform\n"
                "from sglang_plugin_runtime.platforms.device_mixin import PlatformEnum\n"
                "class VendorPlatform(HostPlatform):\n"
                "    _enum = PlatformEnum.OOT\n"
                "    device_name = device_type = 'vendor'\n"
                "def activate():\n"
                "    return 'vendor_platform.VendorPlatform'\n"
            )
        },
    )
    assert site.run_json(HOST_NAMESPACE)["class"] == "vendor_platform.VendorPlatform"


@pytest.mark.fault(
    "selection",
    "the installed host's platform module fails while selection imports it first (released SGLang "
    "refuses, at import, a plugin built on this runtime's classes)",
    "selection goes on without it: what the failed import added to sys.modules is removed, the "
    "plugin is selected",
)
def test_a_host_that_fails_to_import_is_rolled_back_and_selection_goes_on(site: PluginSite) -> None:
    broken_host = dict(HOST_PACKAGE)
    broken_host["fakehost/platforms/interface.py"] = (
        "import fakehost.platforms.helpers\nraise TypeError('Expected an SRTPlatform subclass')\n"
    )
    broken_host["fakehost/platforms/helpers.py"] = ""
    site.add("fakehost", modules=broken_host)
    site.add(
        "vendor-npu",
        entry_points={"hosted.platforms": {"vendor": "vendor_platform:activate"}},
        modules={"vendor_platform.py": platform_module("VendorPlatform", "vendor")},
    )
    out = site.run_json(HOST_NAMESPACE)
    assert out == {"class": "vendor_platform.VendorPlatform", "host_modules": []}


@pytest.mark.fault(
    "selection",
    "the installed host's platform module imports torch, then fails while selection imports it "
    "first; the plugin's activate() imports torch",
    "only the host package's modules are removed: torch stays imported once, the plugin activates "
    "and is selected (was: torch removed too, its re-import raised 'SystemError: bad call flags' "
    "and the fallback was selected)",
)
def test_a_host_that_fails_to_import_leaves_the_modules_it_imported_from_elsewhere(
    site: PluginSite,
) -> None:
    pytest.importorskip("torch", reason="the re-import defect needs torch's C extension")
    broken_host = dict(HOST_PACKAGE)
    broken_host["fakehost/platforms/interface.py"] = (
        "import torch\nraise TypeError('Expected an SRTPlatform subclass')\n"
    )
    site.add("fakehost", modules=broken_host)
    activate = "import torch; return __name__ + '.{cls}' if torch.zeros(1).numel() else None"
    site.add(
        "vendor-npu",
        entry_points={"hosted.platforms": {"vendor": "vendor_platform:activate"}},
        modules={"vendor_platform.py": platform_module("VendorPlatform", "vendor", activate)},
    )
    out = site.run_json(HOST_NAMESPACE)
    assert out == {"class": "vendor_platform.VendorPlatform", "host_modules": []}


# --- plugin code that misbehaves while its platform class is checked or built ---------------------

VALIDATED_MODULE_EXITS = {
    "vendor_pkg/__init__.py": "def activate():\n    return 'vendor_pkg.platform.VendorPlatform'\n",
    "vendor_pkg/platform.py": "import sys\nsys.exit(0)\n",
}


@pytest.mark.fault(
    "selection",
    "activate() names 'vendor_pkg.platform.VendorPlatform' and that module calls sys.exit(5) while "
    "it is imported (a host process)",
    "start-up stops with exit status 5 after one ERROR naming the plugin and its distribution, as "
    "when its activate() itself exits",
)
def test_class_module_calling_sys_exit_stops_start_up(site: PluginSite) -> None:
    modules = dict(
        VALIDATED_MODULE_EXITS, **{"vendor_pkg/platform.py": "import sys\nsys.exit(5)\n"}
    )
    site.add(
        "vendor-npu",
        entry_points={"sglang.srt.platforms": {"vendor": "vendor_pkg:activate"}},
        modules=modules,
    )
    assert "its platform class of plugin 'vendor'" in stopped_by_exit(
        site, 5, "vendor", "vendor-npu"
    )


@pytest.mark.parametrize("body", ["import sys\nsys.exit(0)\n", "raise KeyboardInterrupt\n"])
@pytest.mark.fault(
    "cli",
    "under doctor --json, the module of the class activate() names calls sys.exit(0) or raises "
    "KeyboardInterrupt itself",
    "that plugin's failure in valid JSON, non-zero exit (not a silent exit 0, not Ctrl-C's 130)",
)
def test_doctor_reports_a_class_module_that_exits_or_interrupts_as_the_plugins_failure(
    site: PluginSite, body: str
) -> None:
    modules = dict(VALIDATED_MODULE_EXITS, **{"vendor_pkg/platform.py": body})
    site.add(
        "vendor-npu",
        entry_points={"sglang.srt.platforms": {"vendor": "vendor_pkg:activate"}},
        modules=modules,
    )
    result = site.run(
        "import sys\nfrom sglang_plugin_runtime._cli import main\nsys.exit(main(['doctor', "
        "'--json']))"
    )
    report = json.loads(result.stdout)
    assert result.returncode not in (0, 130), result.stderr
    assert report["platform"]["plugin"] == "vendor" or "'vendor'" in json.dumps(report["problems"])


@pytest.mark.fault(
    "selection",
    "activate() reads current_platform from a helper thread and waits for it (a join, a future's "
    "result)",
    "no hang: the helper thread gets a ReentrantSelectionError and the selection fails naming the "
    "plugin",
)
@pytest.mark.parametrize(
    "wait",
    [
        "helper = threading.Thread(target=peek); helper.start(); helper.join(10); assert not "
        "helper.is_alive()",
        "concurrent.futures.ThreadPoolExecutor(1).submit(peek).result(10)",
    ],
    ids=["join", "future"],
)
def test_activate_reading_current_platform_from_a_helper_thread_is_refused_not_deadlocked(
    site: PluginSite, wait: str
) -> None:
    site.add(
        "acme-npu",
        entry_points={"sglang.srt.platforms": {"acme": "acme_platform:activate"}},
        modules={
            "acme_platform.py": platform_module("AcmePlatform", "acmenpu", "return None")
            + "\n".join(
                [
                    "import concurrent.futures, threading",
                    "def activate():",
                    "    from sglang_plugin_runtime.platforms import get_current_platform",
                    "    seen = []",
                    "    def peek():",
                    "        try:",
                    "            get_current_platform()",
                    "        except Exception as exc:",
                    "            seen.append(type(exc).__name__)",
                    f"    {wait}",
                    "    return __name__ + '.AcmePlatform'",
                ]
            )
        },
    )
    out = select(site)
    assert out["error"] == "ReentrantSelectionError" and "'acme'" in out["message"]


@pytest.mark.fault(
    "selection",
    "the platform class's metaclass raises when device_name is read (a property on the metaclass)",
    "InvalidPlatformError naming the plugin and the exception, not a raw traceback",
)
def test_platform_class_whose_metaclass_raises_is_attributed_to_its_plugin(
    site: PluginSite,
) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu", "return __name__ + '.Broken'")
    (site.root / "acme_platform.py").write_text(
        (site.root / "acme_platform.py").read_text()
        + "\nfrom sglang_plugin_runtime.platforms.interface import SRTPlatform\n"
        "class Meta(type(SRTPlatform)):\n"
        "    @property\n"
        "    def device_name(cls):\n"
        "        raise LookupError('no device table')\n"
        "class Broken(SRTPlatform, metaclass=Meta):\n"
        "    _enum = PlatformEnum.OOT\n"
        "    device_type = 'acmenpu'\n"
    )
    out = select(site)
    assert out["error"] == "InvalidPlatformError"
    assert "'acme'" in out["message"] and "LookupError: no device table" in out["message"]


HOOKING_PLATFORM = """
from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookType
def shout(result, *args, **kwargs):
    return result.upper()
HookRegistry.register("target_mod.greet", shout, HookType.AFTER)
"""

HOOKS_AFTER_LOAD = """
import json
import target_mod
from sglang_plugin_runtime.platforms import current_platform_selection
from sglang_plugin_runtime.plugins import load_plugins
from sglang_plugin_runtime.plugins.hook_registry import HookRegistry
selection = current_platform_selection()
load_plugins()
print(json.dumps({"greet": target_mod.greet(),
                  "activations": [a.status for a in selection.activations],
                  "hooks": [[h.plugin, h.distribution]
                            for t in HookRegistry.describe() for h in t.hooks]}))
"""


@pytest.mark.fault(
    "selection",
    "a platform plugin's module registers a hook when imported, then its activate() raises (plugin "
    "skipped)",
    "the failed plugin's hook is discarded; hooks a platform plugin's module registers are "
    "attributed to it",
)
def test_hooks_registered_by_a_failed_platform_plugin_are_discarded(site: PluginSite) -> None:
    site.add("target", modules={"target_mod.py": "def greet():\n    return 'hello'\n"})
    site.add_platform("acme-npu", "acme", "acmenpu", "raise RuntimeError('no device')")
    site.add_platform("zeta-npu", "zeta", "zetanpu")
    for name in ("acme", "zeta"):
        module = site.root / f"{name}_platform.py"
        module.write_text(module.read_text() + HOOKING_PLATFORM)
    out = site.run_json(HOOKS_AFTER_LOAD)
    assert out["activations"] == ["failed-call", "activated"]
    assert out["greet"] == "HELLO" and out["hooks"] == [["zeta", "zeta-npu"]]


@pytest.mark.fault(
    "selection",
    "a platform plugin that is not selected (its activate() returned None) registered a hook when "
    "imported",
    "the hook is discarded, never applied: an unselected platform patches nothing (SGLang 0.5.23 "
    "applies it; its diffusion loader does not)",
)
def test_hooks_of_a_platform_plugin_that_is_not_selected_are_discarded(site: PluginSite) -> None:
    site.add("target", modules={"target_mod.py": "def greet():\n    return 'hello'\n"})
    site.add_platform("zeta-npu", "zeta", "zetanpu", "return None")
    module = site.root / "zeta_platform.py"
    module.write_text(module.read_text() + HOOKING_PLATFORM)
    out = site.run_json(HOOKS_AFTER_LOAD)
    assert out["activations"] == ["unavailable"]
    assert out["greet"] == "hello" and out["hooks"] == []


@pytest.mark.fault(
    "selection",
    "SGLANG_PLATFORM set to a 10,000-character value",
    "PlatformNotFoundError that shows its start and its length, not the whole value",
)
def test_a_very_long_platform_name_is_cut_in_the_error(site: PluginSite) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu")
    out = select(site, SGLANG_PLATFORM="x" * 10_000)
    assert out["error"] == "PlatformNotFoundError"
    assert "(10000 characters)" in out["message"] and len(out["message"]) < 1_000


@pytest.mark.fault(
    "selection",
    "a platform entry point listed twice in one distribution's entry_points.txt",
    "DuplicatePluginError naming that file and the repeated line, not 'offered by twice-dev and "
    "twice-dev'",
)
def test_an_entry_point_listed_twice_in_one_file_names_the_file_and_the_line(
    site: PluginSite,
) -> None:
    dist = site.add(
        "twice-dev",
        entry_points_text=(
            "[sglang.srt.platforms]\ntwice = twice_mod:activate\ntwice = twice_mod:activate\n"
        ),
    )
    out = select(site)
    assert out["error"] == "DuplicatePluginError"
    assert (
        str(dist / "entry_points.txt") in out["message"]
        and "'twice = twice_mod:activate'" in out["message"]
    )
    assert "twice-dev 1.0 and twice-dev 1.0" not in out["message"]


@pytest.mark.fault(
    "selection",
    "a different PluginNamespace object that reuses a registered name (srt) is passed to the API",
    "ValueError saying a different namespace of that name is registered; it never shares the "
    "registered one's platform or load (was: given SRT's state)",
)
def test_a_namespace_object_that_borrows_a_registered_name_is_refused(site: PluginSite) -> None:
    out = site.run_json(
        """
        import json
        from sglang_plugin_runtime.platforms import PluginNamespace, get_current_platform
        from sglang_plugin_runtime.plugins import load_plugins
        impostor = PluginNamespace(name="srt", platform_group="x.platforms",
                                   plugin_group="x.plugins",
                                   base_class="sglang_plugin_runtime.platforms.interface:SRTPlatform")
        seen = []
        for call in (get_current_platform, load_plugins):
            try:
                call(impostor)
            except ValueError as exc:
                seen.append(str(exc))
        print(json.dumps(seen))
        """
    )
    assert len(out) == 2 and all(
        "a different plugin namespace named 'srt'" in message for message in out
    )
