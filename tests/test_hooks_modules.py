"""The hook registry's modules: imports point one way, and a serving process never loads the report
code."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import sglang_plugin_runtime.plugins as plugins_package

PLUGINS = Path(plugins_package.__file__).parent
MODULES = {"hook_registry": PLUGINS / "hook_registry.py"} | {
    f"_hooks.{path.stem}": path
    for path in sorted((PLUGINS / "_hooks").glob("*.py"))
    if path.stem != "__init__"
}


def imported_by(name: str) -> set[str]:
    """The registry modules ``name`` imports anywhere in its source (in functions and under
    TYPE_CHECKING too)."""
    package = name.rpartition(".")[0].split(".") if "." in name else []
    found = set()
    for node in ast.walk(ast.parse(MODULES[name].read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom) or not node.level:
            continue
        base = package[: len(package) - node.level + 1] + (
            node.module.split(".") if node.module else []
        )
        for alias in node.names:
            for candidate in (".".join(base), ".".join([*base, alias.name])):
                if candidate in MODULES and candidate != name:
                    found.add(candidate)
    return found


def test_no_two_registry_modules_import_each_other():
    graph = {name: imported_by(name) for name in MODULES}
    assert graph["hook_registry"], (
        "the dependency scan found nothing: it no longer reads the imports"
    )
    cycles = sorted((a, b) for a in graph for b in graph[a] if a in graph[b])
    assert cycles == []


def test_a_process_that_registers_and_applies_hooks_never_imports_the_reports():
    code = (
        "import sys, json\n"
        "from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookType\n"
        "HookRegistry.register('json.dumps', lambda r, *a, **k: r)\n"
        "HookRegistry.register('not_imported_yet_xyz.f', lambda r: r)\n"
        "HookRegistry.apply_hooks()\n"
        "HookRegistry.is_hook_applied('json.dumps', print)\n"
        "before = 'sglang_plugin_runtime.plugins._hooks._describe' in sys.modules\n"
        "HookRegistry.describe()\n"
        "print(before, 'sglang_plugin_runtime.plugins._hooks._describe' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]
