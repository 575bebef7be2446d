"""A generated package's own test suite passes in the real SGLang venv: with every default, and with
``host_api=sglang``.

For each plugin kind the template is rendered the way a vendor does it -- only ``plugin_kind`` (and
``host_api=sglang`` for the pinned variant) answered, every other question at its default -- from
the working-tree snapshot of the template the other tests use. The package is installed with a real
``pip install`` into its own folder (the venv itself stays untouched, so no other test sees it; the
folder is thrown away with the session's temporary files), the requirements of its ``test`` extra
must already be satisfied by the venv (pip resolves nothing, so it can never pull an unpinned
torch), and its own ``pytest`` suite runs in a fresh subprocess of the venv, against the installed
copy. A negative control shows the suite really judges the platform class: with a misspelled public
override added to the device mixin, its own conformance tests fail, and only they do.
"""

from __future__ import annotations

import importlib.metadata as md
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import render
from packaging.requirements import Requirement
from scenarios import clean_env, pip_install_target

pytestmark = pytest.mark.subprocess

#: What the default answers name the packages (checked against the rendered answers file below).
DEFAULT_PACKAGES = {"platform": "sglang_mydevice_platform", "general": "sglang_example_hooks"}
MISSPELLED = "get_device_nmae"  # for get_device_name


@dataclass
class Installed:
    project: Path  # the rendered project (its tests/ are run)
    site: Path  # where pip installed the package (the only thing added to sys.path)
    package: str


@dataclass
class SuiteRun:
    returncode: int
    output: str
    # test id -> passed | failed | error | skipped
    outcomes: dict[str, str] = field(default_factory=dict)
    messages: dict[str, str] = field(default_factory=dict)  # test id -> failure text

    def with_outcome(self, outcome: str) -> list[str]:
        return sorted(test for test, result in self.outcomes.items() if result == outcome)


#: host_api answers under test: the default (not answered: auto) and the pin to SGLang.
HOST_API_ANSWERS = {"default": {}, "sglang": {"host_api": "sglang"}}


def _render_and_install(
    template: Path,
    tmp: pytest.TempPathFactory,
    kind: str,
    host_api: str = "default",
    edit: Callable[[Path, str], None] | None = None,
    **answers: Any,
) -> Installed:
    project = render(
        template,
        tmp.mktemp(f"suite-{kind}"),
        plugin_kind=kind,
        **HOST_API_ANSWERS[host_api],
        **answers,
    )
    recorded = (project / ".copier-answers.yml").read_text(encoding="utf-8")
    assert f"host_api: {'auto' if host_api == 'default' else host_api}" in recorded, recorded
    package = DEFAULT_PACKAGES[kind]
    assert (project / package / "__init__.py").is_file(), sorted(p.name for p in project.iterdir())
    if edit is not None:
        edit(project, package)
    # `pip install <project>[test]`, with --no-deps: the extra's requirements are checked below,
    # never resolved.
    site = pip_install_target(Path(f"{project}[test]"), tmp.mktemp(f"suite-site-{kind}"))
    return Installed(project, site, package)


def _unsatisfied_requirements(installed: Installed) -> list[str]:
    """The package's base and ``test``-extra requirements that this venv does not satisfy."""
    (dist,) = [d for d in md.distributions(path=[str(installed.site)])]
    missing = []
    for line in dist.requires or []:
        requirement = Requirement(line)
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": "test"}):
            continue
        try:
            version = md.version(requirement.name)  # this venv, without the plugin's folder
        except md.PackageNotFoundError:
            missing.append(f"{line} (not installed)")
            continue
        if not requirement.specifier.contains(version, prereleases=True):
            missing.append(f"{line} (venv has {version})")
    return missing


def _run_own_suite(installed: Installed, tmp: pytest.TempPathFactory) -> SuiteRun:
    """``pytest`` in the generated project, in a fresh interpreter of this venv, importing the
    installed copy."""
    report = tmp.mktemp("suite-report") / "junit.xml"
    env = {k: v for k, v in clean_env([installed.site]).items() if not k.startswith("PYTEST_")}
    completed = subprocess.run(
        # -P: the project folder (cwd) is not put on sys.path, so the tests import what pip
        # installed.
        [
            sys.executable,
            "-P",
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            f"--junitxml={report}",
        ],
        cwd=installed.project,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    run = SuiteRun(completed.returncode, completed.stdout[-6000:] + completed.stderr[-4000:])
    if not report.is_file():
        pytest.fail(
            f"the generated suite wrote no report (exit {completed.returncode})\n{run.output}",
            pytrace=False,
        )
    for case in ET.parse(report).getroot().iter("testcase"):
        test = f"{case.get('classname')}::{case.get('name')}"
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            element = case.find(tag)
            if element is not None:
                outcome = "failed" if tag == "failure" else tag
                message = f"{element.get('message', '')}\n{element.text or ''}"
                break
        run.outcomes[test], run.messages[test] = outcome, message
    return run


@pytest.mark.parametrize(
    "host_api",
    # every default on every release (make test-releases); host_api=sglang on 0.5.23
    [pytest.param("default", marks=pytest.mark.every_release), "sglang"],
)
@pytest.mark.parametrize("kind", ["platform", "general"])
def test_generated_package_passes_its_own_suite_in_real_sglang(
    kind: str, host_api: str, template_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    installed = _render_and_install(template_dir, tmp_path_factory, kind, host_api)
    assert _unsatisfied_requirements(installed) == []
    run = _run_own_suite(installed, tmp_path_factory)
    assert run.returncode == 0, run.output
    assert run.with_outcome("failed") == [] and run.with_outcome("error") == [], run.output
    assert run.with_outcome("skipped") == [], run.output
    assert len(run.with_outcome("passed")) >= 5, run.output
    if kind == "platform":
        conformance = [t for t in run.with_outcome("passed") if "conformance" in t]
        assert len(conformance) == 2, run.outcomes  # plain and on a simulated device
    else:
        # The entry-point test calls real SGLang's load_plugins() in a fresh process.
        assert any("load_plugins" in t for t in run.with_outcome("passed")), run.outcomes


def _misspell_an_override(project: Path, package: str) -> None:
    device = project / package / "device.py"
    text = device.read_text(encoding="utf-8")
    anchor = "    # ---- memory ---"
    assert anchor in text and MISSPELLED not in text, (
        "the platform template's device.py changed; update this test"
    )
    override = (
        f"    def {MISSPELLED}(self, device_id: int = 0) -> str:  # meant get_device_name\n"
        "        return 'misspelled'\n\n"
    )
    device.write_text(text.replace(anchor, override + anchor, 1), encoding="utf-8")


@pytest.mark.parametrize("host_api", sorted(HOST_API_ANSWERS))
def test_generated_platform_suite_fails_on_a_misspelled_override(
    host_api: str, template_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    installed = _render_and_install(
        template_dir, tmp_path_factory, "platform", host_api, edit=_misspell_an_override
    )
    run = _run_own_suite(installed, tmp_path_factory)
    assert run.returncode != 0, run.output
    failed = run.with_outcome("failed")
    # Exactly the conformance tests fail (plain, on a simulated device, and once per declared
    # release), each naming the misspelled override; the behavioural tests still pass
    # (get_device_name itself is untouched).
    assert len(failed) >= 2 and all("conform" in t for t in failed), run.outcomes
    assert any("simulated_device" in t for t in failed), run.outcomes
    for test in failed:
        assert MISSPELLED in run.messages[test], run.messages[test]
    assert run.with_outcome("error") == [], run.output
    assert len(run.with_outcome("passed")) >= 5, run.outcomes


def test_default_platform_with_diffusion_passes_and_says_why_its_diffusion_class_is_absent(
    template_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # SGLang 0.5.23's diffusion engine accepts only its own Platform; the package's device mixin
    # builds on SGLang's DeviceMixin here, so its diffusion module refuses to import, and the tests
    # of that class say why they skip.
    installed = _render_and_install(
        template_dir, tmp_path_factory, "platform", with_mm_platform=True
    )
    run = _run_own_suite(installed, tmp_path_factory)
    assert run.returncode == 0, run.output
    skipped = run.with_outcome("skipped")
    assert len(skipped) == 4 and all("test_diffusion" in t for t in skipped), run.outcomes
    for test in skipped:
        assert "builds platforms on its own DeviceMixin" in run.messages[test], run.messages[test]
    assert any("imports_exactly_where" in t for t in run.with_outcome("passed")), run.outcomes
    assert run.with_outcome("failed") == [] and run.with_outcome("error") == [], run.output
