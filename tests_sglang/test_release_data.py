"""The data of every SGLang release with a plugin system is what the released wheels give:
``scripts/sglang_releases.py`` regenerates it from their sources (downloading the wheels this
checkout lacks into ``.cache/sglang-wheels/``, each checked against its SHA-256 in
``releases.json``) and fails on any difference. Rewrite the data with
``python scripts/sglang_releases.py --write`` and review the diff."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "sglang_releases.py"


def test_the_release_data_is_what_the_wheels_give() -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=3000
    )
    assert result.returncode == 0, result.stderr
