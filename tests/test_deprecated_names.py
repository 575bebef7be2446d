"""The public names one lifecycle renamed (issue 29) keep their old spelling until 0.2: each works,
with a ``DeprecationWarning`` naming the new one (CHANGELOG, Deprecated)."""

from __future__ import annotations

import warnings

import pytest

from sglang_plugin_runtime import platforms, plugins
from sglang_plugin_runtime._discovery import PluginEntryPoint
from sglang_plugin_runtime.errors import PlatformNotFoundError, PluginError
from sglang_plugin_runtime.platforms import PluginOutcome, select_platform
from sglang_plugin_runtime.plugins import LoadReport, Status
from sglang_plugin_runtime.plugins.hook_registry import HookReport

OUTCOME = PluginOutcome("acme", Status.FAILED_CALL, "boom", "acme-npu", "1.2.0")


@pytest.mark.parametrize(
    ("obj", "old", "new"),
    [
        (LoadReport("srt", "sglang.srt.plugins"), "records", "outcomes"),
        (HookReport("after", "m.f", "acme", "acme-npu", 0, True), "hook_type", "type"),
        (HookReport("after", "m.f", "acme", "acme-npu", 0, True), "dist", "distribution"),
        (PluginError("x", plugin="acme", distribution="acme-npu"), "dist", "distribution"),
        (PlatformNotFoundError("x", distribution="acme-npu"), "dist", "distribution"),
        (PluginError("x"), "activations", "outcomes"),
        (
            PluginEntryPoint("g", "acme", "m:f", "acme-npu", "1.2.0", "/p"),
            "dist_name",
            "distribution",
        ),
        (
            PluginEntryPoint("g", "acme", "m:f", "acme-npu", "1.2.0", "/p"),
            "dist_version",
            "version",
        ),
        (PluginEntryPoint("g", "acme", "m:f", "acme-npu", "1.2.0", "/p"), "dist_path", "path"),
        (PluginEntryPoint("g", "acme", "m:f", "acme-npu", "1.2.0", "/p"), "dist_label", "label"),
        (OUTCOME, "dist_name", "distribution"),
        (OUTCOME, "dist_version", "version"),
    ],
)
def test_an_old_attribute_name_works_and_warns_naming_the_new_one(
    obj: object, old: str, new: str
) -> None:
    with pytest.warns(DeprecationWarning, match=rf"\.{old} is deprecated .*: use \w+\.{new}$"):
        value = getattr(obj, old)
    assert value == getattr(obj, new)


@pytest.mark.parametrize(
    ("old", "new"), [("dist_name", "distribution"), ("dist_version", "version")]
)
def test_the_platform_selections_old_attribute_names_work_and_warn(
    old: str, new: str, plugin_env: object
) -> None:
    selection = select_platform()
    with pytest.warns(DeprecationWarning, match=rf"PlatformSelection\.{old} is deprecated"):
        assert getattr(selection, old) == getattr(selection, new)


@pytest.mark.parametrize(("module", "old"), [(platforms, "Activation"), (plugins, "PluginRecord")])
def test_an_old_export_works_and_warns_naming_the_new_one(module: object, old: str) -> None:
    with pytest.warns(DeprecationWarning, match=rf"\.{old} is deprecated .*\.PluginOutcome$"):
        assert getattr(module, old) is PluginOutcome


@pytest.mark.parametrize(
    ("old", "rule"),
    [
        ("RULE_EXPLICIT", "EXPLICIT"),
        ("RULE_SINGLE", "SINGLE"),
        ("RULE_FALLBACK", "FALLBACK"),
        ("RULE_OVERRIDE", "OVERRIDE"),
    ],
)
def test_an_old_rule_constant_is_its_enum_member_and_warns(old: str, rule: str) -> None:
    with pytest.warns(DeprecationWarning, match=rf"\.{old} is deprecated .*\.Rule\.{rule}$"):
        assert getattr(platforms, old) is getattr(platforms.Rule, rule)


@pytest.mark.parametrize(
    ("old", "now", "same"),
    [
        ("failed-register", Status.FAILED_CALL, True),
        ("failed", Status.FAILED_IMPORT, True),
        ("failed", Status.FAILED_CALL, True),
        ("failed-register", Status.FAILED_IMPORT, False),
        ("failed", Status.LOADED, False),
    ],
)
def test_a_retired_status_compares_equal_to_what_it_became_and_warns(
    old: str, now: Status, same: bool
) -> None:
    with pytest.warns(DeprecationWarning, match=rf"the status '{old}' is deprecated"):
        assert (now == old) is same
    with pytest.warns(DeprecationWarning):
        assert (old == now) is same  # str's == defers to the subclass's


def test_current_names_do_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert OUTCOME.distribution == "acme-npu" and Status.LOADED == "loaded"
        assert LoadReport("srt", "g").outcomes == []


def test_a_name_that_never_existed_is_still_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="'PluginOutcome' object has no attribute 'nope'"):
        OUTCOME.nope  # type: ignore[attr-defined]  # noqa: B018
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        plugins.Nope  # type: ignore[attr-defined]  # noqa: B018
