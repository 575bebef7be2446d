"""What ``check_plugin_consistency()`` costs a torch.distributed job at 3 ranks (gloo, CPU).

    # 60 iterations; writes .cache/bench/consistency.json
    .venv/bin/python benchmarks/consistency.py
    # 5 iterations (smoke run)
    .venv/bin/python benchmarks/consistency.py --quick
    # also refresh its section of docs/benchmarks.md
    .venv/bin/python benchmarks/consistency.py --update-docs

Two jobs of ``python -m torch.distributed.run --standalone --nproc-per-node 3``, over a fake
installation of one platform plugin and five general plugins that hook 20 targets: one where the
ranks agree, one where rank 2 sees another version of one plugin
(``SGLANG_PLUGINS_CONSISTENCY=warn``, so the call returns and can be repeated). In each rank, after
``load_plugins()``, platform selection and a warm-up barrier, every iteration times each variant
once, in turn. A collective ends when its slowest member does, so each iteration's figure is the
slowest rank's time; the table gives the median (min) over iterations. SGLang has nothing to compare
with; the alternative design (torch's ``all_gather_object`` of the whole fingerprint, which pickles
and needs numpy) is measured side by side instead, when numpy is importable (the harness's pinned
light dependencies).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

from _common import CACHE, REPO, machine_info  # noqa: E402 (this folder, on sys.path above)

RANKS = 3
PLUGINS = 5
TARGETS_PER_PLUGIN = 4
START, END = "<!-- bench:consistency:start -->", "<!-- bench:consistency:end -->"

VARIANTS = {
    "fingerprint": "plugin_fingerprint(): build + sha256, no communication",
    "check": "check_plugin_consistency()",
    "all_gather_object": "torch all_gather_object of the full fingerprint (the alternative)",
    "barrier": "dist.barrier() (the floor of any collective)",
}


def _write_site(root: Path, version: str = "1.0") -> None:
    sys.path.insert(0, str(REPO / "runtime"))
    from sglang_plugin_runtime.testing import write_fake_distribution

    platform = textwrap.dedent(
        """
        from sglang_plugin_runtime.platforms.device_mixin import PlatformEnum
        from sglang_plugin_runtime.platforms.interface import SRTPlatform

        class BenchPlatform(SRTPlatform):
            _enum = PlatformEnum.OOT
            device_name = "bench"
            device_type = "cpu"

        def activate():
            return "bench_platform.BenchPlatform"
        """
    )
    write_fake_distribution(
        root,
        "bench-platform",
        "1.0",
        {"sglang.srt.platforms": {"bench": "bench_platform:activate"}},
        {"bench_platform.py": platform},
    )
    targets = "".join(
        f"def t{i}(x):\n    return x\n\n" for i in range(PLUGINS * TARGETS_PER_PLUGIN)
    )
    write_fake_distribution(root, "bench-targets", "1.0", None, {"bench_targets.py": targets})
    for p in range(PLUGINS):
        lines = [
            "from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookType",
            "def around(original, *args, **kwargs):",
            "    return original(*args, **kwargs)",
            "def register():",
        ]
        lines += [
            f"    HookRegistry.register('bench_targets.t{p * TARGETS_PER_PLUGIN + i}', around, "
            "HookType.AROUND)"
            for i in range(TARGETS_PER_PLUGIN)
        ]
        write_fake_distribution(
            root,
            f"bench-plugin-{p}",
            version if p == 0 else "1.0",
            {"sglang.srt.plugins": {f"plugin{p}": f"bench_plugin_{p}:register"}},
            {f"bench_plugin_{p}.py": "\n".join(lines) + "\n"},
        )


def worker(spec: dict) -> None:
    """One rank: set up like SGLang's scheduler, then time each variant ``iterations`` times."""
    rank = os.environ["RANK"]
    for folder in reversed(spec["path_first"].get(rank, [])):
        sys.path.insert(0, folder)
    import datetime as dt

    import torch.distributed as dist

    from sglang_plugin_runtime.distributed import check_plugin_consistency, plugin_fingerprint
    from sglang_plugin_runtime.platforms import current_platform
    from sglang_plugin_runtime.plugins import load_plugins

    load_plugins()
    assert current_platform.device_name == "bench"
    dist.init_process_group("gloo", timeout=dt.timedelta(seconds=120))
    dist.barrier()
    import importlib.util

    # all_gather_object decodes through numpy; without it, that row is left out.
    has_numpy = importlib.util.find_spec("numpy") is not None
    variants = [v for v in VARIANTS if has_numpy or v != "all_gather_object"]
    checks = []

    def run(variant: str) -> None:
        if variant == "fingerprint":
            assert len(plugin_fingerprint().digest) == 64
        elif variant == "check":
            checks.append(check_plugin_consistency())
        elif variant == "all_gather_object":
            gathered = [None] * dist.get_world_size()
            dist.all_gather_object(gathered, plugin_fingerprint().to_dict())
            assert len({json.dumps(g, sort_keys=True) for g in gathered}) >= 1
        else:
            dist.barrier()

    # one untimed round: first-use costs (gloo buffers, imports) are not the call's
    for variant in variants:
        run(variant)
    times: dict[str, list[float]] = {v: [] for v in variants}
    for _ in range(spec["iterations"]):
        for variant in variants:
            dist.barrier()  # start every timed call together
            start = time.perf_counter()
            run(variant)
            times[variant].append((time.perf_counter() - start) * 1e3)
    fingerprint = plugin_fingerprint()
    result = {
        "times_ms": times,
        "consistent": [c.consistent for c in checks],
        "differences": [d.item for d in checks[-1].differences],
        "fingerprint_bytes": len(json.dumps(fingerprint.to_dict(), sort_keys=True)),
    }
    Path(spec["out"], f"rank-{rank}.json").write_text(json.dumps(result))
    dist.destroy_process_group()


def run_job(
    python: str,
    site: Path,
    out: Path,
    iterations: int,
    path_first: dict,
    mode: str,
    extra_path: list[str],
) -> list[dict]:
    out.mkdir(parents=True)
    spec = {"iterations": iterations, "out": str(out), "path_first": path_first}
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_") and k != "PYTHONPATH"}
    env.update(
        PYTHONPATH=os.pathsep.join([str(site), *extra_path, str(REPO / "runtime")]),
        SGLANG_PLUGINS_CONSISTENCY=mode,
        OMP_NUM_THREADS="1",
        PYTHONWARNINGS="ignore",
    )
    command = [
        python,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={RANKS}",
        str(Path(__file__).resolve()),
        "--worker",
        json.dumps(spec),
    ]
    proc = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"job failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
        )
    return [json.loads((out / f"rank-{rank}.json").read_text()) for rank in range(RANKS)]


def slowest_rank(ranks: list[dict], variant: str) -> list[float]:
    """Per iteration, the slowest rank's time: when the collective is over for everyone."""
    series = [r["times_ms"][variant] for r in ranks]
    return [max(values) for values in zip(*series, strict=True)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="5 iterations")
    parser.add_argument("--iterations", type=int, default=None)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--json", dest="json_path", default=str(CACHE / "consistency.json"))
    parser.add_argument(
        "--update-docs", action="store_true", help="write the table into docs/benchmarks.md"
    )
    parser.add_argument(
        "--no-numpy", action="store_true", help="skip the all_gather_object row (no light deps)"
    )
    args = parser.parse_args(argv)
    if args.worker:
        worker(json.loads(args.worker))
        return 0
    iterations = args.iterations or (5 if args.quick else 60)
    started = time.perf_counter()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f}s] {message}", file=sys.stderr, flush=True)

    extra_path: list[str] = []
    if not args.no_numpy:
        try:
            from _prepare import ensure_light_deps

            extra_path = [str(ensure_light_deps(args.python, log))]
        except Exception as exc:  # no index reachable: measure ours alone
            log(
                f"numpy unavailable ({type(exc).__name__}: {exc}); the all_gather_object row is "
                "skipped"
            )
    with tempfile.TemporaryDirectory(prefix="bench-consistency-") as tmp:
        base, odd = Path(tmp, "site"), Path(tmp, "rank2-site")
        _write_site(base)
        _write_site(odd, version="1.1")
        log(f"job 1: {RANKS} ranks agree, {iterations} iterations")
        agree = run_job(args.python, base, Path(tmp, "agree"), iterations, {}, "error", extra_path)
        log(
            f"job 2: rank 2 sees bench-plugin-0 1.1 first on its path (warn mode), {iterations} "
            "iterations"
        )
        differ = run_job(
            args.python,
            base,
            Path(tmp, "differ"),
            iterations,
            {"2": [str(odd)]},
            "warn",
            extra_path,
        )
    assert all(all(r["consistent"]) for r in agree), "job 1 should agree"
    assert differ[0]["differences"] == ["general plugin 'plugin0'"], differ[0]["differences"]

    rows = []
    for variant, what in VARIANTS.items():
        if variant in agree[0]["times_ms"]:
            rows.append(
                {
                    "variant": variant,
                    "job": "agree",
                    "what": what,
                    "values_ms": slowest_rank(agree, variant),
                }
            )
    values = slowest_rank(differ, "check")
    rows.append(
        {
            "variant": "check",
            "job": "differ",
            "what": "check_plugin_consistency(), rank 2 differs (warn)",
            "values_ms": values,
        }
    )
    info = machine_info(args.python)
    payload = {
        "generated": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "ranks": RANKS,
        "iterations": iterations,
        "machine": info,
        "fingerprint_bytes": agree[0]["fingerprint_bytes"],
        "hook_targets": PLUGINS * TARGETS_PER_PLUGIN,
        "rows": rows,
    }
    table = render(payload)
    print(table)
    Path(args.json_path).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json_path).write_text(json.dumps(payload, indent=2))
    if args.update_docs:
        docs = REPO / "docs" / "benchmarks.md"
        text = docs.read_text()
        head, _, rest = text.partition(START)
        _, _, tail = rest.partition(END)
        docs.write_text(f"{head}{START}\n{table}\n{END}{tail}")
        log(f"updated {docs.relative_to(REPO)}")
    return 0


def render(payload: dict) -> str:
    info = payload["machine"]
    summary = (
        f"Run of {payload['generated']}: {payload['ranks']} ranks on one machine ({info['cpu']}, "
        f"{info['cpus']} CPUs), gloo, Python {info['python']}, torch {info['torch']}; "
        f"{payload['iterations']} iterations; a fingerprint of {payload['fingerprint_bytes']} "
        f"bytes of JSON (1 platform, 5 general plugins, {payload['hook_targets']} hooked targets)."
    )
    lines = [
        summary,
        "",
        "| call | ranks | ms, slowest rank: median (min) |",
        "|---|---|---:|",
    ]
    for row in payload["rows"]:
        values = row["values_ms"]
        ranks = "agree" if row["job"] == "agree" else "rank 2 differs"
        lines.append(
            f"| {row['what']} | {ranks} | {statistics.median(values):.3f} ({min(values):.3f}) |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
