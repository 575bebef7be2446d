"""Run unit tests shipped inside the installed ``sglang`` wheel, in this venv, and report each
test's outcome.

The wheel's ``sglang/multimodal_gen/test/unit/conftest.py`` imports the diffusion serving stack
(``addict`` and more), which the pinned venvs leave out; the two plugin test modules need none of
it, so they run with ``--noconftest``, from the wheel's own files, under an empty ini file so
nothing of this repository steers them.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

#: The diffusion plugin and platform-detection tests of SGLang 0.5.23, relative to the sglang
#: package.
DIFFUSION_TESTS = (
    "multimodal_gen/test/unit/test_diffusion_plugins.py",
    "multimodal_gen/test/unit/test_platform_detection.py",
)


@dataclass(frozen=True)
class Outcome:
    test: str  # "module::Class::name"
    status: str  # passed, failed, error or skipped
    message: str


def sglang_package_dir() -> Path:
    spec = importlib.util.find_spec("sglang")
    assert spec is not None and spec.submodule_search_locations, (
        "sglang is not installed in this venv"
    )
    return Path(next(iter(spec.submodule_search_locations)))


def run_wheel_tests(relative_paths: tuple[str, ...], workdir: Path) -> dict[str, Outcome]:
    """Run each of the wheel's test files with pytest in a subprocess; ``{"file::Class::test":
    Outcome}``."""
    root = sglang_package_dir()
    (workdir / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SGLANG_", "PYTHON"))}
    outcomes: dict[str, Outcome] = {}
    for relative in relative_paths:
        path = root / relative
        assert path.is_file(), f"the wheel no longer ships {path}"
        report = workdir / f"{path.stem}.xml"
        completed = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "--noconftest",
                "-p",
                "no:cacheprovider",
                "-c",
                str(workdir / "pytest.ini"),
                "--rootdir",
                str(workdir),
                f"--junitxml={report}",
                str(path),
            ],
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if not report.is_file():
            raise AssertionError(
                f"pytest wrote no report for {relative} (exit {completed.returncode}):\n"
                f"{completed.stdout[-4000:]}\n{completed.stderr[-4000:]}"
            )
        for case in ET.parse(report).getroot().iter("testcase"):
            test = "::".join(
                [path.name, case.get("classname", "").rsplit(".", 1)[-1], case.get("name", "")]
            )
            status, message = "passed", ""
            for kind, name in (("failure", "failed"), ("error", "error"), ("skipped", "skipped")):
                element = case.find(kind)
                if element is not None:
                    status = name
                    message = f"{element.get('message') or ''}\n{element.text or ''}"
                    break
            outcomes[test] = Outcome(test, status, message)
    return outcomes
