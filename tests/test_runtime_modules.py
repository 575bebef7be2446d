"""The runtime's modules: no two import each other, no circle of imports at all, and what a process
without plugins loads."""

from __future__ import annotations

import ast
import graphlib
import subprocess
import sys
from pathlib import Path

import sglang_plugin_runtime

ROOT = Path(sglang_plugin_runtime.__file__).parent
MODULES = {
    ".".join(["sglang_plugin_runtime", *path.relative_to(ROOT).with_suffix("").parts]).removesuffix(
        ".__init__"
    ): path
    for path in sorted(ROOT.rglob("*.py"))
}


def imported_by(name: str) -> set[str]:
    """The runtime modules ``name`` imports anywhere in its source (in functions and under
    TYPE_CHECKING too)."""
    package = name.split(".") if MODULES[name].name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(MODULES[name].read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            bases = [alias.name.split(".") for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            base = base + (node.module.split(".") if node.module else [])
            # ``from pkg import mod`` imports the module ``pkg.mod``; ``from pkg import name`` the
            # package ``pkg``
            bases = [
                [*base, a.name] if ".".join([*base, a.name]) in MODULES else base
                for a in node.names
            ]
        else:
            continue
        found |= {".".join(base) for base in bases if ".".join(base) in MODULES} - {name}
    return found


def test_no_two_runtime_modules_import_each_other_nor_run_in_a_longer_circle() -> None:
    """Longer circles too: a serving-path record reaching up into a reporting module (even lazily)
    is one."""
    graph = {name: imported_by(name) for name in MODULES}
    assert len(graph) > 30 and graph["sglang_plugin_runtime.platforms._selection"], (
        "the scan found no imports"
    )
    assert sorted((a, b) for a in graph for b in graph[a] if a < b and a in graph[b]) == []
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        raise AssertionError(
            f"the runtime's imports run in a circle: {' -> '.join(exc.args[1])}"
        ) from None


def test_a_process_without_plugins_loads_neither_the_hook_registry_nor_the_tools() -> None:
    code = (
        "import sys\n"
        "from sglang_plugin_runtime.platforms import current_platform\n"
        "from sglang_plugin_runtime.plugins import load_plugins\n"
        "current_platform.device_name\n"
        "load_plugins()\n"
        "print(sorted(m for m in sys.modules if m.startswith('sglang_plugin_runtime')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    loaded = set(eval(result.stdout))  # a printed list of module names
    assert "sglang_plugin_runtime.platforms._selection" in loaded
    unused = {
        "plugins.hook_registry",
        "_cli",
        "testing",
        "_launcher",
        "_consistency",
        "platforms._describe",
    }
    assert not {f"sglang_plugin_runtime.{name}" for name in unused} & loaded
