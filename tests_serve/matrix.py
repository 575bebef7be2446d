"""The real-server rows of the compatibility matrix (docs/sglang.md), from what this run observed.

Each check of the tier that is one row records its world's outcome with :func:`record`, which
asserts the outcome the row expects there; the last test of the run writes the rows between the
``real-server-matrix`` markers with the matrix's own mechanism (``generated_docs.sync_section``).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from generated_docs import DOC, REPO_ROOT, sync_section

WORLDS = ("released", "launcher", "adopted")
PROCESSES_DOC = REPO_ROOT / "docs" / "processes.md"


@dataclass(frozen=True)
class Row:
    title: str
    released: str
    runtime: str  # the launcher's and the adopted SGLang's outcome (one runtime)
    why: str = ""  # why the runtime's differs (required when it does)

    def expected(self, world: str) -> str:
        return self.released if world == "released" else self.runtime


ROWS = {
    "hook": Row(
        "A generated AROUND hook on `Scheduler.__init__`",
        "fires in `sglang::scheduler`",
        "fires in `sglang::scheduler`",
    ),
    "generate": Row("`/generate` with every plugin of the row above installed", "200", "200"),
    "platform": Row(
        "A generated platform plugin for the CPU, no `--attention-backend`",
        "selected in every server process; SGLang picks `torch_native` itself",
        "selected in every server process; SGLang picks `torch_native` itself",
    ),
    "register": Row(
        "A general plugin whose `register()` raises",
        "`Failed to execute general plugin: NAME`, traceback; serves",
        "`Plugin 'NAME' (distribution DIST VERSION) failed: ...`, traceback; serves",
        "The runtime's one failure policy: the plugin, its distribution and version, the error.",
    ),
    "misspelled": Row(
        "A hook on a misspelled module (`sglang.srt.managers.schedular`)",
        "`Failed to apply hooks to TARGET`, `AttributeError` without the plugin",
        "`Hooks on TARGET stay pending: module ... cannot be found`, with hook and plugin",
        "SGLang's `pkgutil.resolve_name` reports a missing attribute and names no plugin; the "
        "runtime names the module that cannot be found, the hook and its plugin.",
    ),
    "import": Row(
        "The module a hook targets fails to import (a broken dependency of the scheduler)",
        "misleading `AttributeError` first, then the real `ImportError`; exits",
        "the real `ImportError` only; exits",
        "SGLang imports the target at apply time and hides the ImportError behind an "
        "AttributeError (hook_registry.py:191); the runtime waits for the module's own import.",
    ),
    "register_hook": Row(
        "A general plugin whose `register()` registers an AROUND hook on `Scheduler.__init__`, "
        "then raises",
        "its hook fires in `sglang::scheduler`",
        "its hook never fires; serves",
        "The failure policy of SGLang's diffusion loader: a failed plugin is not half-installed.",
    ),
    "unselected": Row(
        "A platform plugin installed but not selected (`activate()` returns None) that registers "
        "a hook on `Scheduler.__init__` when imported",
        "imported in `sglang::scheduler`; its hook fires there",
        "imported in `sglang::scheduler`; its hook never fires",
        "A platform that is not selected patches nothing (an NPU plugin must not patch a CUDA "
        "machine), as in SGLang's diffusion loader.",
    ),
    "startup": Row(
        "A startup plugin (group `sglang.srt.startup_plugins`, generated with "
        "`with_startup_plugin`), no `.pth` file, no `sitecustomize`",
        "never run",
        "runs in every server process before `sglang.srt.server_args` is imported",
        "The early phase an open SGLang proposal names: it runs when the `sglang` package is "
        "imported, so a vendor needs no `.pth` file or `sitecustomize`.",
    ),
    "required": Row(
        "A general plugin of the selected platform's own distribution (`SGLANG_PLATFORM`) whose "
        "`register()` raises",
        "`Failed to execute general plugin: NAME`; start-up goes on",
        "exits non-zero before the scheduler starts, naming the plugin and its distribution",
        "The selected platform's own plugins carry its hardware contract, as in SGLang's "
        "diffusion loader: serving without them would be serving on a half-installed platform.",
    ),
    "broken_platform": Row(
        "A platform class that cannot serve SGLang's calls",
        "exits: the plugin's `get_device_total_memory` raises `AttributeError`",
        "exits: the plugin's `get_device_total_memory` raises `AttributeError`",
    ),
    "layouts": Row(
        "`--dp 2 --tokenizer-worker-num 2`: the processes whose general plugins load",
        "5 of 7: not the 2 tokenizer workers",
        "7 of 7",
        "The tokenizer workers uvicorn spawns never call `load_plugins()` in SGLang 0.5.23; under "
        "the runtime a process loads them when it builds or unpickles a `ServerArgs` (each worker "
        "unpickles its own).",
    ),
    "ray_actor": Row(
        "`RayEngine`: its `ray::SchedulerActor` process",
        "platform only: plugins never loaded, hooks never fire",
        "startup plugins, platform, plugins and hooks",
        "A Ray actor is a process SGLang does not spawn; the runtime loads the plugins first in "
        "`SchedulerActor.__init__`, as SGLang's open proposal for the startup phase does.",
    ),
    "actor_hook": Row(
        "A hook on `SchedulerActor.__init__` (a Ray actor class)",
        "applied in the driver; never fires, nothing says so",
        "fails, saying Ray runs a copy of the class and to hook what the actor calls",
        "Ray builds the actor from a copy of the class it wrapped: a patch of the actor class is "
        "never called, so the runtime refuses it with the reason instead of reporting it applied.",
    ),
    "rank_check": Row(
        "`--tp 2`, a plugin that registers a hook on rank 1 only",
        "serves; no rank compares its plugins",
        "start-up stops: `PluginConsistencyError` naming rank 1, the plugin and the hook",
        "The runtime compares the ranks' plugin fingerprints over SGLang's own world group as soon "
        "as it exists (`init_parallel_runtime`), before anything uses it.",
    ),
}

#: The rows of docs/processes.md's table: one per kind of process SGLang 0.5.23 starts (the layout
#: that starts it), and what each world loads in it.
PROCESS_KINDS = {
    "server": "the server (`python -m sglang.launch_server`; with `--tokenizer-worker-num 2` its "
    "tokenizer router)",
    "tokenizer_worker": "each tokenizer worker (`--tokenizer-worker-num 2`: spawned by uvicorn, "
    "`init_multi_tokenizer` -> `TokenizerWorker`)",
    "dp_controller": "the data-parallel controller (`--dp 2`)",
    "scheduler": "each scheduler (`--dp 2`: one per data-parallel rank)",
    "detokenizer": "the detokenizer",
    "ray_driver": "`RayEngine`'s own process (with `dp_size` > 1, Ray's data-parallel controller "
    "runs in it, as a thread)",
    "ray_actor": "each Ray scheduler actor (`RayEngine`: `ray::SchedulerActor`)",
    "server_args_child": "a process that unpickles a `ServerArgs` (a `spawn` child given one)",
}
PROCESS_OUTCOMES: dict[tuple[str, str], str] = {}
#: What a process that loads everything shows: the four steps, in the order they run.
ALL_STEPS = ("startup plugins", "platform", "plugins", "hooks")


def record_process(kind: str, world: str, steps: list[str]) -> None:
    """What ``world`` ran in a process of ``kind``; every step, under the launcher and adopted."""
    outcome = ", ".join(steps) or "nothing"
    PROCESS_OUTCOMES[kind, world] = outcome
    if world != "released":
        wanted = [s for s in ALL_STEPS if s != "hooks" or kind != "server_args_child"]
        assert steps == wanted, f"{PROCESS_KINDS[kind]} [{world}]: {outcome}"


def render_processes() -> str:
    lines = ["| process | released | launcher | adopted |", "|---|---|---|---|"]
    for kind, title in PROCESS_KINDS.items():
        seen = [PROCESS_OUTCOMES[kind, world] for world in WORLDS]
        lines.append("| " + " | ".join([title, *seen]) + " |")
    return "\n".join(lines) + (
        f"\n\n{len(PROCESS_KINDS)} kinds of process, each observed in the three worlds: which "
        "of startup plugins, platform selection, general plugins and their hooks ran there."
    )


OUTCOMES: dict[tuple[str, str], str] = {}


def record(row: str, world: str, outcome: str) -> None:
    """This world's outcome for ``row``, asserted against what the row expects there."""
    OUTCOMES[row, world] = outcome
    assert outcome == ROWS[row].expected(world), f"{ROWS[row].title} [{world}]: {outcome!r}"


def render() -> str:
    lines = [
        "| behaviour inside `python -m sglang.launch_server` | released | launcher | adopted "
        "| verdict |",
        "|---|---|---|---|---|",
    ]
    for key, row in ROWS.items():
        seen = [OUTCOMES[key, world] for world in WORLDS]
        verdict = "same" if len(set(seen)) == 1 else f"ours differs: {row.why}"
        cells = [c.replace("|", "\\|") for c in (row.title, *seen, verdict)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + f"\n\n{len(ROWS)} behaviours, each observed in the three worlds."


def sync_doc() -> list[str]:
    """Write each table whose every cell this run observed (each is checked even when an earlier
    one was out of date); the tables left out, and why."""
    generator, stale, left = "tests_serve (make test-serve)", [], []
    tables = (
        ("real-server-matrix", render, DOC, missing_rows()),
        ("process-table", render_processes, PROCESSES_DOC, missing_processes()),
    )
    for name, body, doc, gaps in tables:
        if gaps:
            left.append(f"{name}: {len(gaps)} cells not observed in this run")
            continue
        try:
            sync_section(name, body(), generator, doc)
        except pytest.fail.Exception as out_of_date:
            stale.append(str(out_of_date))
    if stale:
        pytest.fail("; ".join(stale), pytrace=False)
    return left


def missing_rows() -> list[tuple[str, str]]:
    return [(key, world) for key in ROWS for world in WORLDS if (key, world) not in OUTCOMES]


def missing_processes() -> list[tuple[str, str]]:
    kinds = [(k, world) for k in PROCESS_KINDS for world in WORLDS]
    return [cell for cell in kinds if cell not in PROCESS_OUTCOMES]
