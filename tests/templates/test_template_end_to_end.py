"""End to end, as a vendor's CI runs it: generated packages pass their own workflow on a clean
machine.

Each case renders the template from a tagged git clone of this repository (``kit_repository``), the
way a vendor generates it, then runs the ``run`` steps of the generated ``.github/workflows/ci.yml``
-- read from that file -- in a fresh venv standing in for ``actions/setup-python``, in a copy of the
project standing in for ``actions/checkout``: install, test, ``sglang-plugins list``, build. Two
situations:

- today: the runtime is on no index; the workflow installs it from the kit's repository
  (``runtime_source``, derived from where the package was generated, pinned to the template's tag);
- after publication: ``runtime_source`` is empty and the runtime wheel the release workflow built is
  served by a local package index; ``pip install -e ".[test]"`` resolves it from there.

Defaults and realistic answers, each kind in each situation. One venv per case for the whole run
(shared by the xdist workers through ``build_once``); the other tests below reuse them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import RUNNER_PIP_ENV
from template_support import (
    GENERAL_REALISTIC,
    PLATFORM_REALISTIC,
    VirtualEnv,
    git,
    render_template,
    run_workflow_step,
    simple_index,
    workflow_job,
    workflow_run_steps,
)

pytestmark = pytest.mark.slow

GENERAL_DESCRIPTION = GENERAL_REALISTIC["description"]
CASES: dict[str, tuple[dict[str, Any], bool]] = {
    # name: (answers, published)
    "platform-defaults-today": ({"plugin_kind": "platform"}, False),
    "platform-realistic-published": (PLATFORM_REALISTIC, True),
    "general-defaults-published": ({"plugin_kind": "general"}, True),
    "general-realistic-today": (GENERAL_REALISTIC, False),
}
PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"


@dataclass
class CIRun:
    venv: VirtualEnv
    checkout: Path
    answers: dict[str, Any]
    published: bool
    outputs: dict[str, str] = field(default_factory=dict)

    @property
    def package(self) -> str:
        return self.answers["package_name"]

    @property
    def workflow(self) -> Path:
        return self.checkout / ".github" / "workflows" / "ci.yml"


def _pip_extra_index(index_url: str) -> str:
    """``index_url`` in front of this machine's own extra indexes (an environment variable replaces
    them)."""
    configured = subprocess.run(
        [sys.executable, "-m", "pip", "config", "get", "global.extra-index-url"],
        capture_output=True,
        text=True,
        check=False,
    )
    return (
        " ".join([index_url, *configured.stdout.split()])
        if configured.returncode == 0
        else index_url
    )


def _ci_run(request: pytest.FixtureRequest, name: str) -> CIRun:
    build_once: Callable[..., dict[str, Any]] = request.getfixturevalue("build_once")
    kit: dict[str, str] = request.getfixturevalue("kit_repository")
    answers, published = CASES[name]
    released = request.getfixturevalue("released_runtime") if published else None

    def build(folder: Path) -> dict[str, Any]:
        import yaml

        data = dict(answers, **({"runtime_source": ""} if published else {}))
        project = render_template(
            Path(kit["path"]), folder / "generated", vcs_ref=kit["current"], **data
        )
        checkout = folder / "checkout"  # actions/checkout: the project's files, fresh
        shutil.copytree(project, checkout)
        runner = VirtualEnv(folder / "setup-python")  # actions/setup-python: a clean Python
        workflow = checkout / ".github" / "workflows" / "ci.yml"
        assert PYTHON in workflow_job(workflow, "test")["strategy"]["matrix"]["python-version"]
        env = dict(RUNNER_PIP_ENV)
        if released is not None:
            wheel = next(p for p in released["dist"] if p.endswith(".whl"))
            env["PIP_EXTRA_INDEX_URL"] = _pip_extra_index(
                simple_index(folder / "index", Path(wheel))
            )
        outputs = {}
        for step in workflow_run_steps(workflow, "test", {"matrix.python-version": PYTHON}):
            result = run_workflow_step(step, venv=runner, cwd=checkout, env=env)
            outputs[step.name] = result.stdout + result.stderr
        recorded = yaml.safe_load((checkout / ".copier-answers.yml").read_text(encoding="utf-8"))
        return {
            "venv": str(runner.path),
            "checkout": str(checkout),
            "answers": recorded,
            "outputs": outputs,
        }

    result = build_once(f"ci-{name}", build)
    return CIRun(
        VirtualEnv.existing(Path(result["venv"])),
        Path(result["checkout"]),
        result["answers"],
        published,
        result["outputs"],
    )


#: The xdist group of each situation: its cases' tests run on one worker, which builds their venvs
#: (the release workflow's build, which the published cases need, runs in the same group), so no
#: worker waits on another's build.
TODAY_GROUP = pytest.mark.xdist_group("templates-ci-today")
PUBLISHED_GROUP = pytest.mark.xdist_group("templates-ci-published")


def _cases(published: bool | None = None) -> list[Any]:
    return [
        pytest.param(name, marks=PUBLISHED_GROUP if pub else TODAY_GROUP)
        for name, (_, pub) in sorted(CASES.items())
        if published is None or pub == published
    ]


EVERY_CASE = pytest.mark.parametrize("ci_run", _cases(), indirect=True)
TODAY_CASES = pytest.mark.parametrize("ci_run", _cases(published=False), indirect=True)
PUBLISHED_CASES = pytest.mark.parametrize("ci_run", _cases(published=True), indirect=True)


@pytest.fixture
def ci_run(request: pytest.FixtureRequest) -> CIRun:
    return _ci_run(request, request.param)


@pytest.fixture
def platform_defaults(request: pytest.FixtureRequest) -> CIRun:
    return _ci_run(request, "platform-defaults-today")


@pytest.fixture
def general_realistic(request: pytest.FixtureRequest) -> CIRun:
    return _ci_run(request, "general-realistic-today")


def _installed_runtime(run: CIRun) -> dict[str, Any]:
    code = (
        "import json\nfrom importlib.metadata import distribution\n"
        "d = distribution('sglang-plugin-runtime')\n"
        "print(json.dumps({'version': d.version, 'direct_url': d.read_text('direct_url.json'),\n"
        "    'init': (d.locate_file('sglang_plugin_runtime/__init__.py')).read_text()}))\n"
    )
    return json.loads(run.venv.run("-c", code).stdout)


def _wheel(run: CIRun) -> Path:
    (wheel,) = (run.checkout / "dist").glob("*.whl")
    return wheel


def _wheel_names(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def _wheel_entry_points(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/entry_points.txt")]
        return archive.read(name).decode("utf-8")


# ---- every case: the workflow's own steps


@EVERY_CASE
def test_generated_workflow_passes_on_a_clean_machine(ci_run: CIRun) -> None:
    assert list(ci_run.outputs) == [
        "Install",
        "Test",
        "Check what the runtime discovers",
        "Gate",
        "Build",
    ]
    summary = ci_run.outputs["Test"].strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary and "error" not in summary, (
        ci_run.outputs["Test"]
    )


@EVERY_CASE
def test_own_tests_run_without_warnings_or_skips(ci_run: CIRun) -> None:
    # docs/getting-started.md says so: the NumPy warning of the CPU torch build is filtered in
    # pyproject.toml.
    summary = ci_run.outputs["Test"].strip().splitlines()[-1]
    assert "warning" not in summary and "skipped" not in summary, summary


@EVERY_CASE
def test_workflow_lists_the_plugin_the_runtime_discovers(ci_run: CIRun) -> None:
    assert ci_run.answers["entry_point_name"] in ci_run.outputs["Check what the runtime discovers"]


@TODAY_CASES
def test_today_the_runtime_comes_from_the_kit_repository_at_the_template_commit(
    ci_run: CIRun, kit_repository: dict[str, str]
) -> None:
    direct_url = json.loads(_installed_runtime(ci_run)["direct_url"])
    # Derived from where the package was generated: the kit's git repository, at the commit of the
    # tag it was generated from (the commit, so that a tag placed later changes nothing).
    assert ci_run.answers["runtime_source"] == "git+" + direct_url["url"]
    assert direct_url["url"].startswith("file://") and direct_url["vcs_info"]["vcs"] == "git"
    tagged = git(
        Path(kit_repository["path"]), "rev-parse", f"{ci_run.answers['_commit']}^{{commit}}"
    ).strip()
    assert (
        direct_url["vcs_info"]["requested_revision"]
        == tagged
        == direct_url["vcs_info"]["commit_id"]
    )


@PUBLISHED_CASES
def test_after_publication_the_runtime_comes_from_the_index(
    ci_run: CIRun, released_runtime: dict[str, Any]
) -> None:
    assert ci_run.answers["runtime_source"] == ""
    assert "sglang-plugin-runtime @" not in ci_run.workflow.read_text(encoding="utf-8")
    installed = _installed_runtime(ci_run)
    assert installed["direct_url"] is None  # resolved from an index, not installed from a URL
    wheel = next(Path(p) for p in released_runtime["dist"] if p.endswith(".whl"))
    with zipfile.ZipFile(wheel) as archive:
        assert installed["init"] == archive.read("sglang_plugin_runtime/__init__.py").decode(
            "utf-8"
        )


@EVERY_CASE
def test_workflow_build_gives_a_wheel_with_the_entry_points_and_no_caches(ci_run: CIRun) -> None:
    wheel = _wheel(ci_run)
    names = _wheel_names(wheel)
    package, entry_point = ci_run.package, ci_run.answers["entry_point_name"]
    assert f"{package}/py.typed" in names
    assert not [
        n for n in names if "__pycache__" in n or n.endswith(".pyc") or n.startswith("tests/")
    ]
    group = (
        "sglang.srt.platforms"
        if ci_run.answers["plugin_kind"] == "platform"
        else "sglang.srt.plugins"
    )
    function = "activate" if group == "sglang.srt.platforms" else "register"
    assert f"[{group}]\n{entry_point} = {package}:{function}" in _wheel_entry_points(wheel)
    (sdist,) = (ci_run.checkout / "dist").glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        assert any(n.endswith("/pyproject.toml") for n in archive.getnames())


@EVERY_CASE
def test_wheel_ships_the_license_the_answers_name(ci_run: CIRun) -> None:
    names = _wheel_names(_wheel(ci_run))
    assert [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]


# ---- platform, default answers


@TODAY_GROUP
def test_platform_wheel_has_its_modules(platform_defaults: CIRun) -> None:
    names = _wheel_names(_wheel(platform_defaults))
    package = platform_defaults.package
    assert {f"{package}/{m}.py" for m in ("__init__", "host", "device", "platform")} <= set(names)
    assert f"{package}/diffusion.py" not in names  # with_mm_platform is off by default


@TODAY_GROUP
def test_runtime_discovers_the_platform_and_falls_back_without_hardware(
    platform_defaults: CIRun,
) -> None:
    code = (
        "import json\n"
        "from sglang_plugin_runtime.platforms import current_platform, current_platform_selection\n"
        "selection = current_platform_selection()\n"
        "print(json.dumps({'rule': selection.rule, 'platform': type(current_platform).__name__,\n"
        "    'activations': [a.to_dict() for a in selection.activations]}))\n"
    )
    report = json.loads(platform_defaults.venv.run("-c", code).stdout.strip().splitlines()[-1])
    (mine,) = [a for a in report["activations"] if a["plugin"] == "mydevice"]
    assert mine["distribution"] == "sglang-mydevice-platform"
    assert mine["status"] == "unavailable"
    assert report["rule"] == "fallback"


@TODAY_GROUP
def test_runtime_refuses_the_named_platform_without_hardware(platform_defaults: CIRun) -> None:
    result = platform_defaults.venv.run(
        "-c",
        "from sglang_plugin_runtime.platforms import current_platform; print(current_platform)",
        check=False,
        SGLANG_PLATFORM="mydevice",
    )
    assert result.returncode != 0
    assert "mydevice" in result.stderr


@TODAY_GROUP
def test_activate_logs_under_the_package_name_once(platform_defaults: CIRun) -> None:
    code = (
        "import logging\n"
        "logging.basicConfig(level=logging.DEBUG, format='%(name)s| %(message)s')\n"
        "from sglang_mydevice_platform import activate\n"
        "print(activate())\n"
    )
    result = platform_defaults.venv.run("-c", code)
    (line,) = [ln for ln in result.stderr.splitlines() if "is not installed" in ln]
    assert line == "sglang_mydevice_platform| backend module 'torch_mydevice' is not installed"


@TODAY_GROUP
def test_the_package_builds_on_the_runtime_where_sglang_is_absent(platform_defaults: CIRun) -> None:
    code = (
        "from sglang_mydevice_platform.host import HOST_PACKAGE, SGLANG_INSTALLED; "
        "print(HOST_PACKAGE, SGLANG_INSTALLED)"
    )
    assert platform_defaults.venv.run("-c", code).stdout.split() == [
        "sglang_plugin_runtime",
        "False",
    ]


# ---- general, realistic answers


@TODAY_GROUP
def test_installed_metadata_keeps_an_unusual_description(general_realistic: CIRun) -> None:
    code = (
        "import json\nfrom importlib.metadata import metadata\n"
        "print(json.dumps(metadata('acme.sglang-hooks_demo')['Summary']))\n"
    )
    assert json.loads(general_realistic.venv.run("-c", code).stdout) == GENERAL_DESCRIPTION


@TODAY_GROUP
def test_runtime_loads_the_general_plugin_whose_hooks_wait_for_sglang(
    general_realistic: CIRun,
) -> None:
    # The hooks target SGLang's own code; with the runtime alone they wait for it (and the class
    # REPLACE, which subclasses SGLang's class, is not registered). doctor --strict passed in the
    # workflow's Gate step.
    code = (
        "import json\nfrom sglang_plugin_runtime.plugins import load_plugins\n"
        "from sglang_plugin_runtime.plugins.hook_registry import HookRegistry\n"
        "load_plugins()\n"
        "print(json.dumps(sorted((r.target, r.status) for r in HookRegistry.describe())))\n"
    )
    result = general_realistic.venv.run("-c", code)
    assert json.loads(result.stdout.strip().splitlines()[-1]) == [
        ["sglang.srt.multimodal.evs.evs_core.compute_retained_tokens_count", "pending"],
        ["sglang.srt.parser.code_completion_parser.generate_completion_prompt", "pending"],
    ]
    assert (
        "Gate" in general_realistic.outputs and "exit status 0" in general_realistic.outputs["Gate"]
    )


def _sglang_installed_as(run: CIRun, version: str, folder: Path) -> Path:
    """A folder to put on ``PYTHONPATH`` in which ``sglang`` ``version`` is installed (its metadata
    only)."""
    dist_info = folder / f"sglang-{version}.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: sglang\nVersion: {version}\n\n"
    )
    return folder


LOAD_AND_LOG = (
    "import logging\nlogging.basicConfig(level=logging.WARNING, format='%(levelname)s %(name)s: "
    "%(message)s')\nfrom sglang_plugin_runtime.plugins import load_plugins\nreport = "
    "load_plugins()\nload_plugins()\nprint([(r.plugin, r.status) for r in report.outcomes])\n"
)


@pytest.mark.fault(
    "templates",
    "a generated package under an SGLang outside the releases it declares",
    "one WARNING when the plugin loads, naming the plugin, its range and the installed SGLang; "
    "with SGLANG_PLUGINS_STRICT=1 the plugin fails with that message",
)
@TODAY_GROUP
def test_a_package_outside_its_supported_sglang_warns_once_and_fails_in_strict_mode(
    general_realistic: CIRun, tmp_path: Path
) -> None:
    site = _sglang_installed_as(general_realistic, "0.6.1", tmp_path / "site")
    relaxed = general_realistic.venv.run("-c", LOAD_AND_LOG, PYTHONPATH=str(site))
    warnings = [line for line in relaxed.stderr.splitlines() if "supports SGLang" in line]
    package, plugin, dist = (
        general_realistic.answers[k]
        for k in ("package_name", "entry_point_name", "distribution_name")
    )
    assert warnings == [
        f"WARNING {package}.supported: plugin '{plugin}' ({dist} 0.1.0) supports SGLang "
        "<0.6,>=0.5.11, but SGLang 0.6.1 is installed; install a supported SGLang or a version of "
        f"{dist} made for SGLang 0.6.1"
    ], relaxed.stderr
    assert "'loaded'" in relaxed.stdout
    strict = general_realistic.venv.run(
        "-c", LOAD_AND_LOG, PYTHONPATH=str(site), SGLANG_PLUGINS_STRICT="1", check=False
    )
    assert strict.returncode != 0
    assert (
        "UnsupportedSGLangError" in strict.stderr and "SGLang 0.6.1 is installed" in strict.stderr
    )


@TODAY_GROUP
def test_a_package_within_its_supported_sglang_says_nothing(
    general_realistic: CIRun, tmp_path: Path
) -> None:
    site = _sglang_installed_as(general_realistic, "0.5.23", tmp_path / "site")
    result = general_realistic.venv.run("-c", LOAD_AND_LOG, PYTHONPATH=str(site))
    assert "supports SGLang" not in result.stderr and "'loaded'" in result.stdout
