"""Helpers of the adopted-SGLang tier (imported by its conftest and tests; no fixtures here).

The tier runs inside the venv that ``scripts/test-sglang.sh`` builds from the real
``sglang==0.5.23`` wheel with the adoption patch
(``runtime/sglang_plugin_runtime/_launcher/patches/sglang-0.5.23.patch``) applied. Every scenario is
a fresh subprocess of that venv, with exactly the scenario's distributions on ``PYTHONPATH``.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scenarios import Outcome, ScenarioError, clean_env, pip_install_target, render, run_python
from sglang_import_probe import IMPORT_PROBE, ImportProbe

__all__ = ["Outcome", "ScenarioError", "clean_env", "pip_install_target", "render", "run_python"]

#: The SGLang modules the patch turns into re-exports, each with the runtime module it re-exports.
REEXPORTS = {
    "sglang.srt.plugins": "sglang_plugin_runtime.plugins",
    "sglang.srt.plugins.hook_registry": "sglang_plugin_runtime.plugins.hook_registry",
    "sglang.srt.platforms.device_mixin": "sglang_plugin_runtime.platforms.device_mixin",
    "sglang.srt.platforms.interface": "sglang_plugin_runtime.platforms.interface",
}


# --------------------------------------------------------------------------------------------------
# Is this SGLang adopted, and does it import?
# --------------------------------------------------------------------------------------------------


def probe_import() -> ImportProbe:
    out = run_python(IMPORT_PROBE, timeout=300)
    return ImportProbe(out["imports"], out.result.get("first", ""), out.result.get("refused", {}))


def sglang_is_adopted() -> bool:
    """Read from the installed files (no import): the patch's re-export is in place."""
    import importlib.util

    spec = importlib.util.find_spec("sglang")
    assert spec is not None and spec.submodule_search_locations, (
        "sglang is not installed in this venv"
    )
    hook_registry = (
        Path(next(iter(spec.submodule_search_locations))) / "srt" / "plugins" / "hook_registry.py"
    )
    return "from sglang_plugin_runtime.plugins.hook_registry import" in hook_registry.read_text(
        encoding="utf-8"
    )


# --------------------------------------------------------------------------------------------------
# Every answer combination of the template
# --------------------------------------------------------------------------------------------------


def _questions(template: Path) -> dict[str, Any]:
    import yaml

    data = yaml.safe_load((template / "copier.yml").read_text(encoding="utf-8"))
    return {k: v for k, v in data.items() if not k.startswith("_") and isinstance(v, dict)}


def _choice_values(question: dict[str, Any]) -> list[Any]:
    choices = question.get("choices")
    if isinstance(choices, dict):
        return list(choices.values())
    if isinstance(choices, list):
        return [c[1] if isinstance(c, (list, tuple)) else c for c in choices]
    raise AssertionError(f"question has no choices: {question}")


@dataclass(frozen=True)
class Combination:
    """One answer combination, and the unique names its package is installed under."""

    kind: str
    index: int
    answers: tuple[tuple[str, Any], ...]

    @property
    def label(self) -> str:
        def show(value: Any) -> str:
            if isinstance(value, list):
                return "+".join(value) if value else "none"
            return str(value).lower()

        return f"{self.kind}-" + "-".join(
            f"{k}={show(v)}" for k, v in self.answers if k != "plugin_kind"
        )

    @property
    def package(self) -> str:
        return f"adopt_{self.kind[:4]}_{self.index}"

    @property
    def entry_point(self) -> str:
        return f"adopt{self.kind[:4]}{self.index}"

    @property
    def device(self) -> str:
        # torch reads a trailing digit as a device index: spell the number in letters.
        return "adev" + "".join("abcdefghij"[int(d)] for d in str(self.index))

    def data(self) -> dict[str, Any]:
        names = {
            "project_name": f"Adopted {self.kind} {self.index}",
            "distribution_name": f"adopt-{self.kind[:4]}-{self.index}",
            "package_name": self.package,
            "entry_point_name": self.entry_point,
        }
        if self.kind == "platform":
            names.update(
                device_name=self.device,
                device_type=self.device,
                backend_module=f"torch_{self.device}",
            )
        return {**dict(self.answers), **names}


@dataclass(frozen=True)
class Installed:
    """Every distinct generated package, installed together into one folder (put ``site`` on
    PYTHONPATH)."""

    site: Path
    combinations: tuple[Combination, ...]

    def of_kind(self, kind: str) -> list[Combination]:
        return [c for c in self.combinations if c.kind == kind]


def _subsets(values: list[str]) -> list[list[str]]:
    """Every option alone, all together and none: each branch of the template, and all of them at
    once."""
    return [[], *([v] for v in values), list(values)]


def base_combinations(template: Path) -> Iterator[dict[str, Any]]:
    """plugin_kind x host_api (when the template asks it) x the example options (kind-specific)."""
    questions = _questions(template)
    hosts = _choice_values(questions["host_api"]) if "host_api" in questions else [None]
    for kind in _choice_values(questions["plugin_kind"]):
        for host in hosts:
            answers: dict[str, Any] = {"plugin_kind": kind}
            if host is not None:
                answers["host_api"] = host
            if kind == "general" and "example_hooks" in questions:
                for subset in _subsets(_choice_values(questions["example_hooks"])):
                    yield {**answers, "example_hooks": subset}
            else:
                yield answers


def bool_questions(template: Path) -> list[str]:
    """The template's yes/no questions (like ``with_mm_platform``); a render's answers file says
    which apply."""
    return [
        name
        for name, q in _questions(template).items()
        if q.get("type") == "bool" and q.get("when") is not False
    ]


def recorded_answers(project: Path) -> dict[str, Any]:
    import yaml

    return yaml.safe_load((project / ".copier-answers.yml").read_text(encoding="utf-8"))


def tree_digest(project: Path, names: dict[str, str]) -> str:
    """A digest of the rendered files with this combination's own names blanked: equal digests, same
    package."""
    digest = hashlib.sha256()
    for path in sorted(p for p in project.rglob("*") if p.is_file()):
        relative = path.relative_to(project).as_posix()
        if relative == ".copier-answers.yml":
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for value in sorted(names.values(), key=len, reverse=True):
            text = text.replace(value, "<name>")
            relative = relative.replace(value, "<name>")
        digest.update(relative.encode() + b"\0" + text.encode() + b"\0")
    return digest.hexdigest()


def distinct(candidates: Iterable[tuple[Combination, str]]) -> list[Combination]:
    """Keep the first combination of each digest (answers that render the same package are one
    case)."""
    seen: set[str] = set()
    kept = []
    for combination, digest in candidates:
        if digest not in seen:
            seen.add(digest)
            kept.append(combination)
    return kept


def product_of_bools(names: list[str]) -> list[dict[str, bool]]:
    return [
        dict(zip(names, values, strict=True))
        for values in itertools.product([False, True], repeat=len(names))
    ]
