"""The real server's cost with the runtime: time to ready and scheduler start-up, in each world.

``make bench-serve`` runs it inside the serving venv of ``make test-serve`` (``bash
scripts/test-serve.sh bench``). It starts ``python -m sglang.launch_server`` on the CPU with the
tiny model and the default generated general plugin installed, in the three worlds (released
SGLang, ``sglang-plugins run``, the adopted SGLang), round by round with the order rotated, so the
worlds are measured side by side under the same load. Not a test: nothing here asserts a timing.

- time to ready: from the command's start until the server answers ``/model_info`` after printing
  its ready line (the kit's ``wait_until_ready``);
- scheduler start-up: ``scheduler_e2e`` of SGLang's own "Engine startup timings" log line.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from sglang_plugin_runtime.testing._sglang_server import running_sglang_server

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "tests_sglang"))

from scenarios import pip_install_target, render  # noqa: E402 - the tier's own helpers

WORLDS = ("released", "launcher", "adopted")
RESULTS = REPO_ROOT / "benchmarks" / "results" / "real-server.json"
DOC = REPO_ROOT / "docs" / "real-server.md"
SCHEDULER_E2E = re.compile(r"Engine startup timings \(s\):.*?scheduler_e2e=([\d.]+)")


def generated_plugin(workdir: Path) -> Path:
    """The default generated general plugin, pip-installed into its own folder."""
    template = workdir / "template"
    template.mkdir()
    shutil.copy2(REPO_ROOT / "copier.yml", template / "copier.yml")
    shutil.copytree(REPO_ROOT / "templates", template / "templates")
    answers = {"plugin_kind": "general", "distribution_name": "bench-hooks"}
    project = render(template, workdir / "bench-hooks", answers)
    return pip_install_target(project, workdir / "site")


def measure(world: str, site: Path, logs: Path, round_index: int) -> dict[str, float]:
    name = "SGLANG_SERVE_ADOPTED_VENV" if world == "adopted" else "SGLANG_SERVE_VENV"
    venv = Path(os.environ[name])
    with running_sglang_server(
        python=str(venv / "bin" / "python"),
        paths=[site],
        launcher=world == "launcher",
        log=logs / f"{world}-{round_index}.log",
    ) as server:
        found = SCHEDULER_E2E.search(server.log_text())
        scheduler = float(found[1]) if found else float("nan")
        return {"ready": server.ready_after, "scheduler": scheduler}


def table(samples: dict[str, list[dict[str, float]]]) -> str:
    """Median and minimum of each world, and the ratio of medians against released SGLang."""
    released = samples["released"]
    base = {key: statistics.median(s[key] for s in released) for key in ("ready", "scheduler")}
    ready, scheduler = "time to ready, s: median (min)", "scheduler start-up, s: median (min)"
    lines = [f"| world | {ready} | ratio | {scheduler} | ratio |", "|---|---|---|---|---|"]
    for world in WORLDS:
        cells = [world]
        for key, digits in (("ready", 1), ("scheduler", 2)):
            values = [s[key] for s in samples[world]]
            median = statistics.median(values)
            cells.append(f"{median:.{digits}f} ({min(values):.{digits}f})")
            cells.append(f"{median / base[key]:.2f}x")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def update_doc(text: str) -> None:
    start, end = "<!-- real-server-bench:start -->", "<!-- real-server-bench:end -->"
    doc = DOC.read_text(encoding="utf-8")
    head, rest = doc.split(start, 1)
    _, tail = rest.split(end, 1)
    DOC.write_text(f"{head}{start}\n{text}\n{end}{tail}", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=2, help="servers per world (default 2)")
    parser.add_argument("--update-docs", action="store_true", help="rewrite the table in the doc")
    parser.add_argument("--load", default="", help="what else loaded the machine (for the note)")
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        site = generated_plugin(workdir)
        samples: dict[str, list[dict[str, float]]] = {world: [] for world in WORLDS}
        for index in range(options.rounds):
            order = WORLDS[index % 3 :] + WORLDS[: index % 3]
            for world in order:
                samples[world].append(measure(world, site, workdir, index))
                print(f"round {index + 1} {world}: {samples[world][-1]}", flush=True)
    load = f" {options.load}" if options.load else ""
    note = f"{options.rounds} servers per world, in rotated order, one run.{load}"
    text = table(samples) + "\n\n" + note
    print(text)
    RESULTS.write_text(json.dumps(samples, indent=2) + "\n", encoding="utf-8")
    if options.update_docs:
        update_doc(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
