"""The benchmark harness runs end to end in quick mode, so it cannot rot (CI runs this).

No timing is asserted here: speed is measured and reported by ``benchmarks/run.py`` (``make
bench``), never judged by a test. The quick run downloads SGLang's wheel (once, cached under
.cache/bench) and installs three pinned packages into that cache; it needs PyPI, as the full run
does.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
RUNNER = REPO / "benchmarks" / "run.py"


@pytest.mark.slow
@pytest.mark.xdist_group("benchmarks")
def test_quick_benchmark_run_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "quick.json"
    proc = subprocess.run(
        [sys.executable, str(RUNNER), "--quick", "--json", str(out)],
        cwd=str(REPO),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, f"stdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-6000:]}"
    assert "| # | case |" in proc.stdout

    payload = json.loads(out.read_text())
    assert payload["mode"] == "quick"
    assert payload["failures"] == {}
    rows = payload["rows"]
    assert {row["case"] for row in rows} == {"1", "2", "3", "4", "5", "6"}
    for row in rows:
        assert row["ours"]["n"] >= 1, row
        assert all(isinstance(v, float) for v in row["ours"]["values"]), row
        if row["case"] in ("1", "2", "3", "4"):
            # Side by side: SGLang's own code was measured too, and a ratio was computed.
            assert row["sglang"]["n"] >= 1, row
            assert row["ratio_ours_over_sglang"] is not None, row
        # Quick runs are too small to judge the goals; they must not claim either way.
        assert row["goal_met"] is None, row


def test_runner_rejects_unknown_case() -> None:
    proc = subprocess.run(
        [sys.executable, str(RUNNER), "--quick", "--cases", "9"],
        cwd=str(REPO),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode != 0
    assert "unknown case" in proc.stderr
