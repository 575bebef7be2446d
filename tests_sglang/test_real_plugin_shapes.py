"""Four real plugins, as shapes: each behaviour on SGLang 0.5.23 and on the runtime, and the table
of docs/sglang.md.

Every behaviour of :mod:`real_plugins` runs our plugin written the way the real one is (its shape,
installed as a distribution under the real names) in a fresh process: on the released SGLang, and
under ``sglang-plugins run``, where the runtime is SGLang's plugin layer (the adopted SGLang runs
the same code). Each side's outcome is asserted; where the runtime's expectation waits for work not
merged yet, the runtime side is a strict xfail naming that work. The observed outcomes become the
"real plugins" table in docs/sglang.md (between its markers). ``test_real_plugins.py`` holds the
real sources to the same verdicts when a snapshot of them is given."""

from __future__ import annotations

from pathlib import Path

import pytest
from generated_docs import sync_section
from real_plugins import BEHAVIOURS, PLUGINS, SHAPES, WORLDS, Behaviour, strip_paths, verdict

pytestmark = pytest.mark.subprocess

RESULTS: dict[tuple[str, str], str] = {}
Sites = dict[str, Path]


@pytest.fixture(scope="module")
def shape_sites(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return {name: make(tmp_path_factory.mktemp(f"shape-{name}")) for name, make in SHAPES.items()}


def _cases() -> list[object]:
    cases = []
    for behaviour in BEHAVIOURS:
        for world in WORLDS:
            marks = [pytest.mark.xfail(reason=behaviour.pending, strict=True)]
            pending = world == "runtime" and behaviour.pending
            name = f"{behaviour.id}-{world}"
            cases.append(pytest.param(behaviour, world, id=name, marks=marks if pending else []))
    return cases


@pytest.mark.parametrize(("behaviour", "world"), _cases())
def test_the_shape_behaves_as_stated(behaviour: Behaviour, world: str, shape_sites: Sites) -> None:
    outcome = strip_paths(behaviour.observe(world, [shape_sites[behaviour.shape]]))
    RESULTS[(behaviour.id, world)] = outcome
    assert outcome == getattr(behaviour, world), f"{behaviour.title} [{world}]: {outcome!r}"


def test_every_difference_says_why_and_every_pending_expectation_names_its_work() -> None:
    for behaviour in BEHAVIOURS:
        assert behaviour.plugin in PLUGINS and behaviour.shape in SHAPES
        if behaviour.sglang != behaviour.runtime:
            assert behaviour.why, behaviour.id
        if behaviour.pending:
            assert behaviour.pending.strip(), behaviour.id


def render_table() -> str:
    lines = [
        "| plugin | behaviour | SGLang 0.5.23 | sglang_plugin_runtime | verdict |",
        "|---|---|---|---|---|",
    ]
    for behaviour in BEHAVIOURS:
        plugin = PLUGINS[behaviour.plugin]
        theirs = RESULTS[(behaviour.id, "sglang")]
        observed = RESULTS[(behaviour.id, "runtime")]
        ours = behaviour.runtime
        if observed != ours:  # pending: what the runtime will do, and what it does today
            ours = f"{behaviour.runtime} (pending: {behaviour.pending}; today: {observed})"
        cells = [
            plugin.title,
            behaviour.title,
            theirs,
            ours,
            verdict(behaviour, theirs, behaviour.runtime),
        ]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    same = sum(b.sglang == b.runtime for b in BEHAVIOURS)
    pending = sum(bool(b.pending) for b in BEHAVIOURS)
    lines += [
        "",
        f"{len(BEHAVIOURS)} behaviours of {len(PLUGINS)} plugins: {same} the same on both, "
        f"{len(BEHAVIOURS) - same} differ on purpose (each says why); {pending} runtime "
        "expectations wait for "
        "the work named in their row (strict xfails until it lands).",
        "",
        "| plugin | sources read | what it does that matters |",
        "|---|---|---|",
    ]
    for plugin in PLUGINS.values():
        read = f"`{plugin.repo}` at `{plugin.commit[:12]}`, {plugin.read}"
        lines.append(f"| {plugin.title} | {read} | {plugin.does} |")
    return "\n".join(lines)


def test_the_doc_carries_the_generated_table() -> None:
    """Runs last: docs/sglang.md between the markers is exactly the table this run observed."""
    missing = [(b.id, w) for b in BEHAVIOURS for w in WORLDS if (b.id, w) not in RESULTS]
    if missing:
        pytest.skip(f"not every behaviour ran in this session ({len(missing)} missing): no table")
    sync_section("real-plugins", render_table(), "tests_sglang/test_real_plugin_shapes.py")
