"""Fixtures of the real-SGLang tier: generated plugins, installed with pip, exercised by the real ``sglang`` wheel.

This tree runs only inside the cached SGLang venv built by ``scripts/test-sglang.sh``. Each platform-selection and
loader scenario runs in a real subprocess of that venv (selection and ``load_plugins()`` are once-per-process).
Generated packages are installed with a real ``pip install --target`` into their own folders, so each subprocess
sees exactly the distributions its scenario puts on ``PYTHONPATH``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]

IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".pytest_cache", ".ruff_cache")
RESULT_MARK = "@@RESULT@@"

#: The answers of the platform plugin under test (a device no machine has, so it is always simulated).
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
}


# ---------------------------------------------------------------------------------------------------------
# Subprocesses of the SGLang venv
# ---------------------------------------------------------------------------------------------------------


def clean_env(paths: Iterable[Path | str] = (), **overrides: str) -> dict[str, str]:
    """The environment of a scenario subprocess: no SGLANG_* leaking in, only ``paths`` added to sys.path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_")}
    for key in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"):
        env.pop(key, None)
    paths = [str(p) for p in paths]
    if paths:
        env["PYTHONPATH"] = os.pathsep.join(paths)
    env.update(overrides)
    return env


@dataclass
class Outcome:
    """What a scenario subprocess reported: its JSON result, and its output for assertions and failures."""

    result: Any
    returncode: int
    stdout: str
    stderr: str

    def __getitem__(self, key: str) -> Any:
        return self.result[key]


def run_python(
    code: str, *, paths: Iterable[Path | str] = (), env: dict[str, str] | None = None, timeout: float = 120
) -> Outcome:
    """Run ``code`` in a fresh interpreter of this venv; ``report(obj)`` in the code sends back a JSON result."""
    prelude = textwrap.dedent(
        f"""
        import json as _json, sys as _sys
        def report(obj):
            print({RESULT_MARK!r} + _json.dumps(obj, default=repr), flush=True)
        """
    )
    completed = subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        env=clean_env(paths, **(env or {})),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    result = None
    for line in completed.stdout.splitlines():
        if line.startswith(RESULT_MARK):
            result = json.loads(line[len(RESULT_MARK) :])
    if result is None:
        pytest.fail(
            f"scenario subprocess reported nothing (exit {completed.returncode})\n"
            f"--- stdout ---\n{completed.stdout[-4000:]}\n--- stderr ---\n{completed.stderr[-6000:]}",
            pytrace=False,
        )
    return Outcome(result, completed.returncode, completed.stdout, completed.stderr)


def pip_install_target(source: Path, target: Path) -> Path:
    """A real ``pip install`` of ``source`` into the folder ``target`` (no dependencies, no build isolation)."""
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(source),
        ],
        env=clean_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        pytest.fail(f"pip install {source} failed:\n{completed.stdout}\n{completed.stderr}", pytrace=False)
    return target


# ---------------------------------------------------------------------------------------------------------
# The template, rendered for SGLang
# ---------------------------------------------------------------------------------------------------------


def template_has_host_api(template: Path) -> bool:
    """Whether the template asks ``host_api`` (the SGLang-host answer has landed)."""
    return re.search(r"(?m)^host_api:", (template / "copier.yml").read_text(encoding="utf-8")) is not None


#: How a default (``host_api=auto``) package decides, in its host.py; pinning it to the runtime's classes gives the
#: package the retired answer ``host_api=runtime`` generated (built on the runtime even where SGLang is installed).
_HOST_DECISION = 'SGLANG_INSTALLED = importlib.util.find_spec("sglang") is not None'


def pin_to_runtime_classes(project: Path, package: str) -> None:
    """Make a default package build on the runtime's classes whatever is installed (the retired host_api=runtime)."""
    host = project / package / "host.py"
    text = host.read_text(encoding="utf-8")
    assert _HOST_DECISION in text, "the template's host.py changed; update pin_to_runtime_classes()"
    host.write_text(text.replace(_HOST_DECISION, "SGLANG_INSTALLED = False  # pinned by the test"), encoding="utf-8")


# What host_api=sglang changes in a generated package (.notes/host_api.patch does the same in the template).
_SGLANG_IMPORTS = (
    ("from sglang_plugin_runtime.platforms.device_mixin import", "from sglang.srt.platforms.device_mixin import"),
    ("from sglang_plugin_runtime.platforms.interface import", "from sglang.srt.platforms.interface import"),
    ("from sglang_plugin_runtime.plugins.hook_registry import", "from sglang.srt.plugins.hook_registry import"),
)


def adapt_to_sglang_host(project: Path, package: str) -> None:
    """Turn a runtime-host package into an SGLang-host one, as ``host_api=sglang`` would have generated it."""
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
    from copier import run_copy

    run_copy(str(template), destination, data=answers, defaults=True, unsafe=False, quiet=True, overwrite=True)
    return destination


@dataclass
class GeneratedPackage:
    project: Path  # the rendered project
    site: Path  # where pip installed it (put this on PYTHONPATH)
    package: str
    entry_point: str
    distribution: str
    host: str  # "sglang" (host_api=sglang), "auto" (the default) or "runtime" (built on the runtime's classes)
    via_template_answer: bool  # rendered with that host_api answer (False: adapted by this fixture)


@pytest.fixture(scope="session")
def template_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    destination = tmp_path_factory.mktemp("template")
    shutil.copy2(REPO_ROOT / "copier.yml", destination / "copier.yml")
    shutil.copytree(REPO_ROOT / "templates", destination / "templates", ignore=IGNORE)
    return destination


@pytest.fixture(scope="session")
def generate(template_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Callable[..., GeneratedPackage]:
    """``generate(answers, host=...)``: render with that host binding, ``pip install --target``.

    ``host``: ``"sglang"`` (the answer host_api=sglang), ``"auto"`` (the default answer) or ``"runtime"`` (a default
    package pinned to the runtime's classes, as the retired answer host_api=runtime generated it)."""

    def _generate(
        answers: dict[str, Any], host: str = "sglang", edit: Callable[[Path], None] | None = None
    ) -> GeneratedPackage:
        answers = dict(answers)
        via_answer = False
        if answers["plugin_kind"] == "platform":
            answers["with_mm_platform"] = False  # SGLang's diffusion base is no DeviceMixin (see docs/sglang.md)
        if template_has_host_api(template_dir):
            answers["host_api"] = "auto" if host == "runtime" else host
            via_answer = host != "runtime"
        project = render(template_dir, tmp_path_factory.mktemp(f"gen-{answers['plugin_kind']}-{host}"), **answers)
        if host == "sglang" and not via_answer:
            adapt_to_sglang_host(project, answers["package_name"])
        if host == "runtime":
            pin_to_runtime_classes(project, answers["package_name"])
        if edit is not None:
            edit(project)
        site = pip_install_target(project, tmp_path_factory.mktemp(f"site-{answers['package_name']}-{host}"))
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
    """The same platform plugin built on the runtime's classes (the retired host_api=runtime), installed."""
    return generate(
        dict(
            PLATFORM_ANSWERS,
            distribution_name="sglang-simdev-rt",
            package_name="sglang_simdev_rt",
            entry_point_name="simdev_rt",
        ),
        host="runtime",
    )
