"""Rendering the template: every kind, with defaults and with unusual answers, gives a clean, valid project.

Each case is rendered once (cached per session) and checked by one test per property: the TOML and YAML parse
and say what was answered, every Python file compiles and passes ruff, no Jinja or cache files are left, and
every file ends cleanly.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from template_support import HOST_API_PACKAGES, HOST_REQUIREMENTS, REPO_ROOT, Render

UNUSUAL_TEXT = 'Runs "SGLang" on C:\\npu\\ — Zoë’s 🚀 backend <fast> & {braces} {{ not jinja }} \'quoted\''

CASES: dict[str, dict[str, Any]] = {
    "platform-defaults": {"plugin_kind": "platform"},
    "general-defaults": {"plugin_kind": "general"},
    "platform-unusual-text": {
        "plugin_kind": "platform",
        "project_name": 'Ünïcode "Quoted" Platform \\ 🚀',
        "description": UNUSUAL_TEXT,
        "author_name": 'Zoë O\'Brien "ZB" \\ 李',
        "author_email": "zoe@example.org",
    },
    "platform-one-letter-names": {
        "plugin_kind": "platform",
        "project_name": "A",
        "distribution_name": "a",
        "package_name": "a",
        "entry_point_name": "a",
        "device_name": "x",
        "device_type": "x",
        "backend_module": "b",
    },
    "platform-dotted-dashed-hpu-no-mm": {
        "plugin_kind": "platform",
        "distribution_name": "acme.sglang-gaudi_plugin",
        "entry_point_name": "acme.gaudi-2",
        "device_name": "Gaudi-2.x",
        "device_type": "hpu",
        "backend_module": "habana_frameworks.torch",
        "distributed_backend": "hccl",
        "with_mm_platform": False,
        "python_min": "3.13",
        "license": "LicenseRef-Proprietary",
    },
    "general-unusual-text": {
        "plugin_kind": "general",
        "description": UNUSUAL_TEXT,
        "author_name": "Jürgen \\ 'J' \"Quote\"",
        "license": "MIT",
        "python_min": "3.12",
    },
    "general-dotted-dashed-no-hooks": {
        "plugin_kind": "general",
        "distribution_name": "acme.hooks-plugin_x",
        "example_hooks": [],
    },
    **{
        f"general-only-{hook}": {"plugin_kind": "general", "example_hooks": [hook]}
        for hook in ("before", "after", "around_timer", "replace_class")
    },
    # host_api=sglang: the package imports sglang.srt.* and depends on the released SGLang.
    "platform-sglang-host": {"plugin_kind": "platform", "host_api": "sglang"},
    "platform-sglang-host-dotted-hpu": {
        "plugin_kind": "platform",
        "host_api": "sglang",
        "distribution_name": "acme.sglang-gaudi_plugin",
        "entry_point_name": "acme.gaudi-2",
        "device_name": "Gaudi-2.x",
        "device_type": "hpu",
        "backend_module": "habana_frameworks.torch",
        "distributed_backend": "hccl",
        "description": UNUSUAL_TEXT,
    },
    "general-sglang-host": {"plugin_kind": "general", "host_api": "sglang"},
    "general-sglang-host-one-hook": {"plugin_kind": "general", "host_api": "sglang", "example_hooks": ["around_timer"]},
}

_RENDERED: dict[str, Path] = {}


@pytest.fixture(params=sorted(CASES))
def case(request: pytest.FixtureRequest, render: Render) -> tuple[dict[str, Any], Path]:
    """``(answers, project folder)`` for one case, rendered once per session."""
    answers = CASES[request.param]
    if request.param not in _RENDERED:
        _RENDERED[request.param] = render(**answers)
    return answers, _RENDERED[request.param]


def _files(project: Path) -> list[Path]:
    return sorted(p for p in project.rglob("*") if p.is_file() and ".git" not in p.parts)


def _pyproject(project: Path) -> dict[str, Any]:
    return tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))


def _answers(project: Path) -> dict[str, Any]:
    return yaml.safe_load((project / ".copier-answers.yml").read_text(encoding="utf-8"))


def test_copier_yml_needs_no_trust_and_excludes_caches() -> None:
    config = yaml.safe_load((REPO_ROOT / "copier.yml").read_text(encoding="utf-8"))
    assert config["_subdirectory"] == "templates/{{ plugin_kind }}"
    assert config["_envops"]["undefined"] == "jinja2.StrictUndefined"
    assert {"__pycache__", "*.py[cod]", ".git"} <= set(config["_exclude"])
    assert not {"_tasks", "_migrations", "_jinja_extensions"} & set(config)


def test_pyproject_parses_and_carries_the_answers(case: tuple[dict[str, Any], Path]) -> None:
    answers, project = case
    data = _pyproject(project)
    recorded = _answers(project)
    assert data["project"]["name"] == recorded["distribution_name"]
    assert data["project"]["description"] == recorded["description"]
    assert data["project"]["authors"][0]["name"] == recorded["author_name"]
    assert data["project"]["requires-python"] == f">={recorded['python_min']}"
    assert data["project"]["dependencies"] == [HOST_REQUIREMENTS[recorded["host_api"]]]
    assert not any(dep.startswith("torch") for dep in data["project"]["dependencies"])
    assert data["build-system"]["build-backend"] == "setuptools.build_meta"


def test_unusual_description_round_trips_into_pyproject() -> None:
    # The cases above carry quotes, backslashes, non-ASCII, emoji and Jinja-looking braces.
    for name in ("platform-unusual-text", "general-unusual-text"):
        project = _RENDERED.get(name)
        if project is None:
            continue
        assert _pyproject(project)["project"]["description"] == UNUSUAL_TEXT


def test_entry_points_name_the_plugin_function(case: tuple[dict[str, Any], Path]) -> None:
    _, project = case
    recorded = _answers(project)
    entry_points = _pyproject(project)["project"]["entry-points"]
    name, package = recorded["entry_point_name"], recorded["package_name"]
    if recorded["plugin_kind"] == "platform":
        assert entry_points["sglang.srt.platforms"] == {name: f"{package}:activate"}
        mm = entry_points.get("sglang.multimodal_gen.platforms")
        with_mm = recorded.get("with_mm_platform", False)  # not asked with host_api=sglang
        assert mm == ({name: f"{package}:activate_mm"} if with_mm else None)
    else:
        assert entry_points == {"sglang.srt.plugins": {name: f"{package}:register"}}


def test_sglang_host_tests_need_the_testing_kit(case: tuple[dict[str, Any], Path]) -> None:
    _, project = case
    recorded = _answers(project)
    test_extra = _pyproject(project)["project"]["optional-dependencies"]["test"]
    assert (HOST_REQUIREMENTS["runtime"] in test_extra) == (recorded["host_api"] == "sglang")


def test_package_code_imports_only_the_chosen_host_api(case: tuple[dict[str, Any], Path]) -> None:
    _, project = case
    recorded = _answers(project)
    chosen = HOST_API_PACKAGES[recorded["host_api"]]
    (other,) = set(HOST_API_PACKAGES.values()) - {chosen}
    imports = []
    for path in sorted((project / recorded["package_name"]).rglob("*.py")):
        imports += re.findall(r"(?m)^\s*(?:from|import) ([\w.]+)", path.read_text(encoding="utf-8"))
    assert not [name for name in imports if name == other or name.startswith(other + ".")]


@pytest.mark.parametrize("name", ["platform-defaults", "platform-sglang-host"])
def test_platform_tests_check_conformance_directly(render: Render, name: str) -> None:
    # The kit judges classes built on SGLang's own bases too: no copy of the class is built in the test.
    project = _RENDERED.get(name) or render(**CASES[name])
    text = (project / "tests" / "test_platform.py").read_text(encoding="utf-8")
    assert "from sglang_plugin_runtime.testing import assert_platform_conformance\n" in text
    assert "assert_platform_conformance(platform_class)" in text
    assert "type(cls.__name__" not in text and "twin" not in text


def test_answers_file_records_questions_but_not_derived_values(
    case: tuple[dict[str, Any], Path],
) -> None:
    answers, project = case
    recorded = _answers(project)
    for key, value in answers.items():
        assert recorded[key] == value
    assert not {"class_prefix", "runtime_requirement", "torch_backend_key"} & set(recorded)
    assert "_src_path" in recorded


def test_every_python_file_compiles(case: tuple[dict[str, Any], Path]) -> None:
    _, project = case
    python_files = [p for p in _files(project) if p.suffix == ".py"]
    assert python_files
    for path in python_files:
        compile(path.read_text(encoding="utf-8"), str(path), "exec")


def test_no_unrendered_jinja_remains(case: tuple[dict[str, Any], Path]) -> None:
    answers, project = case
    allowed = re.escape(answers.get("description", "")) if "description" in answers else None
    for path in _files(project):
        if path.name == ".copier-answers.yml":
            continue  # data (YAML-quoted answers), checked by the answers-file test
        text = path.read_text(encoding="utf-8")
        if allowed:
            text = re.sub(allowed, "", text)
            text = text.replace(json.dumps(answers["description"], ensure_ascii=False), "")
        text = text.replace("${{ matrix.python-version }}", "")  # GitHub Actions syntax, on purpose
        assert not re.search(r"\{\{|\{%|\{#|%\}|#\}", text), f"unrendered Jinja in {path}"


def test_no_cache_or_template_files_are_copied(case: tuple[dict[str, Any], Path]) -> None:
    _, project = case
    for path in project.rglob("*"):
        assert path.name != "__pycache__" and path.suffix not in {".pyc", ".pyo", ".jinja", ".rej"}, path
    assert not (project / "templates").exists() and not (project / "copier.yml").exists()


def test_files_end_with_one_newline_and_no_trailing_spaces(case: tuple[dict[str, Any], Path]) -> None:
    _, project = case
    for path in _files(project):
        text = path.read_text(encoding="utf-8")
        if not text:
            continue  # py.typed is empty on purpose
        assert text.endswith("\n") and not text.endswith("\n\n"), f"{path} does not end cleanly"
        for number, line in enumerate(text.splitlines(), 1):
            assert line == line.rstrip(), f"trailing whitespace in {path}:{number}"


def test_generated_package_ships_py_typed(case: tuple[dict[str, Any], Path]) -> None:
    _, project = case
    assert (project / _answers(project)["package_name"] / "py.typed").is_file()


def test_generated_code_passes_ruff(case: tuple[dict[str, Any], Path]) -> None:
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed in this environment (requirements-dev.txt pins it)")
    _, project = case
    result = subprocess.run([ruff, "check", "--no-cache", "."], cwd=project, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_default_projects_are_ruff_formatted(render: Render) -> None:
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed in this environment (requirements-dev.txt pins it)")
    for kind in ("platform", "general"):
        project = _RENDERED.get(f"{kind}-defaults") or render(plugin_kind=kind)
        result = subprocess.run(
            [ruff, "format", "--no-cache", "--check", "--diff", "."],
            cwd=project, capture_output=True, text=True,
        )
        assert result.returncode == 0, result.stdout + result.stderr


def test_platform_without_mm_has_no_diffusion_class(render: Render) -> None:
    project = _RENDERED.get("platform-dotted-dashed-hpu-no-mm") or render(
        **CASES["platform-dotted-dashed-hpu-no-mm"]
    )
    package = project / _answers(project)["package_name"]
    assert "MMPlatform" not in (package / "platform.py").read_text(encoding="utf-8")
    assert "activate_mm" not in (package / "__init__.py").read_text(encoding="utf-8")


@pytest.mark.parametrize("hook", ["before", "after", "around_timer", "replace_class"])
def test_general_package_ships_only_the_chosen_example_hooks(render: Render, hook: str) -> None:
    markers = {
        "before": "HookType.BEFORE",
        "after": "HookType.AFTER",
        "around_timer": "@plugin_hook",
        "replace_class": "HookType.REPLACE",
    }
    project = _RENDERED.get(f"general-only-{hook}") or render(plugin_kind="general", example_hooks=[hook])
    hooks_py = (project / "sglang_example_hooks" / "hooks.py").read_text(encoding="utf-8")
    for other, marker in markers.items():
        assert (marker in hooks_py) == (other == hook), (other, marker)


def test_class_prefix_is_derived_from_the_device_name(render: Render) -> None:
    project = _RENDERED.get("platform-dotted-dashed-hpu-no-mm") or render(
        **CASES["platform-dotted-dashed-hpu-no-mm"]
    )
    platform_py = (project / _answers(project)["package_name"] / "platform.py").read_text(encoding="utf-8")
    assert "class Gaudi2XSRTPlatform(SRTPlatform, Gaudi2XDeviceMixin):" in platform_py
