"""Side-by-side benchmarks of this runtime against SGLang's own plugin code (``make bench``).

    .venv/bin/python benchmarks/run.py            # full run, writes benchmarks/results/latest.json
    .venv/bin/python benchmarks/run.py --quick    # smoke run (CI), writes .cache/bench/quick.json
    .venv/bin/python benchmarks/run.py --cases 2,3 --repeats 3

SGLang's modules come from the released wheel, downloaded at run time (see ``_prepare.py``). Every
measurement runs in a fresh process; the table shows median (min) per side and the ours/SGLang ratio
of the medians. See docs/benchmarks.md for the method and the latest results.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import CACHE, REPO, Context, machine_info, render_table

CASES = {
    "1": "case_startup",
    "2": "case_discovery",
    "3": "case_apply",
    "4": "case_percall",
    "5": "case_importhook",
    "6": "case_copier",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="tiny sizes and one repeat (CI smoke run)"
    )
    parser.add_argument(
        "--cases", default=",".join(CASES), help="comma-separated case numbers (default: all)"
    )
    parser.add_argument(
        "--repeats", type=int, default=None, help="override every case's repeat count"
    )
    parser.add_argument(
        "--json", dest="json_path", default=None, help="where to write the results JSON"
    )
    parser.add_argument("--python", default=None, help="interpreter for the measurement processes")
    parser.add_argument(
        "--update-docs",
        action="store_true",
        help="write the table and machine into docs/benchmarks.md (full runs)",
    )
    args = parser.parse_args(argv)

    from _prepare import ensure_light_deps, ensure_sglang, python_for_children

    python = args.python or python_for_children()
    started = time.perf_counter()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f}s] {message}", file=sys.stderr, flush=True)

    selected = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in selected if c not in CASES]
    if unknown:
        parser.error(f"unknown case(s) {unknown}; known: {', '.join(CASES)}")

    sglang_root = ensure_sglang(python, log)
    deps = ensure_light_deps(python, log)
    runtime = REPO / "runtime"
    ctx = Context(
        quick=args.quick,
        python=python,
        base_path=[str(sglang_root), str(deps), str(runtime)],
        log=log,
        repeats_override=args.repeats,
    )
    info = machine_info(python)
    log(
        f"machine: {info['cpu']}, {info['cpus']} CPUs, Python {info['python']}, torch "
        f"{info['torch']}"
    )

    rows = []
    failures = {}
    for number in selected:
        module = __import__(CASES[number])
        log(f"case {number}: {module.__doc__.strip().splitlines()[0]}")
        case_started = time.perf_counter()
        try:
            rows.extend(module.run(ctx))
        except Exception as exc:  # report and go on: one broken case must not hide the others
            failures[number] = f"{type(exc).__name__}: {exc}"
            log(f"case {number} FAILED: {failures[number][:2000]}")
        log(f"case {number} took {time.perf_counter() - case_started:.1f}s")

    if args.quick:
        # Tiny sizes and one repeat say nothing about the goals: show them, judge none.
        for row in rows:
            if row.goal:
                row.goal = f"{row.goal} (full run only)"
            row.goal_check = None
    table = render_table(rows)
    total = time.perf_counter() - started
    print()
    print(table)
    print()
    print(
        f"{'quick' if args.quick else 'full'} run, {total:.0f} s, on {info['cpu']} ({info['cpus']} "
        f"CPUs), Python {info['python']}, torch {info['torch']}, SGLang "
        f"{sglang_root.name.split('-', 1)[1]} from its wheel"
    )
    for row in rows:
        if row.goal_met is False:
            print(
                f"GOAL MISSED: case {row.case} {row.variant}: {row.goal} (ours/SGLang {row.ratio})"
            )
    for number, error in failures.items():
        print(f"CASE {number} FAILED: {error.splitlines()[0]}")

    json_path = (
        Path(args.json_path)
        if args.json_path
        else (
            CACHE / "quick.json" if args.quick else REPO / "benchmarks" / "results" / "latest.json"
        )
    )
    json_path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "generated": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "mode": "quick" if args.quick else "full",
        "seconds": total,
        "machine": info,
        "sglang": sglang_root.name,
        "cases": selected,
        "rows": [row.as_json() for row in rows],
        "failures": failures,
        "table": table,
    }
    json_path.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"results: {os.path.relpath(json_path, Path.cwd())}")
    if args.update_docs:
        _update_docs(payload)
        print("updated docs/benchmarks.md")
    return 1 if failures else 0


DOCS = REPO / "docs" / "benchmarks.md"
START, END = "<!-- bench:results:start -->", "<!-- bench:results:end -->"


def _update_docs(payload: dict) -> None:
    """Replace the generated section of docs/benchmarks.md with this run's table and machine."""
    info = payload["machine"]
    notes = [
        f"- case {row['case']}, {row['variant']}: {row['note']}"
        for row in payload["rows"]
        if row.get("note")
    ]
    section = "\n".join(
        [
            START,
            f"Run of {payload['generated']} ({payload['mode']} mode, {payload['seconds']:.0f} s in "
            f"all) on {info['cpu']}, {info['cpus']} CPUs, {info['platform']}, Python "
            f"{info['python']}, torch {info['torch']}, against {payload['sglang']} from its wheel.",
            "",
            payload["table"],
            "",
            "Details the runner logged for each row:",
            "",
            *notes,
            END,
        ]
    )
    text = DOCS.read_text()
    before, _, rest = text.partition(START)
    _, _, after = rest.partition(END)
    DOCS.write_text(before + section + after)


if __name__ == "__main__":
    sys.exit(main())
