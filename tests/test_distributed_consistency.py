"""check_plugin_consistency() in real torch.distributed jobs: ``python -m torch.distributed.run``
with 3 ranks on gloo, CPU, over fake installed distributions. One rank at a time is made to differ
the way a node does in the field (another ``SGLANG_PLUGINS``, another version of a plugin first on
its path, a device its platform plugin does not find), and every rank must reach the same verdict:
all return, or all raise naming the odd rank and item.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from _plugin_site import RUNTIME_SRC, PluginSite

pytest.importorskip("torch.distributed")

RANKS = 3

# Each rank applies its own differences (environment, a site folder first on sys.path) before it
# imports the runtime, as a node with another installation would, then does what SGLang's scheduler
# does: load_plugins(), create the process group, check. Every check's outcome goes to
# out/rank-N.json.
WORKER = textwrap.dedent(
    """
    import datetime, json, os, sys

    rank = os.environ["RANK"]
    spec = json.loads(os.environ["CONSISTENCY_SPEC"])
    mine = spec["per_rank"].get(rank, {})
    os.environ.update(mine.get("env", {}))
    for folder in reversed(mine.get("path_first", [])):
        sys.path.insert(0, folder)

    import torch.distributed as dist
    from sglang_plugin_runtime.distributed import PluginConsistencyError, check_plugin_consistency
    from sglang_plugin_runtime.plugins import load_plugins

    load_plugins()
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    outcomes = []
    import sglang_plugin_runtime.distributed as consistency

    working = consistency.plugin_fingerprint
    for modes in spec["calls"]:
        os.environ["SGLANG_PLUGINS_CONSISTENCY"] = modes.get(rank, modes["*"])
        # a bug in the runtime on this rank only, injected for this call
        if modes.get("break") == rank:
            consistency.plugin_fingerprint = lambda namespace: 1 / 0
        else:
            consistency.plugin_fingerprint = working
        try:
            result = check_plugin_consistency()
        except PluginConsistencyError as exc:
            outcomes.append({"outcome": "raised", "message": str(exc),
                             "differences": [d.to_dict() for d in exc.differences]})
        else:
            outcomes.append({"outcome": "returned", "consistent": result.consistent,
                             "mode": result.mode,
                             "digest": result.fingerprint.digest,
                             "differences": [d.to_dict() for d in result.differences]})
    with open(os.path.join(spec["out"], f"rank-{rank}.json"), "w") as handle:
        json.dump(outcomes, handle)
    dist.destroy_process_group()
    """
)

TIMER = """
from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookType

def timed(original, *args, **kwargs):
    return original(*args, **kwargs)

def register():
    HookRegistry.register("demo_target.work", timed, HookType.AROUND)
"""


def populate(site: PluginSite, timer_version: str = "1.0") -> None:
    """Platform plugin acme (finds its device unless ACME_DEVICE_ABSENT is set), general plugins
    timer and idle."""
    site.add_platform(
        "acme-npu",
        "acme",
        "acmenpu",
        "import os\n            return None if os.environ.get('ACME_DEVICE_ABSENT') else __name__ "
        "+ '.{cls}'",
    )
    site.add(
        "acme-timer",
        timer_version,
        {"sglang.srt.plugins": {"timer": "acme_timer:register"}},
        {"acme_timer.py": TIMER, "demo_target.py": "def work(x):\n    return x\n"},
    )
    site.add(
        "idle-dist",
        "0.1",
        {"sglang.srt.plugins": {"idle": "idle_mod:register"}},
        {"idle_mod.py": "def register(): pass\n"},
    )


def run_job(
    tmp_path: Path,
    site: PluginSite,
    per_rank: dict[int, dict[str, Any]] | None = None,
    calls: list[dict[str, str]] | None = None,
) -> list[list[dict[str, Any]]]:
    """Run the worker on ``RANKS`` ranks; return each rank's outcomes, one per entry of
    ``calls``."""
    out = tmp_path / "out"
    out.mkdir()
    worker = tmp_path / "worker.py"
    worker.write_text(WORKER)
    spec = {
        "per_rank": {str(rank): settings for rank, settings in (per_rank or {}).items()},
        "calls": calls or [{"*": "error"}],
        "out": str(out),
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_")}
    env.update(
        PYTHONPATH=os.pathsep.join([str(site.root), str(RUNTIME_SRC)]),
        CONSISTENCY_SPEC=json.dumps(spec),
        OMP_NUM_THREADS="1",
        PYTHONWARNINGS="ignore",
    )
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={RANKS}",
        str(worker),
    ]
    proc = subprocess.run(
        command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180, check=False
    )
    assert proc.returncode == 0, (
        f"job failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    )
    return [json.loads((out / f"rank-{rank}.json").read_text()) for rank in range(RANKS)]


def the_same_on_every_rank(outcomes: list[list[dict[str, Any]]], call: int = 0) -> dict[str, Any]:
    """The outcome of ``call``, checked to be identical on every rank (same verdict, same
    message)."""
    first = outcomes[0][call]
    for rank, rank_outcomes in enumerate(outcomes):
        mine = {k: v for k, v in rank_outcomes[call].items() if k != "digest"}
        assert mine == {k: v for k, v in first.items() if k != "digest"}, (
            f"rank {rank} decided differently"
        )
    return first


def item(outcome: dict[str, Any], name: str) -> dict[str, Any]:
    matches = [d for d in outcome["differences"] if d["item"] == name]
    assert matches, f"no difference {name!r} in {[d['item'] for d in outcome['differences']]}"
    return matches[0]


def values(difference: dict[str, Any]) -> list[tuple[str, list[int]]]:
    return [(v["value"], v["ranks"]) for v in difference["variants"]]


def test_ranks_with_the_same_plugins_all_return_with_the_digest_the_cli_prints(
    tmp_path: Path, site: PluginSite
) -> None:
    populate(site)
    outcomes = run_job(
        tmp_path, site, calls=[{"*": "error"}, {"*": "warn"}, {"*": "warn", "break": "1"}]
    )
    for call in (0, 1):
        outcome = the_same_on_every_rank(outcomes, call)
        assert (
            outcome["outcome"] == "returned"
            and outcome["consistent"]
            and outcome["differences"] == []
        )
    assert [o[0]["mode"] for o in outcomes] == ["error"] * RANKS
    digests = {rank_outcomes[0]["digest"] for rank_outcomes in outcomes}
    cli = site.run(
        "import sys; from sglang_plugin_runtime._cli import main; sys.exit(main(['fingerprint', "
        "'--json']))"
    )
    assert digests == {json.loads(cli.stdout)["digest"]}
    # A rank whose fingerprint cannot be built still joins the exchange: every rank raises, none
    # waits.
    broken = the_same_on_every_rank(outcomes, 2)
    assert broken["outcome"] == "raised"
    assert "building the plugin fingerprint failed on rank 1" in broken["message"]
    assert "ZeroDivisionError: division by zero" in broken["message"]


def test_without_a_process_group_it_raises_and_with_one_rank_it_returns(site: PluginSite) -> None:
    populate(site)
    result = site.run_json(
        """
        import json, os, tempfile
        import torch.distributed as dist
        from sglang_plugin_runtime.distributed import check_plugin_consistency
        from sglang_plugin_runtime.plugins import load_plugins

        load_plugins()
        try:
            check_plugin_consistency()
        except RuntimeError as exc:
            before = str(exc)
        store = os.path.join(tempfile.mkdtemp(), "store")
        dist.init_process_group("gloo", init_method="file://" + store, rank=0, world_size=1)
        single = check_plugin_consistency()
        dist.destroy_process_group()
        print(json.dumps([before, single.consistent, single.world_size, single.mode]))
        """,
        env={"PYTHONWARNINGS": "ignore"},
    )
    before, *single = result
    assert "needs an initialised torch.distributed process group" in before
    assert single == [True, 1, "error"]


@pytest.mark.parametrize(
    ("value", "mode"), [("", "error"), ("warn", "warn"), (" OFF ", "off"), ("loud", "error")]
)
def test_the_mode_comes_from_the_environment_and_an_unknown_value_checks(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, value: str, mode: str
) -> None:
    from sglang_plugin_runtime.distributed import consistency_mode

    monkeypatch.setenv("SGLANG_PLUGINS_CONSISTENCY", value)
    assert consistency_mode() == mode
    assert ("'loud' is not one of error, warn, off" in caplog.text) == (value == "loud")


def test_a_rank_with_another_sglang_plugins_makes_every_rank_raise_naming_it(
    tmp_path: Path, site: PluginSite
) -> None:
    populate(site)
    outcomes = run_job(
        tmp_path,
        site,
        per_rank={1: {"env": {"SGLANG_PLUGINS": "idle"}}},
        calls=[{"*": "error"}, {"*": "warn"}, {"0": "warn", "*": "error"}],
    )
    raised = the_same_on_every_rank(outcomes, 0)
    assert raised["outcome"] == "raised"
    assert values(item(raised, "general plugin 'timer'")) == [
        ("loaded, acme-timer 1.0", [0, 2]),
        ("skipped-allowlist, acme-timer 1.0", [1]),
    ]
    assert [(d["item"], d["severity"]) for d in raised["differences"]] == [
        ("general plugin 'timer'", "error"),
        ("hooks on 'demo_target.work'", "error"),
    ]
    assert values(item(raised, "hooks on 'demo_target.work'")) == [
        ("around acme_timer.timed [timer from acme-timer]", [0, 2]),
        ("no hooks", [1]),
    ]
    message = raised["message"]
    assert "every rank raises this error" in message
    assert (
        "general plugin 'timer'" in message
        and "skipped-allowlist, acme-timer 1.0  on rank 1" in message
    )
    assert "SGLANG_PLUGINS_CONSISTENCY=warn" in message
    # warn on every rank: every rank returns, the differences reported but not raised.
    warned = the_same_on_every_rank(outcomes, 1)
    assert (warned["outcome"], warned["mode"], warned["consistent"]) == ("returned", "warn", False)
    # warn on rank 0 only: the strictest mode applies on every rank, so no rank goes on alone.
    assert the_same_on_every_rank(outcomes, 2)["outcome"] == "raised"


def test_a_rank_seeing_another_plugin_version_first_on_its_path_is_named(
    tmp_path: Path, site: PluginSite
) -> None:
    populate(site)
    newer = PluginSite(tmp_path / "rank2-site")
    newer.root.mkdir()
    newer.add(
        "acme-timer",
        "1.1",
        {"sglang.srt.plugins": {"timer": "acme_timer:register"}},
        {"acme_timer.py": TIMER, "demo_target.py": "def work(x):\n    return x\n"},
    )
    outcomes = run_job(tmp_path, site, per_rank={2: {"path_first": [str(newer.root)]}})
    raised = the_same_on_every_rank(outcomes)
    assert raised["outcome"] == "raised"
    assert [d["item"] for d in raised["differences"]] == ["general plugin 'timer'"]
    assert values(item(raised, "general plugin 'timer'")) == [
        ("loaded, acme-timer 1.0", [0, 1]),
        ("loaded, acme-timer 1.1", [2]),
    ]
    assert "loaded, acme-timer 1.1  on rank 2" in raised["message"]


def test_a_rank_whose_platform_plugin_finds_no_device_is_named(
    tmp_path: Path, site: PluginSite
) -> None:
    populate(site)
    outcomes = run_job(tmp_path, site, per_rank={1: {"env": {"ACME_DEVICE_ABSENT": "1"}}})
    raised = the_same_on_every_rank(outcomes)
    assert raised["outcome"] == "raised"
    platform = item(raised, "platform")
    assert platform["severity"] == "error"
    assert values(platform) == [
        ("acme_platform.AcmePlatform (plugin 'acme', acme-npu 1.0)", [0, 2]),
        ("sglang_plugin_runtime.platforms.interface.SRTPlatform (no plugin: the fallback)", [1]),
    ]
    assert values(item(raised, "platform plugin 'acme', activate()")) == [
        ("activated, acme-npu 1.0", [0, 2]),
        ("returned None (hardware not found), acme-npu 1.0", [1]),
    ]


def test_the_consistency_error_is_a_runtime_error_as_sglang_raises() -> None:
    from sglang_plugin_runtime.distributed import PluginConsistencyError

    assert issubclass(PluginConsistencyError, RuntimeError)
