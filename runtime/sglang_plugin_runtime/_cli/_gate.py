"""What ``doctor`` can tell about a hook's target without importing it: the check a deployment gate
needs beyond what the registry reports.

A target whose module can be found (its spec, found without importing the module or its parents) is
fine until it is imported: its hooks apply then. A target whose module cannot be found never
applies: an error naming it. Where the host package (``sglang``) is not installed at all, its
targets cannot be judged here: information.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import Any

HOST_PACKAGE = "sglang"


def _find_spec(name: str, path: Sequence[str] | None) -> ModuleSpec | None:
    """What the import system's finders say about ``name`` (in ``path``, a parent package's search
    locations), asking each finder the way an import does. The runtime's own finders are skipped:
    they delegate to ``importlib.util.find_spec``, which imports a dotted name's parents."""
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is None or type(finder).__module__.startswith("sglang_plugin_runtime."):
            continue
        try:
            spec = find(name, path)
        # a namespace package's path looks its parent up in sys.modules: not imported
        except KeyError:
            return _namespace_spec(name, path)
        except (ImportError, ValueError):
            continue
        if isinstance(spec, ModuleSpec):
            return spec
    return None


def _namespace_spec(name: str, path: Sequence[str] | None) -> ModuleSpec | None:
    """The spec of namespace package ``name`` (a folder without ``__init__.py`` in ``path``), or
    None."""
    last = name.rpartition(".")[2]
    portions = [
        portion for entry in path or () if os.path.isdir(portion := os.path.join(entry, last))
    ]
    if not portions:
        return None
    spec = ModuleSpec(name, None, is_package=True)
    spec.submodule_search_locations = portions
    return spec


def _may_define(parent: Any, name: str) -> bool:
    """Whether the package ``parent`` (imported, or its spec) may define ``name`` in its
    ``__init__``: it has it, or its source mentions it, cannot be read, or defines names the source
    does not show (``import *``, a module ``__getattr__``)."""
    if not isinstance(parent, ModuleSpec):
        return hasattr(parent, name)
    # a namespace package (no __init__): its submodules are its only names
    if parent.origin is None:
        return False
    if not parent.origin.endswith(".py"):
        return True
    try:
        source = Path(parent.origin).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return True
    return re.search(rf"\b{re.escape(name)}\b|import \*|def __getattr__", source) is not None


def missing_module(target: str) -> str | None:
    """The module of ``target`` that cannot be found (found without importing anything), or
    ``None``.

    ``module:Attr.path`` names its module. In ``pkg.mod.Attr.path`` the module is the longest prefix
    that can be found; below a package whose ``__init__`` cannot define the next name, that name is
    a missing submodule.

    Deeper than the registry's own check (``plugins/_hooks/_registry._missing_module``, which reads
    imported modules only, because its answer can stop a start-up): this walk also reads specs and
    ``__init__`` sources, and a person reads its answer.
    """
    module, colon, _ = target.rpartition(":")
    parts = (module if colon else target).split(".")
    parent: Any = None
    for depth in range(1, len(parts) + 1):
        name = ".".join(parts[:depth])
        path = (
            parent.submodule_search_locations
            if isinstance(parent, ModuleSpec)
            else getattr(parent, "__path__", None)  # None before the first part
        )
        if depth > 1 and path is None:  # below a plain module: an attribute path
            return name if colon else None
        found = sys.modules.get(name) or _find_spec(name, path)
        if found is None:
            last = depth == len(parts)
            if colon or depth == 1 or not (last or _may_define(parent, parts[depth - 1])):
                return name
            return None
        parent = found
    return None


def host_not_installed(target: str) -> bool:
    """Whether ``target`` is in the host package, which is not installed in this environment."""
    top = re.split("[.:]", target)[0]
    return top == HOST_PACKAGE and top not in sys.modules and _find_spec(top, None) is None
