"""Stale references: module globals that still hold an original after it was patched.

``from x import f`` copies the reference, so patching ``x.f`` alone leaves the importer calling the original.
After a batch of targets is applied, one walk over ``sys.modules`` rebinds, for every target of the batch at once,
the globals whose *name equals the target's attribute name* and whose value *is* the replaced object. A hook
module's ``from x import f as _orig`` therefore keeps the original, which a REPLACE delegating to ``_orig`` needs.

The walk costs one set intersection per module (its globals with the batch's names), not a pass over every global
of every module per target: SGLang's walk costs about 53 ms per target with ``sglang.srt.managers.scheduler``
imported. It writes into a module's namespace (a module's ``__setattr__`` never runs) and reads only namespaces
that reading cannot execute (see ``_targets.module_dict``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass, field

from ._targets import module_dict


@dataclass(frozen=True, slots=True)
class Replacement:
    """Globals named ``name`` that hold one of ``stale`` become ``new``; their namespaces are added to ``found``."""

    name: str
    stale: tuple[object, ...]
    new: object
    found: list[dict[str, object]] = field(default_factory=list)


def rebind(replacements: Iterable[Replacement], modules: Iterable[object] | None = None) -> None:
    """Walk ``modules`` (default: every module in ``sys.modules``) once for all ``replacements``."""
    by_name: dict[str, dict[int, tuple[object, Replacement]]] = {}
    for rep in replacements:
        by_name.setdefault(rep.name, {}).update((id(old), (old, rep)) for old in rep.stale if old is not rep.new)
    if not by_name:
        return
    names = by_name.keys()
    for module in list(sys.modules.values()) if modules is None else modules:
        namespace = module_dict(module)
        if namespace is None:
            continue
        for name in namespace.keys() & names:  # a C-level intersection: no Python loop over the globals
            hit = by_name[name].get(id(namespace[name]))
            if hit is not None and hit[0] is namespace[name]:
                namespace[name] = hit[1].new
                hit[1].found.append(namespace)
