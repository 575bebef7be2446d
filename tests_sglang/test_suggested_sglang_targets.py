"""Every SGLang target of the general template's example hooks fits its hook, checked against SGLang
0.5.23.

``hooks.py`` aims each example hook at SGLang's own code (``*_TARGET``; the class REPLACE example
subclasses the class in ``eviction.py``), and the README repeats them in its table. Here each target
is looked up in the installed SGLang 0.5.23 sources (parsed, since most of these modules import more
of SGLang's serving stack than this venv carries) and judged against what its example hook assumes.
Then SGLang's own ``load_plugins()`` loads the package as generated: every hook lands on its SGLang
target, and the ones whose module this venv can import fire.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import render
from scenarios import pip_install_target, run_python

pytestmark = pytest.mark.subprocess

PACKAGE = "sglang_example_hooks"
TARGET = re.compile(r'^(?P<name>\w+_TARGET) = "(?P<target>[^"]+)"$', re.MULTILINE)


#: Every example hook, in the variants that change what SGLang does (their targets are the same in
#: both variants; their effects show that they fired).
EVERY_EXAMPLE = {
    "example_hooks": ["before", "after", "around_timer", "replace_class"],
    "example_hooks_change_behaviour": True,
}


@pytest.fixture(scope="module")
def project(template_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return render(
        template_dir, tmp_path_factory.mktemp("suggestions"), plugin_kind="general", **EVERY_EXAMPLE
    )


def _hooks_py(project: Path) -> str:
    return (project / PACKAGE / "hooks.py").read_text(encoding="utf-8")


def _suggestions(project: Path) -> dict[str, str]:
    """``*_TARGET`` name -> the SGLang target it names."""
    found = {m.group("name"): m.group("target") for m in TARGET.finditer(_hooks_py(project))}
    eviction = (project / PACKAGE / "eviction.py").read_text(encoding="utf-8")
    assert (
        f"from {found['EVICTION_TARGET'].rpartition('.')[0]} import LRUEvictionPolicy" in eviction
    )
    return found


# ---- SGLang 0.5.23's sources, parsed -------------------------------------------------------------


@dataclass
class Definition:
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
    in_class: bool


def _sglang_source(module: str) -> ast.Module:
    spec = importlib.util.find_spec("sglang")
    assert spec is not None and spec.origin is not None
    root = Path(spec.origin).parent.parent  # site-packages
    path = root.joinpath(*module.split(".")).with_suffix(".py")
    assert path.is_file(), f"{module} is not in the installed SGLang ({path})"
    return ast.parse(path.read_text(encoding="utf-8"))


def _resolve(target: str) -> Definition:
    """The definition a target string names: ``pkg.mod.func``, ``pkg.mod.Class.method`` or
    ``pkg.mod:Class.method``."""
    if ":" in target:
        module, _, qualname = target.partition(":")
        parts = qualname.split(".")
    else:
        pieces = target.split(".")
        for split in range(len(pieces) - 1, 0, -1):
            module, parts = ".".join(pieces[:split]), pieces[split:]
            spec_root = Path(importlib.util.find_spec("sglang").origin).parent.parent  # type: ignore[union-attr]
            if spec_root.joinpath(*module.split(".")).with_suffix(".py").is_file():
                break
    body: list[ast.stmt] = _sglang_source(module).body
    node = None
    for name in parts:
        node = next(
            (
                n
                for n in body
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and n.name == name
            ),
            None,
        )
        assert node is not None, f"{target}: {name!r} is not defined in SGLang 0.5.23's {module}"
        body = node.body if isinstance(node, ast.ClassDef) else []
    assert node is not None
    return Definition(node, in_class=len(parts) > 1)


def _positional(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    return [*node.args.posonlyargs, *node.args.args]


# ---- each suggestion has its example hook's shape ------------------------------------------------


def test_every_example_hook_has_a_suggestion_and_the_readme_repeats_them(project: Path) -> None:
    suggestions = _suggestions(project)
    assert set(suggestions) == {
        "PROMPT_TARGET",
        "COUNT_TARGET",
        "TIMER_TARGET",
        "EVICTION_TARGET",
    }
    readme = (project / "README.md").read_text(encoding="utf-8")
    for target in suggestions.values():
        assert f"`{target}`" in readme, target


def test_before_suggestion_takes_the_prompt_text_first(project: Path) -> None:
    # count_prompt / strip_prompt(prompt, *args, **kwargs) read or rewrite the first positional
    # argument: a plain function
    # (a method would hand it `self`) whose first parameter is the text.
    definition = _resolve(_suggestions(project)["PROMPT_TARGET"])
    node = definition.node
    assert isinstance(node, ast.FunctionDef) and not definition.in_class
    first = _positional(node)[0]
    assert first.annotation is not None and ast.unparse(first.annotation) == "str", ast.unparse(
        node.args
    )


def test_after_suggestion_returns_a_token_count(project: Path) -> None:
    # count_video_tokens / add_special_token(result, ...) add it up or return result + 1: the
    # target must return an int.
    node = _resolve(_suggestions(project)["COUNT_TARGET"]).node
    assert isinstance(node, ast.FunctionDef)
    assert node.returns is not None and ast.unparse(node.returns) == "int"


def test_around_suggestion_is_a_synchronous_method(project: Path) -> None:
    # The timer measures original(*args, **kwargs) as it returns: an async target would time only
    # the coroutine.
    definition = _resolve(_suggestions(project)["TIMER_TARGET"])
    assert isinstance(definition.node, ast.FunctionDef) and definition.in_class


def test_replace_suggestion_is_a_class_with_the_overridden_method(project: Path) -> None:
    # The REPLACE example subclasses it and overrides select_victim(self, candidates).
    node = _resolve(_suggestions(project)["EVICTION_TARGET"]).node
    assert isinstance(node, ast.ClassDef)
    (method,) = [
        n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "select_victim"
    ]
    assert [a.arg for a in _positional(method)] == ["self", "candidates"]


# ---- as generated: the hooks land on SGLang ------------------------------------------------------


LOAD = """
import logging
import sys
import types
logging.basicConfig(level=logging.WARNING)
# The AFTER target's module without its package's __init__ (which needs transformers, which this
# venv leaves out): the package is a bare module over the same folder.
import sglang.srt.multimodal as multimodal
evs = types.ModuleType("sglang.srt.multimodal.evs")
evs.__path__ = [p + "/evs" for p in multimodal.__path__]
sys.modules[evs.__name__] = evs
import sglang.srt.multimodal.evs.evs_core as evs_core
from sglang.srt.plugins import load_plugins
from sglang.srt.plugins.hook_registry import HookRegistry
before = evs_core.compute_retained_tokens_count(5, 2, 0.0)
load_plugins()
from sglang.srt.lora.eviction_policy import get_eviction_policy
import importlib
unimportable = {}
for target in HookRegistry._hooks:
    # all are module-level
    module = target.partition(":")[0] if ":" in target else target.rsplit(".", 1)[0]
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as exc:
        unimportable[target] = exc.name
policy = get_eviction_policy("lru")
policy.mark_used(None)
policy.mark_used("adapter-a")
hooks = importlib.import_module("sglang_example_hooks.hooks")
after = evs_core.compute_retained_tokens_count(5, 2, 0.0)
report({
    "counted": dict(getattr(hooks, "COUNTS", {})),
    "targets": sorted(HookRegistry._hooks),
    "policy": type(policy).__name__,
    "victim": policy.select_victim({None, "adapter-a"}),
    "video_tokens": [before, after],
    "unimportable": unimportable,
})
"""


def test_the_generated_hooks_land_on_sglang(project: Path, tmp_path: Path) -> None:
    site = pip_install_target(project, tmp_path / "site")
    out = run_python(LOAD, paths=[site])
    assert "Failed to execute general plugin" not in out.stderr, out.stderr  # register() ran
    suggestions = _suggestions(project)
    assert out["targets"] == sorted(suggestions.values())
    # SGLang's apply_hooks() imports each target's module: two of them need parts of SGLang's
    # serving stack this venv leaves out (third-party packages), so only those fail to apply, and
    # say so.
    for target, missing in out["unimportable"].items():
        assert not missing.startswith("sglang"), (target, missing)
        assert f"Failed to apply hooks to {target}" in out.stderr
    assert set(out["unimportable"]) == {
        suggestions["PROMPT_TARGET"],
        suggestions["TIMER_TARGET"],
    }
    # REPLACE fired
    assert out["policy"] == "KeepBaseModelEvictionPolicy" and out["victim"] == "adapter-a"
    before, after = out["video_tokens"]
    assert after == before + 1  # AFTER fired


def test_the_default_hooks_land_on_sglang_and_change_nothing_it_does(
    template_dir: Path, tmp_path: Path
) -> None:
    # Issue 36: a package generated with every default only observes.
    project = render(template_dir, tmp_path / "defaults", plugin_kind="general")
    out = run_python(LOAD, paths=[pip_install_target(project, tmp_path / "site")])
    assert "Failed to execute general plugin" not in out.stderr, out.stderr
    assert len(out["targets"]) == 3  # BEFORE, AFTER, AROUND: no class REPLACE
    assert out["policy"] == "LRUEvictionPolicy"  # SGLang's own class
    before, after = out["video_tokens"]
    assert after == before and out["counted"] == {"video tokens": after}  # AFTER fired, kept it
