"""Whether a hook target's module can be found, found without importing anything: the one walk
behind the registry's check of a pending target and ``doctor``'s.

Imported only when a target waits for its module (or a report asks): a process whose targets all
resolve never loads it.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import Any

from ._types import module_dict


def missing_module(target: str, imported_only: bool = False) -> str | None:
    """The module of ``target`` that cannot be found, or ``None``; below an installed package (a
    dotted name) that is certain, a top-level package may be installed where the hooks run.

    ``module:Attr.path`` names its module. In ``pkg.mod.Attr.path`` the module is the longest prefix
    that can be found; below a package whose ``__init__`` cannot define the next name, that name is
    a missing submodule.

    ``imported_only`` (the registry: its answer can fail a strict start-up or stop it, so it acts
    on certainties alone): read only modules already imported, never run a lazily loaded one, stop
    at the first module that is not imported, and take the last name for a module too. Otherwise
    (``doctor``: a person reads the answer) also read the specs of packages not imported yet and the
    source of their ``__init__``.
    """
    module, colon, _ = target.rpartition(":")
    parts = (module if colon else target).split(".")
    parent: Any = None
    for depth in range(1, len(parts) + 1):
        name = ".".join(parts[:depth])
        found: Any = sys.modules.get(name)
        if found is None and depth > 1:
            path: Any
            if imported_only:  # not isinstance(): a lazily loaded module would execute
                path = (module_dict(parent) or {}).get("__path__")
            elif isinstance(parent, ModuleSpec):
                path = parent.submodule_search_locations
            else:
                path = getattr(parent, "__path__", None)
            if path is None:  # below a plain module: an attribute path
                return name if colon else None
            found = find_spec(name, path)
        elif found is None:
            found = find_spec(name, None)
        if found is None:
            if colon or depth == 1:
                return name
            if imported_only:  # the package defines the name: an attribute
                return None if parts[depth - 1] in vars(parent) else name
            return None if depth == len(parts) or _may_define(parent, parts[depth - 1]) else name
        if imported_only and name not in sys.modules:
            return None
        parent = found
    return None


def why_missing(target: str) -> tuple[str, bool] | None:
    """The registry's answer for a pending dotted ``target``: why no import can bring its module,
    and whether that is certain. A module missing below an installed package (misspelled) is; a
    top-level package that is not installed may be installed where the hooks run (SGLang's targets
    in a plugin's own tests). ``None`` while an import may bring it."""
    if (missing := missing_module(target, imported_only=True)) is None:
        return None
    if package := missing.rpartition(".")[0]:
        why = f"{package!r} has no such module (misspelled?)"
        return f"module {missing!r} cannot be found: {why}", True
    return f"module {missing!r} cannot be found (is it installed?)", False


def find_spec(name: str, path: Sequence[str] | None) -> ModuleSpec | None:
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
