"""Every question refuses a bad answer with a message that says what is allowed."""

from __future__ import annotations

import keyword
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import tomllib
import yaml
from template_support import REPO_ROOT, render_template

BAD_ANSWERS: list[tuple[str, dict[str, Any], str]] = [
    ("distribution_name", {"distribution_name": "my plugin"}, "Not a valid distribution name"),
    ("distribution_name", {"distribution_name": "-leading-dash"}, "Not a valid distribution name"),
    ("distribution_name", {"distribution_name": "pkg/evil"}, "Not a valid distribution name"),
    ("distribution_name", {"distribution_name": "SGLang_Plugin.Runtime"}, "Already taken"),
    ("package_name", {"package_name": "class"}, "A Python keyword cannot be imported"),
    ("package_name", {"package_name": "None"}, "Use a lowercase Python identifier"),
    ("package_name", {"package_name": "My-Package"}, "Use a lowercase Python identifier"),
    ("package_name", {"package_name": "1st"}, "Use a lowercase Python identifier"),
    ("package_name", {"package_name": "../escape"}, "Use a lowercase Python identifier"),
    ("package_name", {"package_name": "torch"}, "Would shadow"),
    ("entry_point_name", {"entry_point_name": "my device"}, "Not a valid entry-point name"),
    ("entry_point_name", {"entry_point_name": "a,b"}, "Not a valid entry-point name"),
    ("entry_point_name", {"entry_point_name": "a/b"}, "Not a valid entry-point name"),
    ("entry_point_name", {"entry_point_name": "a=b"}, "Not a valid entry-point name"),
    ("entry_point_name", {"entry_point_name": ""}, "Not a valid entry-point name"),
    ("project_name", {"project_name": "  "}, "must not be empty"),
    ("project_name", {"project_name": "two\nlines"}, "no control characters"),
    ("description", {"description": "tab\there"}, "control characters are not allowed"),
    ("description", {"description": "line\nbreak"}, "control characters are not allowed"),
    ("description", {"description": "nul\x00byte"}, "control characters are not allowed"),
    ("description", {"description": "escape \x1b[31mred"}, "control characters are not allowed"),
    ("description", {"description": "line\u2028separator"}, "control characters are not allowed"),
    ("author_name", {"author_name": "bell\x07"}, "no control characters"),
    ("author_name", {"author_name": "A <a@example.org>"}, "must not hold"),
    ("author_email", {"author_email": "not-an-address"}, "Not a plain e-mail address"),
    ("author_email", {"author_email": "a@b"}, "Not a plain e-mail address"),
    ("device_name", {"device_name": "my device"}, "Start with a letter"),
    ("device_name", {"device_name": "9lives"}, "Start with a letter"),
    ("device_name", {"device_name": "CUDA"}, "built into torch"),
    ("device_type", {"device_type": "cuda"}, "built into torch"),
    ("device_type", {"device_type": "cpu"}, "built into torch"),
    ("device_type", {"device_type": "meta"}, "built into torch"),
    ("device_type", {"device_type": "xpu"}, "built into torch"),
    ("device_type", {"device_type": "Npu"}, "Not a valid torch device type"),
    ("device_type", {"device_type": "my-dev"}, "Not a valid torch device type"),
    ("backend_module", {"backend_module": "torch"}, "Always importable"),
    ("backend_module", {"backend_module": "torch-npu"}, "Not an importable module name"),
    ("backend_module", {"backend_module": "a..b"}, "Not an importable module name"),
    (
        "backend_module",
        {"package_name": "acme", "backend_module": "acme.backend"},
        "not this plugin",
    ),
    (
        "distributed_backend",
        {"distributed_backend": "HCCL"},
        "Not a valid torch.distributed backend",
    ),
    ("python_min", {"python_min": "3.9"}, "Invalid choice"),
    ("license", {"license": "WTFPL"}, "Invalid choice"),
    ("plugin_kind", {"plugin_kind": "kernel"}, "Invalid choice"),
    # host_api=runtime is retired: a package built on the runtime's classes works on no released
    # SGLang.
    ("host_api", {"host_api": "runtime"}, "Invalid choice"),
    (
        "runtime_source",
        {"runtime_source": "pip install sglang-plugin-runtime"},
        "Not a URL pip installs from",
    ),
    (
        "runtime_source",
        {"runtime_source": "/home/me/sglang-plugin-kit"},
        "Not a URL pip installs from",
    ),
    (
        "runtime_source",
        {"runtime_source": 'git+https://example.com/kit".git'},
        "Not a URL pip installs from",
    ),
    ("sglang_versions", {"sglang_versions": "0.5.23"}, "Not a version range the plugin can check"),
    (
        "sglang_versions",
        {"sglang_versions": ">= 0.5.23"},
        "Not a version range the plugin can check",
    ),
    (
        "sglang_versions",
        {"sglang_versions": ">=0.5.23rc1"},
        "Not a version range the plugin can check",
    ),
    ("sglang_versions", {"sglang_versions": ">=0.5.*"}, "Not a version range the plugin can check"),
    ("sglang_versions", {"sglang_versions": "~=1"}, "Not a version range the plugin can check"),
    (
        "sglang_versions",
        {"sglang_versions": ">=0.5;import os"},
        "Not a version range the plugin can check",
    ),
]


@pytest.mark.parametrize(
    ("question", "answers", "message"),
    BAD_ANSWERS,
    ids=[f"{q}={next(iter(a.values()))!r}" for q, a, _ in BAD_ANSWERS],
)
def test_bad_answer_is_refused_with_a_message_saying_what_is_allowed(
    template_dir: Path, tmp_path: Path, question: str, answers: dict[str, Any], message: str
) -> None:
    destination = tmp_path / "out"
    with pytest.raises(ValueError, match=question) as excinfo:
        render_template(template_dir, destination, **answers)
    assert message in str(excinfo.value)
    assert not (destination / "pyproject.toml").exists()


#: Copier draws a validator's message, and each choice of a list, on one line cut at the terminal's
#: width (prompt_toolkit's validation toolbar is one row high): within 76 characters, what the user
#: must change is never cut off on an 80-column terminal. The details are in each question's help.
FITS_ONE_LINE = 76


@pytest.mark.fault(
    "templates",
    "a bad answer typed in Copier's prompt on an 80-column terminal",
    "the whole message shows: one line of at most 76 characters saying what to change; the full "
    "rule is in the question's help (it was cut, ... for example \"mydevic)",
)
@pytest.mark.parametrize(
    ("question", "answers"),
    # Copier's own, --data only
    [(q, a) for q, a, message in BAD_ANSWERS if message != "Invalid choice"],
    ids=[f"{q}={next(iter(a.values()))!r}" for q, a, m in BAD_ANSWERS if m != "Invalid choice"],
)
def test_each_validator_message_fits_one_line_of_a_terminal(
    template_dir: Path, tmp_path: Path, question: str, answers: dict[str, Any]
) -> None:
    with pytest.raises(ValueError, match=question) as excinfo:
        render_template(template_dir, tmp_path / "out", **answers)
    # What the prompt shows is the validator's own text; --data adds "Validation error for ...".
    shown = str(excinfo.value).split(f"question '{question}': ", 1)[-1]
    assert "\n" not in shown and len(shown) <= FITS_ONE_LINE, shown


def test_each_choice_fits_one_line_of_a_terminal() -> None:
    questions = yaml.safe_load((REPO_ROOT / "copier.yml").read_text(encoding="utf-8"))
    for name, question in questions.items():
        choices = question.get("choices", []) if isinstance(question, dict) else []
        for title in choices:
            assert len(str(title)) <= FITS_ONE_LINE - 4, (name, title)  # 4: the list's pointer


@pytest.mark.fault(
    "templates",
    "a package named like a standard-library module (json, types, re, ...)",
    "refused at generation, saying Python would import its own module and never the plugin",
)
@pytest.mark.parametrize(
    "name", ["json", "types", "re", "enum", "collections", "logging", "platform", "site"]
)
def test_a_standard_library_name_is_refused_with_the_reason(
    template_dir: Path, tmp_path: Path, name: str
) -> None:
    with pytest.raises(ValueError, match="package_name") as excinfo:
        render_template(template_dir, tmp_path / "out", plugin_kind="general", package_name=name)
    assert "A standard-library module: Python would import its own" in str(excinfo.value)
    assert not (tmp_path / "out" / "pyproject.toml").exists()


def test_general_example_hooks_refuse_an_unknown_choice(template_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="example_hooks"):
        render_template(
            template_dir, tmp_path / "out", plugin_kind="general", example_hooks=["sideways"]
        )


def test_hpu_is_accepted_as_a_device_type_for_gaudi_style_stacks(
    template_dir: Path, tmp_path: Path
) -> None:
    project = render_template(
        template_dir, tmp_path / "out", device_type="hpu", backend_module="habana_frameworks.torch"
    )
    assert 'device_type = "hpu"' in next(project.glob("*/device.py")).read_text(encoding="utf-8")


# ---- the names the validators refuse are data; each list is checked against its source


def _data(name: str) -> set[str]:
    return set(
        yaml.safe_load((REPO_ROOT / "copier.yml").read_text(encoding="utf-8"))[name][
            "default"
        ].split()
    )


def test_standard_library_list_is_every_python_s_stdlib_module_names() -> None:
    # The union over the Pythons the packages support; each one found here is asked (this one
    # always).
    pythons = sorted(
        {sys.executable, *map(str, Path("/root/.pyenv/versions").glob("3.1[0-3].*/bin/python3.1?"))}
    )
    found: set[str] = set()
    for python in pythons:
        names = subprocess.run(
            [python, "-c", "import sys; print(*sys.stdlib_module_names)"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        assert set(names) <= _data("python_stdlib_modules"), (
            python,
            set(names) - _data("python_stdlib_modules"),
        )
        found |= set(names)
    if len(pythons) > 4:  # 3.10 to 3.13 all here: nothing else is listed
        assert _data("python_stdlib_modules") == found


def test_keyword_list_is_python_s() -> None:
    assert _data("python_keywords") == {k.lower() for k in keyword.kwlist}


def test_diffusion_reserved_names_are_the_runtime_s() -> None:
    from sglang_plugin_runtime._namespace import MULTIMODAL

    assert _data("diffusion_reserved_entry_points") == set(MULTIMODAL.reserved_platform_names)


@pytest.mark.fault(
    "templates",
    "a diffusion entry point named like one of the engine's built-in platforms (npu, cuda)",
    "the diffusion entry point gets another name, which the engine accepts",
)
@pytest.mark.parametrize("name", ["npu", "CUDA", "musa"])
def test_a_reserved_name_gives_the_diffusion_entry_point_another_name(
    template_dir: Path, tmp_path: Path, name: str
) -> None:
    from sglang_plugin_runtime._namespace import MULTIMODAL

    project = render_template(
        template_dir, tmp_path / "out", entry_point_name=name, with_mm_platform=True
    )
    groups = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "entry-points"
    ]
    (srt,) = groups["sglang.srt.platforms"]
    (diffusion,) = groups["sglang.multimodal_gen.platforms"]
    assert srt == name and diffusion == f"{name}-plugin"
    assert diffusion.lower() not in MULTIMODAL.reserved_platform_names
    assert (
        "`SGLANG_DIFFUSION_PLATFORM_OVERRIDE` | `SGLANG_PLATFORM` for SGLang's diffusion engine "
        f"(`{diffusion}`" in (project / "README.md").read_text(encoding="utf-8")
    )


def test_an_unreserved_name_is_the_diffusion_entry_point_too(
    template_dir: Path, tmp_path: Path
) -> None:
    project = render_template(
        template_dir, tmp_path / "out", entry_point_name="acme_npu", with_mm_platform=True
    )
    groups = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "entry-points"
    ]
    assert list(groups["sglang.multimodal_gen.platforms"]) == ["acme_npu"]


def _validator_messages() -> dict[str, list[str]]:
    """Each validator's messages: the text between its Jinja tags."""
    questions = yaml.safe_load((REPO_ROOT / "copier.yml").read_text(encoding="utf-8"))
    return {
        name: [
            text.strip()
            for text in re.split(r"\{%.*?%\}", question["validator"], flags=re.S)
            if text.strip()
        ]
        for name, question in questions.items()
        if isinstance(question, dict) and "validator" in question
    }


@pytest.mark.fault(
    "templates",
    "a bad answer whose validator message is long (credentials in runtime_source: 80 characters) "
    "or repeats the answer (a standard-library package name: 70 characters plus the name)",
    "every validator message is fixed text of at most 76 characters, so Copier's one-line "
    "prompt shows all of it whatever the answer",
)
def test_every_validator_message_is_fixed_text_that_fits_one_line() -> None:
    messages = _validator_messages()
    assert messages and all(messages.values())
    for name, lines in messages.items():
        for line in lines:
            assert "{{" not in line and len(line) <= FITS_ONE_LINE, (name, len(line), line)


@pytest.mark.parametrize(
    ("answers", "question"),
    [
        ({"plugin_kind": "general", "package_name": "_frozen_importlib_external"}, "package_name"),
        ({"runtime_source": "git+https://user:s3cr3t@git.example.com/kit.git"}, "runtime_source"),
    ],
    ids=["longest-stdlib-name", "credentials"],
)
def test_the_longest_messages_fit_one_line_as_copier_shows_them(
    template_dir: Path, tmp_path: Path, answers: dict[str, Any], question: str
) -> None:
    with pytest.raises(ValueError, match=question) as excinfo:
        render_template(template_dir, tmp_path / "out", **answers)
    shown = str(excinfo.value).split(f"question '{question}': ", 1)[-1]
    assert "\n" not in shown and len(shown) <= FITS_ONE_LINE, shown
