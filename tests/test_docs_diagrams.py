"""The docs' diagrams say what the code does: each is read back and checked against the real thing.

- selection.md: the two decision-tree flowcharts are walked, way by way; each way is a real
  selection over fake installed plugins in a fresh process, which must end in the rule or error the
  diagram ends in. Every arrow is taken by some way; the rules are the code's ``Rule`` members
  and the errors are the ones the prose names.
- hooks.md: the sequence diagram's hooks are registered on a real ``HookRegistry`` in the order it
  states; a call must run them in the order of its notes, and ``describe()`` must list them in the
  order of its participants.
- processes.md: a real child is started with each start method; what it does again and what it
  inherits must be what the start-method diagram says, and each step of the per-process diagram is
  observed in those processes.

The diagrams are Mermaid, kept to the small subset parsed here; a line outside it fails the test, so
a diagram cannot say something these tests do not read. That the diagrams reach the built pages is
checked in ``tests/test_docs.py``; that a browser draws them, by ``tests/test_docs_browser.py``.
"""

from __future__ import annotations

import ast
import functools
import html
import itertools
import json
import os
import re
import subprocess
import sys
import textwrap
import types
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from _docs_support import DOCS_DIR, REPO_ROOT, mermaid_blocks

# --------------------------------------------------------------------------------------------------
# Reading Mermaid flowcharts and sequence diagrams (the subset the docs use).
# --------------------------------------------------------------------------------------------------

_SHAPES = r"\[\[|\(\[|\{\{|\[|\(|\{"
_NODE = re.compile(
    rf'^(?P<id>\w+)(?P<open>{_SHAPES})"(?P<label>.*)"(?:\]\]|\]\)|\}}\}}|\]|\)|\}})$'
)
_EDGE = re.compile(r'^(?P<src>\w+) -- "(?P<label>[^"]*)" --> (?P<dst>\w+)$')
_CHAIN = re.compile(r"^\w+(?: --> \w+)+$")
_LINK = re.compile(r"^\w+ -\.- \w+$")
_IGNORED = re.compile(
    r'^(?:%%.*|flowchart (?:TD|TB|LR)|direction (?:TB|LR)|subgraph \w+ \["[^"]*"\]|end|classDef '
    r".*|class [\w,]+ \w+)$"
)


def text_of(label: str) -> str:
    """A node or edge label as a reader sees it: tags dropped, line breaks as spaces."""
    return html.unescape(" ".join(re.sub(r"<(?!br/>)[^>]+>", "", label).split("<br/>"))).strip()


def lines_of(label: str) -> list[str]:
    return [html.unescape(re.sub(r"<[^>]+>", "", part)).strip() for part in label.split("<br/>")]


@dataclass
class Flowchart:
    labels: dict[str, str] = field(default_factory=dict)  # node id -> raw label
    edges: list[tuple[str, str, str]] = field(default_factory=list)  # (from, label as read, to)

    def add(self, source: str) -> Flowchart:
        """Read one diagram into this graph; node ids shared by several diagrams are the same
        node."""
        for number, raw in enumerate(source.splitlines(), start=1):
            line = raw.strip()
            if not line or _IGNORED.match(line) or _LINK.match(line):
                continue
            if m := _NODE.match(line):
                self.labels.setdefault(m["id"], m["label"])
            elif m := _EDGE.match(line):
                self.edges.append((m["src"], text_of(m["label"]), m["dst"]))
            elif _CHAIN.match(line):
                ids = line.split(" --> ")
                self.edges.extend((a, "", b) for a, b in itertools.pairwise(ids))
            else:
                raise AssertionError(
                    f"diagram line {number} is outside the Mermaid subset the tests read: {raw!r}"
                )
        return self

    def outgoing(self, node: str) -> list[tuple[str, str, str]]:
        return [edge for edge in self.edges if edge[0] == node]

    def terminals(self) -> list[str]:
        sources = {edge[0] for edge in self.edges}
        targets = {edge[2] for edge in self.edges}
        return sorted(targets - sources)

    def walk(self, start: str, choices: list[str]) -> tuple[str, list[tuple[str, str, str]]]:
        """Follow ``choices`` (edge labels) from ``start``; an only way out needs no choice. Returns
        (end, edges)."""
        node, taken, pending = start, [], list(choices)
        while True:
            out = self.outgoing(node)
            if not out:
                assert not pending, f"the walk reached {node!r} with choices left over: {pending}"
                return node, taken
            if len(out) == 1:
                edge = out[0]
            else:
                assert pending, (
                    f"at {node!r} the diagram offers {[e[1] for e in out]}, and the walk has no "
                    "choice left"
                )
                matches = [e for e in out if e[1] == pending[0]]
                assert matches, (
                    f"at {node!r} there is no arrow labelled {pending[0]!r}, only "
                    f"{[e[1] for e in out]}"
                )
                edge = matches[0]
                pending.pop(0)
            taken.append(edge)
            node = edge[2]


def flowchart(*sources: str) -> Flowchart:
    chart = Flowchart()
    for source in sources:
        chart.add(source)
    return chart


def outcome_of(label: str) -> str:
    """``rule: explicit`` -> ``explicit``; ``PlatformNotFoundError ...`` ->
    ``PlatformNotFoundError``."""
    text = text_of(label)
    if m := re.match(r"rule: ([\w-]+)", text):
        return m[1]
    m = re.match(r"(\w+Error)\b", text)
    assert m, f"a final box must name a rule or an error: {text!r}"
    return m[1]


_PARTICIPANT = re.compile(r"^participant (?P<id>\w+)(?: as (?P<label>.+))?$")
_NOTE = re.compile(r"^Note over (?P<id>\w+): (?P<text>.+)$")
_MESSAGE = re.compile(r"^(?P<src>\w+)(?:->>|-->>)[+-]?(?P<dst>\w+): .+$")


@dataclass
class Sequence:
    participants: list[tuple[str, str]]  # (id, label as read)
    notes: list[str]  # the participant each note is over, in order


def sequence(source: str) -> Sequence:
    participants, notes = [], []
    for number, raw in enumerate(source.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("%%") or line == "sequenceDiagram":
            continue
        if m := _PARTICIPANT.match(line):
            participants.append((m["id"], text_of(m["label"] or m["id"])))
        elif m := _NOTE.match(line):
            notes.append(m["id"])
        elif not _MESSAGE.match(line):
            raise AssertionError(
                f"diagram line {number} is outside the Mermaid subset the tests read: {raw!r}"
            )
    return Sequence(participants, notes)


def _page(name: str) -> str:
    return (DOCS_DIR / name).read_text(encoding="utf-8")


def _run(
    code: str,
    site: Path,
    env: dict[str, str] | None = None,
    args: tuple[str, ...] = (),
    timeout: int = 120,
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` as a script in a fresh process with ``site`` as its installed plugins and no
    SGLANG_* set."""
    base = {
        k: v for k, v in os.environ.items() if not k.startswith("SGLANG_") and k != "PYTHONPATH"
    }
    base.update(env or {})
    base["PYTHONPATH"] = str(site)
    script = site.parent / f"script_{uuid.uuid4().hex[:8]}.py"
    script.write_text(textwrap.dedent(code), encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(script), *args],
        cwd=site.parent,
        env=base,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# --------------------------------------------------------------------------------------------------
# selection.md: the decision tree.
# --------------------------------------------------------------------------------------------------


@functools.cache
def selection_chart() -> Flowchart:
    """The two decision-tree diagrams of selection.md, read as one graph (they share the ``unset``
    box)."""
    return flowchart(*mermaid_blocks(_page("selection.md")))


def _decision_tree_prose() -> str:
    text = _page("selection.md")
    start = text.index("## The decision tree")
    end = text.index("\n## ", start + 1)
    return re.sub(r"```mermaid\n.*?```", "", text[start:end], flags=re.S)


def test_the_selection_diagrams_name_exactly_the_codes_rules() -> None:
    import sglang_plugin_runtime.platforms as platforms

    rules = {rule.value for rule in platforms.Rule}
    chart = selection_chart()
    drawn = {
        outcome_of(chart.labels[end]) for end in chart.terminals() if "rule:" in chart.labels[end]
    }
    assert drawn == rules


def test_the_selection_diagrams_name_exactly_the_errors_the_steps_beside_them_name() -> None:
    import sglang_plugin_runtime.errors as errors

    known = {
        name
        for name, value in vars(errors).items()
        if isinstance(value, type) and issubclass(value, Exception)
    }
    named_in_prose = set(re.findall(r"\b(\w+Error)\b", _decision_tree_prose())) & known
    chart = selection_chart()
    drawn = {
        outcome_of(chart.labels[end])
        for end in chart.terminals()
        if "rule:" not in chart.labels[end]
    }
    assert drawn <= known, f"the diagram names errors the runtime does not have: {drawn - known}"
    assert drawn == named_in_prose


_CLASS_MODULE = """
from sglang_plugin_runtime.platforms.device_mixin import PlatformEnum
from sglang_plugin_runtime.platforms.interface import SRTPlatform


class {cls}(SRTPlatform):
    _enum = PlatformEnum.OOT
    device_name = "{name}"
    device_type = "{name}"
"""

_ACTIVATE = {
    "class": "def activate():\n    return __name__ + '.platform:{cls}'\n",
    "none": "def activate():\n    return None\n",
    "raises": "def activate():\n    raise RuntimeError('driver crashed')\n",
    "invalid": "def activate():\n    return 'os.path'\n",  # a module, not a platform class
    "import-error": "raise ImportError('libdevice.so not found')\n",
}


@dataclass
class Way:
    """One way through the decision tree: what is installed, the environment, the choices the
    diagram takes."""

    name: str
    plugins: dict[str, str]  # "dist/plugin" -> one of _ACTIVATE's keys
    env: dict[str, str]
    choices: list[str]
    start: str = "access"


WAYS = [
    Way(
        "named plugin activates",
        {"acme-npu/acme": "class", "bolt-accel/bolt": "class"},
        {"SGLANG_PLATFORM": "acme"},
        ["set", "yes", "no", "returns a value", "yes"],
    ),
    Way(
        "named plugin not installed",
        {"acme-npu/acme": "class"},
        {"SGLANG_PLATFORM": "nope"},
        ["set", "no"],
    ),
    Way(
        "named plugin offered twice",
        {"acme-npu/acme": "class", "acme-fork/acme": "class"},
        {"SGLANG_PLATFORM": "acme"},
        ["set", "yes", "yes"],
    ),
    Way(
        "named plugin's activate raises",
        {"acme-npu/acme": "raises"},
        {"SGLANG_PLATFORM": "acme"},
        ["set", "yes", "no", "import fails or activate() raises"],
    ),
    Way(
        "named plugin fails to import",
        {"acme-npu/acme": "import-error"},
        {"SGLANG_PLATFORM": "acme"},
        ["set", "yes", "no", "import fails or activate() raises"],
    ),
    Way(
        "named plugin returns None",
        {"acme-npu/acme": "none"},
        {"SGLANG_PLATFORM": "acme"},
        ["set", "yes", "no", "returns None"],
    ),
    Way(
        "named plugin returns an invalid value",
        {"acme-npu/acme": "invalid"},
        {"SGLANG_PLATFORM": "acme"},
        ["set", "yes", "no", "returns a value", "no"],
    ),
    Way("set by code", {"acme-npu/acme": "class"}, {}, [], start="code"),
    Way(
        "a name offered twice",
        {"acme-npu/acme": "class", "acme-fork/acme": "none"},
        {},
        ["unset", "yes"],
    ),
    Way(
        "strict and a plugin raises",
        {"acme-npu/acme": "raises", "bolt-accel/bolt": "class"},
        {"SGLANG_PLUGINS_STRICT": "1"},
        ["unset", "no", "one fails to import or its activate() raises", "yes"],
    ),
    Way(
        "a failing plugin is skipped",
        {"acme-npu/acme": "import-error", "bolt-accel/bolt": "class"},
        {},
        ["unset", "no", "one fails to import or its activate() raises", "no", "1"],
    ),
    Way(
        "a plugin returns an invalid value",
        {"acme-npu/acme": "invalid", "bolt-accel/bolt": "none"},
        {},
        ["unset", "no", "one returns an invalid value"],
    ),
    Way("none activates", {"acme-npu/acme": "none"}, {}, ["unset", "no", "all called", "0"]),
    Way(
        "one activates",
        {"acme-npu/acme": "class", "bolt-accel/bolt": "none"},
        {},
        ["unset", "no", "all called", "1"],
    ),
    Way(
        "two activate",
        {"acme-npu/acme": "class", "bolt-accel/bolt": "class"},
        {},
        ["unset", "no", "all called", "2 or more"],
    ),
]

_SELECT = """
import json, sys
from sglang_plugin_runtime.platforms import (
    SRTPlatform, current_platform_selection, set_current_platform)

if sys.argv[1:] == ["code"]:
    set_current_platform(SRTPlatform)
try:
    print(json.dumps({"outcome": current_platform_selection().rule}))
except Exception as exc:
    print(json.dumps({"outcome": type(exc).__name__, "message": str(exc)}))
"""


def _install(site: Path, plugins: dict[str, str]) -> None:
    from sglang_plugin_runtime.testing import write_fake_distribution

    for key, behaviour in plugins.items():
        dist, plugin = key.split("/")
        package = dist.replace("-", "_") + "_plat"
        cls = plugin.capitalize() + "Platform"
        write_fake_distribution(
            site,
            dist,
            "1.0",
            entry_points={"sglang.srt.platforms": {plugin: f"{package}:activate"}},
            modules={
                f"{package}/__init__.py": _ACTIVATE[behaviour].format(cls=cls),
                f"{package}/platform.py": _CLASS_MODULE.format(cls=cls, name=plugin),
            },
        )


def test_every_way_through_the_selection_diagrams_is_tested() -> None:
    chart = selection_chart()
    reached, taken = set(), set()
    for way in WAYS:
        end, edges = chart.walk(way.start, way.choices)
        reached.add(end)
        taken.update(edges)
    assert reached == set(chart.terminals()), (
        f"final boxes no way reaches: {set(chart.terminals()) - reached}"
    )
    assert taken == set(chart.edges), f"arrows no way takes: {set(chart.edges) - taken}"


@pytest.mark.parametrize("way", WAYS, ids=[w.name for w in WAYS])
def test_a_real_selection_ends_where_the_selection_diagram_says(way: Way, tmp_path: Path) -> None:
    end, _ = selection_chart().walk(way.start, way.choices)
    site = tmp_path / "site"
    site.mkdir()
    _install(site, way.plugins)
    proc = _run(_SELECT, site, way.env, args=(way.start,))
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["outcome"] == outcome_of(selection_chart().labels[end]), (way, result)


# --------------------------------------------------------------------------------------------------
# hooks.md: how the hook types nest around a call.
# --------------------------------------------------------------------------------------------------


@functools.cache
def hook_sequence() -> Sequence:
    (source,) = mermaid_blocks(_page("hooks.md"))
    return sequence(source)


_ORDINAL = {
    "1st": 1,
    "2nd": 2,
    "3rd": 3,
    "4th": 4,
    "5th": 5,
    "6th": 6,
    "7th": 7,
    "8th": 8,
    "9th": 9,
}


def _drawn_hooks() -> list[tuple[str, str, int]]:
    """(hook type, name, registration position) of each hook participant, left to right."""
    hooks = []
    for pid, label in hook_sequence().participants:
        m = re.fullmatch(r"(BEFORE|AFTER|AROUND|REPLACE) (\w+) registered (\w+)", label)
        if pid == "caller":
            continue
        assert m and m[2] == pid, (
            f"participant {pid!r} must read 'TYPE {pid} registered Nth', not {label!r}"
        )
        hooks.append((m[1], m[2], _ORDINAL[m[3]]))
    return hooks


def _drawn_run_order() -> list[str]:
    """The notes, as the log a call writes: an AROUND's first note is its code before
    ``original_fn``, then after."""
    kinds = {name: kind for kind, name, _ in _drawn_hooks()}
    seen: dict[str, int] = {}
    order = []
    for pid in hook_sequence().notes:
        seen[pid] = seen.get(pid, 0) + 1
        order.append(
            f"{pid} {'in' if seen[pid] == 1 else 'out'}" if kinds[pid] == "AROUND" else pid
        )
    return order


def _registration_order() -> list[tuple[str, str]]:
    return [(kind, name) for kind, name, _ in sorted(_drawn_hooks(), key=lambda h: h[2])]


def _make_hook(kind: str, name: str, log: list[str]):
    if kind == "BEFORE":

        def hook(*args, **kwargs):
            log.append(name)
    elif kind == "AFTER":

        def hook(result, *args, **kwargs):
            log.append(name)
    elif kind == "AROUND":

        def hook(original_fn, *args, **kwargs):
            log.append(f"{name} in")
            result = original_fn(*args, **kwargs)
            log.append(f"{name} out")
            return result
    else:

        def hook(*args, **kwargs):
            log.append(name)
            return args[0]

    hook.__name__ = hook.__qualname__ = name
    return hook


@pytest.fixture
def target_module():
    name = f"diagram_target_{uuid.uuid4().hex[:8]}"
    module = types.ModuleType(name)
    exec("def f(x):\n    return x\n", module.__dict__)
    sys.modules[name] = module
    yield module
    del sys.modules[name]


def test_a_real_call_runs_the_hooks_in_the_order_of_the_hook_diagrams_notes(
    hook_registry, target_module
) -> None:
    from sglang_plugin_runtime.plugins.hook_registry import HookType

    log: list[str] = []
    for kind, name in _registration_order():
        hook_registry.register(
            f"{target_module.__name__}.f", _make_hook(kind, name, log), getattr(HookType, kind)
        )
    hook_registry.apply_hooks()
    assert target_module.f(7) == 7
    assert log == _drawn_run_order()


def test_describe_lists_the_hooks_in_the_order_of_the_hook_diagrams_participants(
    hook_registry, target_module
) -> None:
    from sglang_plugin_runtime.plugins.hook_registry import HookType

    for kind, name in _registration_order():
        hook_registry.register(
            f"{target_module.__name__}.f", _make_hook(kind, name, []), getattr(HookType, kind)
        )
    hook_registry.apply_hooks()
    (report,) = hook_registry.describe(f"{target_module.__name__}.f")
    described = [(h.type.upper(), h.hook.rsplit(".", 1)[-1]) for h in report.hooks]
    assert described == [(kind, name) for kind, name, _ in _drawn_hooks()]


def test_the_hook_diagram_states_what_the_composition_prose_states() -> None:
    text = _page("hooks.md")
    registrations = re.search(r"For the registrations\s+`([^`]+)`", text)[1]
    assert [tuple(item.split()) for item in registrations.split(", ")] == _registration_order()
    arrows = re.search(r"```\n(b\w+ -> .*)\n```", text)[1]
    assert [
        re.sub(r"\((in|out)\)", r" \1", step) for step in arrows.split(" -> ")
    ] == _drawn_run_order()


# --------------------------------------------------------------------------------------------------
# processes.md: which process discovers, selects, loads and applies, and what a child inherits.
# --------------------------------------------------------------------------------------------------


@functools.cache
def layout_chart() -> Flowchart:
    """processes.md's first diagram: SGLang's processes, and what the runtime does in each."""
    return flowchart(mermaid_blocks(_page("processes.md"))[0])


@functools.cache
def start_methods_chart() -> Flowchart:
    """processes.md's second diagram: what a child gets from each start method."""
    return flowchart(mermaid_blocks(_page("processes.md"))[1])


ASPECTS = ("discovery", "general plugins", "platform", "hooks")


def _start_method_claims() -> dict[str, dict[str, str]]:
    """{start method: {aspect: "again" | "inherited"}} as the start-method diagram states them."""
    claims = {}
    chart = start_methods_chart()
    for _, label, child in chart.outgoing("parent"):
        stated = {}
        for line in lines_of(chart.labels[child]):
            key, _, value = line.partition(": ")
            if key in ASPECTS:
                assert ("again" in value) != ("inherited" in value), (
                    f"{key}: says neither or both: {line!r}"
                )
                stated[key] = "again" if "again" in value else "inherited"
        assert set(stated) == set(ASPECTS), f"the {child!r} box must state each of {ASPECTS}"
        for method in label.split(", "):
            claims[method] = stated
    return claims


_PROCESS_SITE = {
    "acme_npu/__init__.py": """
        import os

        def activate():
            with open(os.environ["DIAGRAM_LOG"], "a") as log:
                log.write(f"activate {os.getpid()}\\n")
            return "acme_npu.platform:AcmePlatform"
        """,
    "acme_npu/platform.py": _CLASS_MODULE.format(cls="AcmePlatform", name="acme"),
    "acme_tools.py": """
        import os
        from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookType

        def times_ten(result, *args, **kwargs):
            return result * 10

        def register():
            with open(os.environ["DIAGRAM_LOG"], "a") as log:
                log.write(f"register {os.getpid()}\\n")
            HookRegistry.register("procdemo_target.work", times_ten, HookType.AFTER)
        """,
    "procdemo_target.py": "def work():\n    return 1\n",
}

_PROCESSES = """
import importlib, json, multiprocessing as mp, os, sys
from pathlib import Path

SITE = Path(os.environ["PYTHONPATH"])


def here(event):
    return f"{event} {os.getpid()}" in Path(os.environ["DIAGRAM_LOG"]).read_text().splitlines()


def sees_late_plugin():
    from sglang_plugin_runtime.plugins import load_plugins_by_group

    # Python's import caches only; the runtime's scan is not touched by this
    importlib.invalidate_caches()
    return "late" in load_plugins_by_group("sglang.srt.plugins")


def steps():
    target = sys.modules.get("procdemo_target")
    hooks_before_load = target is not None and hasattr(target.work, "__wrapped__")
    from sglang_plugin_runtime.platforms import current_platform

    current_platform.device_name
    from sglang_plugin_runtime.plugins import load_plugins

    load_plugins()
    target_imported_by_load = "procdemo_target" in sys.modules and not hooks_before_load
    import procdemo_target

    return {
        "discovery": "again" if sees_late_plugin() else "inherited",
        "general plugins": "again" if here("register") else "inherited",
        "platform": "again" if here("activate") else "inherited",
        "hooks": "inherited" if hooks_before_load else "again",
        "hooked call": procdemo_target.work(),
        "target imported by load_plugins()": target_imported_by_load,
    }


def child(queue):
    queue.put(steps())


if __name__ == "__main__":
    parent = steps()
    from sglang_plugin_runtime.testing import write_fake_distribution

    write_fake_distribution(SITE, "late-tools", "1.0",
                            {"sglang.srt.plugins": {"late": "late_tools:register"}},
                            modules={"late_tools.py": "def register():\\n    pass\\n"})
    parent["sees a plugin installed after its scan"] = sees_late_plugin()
    children = {}
    for method in ("spawn", "forkserver", "fork"):
        ctx = mp.get_context(method)
        queue = ctx.Queue()
        process = ctx.Process(target=child, args=(queue,))
        process.start()
        children[method] = queue.get(timeout=120)
        process.join()
    print(json.dumps({"parent": parent, "children": children}))
"""


@pytest.fixture(scope="module")
def processes(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One real run: a parent that loads and selects, then a child per start method; what each did,
    and where."""
    from sglang_plugin_runtime.testing import write_fake_distribution

    root = tmp_path_factory.mktemp("processes")
    site = root / "site"
    site.mkdir()
    modules = {path: textwrap.dedent(code) for path, code in _PROCESS_SITE.items()}
    write_fake_distribution(
        site,
        "acme-npu",
        "1.0",
        {"sglang.srt.platforms": {"acme": "acme_npu:activate"}},
        modules={k: v for k, v in modules.items() if k.startswith("acme_npu/")},
    )
    write_fake_distribution(
        site,
        "acme-tools",
        "1.0",
        {"sglang.srt.plugins": {"timing": "acme_tools:register"}},
        modules={"acme_tools.py": modules["acme_tools.py"]},
    )
    write_fake_distribution(
        site,
        "procdemo-target",
        "1.0",
        modules={"procdemo_target.py": modules["procdemo_target.py"]},
    )
    log = root / "events.log"
    log.touch()
    proc = _run(_PROCESSES, site, {"DIAGRAM_LOG": str(log)}, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(sys.platform == "win32", reason="fork and forkserver are POSIX start methods")
def test_each_start_method_gives_the_child_what_the_start_method_diagram_says(
    processes: dict,
) -> None:
    claims = _start_method_claims()
    assert set(claims) == {"spawn", "forkserver", "fork"}
    children = processes["children"]
    observed = {
        method: {aspect: result[aspect] for aspect in ASPECTS}
        for method, result in children.items()
    }
    assert observed == claims


def test_in_every_process_the_hooks_run_and_no_target_is_imported_early(processes: dict) -> None:
    """The per-process diagram's last load step: targets already imported now, the others at their
    first import."""
    assert "first import" in text_of(layout_chart().labels["apply"])
    for where, result in [("parent", processes["parent"]), *processes["children"].items()]:
        assert result["hooked call"] == 10, where
        assert result["target imported by load_plugins()"] is False, where


def test_the_discovery_scan_is_kept_in_the_process_that_made_it(processes: dict) -> None:
    """The per-process diagram's discover step: one scan, kept in memory (so a later install is not
    seen)."""
    assert "kept in memory" in text_of(layout_chart().labels["discover"])
    assert processes["parent"]["sees a plugin installed after its scan"] is False


def test_per_process_diagram_runs_discover_load_apply_in_load_plugins_select_on_first_use() -> None:
    chart = layout_chart()
    end, edges = chart.walk("loadcall", [])
    assert (end, [edge[2] for edge in edges]) == ("apply", ["discover", "load", "apply"])
    assert chart.walk("firstuse", [])[0] == "select"
    load = text_of(chart.labels["load"])
    assert all(word in load for word in ("SGLANG_PLUGINS", "SGLANG_PLATFORM", "register()"))


def _sglang_sources() -> Path | None:
    for candidate in sorted(
        (REPO_ROOT / ".cache").glob("sglang-venv-*/lib/python*/site-packages/sglang")
    ):
        return candidate
    return None


def _calls(path: Path, function: str, callee: str) -> bool:
    """Whether ``function`` (``name`` or ``Class.name``) in the module at ``path`` calls something
    named ``callee``."""
    scope: ast.AST = ast.parse(path.read_text(encoding="utf-8"))
    *classes, name = function.split(".")
    for cls in classes:
        scope = next(n for n in ast.walk(scope) if isinstance(n, ast.ClassDef) and n.name == cls)
    for node in ast.walk(scope):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return any(
                isinstance(call, ast.Call)
                and getattr(call.func, "id", getattr(call.func, "attr", None)) == callee
                for call in ast.walk(node)
            )
    raise AssertionError(f"{path} has no function {function}()")


@pytest.mark.skipif(
    _sglang_sources() is None, reason="SGLang 0.5.23's sources are installed by `make test-sglang`"
)
def test_the_process_layout_diagram_matches_sglangs_entry_functions() -> None:
    sglang = _sglang_sources()
    assert sglang is not None
    entry_functions = {
        "scheduler": (sglang / "srt/managers/scheduler.py", "run_scheduler_process"),
        "detokenizer": (sglang / "srt/managers/detokenizer_manager.py", "run_detokenizer_process"),
        "dpcontroller": (
            sglang / "srt/managers/data_parallel_controller.py",
            "run_data_parallel_controller_process",
        ),
        "server": (sglang / "srt/entrypoints/engine.py", "Engine.__init__"),
    }
    for node, (path, function) in entry_functions.items():
        assert node in layout_chart().labels
        assert _calls(path, function, "load_plugins"), (
            f"{function}() no longer calls load_plugins()"
        )
    assert _calls(sglang / "srt/entrypoints/engine.py", "_set_envs_and_config", "set_start_method")
    assert {label for _, label, _ in layout_chart().edges if label} <= {
        "spawn",
        "spawn, per DP rank",
    }


# --------------------------------------------------------------------------------------------------
# real-server.md: the server's processes and where plugins load, in each world.
# --------------------------------------------------------------------------------------------------


@functools.cache
def real_server_chart() -> Flowchart:
    (source,) = mermaid_blocks(_page("real-server.md"))
    return flowchart(source)


def test_the_real_server_diagram_spawns_the_scheduler_and_detokenizer_from_the_server() -> None:
    chart = real_server_chart()
    assert set(chart.edges) == {
        ("launcher", "runs", "server"),
        ("server", "spawn", "scheduler"),
        ("server", "spawn", "detokenizer"),
    }
    assert {"released", "launched", "adopted"} <= set(chart.labels)


@pytest.mark.skipif(_sglang_sources() is None, reason="the sources come with `make test-sglang`")
def test_each_process_of_the_real_server_diagram_loads_plugins_where_it_says() -> None:
    sglang = _sglang_sources()
    assert sglang is not None
    chart = real_server_chart()
    for node, (path, function) in {
        "scheduler": (sglang / "srt/managers/scheduler.py", "run_scheduler_process"),
        "detokenizer": (sglang / "srt/managers/detokenizer_manager.py", "run_detokenizer_process"),
    }.items():
        assert function in text_of(chart.labels[node])
        assert _calls(path, function, "load_plugins"), (
            f"{function}() no longer calls load_plugins()"
        )
    line = re.search(r"launch_server\.py:(\d+)", text_of(chart.labels["server"]))
    assert line is not None
    source = (sglang / "launch_server.py").read_text(encoding="utf-8").splitlines()
    assert source[int(line[1]) - 1].strip() == "load_plugins()"
