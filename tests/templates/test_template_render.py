"""Rendering the template: every kind, with defaults and with unusual answers, gives a clean, valid
project.

Each case is rendered once (cached per session) and checked by one test per property: the TOML and
YAML parse and say what was answered, every Python file compiles and passes ruff, no Jinja or cache
files are left, and every file ends cleanly.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import tomllib
import yaml
from template_support import (
    DEFAULT_PLACEHOLDERS,
    GENERAL_REALISTIC,
    HOST_REQUIREMENTS,
    PLATFORM_REALISTIC,
    REPO_ROOT,
    RUNTIME_REQUIREMENT,
    SGLANG_REQUIREMENT,
    Render,
    git,
    render_template,
)

UNUSUAL_TEXT = (
    "Runs \"SGLang\" on C:\\npu\\ — Zoë’s 🚀 backend <fast> & {braces} {{ not jinja }} 'quoted'"
)

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
    "general-sglang-host-one-hook": {
        "plugin_kind": "general",
        "host_api": "sglang",
        "example_hooks": ["around_timer"],
    },
    "platform-with-diffusion": {
        "plugin_kind": "platform",
        "with_mm_platform": True,
        "license": "BSD-3-Clause",
    },
    "platform-realistic": PLATFORM_REALISTIC,
    "general-realistic": GENERAL_REALISTIC,
    "general-runtime-from-the-index": {"plugin_kind": "general", "runtime_source": ""},
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
    _, project = case
    data = _pyproject(project)
    recorded = _answers(project)
    assert data["project"]["name"] == recorded["distribution_name"]
    assert data["project"]["description"] == recorded["description"]
    assert data["project"]["authors"][0]["name"] == recorded["author_name"]
    assert data["project"]["requires-python"] == f">={recorded['python_min']}"
    assert data["project"]["dependencies"] == HOST_REQUIREMENTS[recorded["host_api"]]
    # the package's __version__ is the one place it is written
    assert data["project"]["dynamic"] == ["version"]
    assert data["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": f"{recorded['package_name']}.__version__"
    }
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
        startup = entry_points.get("sglang.srt.startup_plugins")
        assert startup == (
            {name: f"{package}.startup:register"} if recorded["with_startup_plugin"] else None
        )
    else:
        assert entry_points == {"sglang.srt.plugins": {name: f"{package}:register"}}


def test_the_runtime_is_required_only_where_it_is_imported(
    case: tuple[dict[str, Any], Path],
) -> None:
    # Serving with SGLang never imports the runtime: it is an extra (tests; hosts without SGLang),
    # never a requirement, so a customer's index needs no name it does not have.
    _, project = case
    recorded = _answers(project)
    extras = _pyproject(project)["project"]["optional-dependencies"]
    assert RUNTIME_REQUIREMENT in extras["test"]
    if recorded["host_api"] == "sglang":
        assert set(extras) == {"test"}
    else:
        assert extras["runtime"] == [RUNTIME_REQUIREMENT] and extras["sglang"] == [
            SGLANG_REQUIREMENT
        ]


def _imports(path: Path) -> list[str]:
    return re.findall(r"(?m)^\s*(?:from|import) ([\w.]+)", path.read_text(encoding="utf-8"))


def _is_host_api(module: str) -> bool:
    return module in {"sglang", "sglang_plugin_runtime"} or module.startswith(
        ("sglang.", "sglang_plugin_runtime.")
    )


def test_only_host_py_imports_sglang_or_the_runtime(case: tuple[dict[str, Any], Path]) -> None:
    _, project = case
    # The class REPLACE example subclasses the SGLang class it replaces: that import is its
    # target's, not the host's. The platform class returns SGLang's own classes to the releases that
    # ask for them (0.5.11 to 0.5.21), imported when asked: never SGLang's plugin or platform layer.
    package = project / _answers(project)["package_name"]
    for path in sorted(package.rglob("*.py")):
        imports = [m for m in _imports(path) if _is_host_api(m)]
        if path.name == "eviction.py":
            assert imports == ["sglang.srt.lora.eviction_policy"]
        elif path.name == "platform.py":
            lazy = re.findall(r"(?m)^ +from (sglang\.srt\.[\w.]+) import", path.read_text())
            assert imports == lazy, path
            assert not [
                m for m in lazy if m.startswith(("sglang.srt.platforms", "sglang.srt.plugins"))
            ]
        elif path.name != "host.py":
            assert not imports, path


def test_host_py_binds_to_what_is_installed_unless_pinned_to_sglang(
    case: tuple[dict[str, Any], Path],
) -> None:
    _, project = case
    recorded = _answers(project)
    host = project / recorded["package_name"] / "host.py"
    imported = {m.split(".")[0] for m in _imports(host) if _is_host_api(m)}
    if recorded["host_api"] == "sglang":
        assert imported == {"sglang"}
    else:
        assert imported == {"sglang", "sglang_plugin_runtime"}
        text = host.read_text(encoding="utf-8")
        assert 'importlib.util.find_spec("sglang")' in text and "except ImportError" not in text


@pytest.mark.parametrize("name", ["platform-defaults", "platform-sglang-host"])
def test_platform_tests_check_conformance_directly(render: Render, name: str) -> None:
    # The kit judges classes built on SGLang's own bases too: no copy of the class is built in the
    # test.
    project = _RENDERED.get(name) or render(**CASES[name])
    text = (project / "tests" / "test_platform.py").read_text(encoding="utf-8")
    assert (
        "from sglang_plugin_runtime.testing import assert_platform_conformance, sglang_releases\n"
        in text
    )
    assert "assert_platform_conformance(MydeviceSRTPlatform)" in text
    assert "assert_platform_conformance(MydeviceSRTPlatform, release=release)" in text
    assert "type(cls.__name__" not in text and "twin" not in text


def test_answers_file_records_questions_but_not_derived_values(
    case: tuple[dict[str, Any], Path],
) -> None:
    answers, project = case
    recorded = _answers(project)
    for key, value in answers.items():
        assert recorded[key] == value
    assert not {
        "class_prefix",
        "runtime_requirement",
        "torch_backend_key",
        "runtime_ref",
        "runtime_pip_requirement",
        "runtime_source_is_local",
        "contract_docs_url",
    } & set(recorded)
    assert "_src_path" in recorded


def test_every_python_file_compiles(case: tuple[dict[str, Any], Path]) -> None:
    _, project = case
    python_files = [p for p in _files(project) if p.suffix == ".py"]
    assert python_files
    for path in python_files:
        compile(path.read_bytes(), str(path), "exec")  # bytes: as an import reads it (PEP 263)


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
        text = re.sub(r"\$\{\{ [^}]* \}\}", "", text)  # GitHub Actions expressions, on purpose
        assert not re.search(r"\{\{|\{%|\{#|%\}|#\}", text), f"unrendered Jinja in {path}"


def test_no_cache_or_template_files_are_copied(case: tuple[dict[str, Any], Path]) -> None:
    _, project = case
    for path in project.rglob("*"):
        assert path.name != "__pycache__" and path.suffix not in {
            ".pyc",
            ".pyo",
            ".jinja",
            ".rej",
        }, path
    assert not (project / "templates").exists() and not (project / "copier.yml").exists()


def test_files_end_with_one_newline_and_no_trailing_spaces(
    case: tuple[dict[str, Any], Path],
) -> None:
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
    result = subprocess.run(
        [ruff, "check", "--no-cache", "."], cwd=project, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_default_projects_are_ruff_formatted(render: Render) -> None:
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed in this environment (requirements-dev.txt pins it)")
    for kind in ("platform", "general"):
        project = _RENDERED.get(f"{kind}-defaults") or render(plugin_kind=kind)
        result = subprocess.run(
            [ruff, "format", "--no-cache", "--check", "--diff", "."],
            cwd=project,
            capture_output=True,
            text=True,
        )
        assert result.returncode == 0, result.stdout + result.stderr


def test_platform_without_mm_has_no_diffusion_class(render: Render) -> None:
    project = _RENDERED.get("platform-dotted-dashed-hpu-no-mm") or render(
        **CASES["platform-dotted-dashed-hpu-no-mm"]
    )
    package = project / _answers(project)["package_name"]
    assert "MMPlatform" not in (package / "platform.py").read_text(encoding="utf-8")
    assert "activate_mm" not in (package / "__init__.py").read_text(encoding="utf-8")
    assert (
        not (package / "diffusion.py").exists()
        and not (project / "tests" / "test_diffusion.py").exists()
    )


def test_platform_with_diffusion_keeps_it_in_its_own_module(render: Render) -> None:
    project = _RENDERED.get("platform-with-diffusion") or render(**CASES["platform-with-diffusion"])
    package = project / _answers(project)["package_name"]
    assert "class MydeviceMMPlatform(host.MMPlatform, MydeviceDeviceMixin):" in (
        package / "diffusion.py"
    ).read_text(encoding="utf-8")
    assert "MMPlatform" not in (package / "platform.py").read_text(encoding="utf-8")
    assert 'MM_PLATFORM_CLASS = "sglang_mydevice_platform.diffusion.MydeviceMMPlatform"' in (
        package / "__init__.py"
    ).read_text(encoding="utf-8")


def test_a_startup_plugin_is_generated_only_when_asked(render: Render) -> None:
    default = _RENDERED.get("platform-defaults") or render(**CASES["platform-defaults"])
    realistic = _RENDERED.get("platform-realistic") or render(**CASES["platform-realistic"])
    assert not list(default.rglob("startup.py")) and not list(default.rglob("test_startup.py"))
    assert (realistic / "acme_sglang_npu" / "startup.py").is_file()
    assert (realistic / "tests" / "test_startup.py").is_file()


#: SGLang 0.5.23's two uses of ``current_platform.get_device``: without ``--device``,
#: ``get_device(device_id)`` with ``device_id`` None (srt/utils/common.py:1122), whose answer
#: serving_hook.py:648-658 splits on ":"; and ``get_device(<index>)`` for the weights
#: (srt/model_loader/weight_utils.py:1248).
SGLANG_GET_DEVICE_CALLS = """
import importlib, json
from {package} import DEVICE_TYPE, PLATFORM_CLASS

module, name = PLATFORM_CLASS.rsplit(".", 1)
platform = getattr(importlib.import_module(module), name)()
device = platform.get_device(None)
answers = [device.split(":")[0], platform.get_device(0), platform.get_device(1)]
print(json.dumps([DEVICE_TYPE, *answers]))
"""


@pytest.mark.parametrize("name", ["platform-defaults", "platform-one-letter-names"])
def test_the_generated_get_device_survives_sglangs_calls(render: Render, name: str) -> None:
    project = _RENDERED.get(name) or render(**CASES[name])
    code = SGLANG_GET_DEVICE_CALLS.format(package=_answers(project)["package_name"])
    completed = subprocess.run(
        [sys.executable, "-c", code], cwd=project, capture_output=True, text=True, check=False
    )
    assert completed.returncode == 0, completed.stderr
    device_type, *answers = json.loads(completed.stdout)
    assert answers == [device_type, f"{device_type}:0", f"{device_type}:1"]


def test_diffusion_platform_is_off_by_default(render: Render) -> None:
    project = _RENDERED.get("platform-defaults") or render(**CASES["platform-defaults"])
    assert _answers(project)["with_mm_platform"] is False


@pytest.mark.parametrize("hook", ["before", "after", "around_timer", "replace_class"])
def test_general_package_ships_only_the_chosen_example_hooks(render: Render, hook: str) -> None:
    markers = {
        "before": "HookType.BEFORE",
        "after": "HookType.AFTER",
        "around_timer": "@plugin_hook",
        "replace_class": "HookType.REPLACE",
    }
    stand_ins = {
        "before": "generate_completion_prompt",
        "after": "compute_retained_tokens_count",
        "around_timer": "Scheduler",
        "replace_class": "LRUEvictionPolicy",
    }
    project = _RENDERED.get(f"general-only-{hook}") or render(
        plugin_kind="general", example_hooks=[hook]
    )
    hooks_py = (project / "sglang_example_hooks" / "hooks.py").read_text(encoding="utf-8")
    for other, marker in markers.items():
        assert (marker in hooks_py) == (other == hook), (other, marker)
    stand_in_source = (project / "tests" / "sglang_stand_ins.py").read_text(encoding="utf-8")
    defined = re.findall(r"(?m)^(?:def|class) (\w+)", stand_in_source)
    assert defined == [stand_ins[hook], "put_stand_ins"]
    assert (project / "sglang_example_hooks" / "eviction.py").exists() == (hook == "replace_class")


@pytest.mark.parametrize("name", sorted(n for n in CASES if n.startswith("general")))
def test_stand_ins_live_only_under_tests(render: Render, name: str) -> None:
    # The wheel holds the package alone: nothing in it stands in for SGLang (the examples target
    # SGLang itself).
    project = _RENDERED.get(name) or render(**CASES[name])
    package = project / _answers(project)["package_name"]
    assert not (package / "example_target.py").exists()
    for path in package.rglob("*.py"):
        assert not re.search(
            r"import .*stand_in|stand_in.* import", path.read_text(encoding="utf-8")
        ), path
    has_examples = bool(_answers(project)["example_hooks"])
    assert (project / "tests" / "sglang_stand_ins.py").exists() == has_examples
    assert (
        not (project / "tests" / "isolated_hooks.py").exists()
        and not (project / "tests" / "stand_ins.py").exists()
    )


def test_class_prefix_is_derived_from_the_device_name(render: Render) -> None:
    project = _RENDERED.get("platform-dotted-dashed-hpu-no-mm") or render(
        **CASES["platform-dotted-dashed-hpu-no-mm"]
    )
    platform_py = (project / _answers(project)["package_name"] / "platform.py").read_text(
        encoding="utf-8"
    )
    assert "class Gaudi2XSRTPlatform(SRTPlatform, Gaudi2XDeviceMixin):" in platform_py


# ---- every generated file carries the answers


def test_description_and_author_are_derived_from_the_answers(render: Render) -> None:
    platform = _answers(_RENDERED.get("platform-defaults") or render(**CASES["platform-defaults"]))
    assert platform["description"] == (
        'Runs SGLang on mydevice hardware (torch device type "mydevice") as a platform plugin'
    )
    assert platform["author_name"] == "SGLang Mydevice Platform authors"
    general = _answers(_RENDERED.get("general-defaults") or render(**CASES["general-defaults"]))
    assert general["description"].startswith("SGLang Example Hooks: ")
    assert general["author_name"] == "SGLang Example Hooks authors"


def test_derived_author_drops_what_the_metadata_cannot_carry(
    template_dir: Path, tmp_path: Path
) -> None:
    project = render_template(
        template_dir, tmp_path / "out", project_name="Acme, Inc. <NPU> Team @ Home"
    )
    assert _answers(project)["author_name"] == "Acme Inc. NPU Team Home authors"


@pytest.mark.parametrize("name", ["platform-realistic", "general-realistic"])
def test_realistic_answers_leave_no_default_placeholder(render: Render, name: str) -> None:
    project = _RENDERED.get(name) or render(**CASES[name])
    for path in _files(project):
        text = path.read_text(encoding="utf-8").lower()
        for placeholder in DEFAULT_PLACEHOLDERS:
            assert placeholder.lower() not in text, (path, placeholder)


LICENSE_FIRST_LINES = {
    "Apache-2.0": "Apache License",
    "MIT": "MIT License",
    "BSD-3-Clause": "BSD 3-Clause License",
}


def test_license_file_matches_the_license_answer(case: tuple[dict[str, Any], Path]) -> None:
    _, project = case
    recorded = _answers(project)
    license_file = project / "LICENSE"
    readme = (project / "README.md").read_text(encoding="utf-8")
    if recorded["license"] == "LicenseRef-Proprietary":
        assert not license_file.exists()
        assert _pyproject(project)["project"]["license-files"] == []
        assert "License: proprietary" in readme and "No license file is generated" in readme
        return
    text = license_file.read_text(encoding="utf-8")
    assert text.lstrip().startswith(LICENSE_FIRST_LINES[recorded["license"]])
    assert _pyproject(project)["project"]["license-files"] == ["LICENSE"]
    assert f"License: {recorded['license']}, see [LICENSE](LICENSE)" in readme
    if recorded["license"] == "Apache-2.0":
        # the full text, verbatim
        assert text == (REPO_ROOT / "LICENSE").read_text(encoding="utf-8")
    else:
        assert f"Copyright (c) {recorded['author_name']}\n" in text


def test_general_package_has_no_platform_leftovers(case: tuple[dict[str, Any], Path]) -> None:
    _, project = case
    if _answers(project)["plugin_kind"] != "general":
        return
    pyproject = (project / "pyproject.toml").read_text(encoding="utf-8")
    assert (
        "torch" not in pyproject and "NumPy" not in pyproject and "filterwarnings" not in pyproject
    )
    test_job = yaml.safe_load((project / ".github/workflows/ci.yml").read_text(encoding="utf-8"))[
        "jobs"
    ]["test"]
    for name, text in (
        ("README.md", (project / "README.md").read_text(encoding="utf-8")),
        ("job test", str(test_job)),
    ):
        assert "vendor's torch" not in text and "pytorch.org" not in text and "NumPy" not in text, (
            name
        )


# ---- generated text: regression tests of the defects vendors noticed


def _markdown_outside_code(text: str) -> list[tuple[int, str]]:
    lines, inside = [], False
    for number, line in enumerate(text.splitlines()):
        if line.startswith("```"):
            inside = not inside
            continue
        if not inside:
            lines.append((number, line))
    assert not inside, "unbalanced code fence"
    return lines


def test_readme_headings_follow_one_blank_line(case: tuple[dict[str, Any], Path]) -> None:
    _, project = case
    text = (project / "README.md").read_text(encoding="utf-8")
    all_lines = text.splitlines()
    for number, line in _markdown_outside_code(text):
        if line.startswith("#") and number > 0:
            assert all_lines[number - 1] == "" and all_lines[number - 2] != "", (number, line)
    assert "\n\n\n" not in text


def test_readme_code_blocks_put_comments_on_their_own_lines(
    case: tuple[dict[str, Any], Path],
) -> None:
    # A comment after a command cannot stay aligned once names of any length are filled in.
    _, project = case
    text = (project / "README.md").read_text(encoding="utf-8")
    code = [
        line
        for line in text.splitlines()
        if line not in dict(_markdown_outside_code(text)).values()
    ]
    for line in code:
        if not line.startswith(("#", "```")):
            assert re.search(r"\s#\s", line) is None, line


@pytest.mark.parametrize("device_name", ["acme_npu", "npu", "x", "Gaudi-2.x", "mydevice"])
def test_the_device_name_never_follows_an_article(
    template_dir: Path, tmp_path: Path, device_name: str
) -> None:
    # Whether "a" or "an" fits depends on how a name is spoken, which the template cannot know: no
    # text puts one.
    project = render_template(
        template_dir, tmp_path / "out", device_name=device_name, with_mm_platform=True
    )
    for path in _files(project):
        text = path.read_text(encoding="utf-8")
        assert not re.search(rf"\b(a|an|A|An) {re.escape(device_name)}\b", text), path


def test_log_messages_do_not_repeat_the_logger_name(case: tuple[dict[str, Any], Path]) -> None:
    # Records carry logging.getLogger(__name__)'s name already; passing __name__ again doubled it in
    # every line.
    _, project = case
    for path in _files(project):
        if path.suffix == ".py":
            assert not re.search(
                r"logger\.\w+\((?:[^()]|\([^()]*\))*__name__", path.read_text(encoding="utf-8")
            ), path


def test_getting_started_does_not_promise_a_warning_the_pyproject_filters() -> None:
    text = (REPO_ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
    assert "1 warning" not in text


# ---- the platform README: what to override, and the contract

OVERRIDES_PROBE = """
import importlib, importlib.util, json, sys
sys.path.insert(0, sys.argv[1])
from sglang_plugin_runtime.platforms import describe_contract
package = sys.argv[2]
classes = [c for c in (getattr(importlib.import_module(package + "." + m), n, None)
           for m, n in (("device", sys.argv[3] + "DeviceMixin"),
                        ("platform", sys.argv[3] + "SRTPlatform"),
                        ("diffusion", sys.argv[3] + "MMPlatform"))
           if importlib.util.find_spec(package + "." + m)) if c is not None]
defined = sorted({n for c in classes for n in vars(c) if not n.startswith("_")}
                 - {"device_name", "device_type"})
contract = {}
for c in classes[1:]:
    for m in describe_contract(c):
        contract[m.name] = {"status": m.status, "required": m.required}
print(json.dumps({"defined": defined, "contract": contract}))
"""


@pytest.mark.parametrize("name", ["platform-defaults", "platform-with-diffusion"])
def test_platform_readme_lists_each_override_with_its_contract_status(
    render: Render, name: str
) -> None:
    project = _RENDERED.get(name) or render(**CASES[name])
    recorded = _answers(project)
    prefix = "Mydevice"
    probe = subprocess.run(
        [sys.executable, "-c", OVERRIDES_PROBE, str(project), recorded["package_name"], prefix],
        capture_output=True,
        text=True,
        check=True,
    )
    found = json.loads(probe.stdout)
    readme = (project / "README.md").read_text(encoding="utf-8")
    rows = {
        m.group(1): (m.group(2), m.group(3))
        for m in re.finditer(r"(?m)^\| `(\w+)` \| (today|reserved) \| (.*) \|$", readme)
    }
    # The methods only older releases ask for have their own table, with the releases.
    older = re.findall(r"(?m)^\| `(\w+)` \| 0\.5\.\d+[^|]* \| ", readme)
    assert sorted({*rows, *older}) == found["defined"]  # exactly what the classes override
    for method, (called, why) in rows.items():
        entry = found["contract"][method]
        assert called == {"active": "today", "reserved": "reserved"}[entry["status"]], method
        assert ("**required**" in why) == entry["required"], method
    required = {n for n, entry in found["contract"].items() if entry["required"]}
    assert required <= set(rows)  # every required member is overridden


def test_platform_readme_links_the_contract_on_the_kits_repository(
    kit_repository: dict[str, str], tmp_path: Path
) -> None:
    project = render_template(
        Path(kit_repository["path"]),
        tmp_path / "out",
        vcs_ref=kit_repository["current"],
        runtime_source="git+https://github.com/acme/sglang-plugin-kit.git",
    )
    readme = (project / "README.md").read_text(encoding="utf-8")
    commit = _tagged_commit(kit_repository)
    expected = f"https://github.com/acme/sglang-plugin-kit/blob/{commit}/docs/platform-contract.md"
    assert expected in readme
    assert (REPO_ROOT / "docs" / "platform-contract.md").is_file()


# ---- where the package gets the runtime


def _tagged_commit(kit_repository: dict[str, str]) -> str:
    """The commit the kit's current tag points at."""
    return git(
        Path(kit_repository["path"]), "rev-parse", f"{kit_repository['current']}^{{commit}}"
    ).strip()


def _ci_install(project: Path) -> str:
    return (project / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8")


#: Where the README and CI take the runtime's requirement from (kept out of README.md).
RUNTIME_REQUIREMENTS = ".github/runtime-requirements.txt"


def _runtime_requirement(project: Path) -> str | None:
    """The requirement line of the project's runtime requirements file (``None``: no such file)."""
    path = project / RUNTIME_REQUIREMENTS
    if not path.exists():
        return None
    (line,) = [x for x in path.read_text(encoding="utf-8").splitlines() if not x.startswith("#")]
    return line


def test_runtime_source_defaults_to_the_template_folder(render: Render, template_dir: Path) -> None:
    project = _RENDERED.get("platform-defaults") or render(**CASES["platform-defaults"])
    source = template_dir.resolve().as_uri()
    assert _answers(project)["runtime_source"] == source
    assert _runtime_requirement(project) == f"sglang-plugin-runtime @ {source}"
    assert f"python -m pip install -r {RUNTIME_REQUIREMENTS}" in _ci_install(project)
    assert f"pip install -r {RUNTIME_REQUIREMENTS}" in (project / "README.md").read_text(
        encoding="utf-8"
    )


def test_runtime_source_from_a_git_template_is_pinned_to_its_commit(
    kit_repository: dict[str, str], tmp_path: Path
) -> None:
    # The commit, not the tag: a tag placed on that commit later must not change what this version
    # renders.
    project = render_template(
        Path(kit_repository["path"]), tmp_path / "out", vcs_ref=kit_repository["current"]
    )
    source = _answers(project)["runtime_source"]
    assert source == "git+" + Path(kit_repository["path"]).resolve().as_uri()
    assert _runtime_requirement(project) == (
        f"sglang-plugin-runtime @ {source}@{_tagged_commit(kit_repository)}"
    )


@pytest.mark.parametrize(
    ("source", "requirement"),
    [
        (
            "git+https://github.com/acme/kit.git@main",
            "sglang-plugin-runtime @ git+https://github.com/acme/kit.git@main",
        ),
        (
            "https://example.com/sglang_plugin_runtime-0.1.0-py3-none-any.whl",
            "sglang-plugin-runtime @ "
            "https://example.com/sglang_plugin_runtime-0.1.0-py3-none-any.whl",
        ),
    ],
)
def test_runtime_source_keeps_a_ref_or_file_the_vendor_names(
    template_dir: Path, tmp_path: Path, source: str, requirement: str
) -> None:
    project = render_template(
        template_dir, tmp_path / "out", plugin_kind="general", runtime_source=source
    )
    assert _runtime_requirement(project) == requirement


def test_empty_runtime_source_takes_the_runtime_from_the_index(render: Render) -> None:
    project = _RENDERED.get("general-runtime-from-the-index") or render(
        **CASES["general-runtime-from-the-index"]
    )
    assert _runtime_requirement(project) is None
    assert RUNTIME_REQUIREMENTS not in _ci_install(project)
    assert RUNTIME_REQUIREMENTS not in (project / "README.md").read_text(encoding="utf-8")
    assert _pyproject(project)["project"]["dependencies"] == HOST_REQUIREMENTS["auto"]


@pytest.mark.parametrize("kind", ["platform", "general"])
def test_the_readme_of_a_package_from_a_local_kit_holds_no_local_path(
    template_dir: Path, tmp_path: Path, kind: str
) -> None:
    # Issue 36: README.md is the wheel's description; its git+file:// lines and the contract's
    # file:// link published the folder the vendor generated from. The contract is named instead.
    project = render_template(template_dir, tmp_path / "out", plugin_kind=kind)
    readme = (project / "README.md").read_text(encoding="utf-8")
    assert "file://" not in readme and str(template_dir.resolve()) not in readme
    if kind == "platform":
        assert "plugin kit this package was generated from (`docs/platform-contract.md`)" in readme
    assert (
        _runtime_requirement(project)
        == f"sglang-plugin-runtime @ {template_dir.resolve().as_uri()}"
    )
