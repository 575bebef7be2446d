"""Fixtures of the real-SGLang tier: generated plugins, installed with pip, exercised by the real
``sglang`` wheel.

This tree runs only inside the cached SGLang venv built by ``scripts/test-sglang.sh``. Each
platform-selection and loader scenario runs in a real subprocess of that venv (selection and
``load_plugins()`` are once-per-process). Generated packages are installed with a real ``pip install
--target`` into their own folders, so each subprocess sees exactly the distributions its scenario
puts on ``PYTHONPATH``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from scenarios import copy_of_the_template, pip_install_target
from scenarios import render as render_with

REPO_ROOT = Path(__file__).resolve().parents[1]


#: The answers of the platform plugin under test (a device no machine has, so it is always
#: simulated).
PLATFORM_ANSWERS = {
    "plugin_kind": "platform",
    "project_name": "SGLang SimDev Platform",
    "distribution_name": "sglang-simdev-platform",
    "package_name": "sglang_simdev_platform",
    "entry_point_name": "simdev",
    "device_name": "simdev",
    "device_type": "simdev",
    "backend_module": "torch_simdev",
}
GENERAL_ANSWERS = {
    "plugin_kind": "general",
    "project_name": "SGLang Probe Hooks",
    "distribution_name": "sglang-probe-hooks",
    "package_name": "sglang_probe_hooks",
    "entry_point_name": "probe",
    # Every example, in the variants that change what SGLang does: their effects are checked.
    "example_hooks": ["before", "after", "around_timer", "replace_class"],
    "example_hooks_change_behaviour": True,
}


# --------------------------------------------------------------------------------------------------
# Subprocesses of the SGLang venv
# --------------------------------------------------------------------------------------------------


# One copy of the scenario helpers (clean_env, run_python, pip_install_target, Outcome) lives in
# scenarios.py.


# --------------------------------------------------------------------------------------------------
# The template, rendered for SGLang
# --------------------------------------------------------------------------------------------------


def template_has_host_api(template: Path) -> bool:
    """Whether the template asks ``host_api`` (the SGLang-host answer has landed)."""
    return (
        re.search(r"(?m)^host_api:", (template / "copier.yml").read_text(encoding="utf-8"))
        is not None
    )


#: How a default (``host_api=auto``) package decides, in its host.py; pinning it to the runtime's
#: classes gives the package the retired answer ``host_api=runtime`` generated (built on the runtime
#: even where SGLang is installed).
_HOST_DECISION = 'SGLANG_INSTALLED = importlib.util.find_spec("sglang") is not None'


def pin_to_runtime_classes(project: Path, package: str) -> None:
    """Make a default package build on the runtime's classes whatever is installed (the retired
    host_api=runtime)."""
    host = project / package / "host.py"
    text = host.read_text(encoding="utf-8")
    assert _HOST_DECISION in text, "the template's host.py changed; update pin_to_runtime_classes()"
    host.write_text(
        text.replace(_HOST_DECISION, "SGLANG_INSTALLED = False  # pinned by the test"),
        encoding="utf-8",
    )


# What host_api=sglang changes in a generated package (.notes/host_api.patch does the same in the
# template).
_SGLANG_IMPORTS = (
    (
        "from sglang_plugin_runtime.platforms.device_mixin import",
        "from sglang.srt.platforms.device_mixin import",
    ),
    (
        "from sglang_plugin_runtime.platforms.interface import",
        "from sglang.srt.platforms.interface import",
    ),
    (
        "from sglang_plugin_runtime.plugins.hook_registry import",
        "from sglang.srt.plugins.hook_registry import",
    ),
)


def adapt_to_sglang_host(project: Path, package: str) -> None:
    """Turn a runtime-host package into an SGLang-host one, as ``host_api=sglang`` would have
    generated it."""
    for path in (project / package).rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for old, new in _SGLANG_IMPORTS:
            text = text.replace(old, new)
        path.write_text(text, encoding="utf-8")
    pyproject = project / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    text = re.sub(r'"sglang-plugin-runtime[^"]*",', '"sglang>=0.5.23,<0.6",', text, count=1)
    pyproject.write_text(text, encoding="utf-8")


def render(template: Path, destination: Path, **answers: Any) -> Path:
    """The template rendered with ``answers`` (the other answers take their defaults)."""
    return render_with(template, destination, answers)


@dataclass
class GeneratedPackage:
    project: Path  # the rendered project
    site: Path  # where pip installed it (put this on PYTHONPATH)
    package: str
    entry_point: str
    distribution: str
    # "sglang" (host_api=sglang), "auto" (the default) or "runtime" (built on the runtime's classes)
    host: str
    via_template_answer: bool  # rendered with that host_api answer (False: adapted by this fixture)


@pytest.fixture(scope="session")
def template_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_of_the_template(tmp_path_factory.mktemp("template"))


@pytest.fixture(scope="session")
def generate(
    template_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Callable[..., GeneratedPackage]:
    """``generate(answers, host=...)``: render with that host binding, ``pip install --target``.

    ``host``: ``"sglang"`` (the answer host_api=sglang), ``"auto"`` (the default answer) or
    ``"runtime"`` (a default package pinned to the runtime's classes, as the retired answer
    host_api=runtime generated it)."""

    def _generate(
        answers: dict[str, Any], host: str = "sglang", edit: Callable[[Path], None] | None = None
    ) -> GeneratedPackage:
        answers = dict(answers)
        via_answer = False
        if answers["plugin_kind"] == "platform":
            # SGLang's diffusion base is no DeviceMixin (see docs/sglang.md)
            answers["with_mm_platform"] = False
        if template_has_host_api(template_dir):
            answers["host_api"] = "auto" if host == "runtime" else host
            via_answer = host != "runtime"
        project = render(
            template_dir, tmp_path_factory.mktemp(f"gen-{answers['plugin_kind']}-{host}"), **answers
        )
        if host == "sglang" and not via_answer:
            adapt_to_sglang_host(project, answers["package_name"])
        if host == "runtime":
            pin_to_runtime_classes(project, answers["package_name"])
        if edit is not None:
            edit(project)
        site = pip_install_target(
            project, tmp_path_factory.mktemp(f"site-{answers['package_name']}-{host}")
        )
        return GeneratedPackage(
            project,
            site,
            answers["package_name"],
            answers["entry_point_name"],
            answers["distribution_name"],
            host,
            via_answer,
        )

    return _generate


@pytest.fixture(scope="session")
def platform_plugin(generate: Callable[..., GeneratedPackage]) -> GeneratedPackage:
    """The generated ``simdev`` platform plugin, SGLang host, installed."""
    return generate(PLATFORM_ANSWERS, host="sglang")


@pytest.fixture(scope="session")
def runtime_platform_plugin(generate: Callable[..., GeneratedPackage]) -> GeneratedPackage:
    """The same platform plugin built on the runtime's classes (the retired host_api=runtime),
    installed."""
    return generate(
        dict(
            PLATFORM_ANSWERS,
            distribution_name="sglang-simdev-rt",
            package_name="sglang_simdev_rt",
            entry_point_name="simdev_rt",
        ),
        host="runtime",
    )
