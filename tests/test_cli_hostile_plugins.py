"""``sglang-plugins`` against plugin code that tries (or happens) to change what the CLI says or how
it ends, and against arguments and output channels a start script may hand it. Each test runs the
real CLI in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from _plugin_site import RUNTIME_SRC, PluginSite
from test_cli_doctor import PLUGIN_VARS, add_general, cli


def run_cli(
    site: PluginSite, *args: str, timeout: float = 60
) -> subprocess.CompletedProcess[bytes]:
    """The CLI as its own process (``python -m``), raw bytes out, bounded in time."""
    env = {k: v for k, v in os.environ.items() if k not in PLUGIN_VARS}
    env["PYTHONPATH"] = os.pathsep.join([str(site.root), str(RUNTIME_SRC)])
    command = [sys.executable, "-m", "sglang_plugin_runtime", *args]
    return subprocess.run(command, capture_output=True, env=env, cwd=site.root, timeout=timeout)


# --- plugin code cannot change how the CLI ends ---------------------------------------------------


@pytest.mark.fault(
    "cli",
    "a plugin's register() leaves a non-daemon thread running",
    "doctor prints its report and exits with its status at once (it printed the report and never "
    "exited)",
)
def test_doctor_exits_although_a_plugin_left_a_thread_running(site: PluginSite) -> None:
    body = "import threading, time\nthreading.Thread(target=time.sleep, args=(3600,)).start()"
    add_general(site, "thready-dist", "thready", body=body)
    started = time.monotonic()
    result = run_cli(site, "doctor", "--json", timeout=60)
    assert time.monotonic() - started < 30
    assert result.returncode == 0 and json.loads(result.stdout)["exit_status"] == 0


@pytest.mark.fault(
    "cli",
    "a plugin registers an atexit handler that calls os._exit(0), and doctor finds a problem",
    "the exit status is the report's (1): plugin code cannot change it (it exited 0 while the JSON "
    "said 1)",
)
def test_a_plugins_atexit_handler_cannot_change_doctors_exit_status(site: PluginSite) -> None:
    add_general(
        site, "exiting-dist", "exiting", body="import atexit, os\natexit.register(os._exit, 0)"
    )
    add_general(site, "broken-dist", "broken", body="raise RuntimeError('broken on purpose')")
    result = run_cli(site, "doctor", "--json")
    assert json.loads(result.stdout)["exit_status"] == 1
    assert result.returncode == 1


@pytest.mark.fault(
    "cli",
    "a plugin's error message carries ESC and BEL (terminal control characters)",
    "the text report shows them escaped (\\x1b, \\x07); the JSON keeps the message as it is (they "
    "reached the terminal raw: a package could clear or hide the report)",
)
def test_control_characters_from_a_plugin_are_escaped_in_the_text_report(site: PluginSite) -> None:
    add_general(site, "sneaky-dist", "sneaky", body="raise RuntimeError('\\x1b[2J\\x07hidden')")
    text = run_cli(site, "doctor").stdout.decode()
    assert "\x1b" not in text and "\x07" not in text
    assert "\\x1b[2J\\x07hidden" in text
    report = json.loads(run_cli(site, "doctor", "--json").stdout)
    assert any("\x1b[2J\x07hidden" in p["message"] for p in report["problems"])


# --- where the output goes ------------------------------------------------------------------------


@pytest.mark.fault(
    "cli",
    "the reader of sglang-plugins' output goes away (sglang-plugins list | head -1, a closed "
    "stdout)",
    "a quiet exit with status 141 (128 + SIGPIPE), as any Unix tool; no 'bug in sglang-plugins' "
    "message (it exited 3 calling itself buggy)",
)
def test_a_closed_pipe_ends_the_cli_quietly(site: PluginSite) -> None:
    for index in range(40):
        add_general(site, f"dist-{index}", f"plugin_{index}")
    env = {k: v for k, v in os.environ.items() if k not in PLUGIN_VARS}
    env["PYTHONPATH"] = os.pathsep.join([str(site.root), str(RUNTIME_SRC)])
    command = [sys.executable, "-m", "sglang_plugin_runtime", "list"]
    cli_process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert cli_process.stdout is not None and cli_process.stderr is not None
    cli_process.stdout.close()  # the reader is gone before anything was written
    try:
        status = cli_process.wait(timeout=60)
        error = cli_process.stderr.read().decode()
    finally:
        cli_process.kill()
        cli_process.stderr.close()
    assert status == 141, error
    assert "bug" not in error and "Traceback" not in error


@pytest.mark.parametrize(("command", "status"), [("list", 0), ("doctor", 1), ("schema", 0)])
@pytest.mark.fault(
    "cli",
    "regression: sglang-plugins started with its standard output closed (sglang-plugins list >&-)",
    "the command runs, its report goes nowhere and its exit status is the report's (doctor still "
    "gates); no 'bug in sglang-plugins' (was: \"'NoneType' object has no attribute 'flush'\", exit "
    "1)",
)
def test_a_cli_started_with_stdout_closed_runs_and_keeps_its_exit_status(
    site: PluginSite, command: str, status: int
) -> None:
    add_general(site, "broken-dist", "broken", body="raise RuntimeError('broken')")
    env = {k: v for k, v in os.environ.items() if k not in PLUGIN_VARS}
    env["PYTHONPATH"] = os.pathsep.join([str(site.root), str(RUNTIME_SRC)])
    result = subprocess.run(
        [sys.executable, "-m", "sglang_plugin_runtime", command],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=lambda: os.close(1),
        timeout=60,
    )
    assert result.returncode == status, result.stderr
    assert "bug" not in result.stderr and "Traceback" not in result.stderr


# --- arguments ------------------------------------------------------------------------------------


@pytest.mark.fault(
    "cli",
    "doctor --simulate npu --simulate-backend vendor_rt.torch_ext (a dotted backend module, as the "
    "template suggests)",
    "accepted: the simulated backend is importable under its dotted name (it was refused, exit 2, "
    "as 'installed')",
)
def test_a_dotted_simulated_backend_module_is_accepted(site: PluginSite) -> None:
    pytest.importorskip("torch")
    backend = "__import__('importlib').import_module('vendor_rt.torch_ext')"
    activate = f"return __name__ + '.{{cls}}' if {backend}.npu.device_count() == 1 else None"
    site.add_platform("acme-npu", "acme", "npu", activate)
    result = cli(
        site, "doctor", "--json", "--simulate", "npu", "--simulate-backend", "vendor_rt.torch_ext"
    )
    report = result.json
    assert result.code == 0, result.err
    assert report["simulation"]["backend_module"] == "vendor_rt.torch_ext"
    assert report["platform"]["plugin"] == "acme"


def test_a_dotted_simulated_backend_under_an_installed_package_is_refused(site: PluginSite) -> None:
    pytest.importorskip("torch")
    result = cli(
        site, "doctor", "--simulate", "npu", "--simulate-backend", "sglang_plugin_runtime.fake"
    )
    assert result.code == 2
    assert "--simulate-backend sglang_plugin_runtime.fake" in result.err
    assert "'sglang_plugin_runtime' is installed here" in result.err


@pytest.mark.fault(
    "cli",
    "doctor --simulate __class__ (or another attribute torch has that is no device type, such as "
    "nn)",
    "exit 2 saying what is wrong with the name (it said '__class__ is one of torch's own device "
    "types')",
)
@pytest.mark.parametrize(
    ("device", "said"),
    [("__class__", "a device type is a lower-case identifier"), ("nn", "torch.nn already exists")],
)
def test_simulate_names_that_are_no_device_type_get_their_own_reason(
    site: PluginSite, device: str, said: str
) -> None:
    pytest.importorskip("torch")
    result = cli(site, "doctor", "--simulate", device)
    assert result.code == 2 and said in result.err
    assert "own device types" not in result.err


@pytest.mark.fault(
    "cli",
    "doctor --simulate-count 0 without --simulate",
    "exit 2: --simulate-count needs --simulate (it was accepted silently)",
)
def test_simulate_count_without_simulate_is_a_usage_error(site: PluginSite) -> None:
    result = cli(site, "doctor", "--simulate-count", "0")
    assert result.code == 2 and "--simulate-count needs --simulate" in result.err


@pytest.mark.fault(
    "cli",
    "fingerprint --compare /dev/zero (or a FIFO, or any endless or huge file)",
    "exit 2 at once: not a regular file / larger than a fingerprint can be (it read forever)",
)
def test_compare_with_an_endless_file_is_refused_at_once(site: PluginSite) -> None:
    started = time.monotonic()
    result = run_cli(site, "fingerprint", "--compare", "/dev/zero", timeout=30)
    assert time.monotonic() - started < 20
    assert result.returncode == 2 and b"not a regular file" in result.stderr


# --- what the report says -------------------------------------------------------------------------


@pytest.mark.fault(
    "cli",
    "a platform plugin's METADATA is Latin-1 (it cannot be decoded): list and doctor",
    "both report the distribution as malformed, with its path, and doctor exits 1 (they said 'OK, "
    "0 malformed, no platform plugin installed' and exited 0)",
)
@pytest.mark.parametrize("command", ["list", "doctor"])
def test_undecodable_metadata_of_a_plugin_is_reported_by_list_and_doctor(
    site: PluginSite, command: str
) -> None:
    site.add_platform("latin-npu", "latin", "latinnpu")
    metadata = next(site.root.glob("latin_npu-*.dist-info")) / "METADATA"
    metadata.write_bytes(metadata.read_bytes() + "Author: Jos\xe9\n".encode("latin-1"))
    result = cli(site, command, "--json")
    report = result.json
    malformed = report["discovery"]["malformed"] if command == "doctor" else report["malformed"]
    assert [m["path"] for m in malformed] == [str(metadata.parent)]
    assert "UnicodeDecodeError" in malformed[0]["reason"]
    assert any("malformed distribution" in p["message"] for p in report["problems"])
    assert result.code == (1 if command == "doctor" else report["exit_status"])
    if command == "doctor":
        assert "1 malformed" in cli(site, command).out


@pytest.mark.fault(
    "cli",
    "explain TARGET where the selected platform plugin registered the hook",
    "explain shows the hook with its source, as doctor does (it said 'no hook registered')",
)
def test_explain_shows_a_hook_the_selected_platform_plugin_registered(site: PluginSite) -> None:
    hook = (
        "from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookType\n"
        "def _timed(original, *args, **kwargs):\n    return original(*args, **kwargs)\n"
        "HookRegistry.register('json.dumps', _timed, HookType.AROUND)\n"
    )
    site.add(
        "acme-npu",
        entry_points={"sglang.srt.platforms": {"acme": "acme_platform:activate"}},
        modules={
            "acme_platform.py": hook
            + "def activate():\n    return 'acme_platform_cls.AcmePlatform'\n",
            "acme_platform_cls.py": (
                "from sglang_plugin_runtime.platforms.device_mixin import PlatformEnum\n"
                "from sglang_plugin_runtime.platforms.interface import SRTPlatform\n"
                "class AcmePlatform(SRTPlatform):\n"
                "    _enum = PlatformEnum.OOT\n    device_name = device_type = 'acmenpu'\n"
            ),
        },
    )
    result = cli(site, "explain", "json.dumps", "--json")
    report = result.json
    assert report["found"], report["problems"]
    [hook_row] = report["report"]["hooks"]
    assert hook_row["source"] == {"plugin": "acme", "distribution": "acme-npu"}
    assert hook_row["type"] == "around"


class CountedMessage(str):
    """A problem message that counts how often it is searched or compared."""

    uses = 0

    def __contains__(self, part: object) -> bool:
        CountedMessage.uses += 1
        return super().__contains__(part)  # type: ignore[operator]

    def __eq__(self, other: object) -> bool:
        CountedMessage.uses += 1
        return super().__eq__(other)

    __hash__ = str.__hash__


@pytest.mark.fault(
    "cli",
    "doctor with 10,000 failing general plugins",
    "each problem is added and each table cell matched in constant work (problems were "
    "de-duplicated against, and cells compared with, every problem: quadratic, about 30 s for the "
    "text report)",
)
def test_problems_and_their_cells_cost_constant_work_each(site: PluginSite) -> None:
    from sglang_plugin_runtime._cli import _reports as r
    from sglang_plugin_runtime._cli._text import render
    from sglang_plugin_runtime._plugin_code import PluginOutcome

    add_general(site, "broken-dist", "broken", body="raise RuntimeError('broken on purpose')")
    one = cli(site, "doctor", "--json").json
    [record], [problem] = one["plugins"]["plugins"], one["problems"]
    count = 10_000
    problems = r.Problems()
    CountedMessage.uses = 0
    for i in range(count):
        message = CountedMessage(problem["message"].replace("'broken'", f"'broken_{i}'"))
        who = {"plugin": f"broken_{i}", "distribution": "broken-dist"}
        problems.add("error", "plugins", message, **who)
        problems.add("error", "plugins", message, **who)  # the same fault reached twice
    assert len(problems) == count and CountedMessage.uses <= 2 * count
    outcomes = [PluginOutcome(**{**record, "plugin": f"broken_{i}"}) for i in range(count)]
    platform = r.FailedPlatform(
        plugin=None, distribution=None, error="", error_type="", seconds=0.0, activations=[]
    )
    doctor = r.DoctorDocument(
        r.Discovery(1, 0, None, 1, r.Found([], [])),
        platform,
        r.Plugins("loaded", None, [], outcomes),
        r.Hooks(True, None, [], []),
        r.SGLangSupport(None, None, []),
        [],
    )
    report = r.Report(2, "doctor", "srt", False, None, {}, False, 1, problems, doctor)
    CountedMessage.uses = 0
    text = render(report)
    assert text.count("(see Problems)") >= count
    assert CountedMessage.uses <= 4 * count, (
        f"{CountedMessage.uses} message searches for {count} plugins"
    )
