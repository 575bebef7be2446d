"""Every output of ``sglang-plugins`` over the scenarios the tests and the docs use, recorded and
compared: the harness a refactor of the CLI runs to prove that no ``--json`` byte, text line or
exit status changed.

    python tests/cli_outputs.py harvest          # record the scenarios (a few minutes)
    python tests/cli_outputs.py record FILE      # every invocation on this checkout's runtime
    python tests/cli_outputs.py compare FILE     # again, and each difference from FILE (exit 1)

``harvest`` runs the CLI's tests (``tests/test_cli_*.py``, ``tests/test_fingerprint_cli.py``) and
builds the docs (their ``exec="on"`` console blocks) with a recorder that every CLI process started
meanwhile runs first (a ``.pth`` file in this interpreter's site-packages, there for the harvest
only): it copies the folders of fake installed distributions the invocation sees (its working
folder and ``PYTHONPATH``, content-addressed) and keeps its arguments and environment. Then it adds,
for every distinct scenario (folders and environment), each command with and without ``--json``,
``--strict``, ``--import-targets``, ``--namespace multimodal_gen``, ``explain`` of the targets and
resolution steps hooked there and of targets nobody hooks, ``fingerprint --compare`` (the same node,
another node, digests), ``--simulate`` where a platform plugin is installed, plus ``contract`` and
its ``--diff`` and usage errors. Everything lives under ``.cache/cli-outputs/``.

``record`` and ``compare`` run each invocation in a fresh process (``python -m
sglang_plugin_runtime``) and keep its exit status, stdout and stderr, with what differs from run to
run made constant: timings (``"seconds"``, ``1.2 ms`` and the table padding they change) and object
addresses.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import difflib
import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RUNTIME = REPO / "runtime"
CACHE = REPO / ".cache" / "cli-outputs"
SITES = CACHE / "sites"
RECORD_VAR = "CLI_OUTPUTS_RECORD"
PTH = "cli_outputs_recorder.pth"
#: Variables a test or the docs build sets that do not reach the CLI's behaviour.
_NOISE = re.compile(r"PYTEST_|PYTHONPATH$|CLI_OUTPUTS_|PWD$|OLDPWD$|_$|COV_|SHLVL$")
_TEMP = tempfile.gettempdir()
_CLI_TESTS = sorted(str(p) for p in (REPO / "tests").glob("test_cli_*.py")) + [
    str(REPO / "tests" / "test_fingerprint_cli.py")
]

# ---- in the CLI's own process, during a harvest ------------------------------------------------


def _snapshot(folder: str) -> str:
    """``folder`` copied under SITES by its content (bytecode and special files left out)."""
    digest = hashlib.sha256()
    for root, dirs, files in sorted(os.walk(folder)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            path = os.path.join(root, name)
            digest.update(os.path.relpath(path, folder).encode() + b"\0")
            if os.path.islink(path):
                digest.update(os.readlink(path).encode())
            elif os.path.isfile(path):
                with open(path, "rb") as handle:
                    digest.update(handle.read())
            digest.update(b"\0")
    name = digest.hexdigest()[:16]
    target = SITES / name
    if not target.exists():

        def ignore(root: str, names: list[str]) -> list[str]:
            return [
                n
                for n in names
                if n == "__pycache__"
                or not (os.path.isdir(p := os.path.join(root, n)) or os.path.isfile(p))
            ]

        scratch = Path(tempfile.mkdtemp(dir=SITES, prefix=".copy-"))
        shutil.copytree(folder, scratch / "x", symlinks=True, ignore=ignore)
        with contextlib.suppress(OSError):  # another process copied the same content first
            os.rename(scratch / "x", target)
        shutil.rmtree(scratch, ignore_errors=True)
    return f"{{SITES}}/{name}"


def record_invocation() -> None:
    """Called by the ``.pth`` file in every Python process while a harvest runs: keeps this
    process's CLI invocation (nothing for any other process)."""
    argv = sys.orig_argv
    if argv[1:3] == ["-m", "sglang_plugin_runtime"]:
        args = argv[3:]
    elif len(argv) > 1 and os.path.basename(argv[1]) == "sglang-plugins":
        args = argv[2:]
    else:
        return
    try:
        cwd = os.getcwd()
        base = json.loads((CACHE / "base-env.json").read_text())
        mapped: dict[str, str] = {}

        def where(path: str) -> str:
            """``path`` as the replay names it: in a snapshot, the runtime, or as it was."""
            path = os.path.normpath(os.path.join(cwd, path))
            if path == str(RUNTIME):
                return "{RUNTIME}"
            if not path.startswith(_TEMP + os.sep):
                return path
            for folder, snap in mapped.items():
                if path == folder or path.startswith(folder + os.sep):
                    return snap + path[len(folder) :]
            folder = path if os.path.isdir(path) else os.path.dirname(path)
            mapped[folder] = _snapshot(folder)
            return where(path)

        work = where(cwd) if cwd.startswith(_TEMP + os.sep) else cwd
        pythonpath = [
            entry if not os.path.isabs(entry) and work.startswith("{SITES}") else where(entry)
            for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep)
            if entry
        ]
        args = [
            where(a) if os.path.isabs(a) and os.path.exists(a) and a.startswith(_TEMP) else a
            for a in args
        ]
        try:
            os.fstat(1)
            closed = False
        except OSError:
            closed = True
        invocation = {
            "args": args,
            "cwd": work,
            "pythonpath": pythonpath,
            "env": {
                k: v
                for k, v in sorted(os.environ.items())
                if base.get(k) != v and not _NOISE.match(k)
            },
            "unset": sorted(k for k in base if k not in os.environ and not _NOISE.match(k)),
            "stdout_closed": closed,
        }
        line = json.dumps(invocation, sort_keys=True) + "\n"
        with open(CACHE / "harvested.jsonl", "a", encoding="utf-8") as out:
            out.write(line)
    except Exception as exc:  # never change what the CLI does
        with open(CACHE / "recorder-errors.log", "a", encoding="utf-8") as out:
            out.write(f"{args}: {type(exc).__name__}: {exc}\n")


# ---- running an invocation ---------------------------------------------------------------------


def _expand(text: str, runtime: Path) -> str:
    return text.replace("{SITES}", str(SITES)).replace("{RUNTIME}", str(runtime))


def run(invocation: dict[str, Any], runtime: Path = RUNTIME) -> dict[str, Any]:
    """One invocation in a fresh process: its exit status and its normalised stdout and stderr."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("SGLANG_") and k not in invocation["unset"]
    }
    env.update(invocation["env"])
    env["PYTHONPATH"] = os.pathsep.join(_expand(p, runtime) for p in invocation["pythonpath"])
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # the snapshots stay as they were recorded
    closed = invocation["stdout_closed"]
    try:
        done = subprocess.run(
            [sys.executable, "-m", "sglang_plugin_runtime"]
            + [_expand(a, runtime) for a in invocation["args"]],
            stdin=subprocess.DEVNULL,
            stdout=None if closed else subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=(lambda: os.close(1)) if closed else None,
            env=env,
            cwd=_expand(invocation["cwd"], runtime),
            timeout=120,
        )
        status, out, err = done.returncode, done.stdout or b"", done.stderr
    except subprocess.TimeoutExpired:
        status, out, err = "timeout", b"", b""
    return {
        "status": status,
        "stdout": normalise(out.decode("utf-8", "backslashreplace"), runtime),
        "stderr": normalise(err.decode("utf-8", "backslashreplace"), runtime),
    }


def normalise(text: str, runtime: Path) -> str:
    """What changes from run to run made constant: timings (and the padding of the column that
    shows them), object addresses, the runtime's folder."""
    text = re.sub(r'"seconds": [-+0-9.e]+', '"seconds": 0', text)
    text = re.sub(r"\b\d+\.\d ms( +|$)", "T ms  ", text, flags=re.MULTILINE)
    text = re.sub(r"\bTIME +", "TIME  ", text)
    text = re.sub(r"\b0x[0-9a-fA-F]{6,}\b", "0xADDR", text)
    return text.replace(str(runtime), "{RUNTIME}").replace(str(SITES), "{SITES}")


def run_all(
    invocations: list[dict[str, Any]], jobs: int, runtime: Path = RUNTIME
) -> list[dict[str, Any]]:
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        return list(pool.map(lambda i: run(i, runtime), invocations))


# ---- harvest: the scenarios --------------------------------------------------------------------


def harvest(jobs: int) -> None:
    shutil.rmtree(CACHE, ignore_errors=True)
    SITES.mkdir(parents=True)
    (CACHE / "base-env.json").write_text(json.dumps(dict(os.environ)))
    pth = Path(sysconfig.get_paths()["purelib"]) / PTH
    pth.write_text(
        "import os; os.environ.get('CLI_OUTPUTS_RECORD') and __import__('runpy').run_path("
        f"{str(Path(__file__).resolve())!r}, run_name='cli_outputs_recorder')"
        "['record_invocation']()\n"
    )
    env = {**os.environ, RECORD_VAR: "1"}
    try:
        print("running the CLI's tests with the recorder ...", flush=True)
        tests = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-n", str(jobs), "-p", "no:randomly"]
            + _CLI_TESTS,
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
        )
        print(tests.stdout.strip().splitlines()[-1] if tests.stdout.strip() else tests.stderr)
        print("building the docs with the recorder ...", flush=True)
        with tempfile.TemporaryDirectory() as site:
            docs = subprocess.run(
                [sys.executable, "-m", "mkdocs", "build", "--site-dir", site],
                env=env,
                cwd=REPO,
                capture_output=True,
                text=True,
            )
        print(f"docs build: exit status {docs.returncode}")
    finally:
        pth.unlink()
    harvested = [json.loads(line) for line in (CACHE / "harvested.jsonl").read_text().splitlines()]
    unique = list({json.dumps(i, sort_keys=True): i for i in harvested}.values())
    print(f"{len(harvested)} CLI invocations recorded ({len(unique)} distinct)")
    plan = unique + matrix(unique, jobs)
    (CACHE / "invocations.json").write_text(json.dumps(plan, indent=1, sort_keys=True))
    print(f"{len(plan)} invocations planned over {len(os.listdir(SITES))} folders")


def _scenario(invocation: dict[str, Any]) -> str:
    return json.dumps({k: invocation[k] for k in ("cwd", "pythonpath", "env", "unset")})


def matrix(harvested: list[dict[str, Any]], jobs: int) -> list[dict[str, Any]]:
    """Each command, its options, targets and comparisons in every distinct scenario."""
    scenarios = [
        json.loads(s)
        for s in dict.fromkeys(_scenario(i) for i in harvested if not i["stdout_closed"])
    ]
    for s in scenarios:
        s["stdout_closed"] = False
    probes = run_all(
        [{**s, "args": [c, "--json"]} for s in scenarios for c in ("doctor", "fingerprint")], jobs
    )
    (CACHE / "fingerprints").mkdir()
    plan: list[dict[str, Any]] = []
    digests = []
    for index, scenario in enumerate(scenarios):
        doctor, fingerprint = probes[2 * index], probes[2 * index + 1]
        path = CACHE / "fingerprints" / f"{index}.json"
        path.write_text(fingerprint["stdout"])
        try:
            digests.append(json.loads(fingerprint["stdout"])["digest"])
        except ValueError:
            digests.append("0" * 64)
        try:
            hooks = json.loads(doctor["stdout"])["hooks"]
            simulate = bool(json.loads(doctor["stdout"])["platform"]["activations"])
        except (ValueError, KeyError):
            hooks, simulate = {"targets": [], "resolution_hooks": []}, False
        targets = [t["target"] for t in hooks["targets"]][:4] + hooks.get(
            "sglang_registry_targets", []
        )[:2]
        steps = list(dict.fromkeys(h["step"] for h in hooks["resolution_hooks"]))[:2]
        argsets: list[list[str]] = [
            ["list"],
            ["list", "--json"],
            ["list", "--namespace", "multimodal_gen"],
            ["doctor"],
            ["doctor", "--json"],
            ["doctor", "--strict"],
            ["doctor", "--strict", "--json"],
            ["doctor", "--import-targets"],
            ["doctor", "--import-targets", "--json"],
            ["doctor", "-n", "multimodal_gen", "--json"],
            ["fingerprint"],
            ["fingerprint", "--json"],
            ["fingerprint", "--strict"],
            ["fingerprint", "--compare", str(path)],
            ["fingerprint", "--compare", str(path), "--json"],
            ["fingerprint", "--compare", digests[-1][:12]],
            ["explain", "json.dumps"],
            ["explain", "json.dumps", "--json"],
            ["explain", "sglang.srt.managers.scheduler.Scheduler.event_loop_normal"],
            ["explain", "sglang.srt.managers.schedulr.Scheduler.run", "--json"],
            ["explain", "get_attn_backend"],
        ]
        for target in [*targets, *steps]:
            argsets += [["explain", target], ["explain", target, "--json"]]
        for target in targets[:2]:
            argsets += [
                ["explain", target, "--import-targets"],
                ["explain", target, "--strict", "--json"],
            ]
        if index:  # another node: the previous scenario's fingerprint
            other = CACHE / "fingerprints" / f"{index - 1}.json"
            argsets += [
                ["fingerprint", "--compare", str(other)],
                ["fingerprint", "--compare", str(other), "--json", "--strict"],
                ["fingerprint", "--compare", digests[-2]],
            ]
        if simulate and index % 3 == 0:  # torch's import makes these slow: a third of them
            argsets += [
                ["doctor", "--simulate", "npu"],
                ["doctor", "--json", "--simulate", "npu", "--simulate-backend", "torch_npu"],
            ]
        plan += [
            {**scenario, "args": [a.replace(str(CACHE), "{CACHE}") for a in args]}
            for args in argsets
        ]
    empty = {**scenarios[0], "stdout_closed": False}
    plan += [{**empty, "args": args} for args in _once()]
    return plan


def _once() -> list[list[str]]:
    """Invocations that do not depend on the installed plugins: contract, usage errors, help."""
    return [
        ["contract"],
        ["contract", "--json"],
        ["contract", "--strict"],
        ["contract", "--diff", "0.5.22", "0.5.23"],
        ["contract", "--diff", "0.5.11", "0.5.23", "--json"],
        ["contract", "--diff", "0.5.11", "0.5.23"],
        ["contract", "--diff", "0.5.23", "0.5.11"],
        ["contract", "--diff", "0.5.23", "0.5.23"],
        ["contract", "--diff", "0.5.1", "0.5.23"],
        ["contract", "-n", "multimodal_gen", "--json"],
        [],
        ["--help"],
        ["--version"],
        ["list", "--help"],
        ["doctor", "--help"],
        ["explain", "--help"],
        ["fingerprint", "--help"],
        ["contract", "--help"],
        ["schema"],
        ["schema", "--json"],
        ["nosuch"],
        ["doctor", "--no-such-option"],
        ["list", "--namespace", "nosuch"],
        ["--json", "doctor"],
        ["-n", "multimodal_gen", "--json", "list"],
        ["explain"],
        ["explain", "a..b"],
        ["explain", ""],
        ["explain", "pkg.mod:"],
        ["explain", "pkg.mod:Class.method", "--json"],
        ["doctor", "--simulate", "np-u"],
        ["doctor", "--simulate", "cpu"],
        ["doctor", "--simulate", "nn"],
        ["doctor", "--simulate", "meta"],
        ["doctor", "--simulate-backend", "torch_npu"],
        ["doctor", "--simulate-count", "2"],
        ["doctor", "--simulate", "npu", "--simulate-count", "0"],
        ["doctor", "--simulate", "npu", "--simulate-backend", "json"],
        ["doctor", "--simulate", "npu", "--simulate-backend", "json.x"],
        ["doctor", "--simulate", "npu", "--simulate-backend", "1bad"],
        ["doctor", "--simulate", "npu", "--simulate-count", "2", "--simulate-backend", "vend.ext"],
        ["list", "--simulate", "npu", "--json"],
        ["fingerprint", "--compare", "3f2a9c01"],
        ["fingerprint", "--compare", "no-such-file.json"],
        ["fingerprint", "--compare", "/dev/null"],
        ["fingerprint", "--compare", "/dev/zero"],
        ["fingerprint", "--compare", "/"],
        ["fingerprint", "--compare", "0" * 65],
        ["fingerprint", "--compare", "a" * 64],
        ["-v", "list"],
        ["-vv", "doctor", "--json"],
        ["run"],
        ["run", "--help"],
    ]


# ---- record and compare ------------------------------------------------------------------------


def _invocations() -> list[dict[str, Any]]:
    plan = json.loads((CACHE / "invocations.json").read_text())
    return [{**i, "args": [a.replace("{CACHE}", str(CACHE)) for a in i["args"]]} for i in plan]


def _key(invocation: dict[str, Any]) -> str:
    return json.dumps(invocation, sort_keys=True)


def record(file: Path, jobs: int) -> dict[str, Any]:
    invocations = _invocations()
    results = run_all(invocations, jobs)
    outputs = {_key(i): r for i, r in zip(invocations, results, strict=True)}
    with gzip.open(file, "wt", encoding="utf-8") as out:
        json.dump(outputs, out)
    statuses: dict[Any, int] = {}
    for r in results:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    print(f"{len(outputs)} invocations recorded in {file}; exit statuses {statuses}")
    return outputs


def compare(file: Path, jobs: int) -> int:
    with gzip.open(file, "rt", encoding="utf-8") as handle:
        before = json.load(handle)
    invocations = [i for i in _invocations() if _key(i) in before]
    results = run_all(invocations, jobs)
    differ = 0
    for invocation, now in zip(invocations, results, strict=True):
        was = before[_key(invocation)]
        # normalised again: a file recorded before a rule was added
        was = {k: v if k == "status" else normalise(v, RUNTIME) for k, v in was.items()}
        if was == now:
            continue
        differ += 1
        if differ <= 10:
            print(f"--- {' '.join(invocation['args'])} (in {invocation['cwd']})")
            for field in ("status", "stdout", "stderr"):
                if was[field] != now[field]:
                    print(f"  {field}:")
                    print(
                        "".join(
                            difflib.unified_diff(
                                str(was[field]).splitlines(True),
                                str(now[field]).splitlines(True),
                                n=1,
                            )
                        )
                    )
    print(f"{len(invocations)} invocations compared with {file}: {differ} differ")
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["harvest", "record", "compare"])
    parser.add_argument("file", nargs="?", type=Path)
    parser.add_argument("--jobs", "-j", type=int, default=2)
    args = parser.parse_args()
    if args.action == "harvest":
        harvest(args.jobs)
        return 0
    if args.file is None:
        parser.error(f"{args.action} needs FILE")
    if args.action == "record":
        record(args.file, args.jobs)
        return 0
    return compare(args.file, args.jobs)


if __name__ == "__main__":
    sys.exit(main())
