"""The testing kit's real-server helpers that need no SGLang: the log a failed real-server test
shows, and where each hook first ran.

The real server itself is the real-server tier's (``make test-serve``: tests_serve/, where the
generated package's own real-server test and the README's real-server section run).
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from sglang_plugin_runtime.testing import SGLangServer
from sglang_plugin_runtime.testing._sglang_server import MODEL_RECIPE

pytest_plugins = ["pytester"]

FAILING_SERVER_TEST = """
import pytest

pytestmark = pytest.mark.sglang_server


def test_served(sglang_server):
    assert sglang_server.generate()["status"] == 200
"""


@pytest.mark.fault(
    "testing",
    "a real-server test whose server does not come up (here: the Python named by "
    "SGLANG_SERVER_PYTHON has no SGLang)",
    "the test errors with the end of the server's log, which stays in .sglang-server/server.log "
    "of the project (it was in pytest's temporary folder, which later runs delete)",
)
def test_a_server_that_does_not_come_up_shows_its_log_kept_in_the_project(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A model folder marked complete, so that the server itself is what fails.
    digest = hashlib.sha256(MODEL_RECIPE.encode("utf-8")).hexdigest()[:12]
    (tmp_path / f"tiny-llama-{digest}").mkdir()
    (tmp_path / f"tiny-llama-{digest}" / ".complete").touch()
    monkeypatch.setenv("SGLANG_SERVER_CACHE", str(tmp_path))
    monkeypatch.setenv("SGLANG_SERVER_PYTHON", sys.executable)  # no sglang here
    pytester.makepyfile(FAILING_SERVER_TEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-m", "sglang_server")
    assert result.ret != 0
    log = pytester.path / ".sglang-server" / "server.log"
    assert "No module named 'sglang'" in log.read_text(encoding="utf-8")
    output = result.stdout.str()
    assert f"sglang_server: the server's log: {log}" in output
    assert f"SGLang server log (the end of {log})" in output


def test_hook_first_calls_names_the_process_each_hook_first_ran_in(tmp_path: Path) -> None:
    process = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        log = tmp_path / "server.log"
        log.write_text(
            f"[2026-12-02 10:00:00 TP0] first call of hook time_run_batch in pid {process.pid}\n"
            "[2026-12-02 10:00:01] first call of hook ended_hook in pid 4194000\n",
            encoding="utf-8",
        )
        server = SGLangServer("http://127.0.0.1:1", 1, log, process, "tag")
        assert server.hook_first_calls() == {
            "time_run_batch": {process.pid: "sleep 60"},
            "ended_hook": {4194000: ""},
        }
    finally:
        process.kill()
        process.wait()
