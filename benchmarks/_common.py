"""Shared pieces of the benchmark harness: paths, the child-process runner, statistics, table rows.

Every measurement runs in a fresh child process (``benchmarks/_worker.py CASE SIDE PARAMS``), so
import caches, discovery caches and patched functions never leak from one measurement into another.
The child prints one JSON object on its last stdout line.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
CACHE = REPO / ".cache" / "bench"
WORKER = BENCH_DIR / "_worker.py"

OURS = "ours"
SGLANG = "sglang"


@dataclass
class Context:
    """What every case's ``run()`` receives from the runner."""

    quick: bool
    python: str
    #: Folders that go on the children's PYTHONPATH for every measurement (both sides alike).
    base_path: list[str]
    log: Callable[[str], None]
    repeats_override: int | None = None
    extra: dict = field(default_factory=dict)
    warmed: set = field(default_factory=set)

    def repeats(self, full: int, quick: int = 1) -> int:
        if self.repeats_override is not None:
            return self.repeats_override
        return quick if self.quick else full


@dataclass
class Row:
    """One line of the results table."""

    case: str
    variant: str
    unit: str
    ours: list[float]
    sglang: list[float] | None = None
    goal: str = ""
    #: ``"ratio_max:X"`` (ours/SGLang median at most X), ``"abs_below:X"`` (ours median below X,
    #: in ``unit``) or ``"abs_below_or_floor_plus:X,M"`` (below X, or at most M above ``floor``).
    goal_check: str | None = None
    note: str = ""
    # The standard library's share of ours (case 1): "abs_below_or_floor_plus" judges against it.
    floor: float | None = None

    def stats(self, values: list[float] | None) -> dict | None:
        if not values:
            return None
        return {
            "median": statistics.median(values),
            "min": min(values),
            "n": len(values),
            "values": values,
        }

    @property
    def ratio(self) -> float | None:
        if not self.ours or not self.sglang:
            return None
        denominator = statistics.median(self.sglang)
        if denominator <= 0:
            return None
        return statistics.median(self.ours) / denominator

    @property
    def goal_met(self) -> bool | None:
        if not self.goal_check or not self.ours:
            return None
        kind, _, threshold = self.goal_check.partition(":")
        if kind == "ratio_max":
            ratio = self.ratio
            return None if ratio is None else ratio <= float(threshold)
        if kind == "abs_below":
            return statistics.median(self.ours) < float(threshold)
        if kind == "abs_below_or_floor_plus":  # "LIMIT,MARGIN": under LIMIT, or MARGIN above floor
            limit, margin = (float(part) for part in threshold.split(","))
            ours = statistics.median(self.ours)
            return ours < limit or (self.floor is not None and ours <= self.floor + margin)
        raise ValueError(self.goal_check)

    def as_json(self) -> dict:
        return {
            "case": self.case,
            "variant": self.variant,
            "unit": self.unit,
            "ours": self.stats(self.ours),
            "sglang": self.stats(self.sglang),
            "ratio_ours_over_sglang": self.ratio,
            "goal": self.goal,
            "goal_met": self.goal_met,
            "note": self.note,
        }


class ChildFailed(RuntimeError):
    pass


def clean_env(extra: dict[str, str] | None = None, path: list[str] | None = None) -> dict[str, str]:
    """The children's environment: no inherited SGLANG_* variables, an explicit PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_") and k != "PYTHONPATH"}
    env.pop("BENCH_SIDE", None)
    # A deployment imports from .pyc files (pip compiles on install). With PYTHONDONTWRITEBYTECODE
    # set, every child would compile both sides' sources on each start (SGLang's environ.py alone is
    # 2,300 lines), so the warm-up run writes .pyc files and the measured runs use them.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONHASHSEED"] = "0"
    env["PYTHONWARNINGS"] = "ignore"
    # Keep torch from spawning a thread pool per core on a shared 2-core machine.
    env.setdefault("OMP_NUM_THREADS", "1")
    if path:
        env["PYTHONPATH"] = os.pathsep.join(path)
    if extra:
        env.update(extra)
    return env


def run_child(
    ctx: Context,
    case: str,
    side: str,
    params: dict,
    *,
    path: list[str] | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 300,
) -> dict:
    """Run one measurement in a fresh interpreter; return the JSON it printed (plus ``wall_s``)."""
    full_path = [str(p) for p in (path or [])] + ctx.base_path
    child_env = clean_env({"BENCH_SIDE": side, **(env or {})}, full_path)
    started = time.perf_counter()
    proc = subprocess.run(
        [ctx.python, str(WORKER), case, side, json.dumps(params)],
        cwd=str(REPO),
        env=child_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    wall = time.perf_counter() - started
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise ChildFailed(
            f"case {case} side {side} params {params} failed (exit {proc.returncode}):\n"
            f"--- stdout ---\n{proc.stdout[-3000:]}\n--- stderr ---\n{proc.stderr[-3000:]}"
        )
    result = json.loads(lines[-1])
    result["wall_s"] = wall
    if proc.stderr.strip():
        result.setdefault("stderr_tail", proc.stderr.strip()[-600:])
    return result


def alternate(
    ctx: Context, repeats: int, sides: list[str], measure, warmup_key: str | None = None
) -> dict[str, list[dict]]:
    """Run ``measure(side)`` ``repeats`` times per side, interleaving sides to spread machine drift.

    Unless in quick mode, one discarded warm-up per side and ``warmup_key`` comes first (it writes
    ``.pyc`` files and warms the page cache), so every kept measurement sees the same warm file
    system, as a deployment's second start-up would.
    """
    if not ctx.quick and (warmup_key is None or warmup_key not in ctx.warmed):
        for side in sides:
            measure(side)
        if warmup_key is not None:
            ctx.warmed.add(warmup_key)
    results: dict[str, list[dict]] = {side: [] for side in sides}
    for i in range(repeats):
        order = sides if i % 2 == 0 else list(reversed(sides))
        for side in order:
            results[side].append(measure(side))
    return results


def fmt_value(value: float, unit: str) -> str:
    if unit == "ms":
        return f"{value:.2f}" if value < 100 else f"{value:.0f}"
    if unit == "ns":
        return f"{value:.0f}"
    if unit == "s":
        return f"{value:.2f}"
    return f"{value:.3g}"


def render_table(rows: list[Row]) -> str:
    """A Markdown table: median (min) per side, ours/SGLang ratio, speed-up, goal."""
    header = (
        "| # | case | unit | ours median (min) | SGLang median (min) "
        "| ours/SGLang | speed-up | goal | met |"
    )
    lines = [header, "|---|---|---|---:|---:|---:|---:|---|---|"]
    for row in rows:
        ours = (
            f"{fmt_value(statistics.median(row.ours), row.unit)} "
            f"({fmt_value(min(row.ours), row.unit)})"
            if row.ours
            else "n/a"
        )
        sglang = (
            f"{fmt_value(statistics.median(row.sglang), row.unit)} "
            f"({fmt_value(min(row.sglang), row.unit)})"
            if row.sglang
            else "—"
        )
        ratio = row.ratio
        ratio_s = f"{ratio:.3f}" if ratio is not None else "—"
        speedup = f"{1 / ratio:.1f}x" if ratio else "—"
        met = {True: "yes", False: "**NO**", None: ""}[row.goal_met]
        lines.append(
            f"| {row.case} | {row.variant} | {row.unit} | {ours} | {sglang} | {ratio_s} | "
            f"{speedup} | {row.goal} | {met} |"
        )
    return "\n".join(lines)


def machine_info(python: str) -> dict:
    import platform

    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    info = {
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
    }
    try:
        out = subprocess.run(
            [python, "-c", "import importlib.metadata as m; print(m.version('torch'))"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        info["torch"] = out.stdout.strip() or None
    except Exception:  # pragma: no cover - informational only
        info["torch"] = None
    return info
