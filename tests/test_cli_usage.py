"""The command line itself: exit statuses, usage errors, the console script, the schema command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from _plugin_site import RUNTIME_SRC, PluginSite
from test_cli_doctor import cli


def test_no_command_is_a_usage_error_with_help(site: PluginSite) -> None:
    result = cli(site)
    assert result.code == 2
    assert "list" in result.err and "doctor" in result.err and "explain" in result.err


def test_unknown_option_is_a_usage_error(site: PluginSite) -> None:
    result = cli(site, "doctor", "--no-such-option")
    assert result.code == 2
    assert "--no-such-option" in result.err


def test_unknown_namespace_is_a_usage_error_naming_the_known_ones(site: PluginSite) -> None:
    result = cli(site, "list", "--namespace", "nosuch")
    assert result.code == 2
    assert "'nosuch'" in result.err and "multimodal_gen" in result.err and "srt" in result.err


def test_simulate_backend_without_simulate_is_a_usage_error(site: PluginSite) -> None:
    result = cli(site, "doctor", "--simulate-backend", "torch_npu")
    assert result.code == 2
    assert "--simulate DEVICE_TYPE" in result.err


def test_simulate_with_a_non_identifier_device_type_is_a_usage_error(site: PluginSite) -> None:
    result = cli(site, "doctor", "--simulate", "np-u")
    assert result.code == 2
    assert "lower-case identifier" in result.err


def test_schema_command_prints_a_valid_json_schema(site: PluginSite) -> None:
    result = cli(site, "schema")
    assert result.code == 0
    jsonschema.Draft202012Validator.check_schema(json.loads(result.out))


def test_version_option_prints_the_runtime_version(site: PluginSite) -> None:
    result = cli(site, "--version")
    assert result.code == 0
    assert result.out.startswith("sglang-plugins 0.")


def test_console_script_runs_doctor(site: PluginSite) -> None:
    script = Path(sys.executable).with_name("sglang-plugins")
    assert script.exists(), "reinstall the runtime: pip install -e ."
    site.add_platform("acme-npu", "acme", "acmenpu")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_")}
    env["PYTHONPATH"] = os.pathsep.join([str(site.root), str(RUNTIME_SRC)])
    result = subprocess.run(
        [str(script), "doctor", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=site.root,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["platform"]["plugin"] == "acme"


def test_main_returns_the_exit_status_instead_of_exiting() -> None:
    from sglang_plugin_runtime._cli import main

    assert main(["--no-such-flag"]) == 2


@pytest.mark.fault(
    "cli",
    "message: sglang-plugins --json doctor (an option before the command)",
    "accepted: the options of a command are accepted before it too, the same JSON document (was: "
    "'unrecognized arguments: --json')",
)
def test_options_are_accepted_before_the_command(site: PluginSite) -> None:
    before, after = cli(site, "--json", "doctor"), cli(site, "doctor", "--json")
    assert before.code == after.code == 0, before.err
    assert json.loads(before.out)["command"] == "doctor"
    assert json.loads(before.out).keys() == json.loads(after.out).keys()


@pytest.mark.fault(
    "cli",
    "message: sglang-plugins -n multimodal_gen list (the namespace before the command)",
    "accepted, as after the command (was: \"invalid choice: 'multimodal_gen'\")",
)
def test_the_namespace_is_accepted_before_the_command(site: PluginSite) -> None:
    result = cli(site, "-n", "multimodal_gen", "--json", "list")
    assert result.code == 0, result.err
    assert result.json["namespace"] == "multimodal_gen"


@pytest.mark.fault(
    "cli",
    "message: sglang-plugins schema --json (docs/cli.md: every command takes --json)",
    "accepted: the schema is JSON already (was: 'unrecognized arguments')",
)
def test_schema_takes_json_too(site: PluginSite) -> None:
    result = cli(site, "schema", "--json")
    assert result.code == 0, result.err
    assert result.out == cli(site, "schema").out
