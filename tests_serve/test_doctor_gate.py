"""``sglang-plugins doctor --strict`` in the serving venv, against the plugins the real servers run.

The gate is ``sglang-plugins doctor --strict`` in each world: under released SGLang it judges the
hooks its own registry holds as SGLang's ``apply_hooks()`` will (docs/cli.md), and under the
launcher (``sglang-plugins run -- sglang-plugins doctor --strict``) and the adopted SGLang the
runtime's registry. Each gate must pass the setup the real server ran correctly and fail each
broken one.
"""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

import pytest
from conftest import ADOPTED_VENV, VENV, Plugins
from scenarios import clean_env

pytestmark = pytest.mark.serve

RELEASED_PYTHON = str(VENV / "bin" / "python")
DOCTOR = ["-m", "sglang_plugin_runtime", "doctor", "--strict"]
GATES = {
    "released": [RELEASED_PYTHON, *DOCTOR],
    "launcher": [
        RELEASED_PYTHON,
        "-m",
        "sglang_plugin_runtime",
        "run",
        "--",
        RELEASED_PYTHON,
        *DOCTOR,
    ],
    "adopted": [str(ADOPTED_VENV / "bin" / "python"), *DOCTOR],
}


@functools.cache
def doctor(gate: str, *sites: Path) -> subprocess.CompletedProcess[str]:
    """The gate's run with ``sites`` on the path (once per setup; several checks read it)."""
    return subprocess.run(
        GATES[gate], env=clean_env(sites), capture_output=True, text=True, timeout=180, check=False
    )


@pytest.mark.parametrize("gate", list(GATES))
def test_the_gate_passes_the_setup_the_real_server_ran(gate: str, plugins: Plugins) -> None:
    completed = doctor(gate, plugins.hooks, plugins.platform)
    assert completed.returncode == 0, completed.stdout[-3000:]


@pytest.mark.parametrize("gate", list(GATES))
def test_the_gate_selects_the_platform_and_loads_the_hooks_of_that_setup(
    gate: str, plugins: Plugins
) -> None:
    out = doctor(gate, plugins.hooks, plugins.platform).stdout
    assert "serve_cpu_platform.platform.ServeCpuSRTPlatform" in out
    assert "serve_hooks  serve-hooks 0.1.0  loaded" in out
    assert "0 error(s)" in out


@pytest.mark.parametrize("gate", list(GATES))
def test_the_gate_fails_a_register_that_raises(gate: str, plugins: Plugins) -> None:
    completed = doctor(gate, plugins.hooks, plugins.platform, plugins.broken_register)
    assert completed.returncode != 0
    # strict: loading stops at the failure, which the Problems section names
    failed = "Plugin 'serve_broken_register' (distribution serve-broken-register 0.1.0) failed"
    assert failed in completed.stdout, completed.stdout[-3000:]


@pytest.mark.parametrize("gate", list(GATES))
def test_the_gate_fails_a_misspelled_hook_target(gate: str, plugins: Plugins) -> None:
    completed = doctor(gate, plugins.platform, plugins.misspelled)
    assert completed.returncode != 0
    assert "sglang.srt.managers.schedular" in completed.stdout


@pytest.mark.parametrize("gate", list(GATES))
def test_the_gate_fails_a_platform_that_cannot_serve_sglangs_calls(
    gate: str, plugins: Plugins
) -> None:
    completed = doctor(gate, plugins.broken_platform)
    assert completed.returncode != 0, completed.stdout[-3000:]
