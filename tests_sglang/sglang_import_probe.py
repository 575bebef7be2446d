"""Does ``import sglang`` work here? While the runtime refuses an in-tree platform class of SGLang
(issue 12), an adopted SGLang cannot be imported: tests that need it are marked xfail naming the
classes and reasons.

``IMPORT_PROBE`` runs in a scenario subprocess (it calls the scenario's ``report()``), in the
adopted venv or under ``sglang-plugins run``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

IMPORT_PROBE = """
import sys
try:
    import sglang.srt.platforms
except TypeError as exc:
    first = str(exc)
else:
    report({"imports": True})
    sys.exit(0)
# Diagnostic only: every in-tree class the runtime refuses, not just the first (private names, so
# guarded).
refused = {}
try:
    from sglang_plugin_runtime.platforms import _contract
    from sglang_plugin_runtime.platforms._describe import find_override_problems
    def collect(cls):
        problems = find_override_problems(cls, whole_mro=False)
        if problems:
            refused[cls.__qualname__] = [p.message for p in problems]
    _contract.enforce = collect
    for name in [m for m in sys.modules if m == "sglang" or m.startswith("sglang.")]:
        del sys.modules[name]
    import sglang.srt.platforms
except Exception:
    pass
report({"imports": False, "first": first, "refused": refused})
"""


@dataclass(frozen=True)
class ImportProbe:
    """Whether ``import sglang`` works in this venv, and if not, which in-tree classes the runtime
    refuses."""

    imports: bool
    first: str = ""
    refused: dict[str, list[str]] = field(default_factory=dict)

    @property
    def refused_by_contract(self) -> bool:
        return not self.imports and "does not fit the platform contract" in self.first

    def xfail_reason(self) -> str:
        """One line: which overrides of which in-tree classes the runtime refuses, and the
        consequence."""
        refused = [
            m.split(" is incompatible", 1)[0]
            for messages in self.refused.values()
            for m in messages
        ]
        what = "; ".join(refused) or self.first.splitlines()[0]
        return (
            "issue 12: the runtime's class-definition check refuses SGLang 0.5.23's in-tree "
            f"{what}, so `import sglang` fails once SGLang imports the runtime"
        )
