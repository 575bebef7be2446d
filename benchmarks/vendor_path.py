"""A new vendor's way from a clone of the kit to their own hook in SGLang's real server, timed step
by step (docs/real-server.md, "From a clone to your own hook in a real server").

    python3.11 benchmarks/vendor_path.py [--update-docs]

Each step runs as a vendor types it, in a scratch folder, with Python 3.11 and nothing else of this
checkout: ``git clone`` of the kit (this repository's committed HEAD), Copier installed into a venv
of its own, ``copier copy`` of a general plugin with the defaults, a hook of the vendor's own added
(an AROUND hook on ``Scheduler.__init__``, named in the real-server test), then the commands of the
generated README's real-server section, one by one. The testing kit's cache folder starts empty
(``SGLANG_SERVER_CACHE`` points into the scratch folder), so the serving venv is built within the
last step; pip's own cache is the machine's (warm after a first run). Not a test: it fails only
when a step fails or the vendor's hook did not run in a scheduler process.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DOC = REPO_ROOT / "docs" / "real-server.md"
sys.path.insert(0, str(REPO_ROOT / "tests" / "templates"))
from vendor_recipe import HOOK_LINE, add_own_hook, section_commands  # noqa: E402

START, END = "<!-- vendor-path:start -->", "<!-- vendor-path:end -->"
#: A row that is part of the step above it (not added to the total).
SUBSTEP = "of which: "


def timed(steps: list[tuple[str, float]], title: str, command: str, cwd: Path, env: dict) -> str:
    """Run ``command`` (bash) and record its time; return what it printed."""
    began = time.monotonic()
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    steps.append((title, time.monotonic() - began))
    print(f"{steps[-1][1]:7.1f} s  {title}", flush=True)
    if done.returncode != 0:
        sys.exit(f"step failed: {command}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    return done.stdout + done.stderr


def walk(scratch: Path) -> list[tuple[str, float]]:
    python = shutil.which("python3.11") or sys.executable
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SGLANG_", "VIRTUAL_ENV"))}
    env.pop("PYTHONPATH", None)
    env["PATH"] = f"{Path(python).parent}{os.pathsep}{env['PATH']}"
    env["SGLANG_SERVER_CACHE"] = str(scratch / "kit-cache")
    steps: list[tuple[str, float]] = []
    timed(steps, "git clone the kit", f"git clone --quiet {REPO_ROOT} kit", scratch, env)
    timed(
        steps,
        'python -m venv tools && pip install "copier>=9.15"',
        f'{python} -m venv tools && tools/bin/pip install --quiet "copier>=9.15"',
        scratch,
        env,
    )
    timed(
        steps,
        "copier copy --vcs-ref HEAD kit my-hooks (a general plugin, the defaults)",
        "tools/bin/copier copy --quiet --vcs-ref HEAD --defaults --data plugin_kind=general "
        "kit my-hooks",
        scratch,
        env,
    )
    project = scratch / "my-hooks"
    began = time.monotonic()
    add_own_hook(project)
    steps.append(("add my own hook (an AROUND hook on Scheduler.__init__)", 0.0))
    print(f"{time.monotonic() - began:7.1f} s  {steps[-1][0]}", flush=True)
    activate = ""
    for command in section_commands((project / "README.md").read_text(encoding="utf-8")):
        if command.startswith(". "):
            activate = command + " && "
            continue
        output = timed(steps, command, activate + command, project, env)
    log = (project / ".sglang-server" / "server.log").read_text(encoding="utf-8")
    first_call = re.search(r"first call of hook log_scheduler_start in pid \d+", log)
    if not first_call or HOOK_LINE not in log:
        sys.exit(f"the vendor's hook left no line in the server's log:\n{output[-3000:]}")
    built = re.search(r"sglang_server: built the serving venv in (\d+) s", output)
    if built:  # the part of the last step that a later run no longer takes
        steps.append((f"{SUBSTEP}the testing kit builds the serving venv (once)", float(built[1])))
    for line in output.splitlines():
        if line.startswith(("sglang_server: built", "=")):
            print(f"          {line.strip()}")
    return steps


def table(steps: list[tuple[str, float]]) -> str:
    total = sum(seconds for title, seconds in steps if not title.startswith(SUBSTEP))
    load = os.getloadavg()[0]
    rows = [
        f"| {title} | ({seconds:.0f}) |"
        if title.startswith(SUBSTEP)
        else f"| {title} | {seconds:.0f} |"
        for title, seconds in steps
    ]
    return "\n".join(
        [
            START,
            "| step | seconds |",
            "|---|---|",
            *rows,
            f"| **from the clone to the vendor's own hook in the scheduler** | **{total:.0f}** "
            f"({total // 60:.0f} min {total % 60:.0f} s) |",
            "",
            f"Measured {time.strftime('%Y-%m-%d')} by `python3.11 benchmarks/vendor_path.py` "
            f"(load average {load:.1f} at the end, 2 cores).",
            END,
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update-docs", action="store_true", help=f"rewrite the table in {DOC}")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vendor-path-") as scratch:
        steps = walk(Path(scratch))
    result = table(steps)
    print(result)
    if args.update_docs:
        text = DOC.read_text(encoding="utf-8")
        begin, end = text.index(START), text.index(END) + len(END)
        DOC.write_text(text[:begin] + result + text[end:], encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
