"""Derived defaults: a platform package is named after its device, and every default passes its own
validator.

Copier validates a default like an answer, so a derived default its own question refuses stops
``--defaults`` with an error about a question the user never saw. Each case here renders with
``--defaults`` and the few answers named.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from template_support import clean_env, render_template


def _answers(project: Path) -> dict[str, Any]:
    return yaml.safe_load((project / ".copier-answers.yml").read_text(encoding="utf-8"))


def test_platform_names_derive_from_the_device_asked_first(
    template_dir: Path, tmp_path: Path
) -> None:
    # As a vendor types it: copier copy --defaults --data device_name=acme_npu.
    subprocess.run(
        [
            sys.executable,
            "-m",
            "copier",
            "copy",
            "--quiet",
            "--defaults",
            "--data",
            "device_name=acme_npu",
            str(template_dir),
            str(tmp_path / "out"),
        ],
        env=clean_env(),
        check=True,
        capture_output=True,
        text=True,
    )
    answers = _answers(tmp_path / "out")
    assert {
        key: answers[key]
        for key in (
            "project_name",
            "distribution_name",
            "package_name",
            "entry_point_name",
            "device_type",
            "backend_module",
        )
    } == {
        "project_name": "SGLang Acme NPU Platform",
        "distribution_name": "sglang-acme-npu-platform",
        "package_name": "sglang_acme_npu_platform",
        "entry_point_name": "acme_npu",
        "device_type": "acme_npu",
        "backend_module": "torch_acme_npu",
    }
    assert (tmp_path / "out" / "sglang_acme_npu_platform" / "platform.py").is_file()


def test_the_device_is_asked_before_the_names() -> None:
    questions = [
        key
        for key in yaml.safe_load(
            (Path(__file__).parents[2] / "copier.yml").read_text(encoding="utf-8")
        )
        if not key.startswith("_")
    ]
    assert (
        questions.index("device_name")
        < questions.index("device_type")
        < questions.index("project_name")
    )


@pytest.mark.fault(
    "templates",
    "a 65-100 character project name, with --defaults",
    "every derived name fits its question's limits (the entry-point name is cut to 64 characters)",
)
@pytest.mark.parametrize("kind", ["platform", "general"])
@pytest.mark.parametrize("length", [65, 80, 100])
def test_a_long_project_name_gives_defaults_within_their_limits(
    template_dir: Path, tmp_path: Path, kind: str, length: int
) -> None:
    project_name = (
        ("Acme Scheduler Hooks For Very Large Clusters " * 3)[:length].strip().ljust(length, "X")
    )
    answers = _answers(
        render_template(template_dir, tmp_path / "out", plugin_kind=kind, project_name=project_name)
    )
    assert len(answers["project_name"]) == length
    assert 0 < len(answers["entry_point_name"]) <= 64 and answers["entry_point_name"][-1].isalnum()


@pytest.mark.fault(
    "templates",
    "a project name of only non-ASCII letters, with --defaults",
    "the distribution name is derived from the device (platform) or a generic one (general)",
)
@pytest.mark.parametrize(
    ("kind", "distribution"),
    [("platform", "sglang-mydevice-platform"), ("general", "sglang-hooks")],
)
def test_a_project_name_without_ascii_letters_gives_a_valid_distribution_name(
    template_dir: Path, tmp_path: Path, kind: str, distribution: str
) -> None:
    answers = _answers(
        render_template(
            template_dir, tmp_path / "out", plugin_kind=kind, project_name="Плагин 日本"
        )
    )
    assert answers["project_name"] == "Плагин 日本"
    assert answers["distribution_name"] == distribution


@pytest.mark.parametrize(
    ("project_name", "distribution", "package"),
    [
        ("SGLang", "sglang-plugin", "sglang_plugin"),  # taken by a dependency
        ("Torch", "torch-plugin", "torch_plugin"),
        ("JSON", "json", "json_plugin"),  # a standard-library module
        ("Class", "class", "class_plugin"),  # a keyword
        ("Tests", "tests", "tests_plugin"),  # a folder the project's tests use
        ("2024 Hooks", "2024-hooks", "_2024_hooks"),
    ],
)
def test_a_project_name_a_dependency_or_python_uses_gets_free_names(
    template_dir: Path, tmp_path: Path, project_name: str, distribution: str, package: str
) -> None:
    project = render_template(
        template_dir, tmp_path / "out", plugin_kind="general", project_name=project_name
    )
    answers = _answers(project)
    assert (answers["distribution_name"], answers["package_name"]) == (distribution, package)


@pytest.mark.parametrize("device_name", ["Gaudi-2.x", "X", "npu", "Acme.NPU-v2_beta", "a" * 32])
def test_every_device_name_gives_valid_defaults(
    template_dir: Path, tmp_path: Path, device_name: str
) -> None:
    answers = _answers(render_template(template_dir, tmp_path / "out", device_name=device_name))
    assert answers["device_name"] == device_name
    assert answers["device_type"] == device_name.lower().replace(".", "_").replace("-", "_")


@pytest.mark.parametrize(
    ("device_name", "title", "distribution"),
    [
        ("acme_npu", "SGLang Acme NPU Platform", "sglang-acme-npu-platform"),
        ("mydevice", "SGLang Mydevice Platform", "sglang-mydevice-platform"),
        ("MyDevice", "SGLang MyDevice Platform", "sglang-mydevice-platform"),
        ("Gaudi-2.x", "SGLang Gaudi 2 X Platform", "sglang-gaudi-2-x-platform"),
    ],
)
def test_the_platform_project_name_is_a_title_of_the_device_names_words(
    template_dir: Path, tmp_path: Path, device_name: str, title: str, distribution: str
) -> None:
    # Issue 36: it read "SGLang acme_npu Platform", the identifier; the names derived from it stay.
    answers = _answers(render_template(template_dir, tmp_path / "out", device_name=device_name))
    assert (answers["project_name"], answers["distribution_name"]) == (title, distribution)


@pytest.mark.fault(
    "templates",
    "a platform package whose project name is changed from the default (issue 28)",
    "the entry-point name still follows the device name (SGLANG_PLATFORM=<device>)",
)
@pytest.mark.parametrize(
    ("device_name", "entry_point"), [("acme_npu", "acme_npu"), ("Gaudi-2.x", "gaudi-2.x")]
)
def test_the_platform_entry_point_follows_the_device_whatever_the_project_name(
    template_dir: Path, tmp_path: Path, device_name: str, entry_point: str
) -> None:
    answers = _answers(
        render_template(
            template_dir,
            tmp_path / "out",
            device_name=device_name,
            project_name="Acme Inference Stack",
        )
    )
    assert answers["distribution_name"] == "acme-inference-stack"
    assert answers["entry_point_name"] == entry_point
