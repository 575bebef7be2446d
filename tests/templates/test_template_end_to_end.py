"""End to end, per kind: render, ``pip install -e`` into a real venv, the project's own tests pass,
``python -m build`` gives an sdist and a wheel with the entry points, and the runtime discovers the plugin.

One venv per kind for the whole run (shared by the xdist workers through ``build_once``); only the platform
venv gets torch (``torch==2.13.0``, the CPU build), as a vendor's CI would.
"""

from __future__ import annotations

import json
import shutil
import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from template_support import IGNORE, TORCH_REQUIREMENT, VirtualEnv, render_template

PLATFORM_GROUP = pytest.mark.xdist_group("templates-e2e-platform")  # a hint; build_once shares the venv anyway
GENERAL_GROUP = pytest.mark.xdist_group("templates-e2e-general")
pytestmark = pytest.mark.slow

GENERAL_DESCRIPTION = 'Hooks for "SGLang" \\ with Zoë’s ✓ and 🚀'


@dataclass
class Installed:
    venv: VirtualEnv
    project: Path
    answers: dict[str, Any]

    @property
    def package(self) -> str:
        return self.answers["package_name"]


def _install(
    build_once: Callable[..., dict[str, Any]],
    make_venv: Callable[..., VirtualEnv],
    template_dir: Path,
    name: str,
    *extra: str,
    **answers: Any,
) -> Installed:
    """Render and install once per test run (shared by the xdist workers)."""

    def build(folder: Path) -> dict[str, Any]:
        import yaml

        project = render_template(template_dir, folder / "project", **answers)
        venv = make_venv(name, *extra, "build", "-e", f"{project}[test]", location=folder / "venv")
        recorded = yaml.safe_load((project / ".copier-answers.yml").read_text(encoding="utf-8"))
        return {"venv": str(venv.path), "project": str(project), "answers": recorded}

    result = build_once(f"e2e-{name}", build)
    return Installed(VirtualEnv.existing(Path(result["venv"])), Path(result["project"]), result["answers"])


@pytest.fixture(scope="session")
def platform_install(build_once, make_venv, template_dir) -> Installed:
    return _install(build_once, make_venv, template_dir, "platform", TORCH_REQUIREMENT, plugin_kind="platform")


@pytest.fixture(scope="session")
def general_install(build_once, make_venv, template_dir) -> Installed:
    return _install(
        build_once, make_venv, template_dir, "general", plugin_kind="general",
        distribution_name="acme.sglang-hooks_demo", description=GENERAL_DESCRIPTION,
    )


def _own_tests_pass(installed: Installed) -> None:
    result = installed.venv.run("-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=installed.project)
    assert " passed" in result.stdout and " failed" not in result.stdout, result.stdout


def _build(installed: Installed, tmp_path: Path) -> tuple[Path, Path]:
    # Build a clean copy, as a CI checkout would be (the installed project has egg-info and caches).
    source = tmp_path / "src"
    shutil.copytree(installed.project, source, ignore=IGNORE)
    installed.venv.run("-m", "build", "--outdir", tmp_path / "dist", source)
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    (sdist,) = (tmp_path / "dist").glob("*.tar.gz")
    return wheel, sdist


def _wheel_names(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def _wheel_entry_points(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/entry_points.txt")]
        return archive.read(name).decode("utf-8")


# ---- platform --------------------------------------------------------------------------------------------


@PLATFORM_GROUP
def test_platform_package_passes_its_own_tests(platform_install: Installed) -> None:
    _own_tests_pass(platform_install)


@PLATFORM_GROUP
def test_platform_wheel_has_entry_points_and_py_typed_and_no_caches(
    platform_install: Installed, tmp_path: Path
) -> None:
    wheel, sdist = _build(platform_install, tmp_path)
    names = _wheel_names(wheel)
    package = platform_install.package
    assert f"{package}/py.typed" in names
    assert {f"{package}/{m}.py" for m in ("__init__", "device", "platform")} <= set(names)
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc") or n.startswith("tests/")]
    entry_points = _wheel_entry_points(wheel)
    assert f"[sglang.srt.platforms]\nmydevice = {package}:activate" in entry_points
    assert f"[sglang.multimodal_gen.platforms]\nmydevice = {package}:activate_mm" in entry_points
    with tarfile.open(sdist) as archive:
        assert any(n.endswith("/pyproject.toml") for n in archive.getnames())


@PLATFORM_GROUP
def test_runtime_discovers_the_platform_and_falls_back_without_hardware(
    platform_install: Installed,
) -> None:
    code = (
        "import json\n"
        "from sglang_plugin_runtime.platforms import current_platform, current_platform_selection\n"
        "selection = current_platform_selection()\n"
        "print(json.dumps({'rule': selection.rule, 'platform': type(current_platform).__name__,\n"
        "    'activations': [a.to_dict() for a in selection.activations]}))\n"
    )
    result = platform_install.venv.run("-c", code)
    report = json.loads(result.stdout.strip().splitlines()[-1])
    (mine,) = [a for a in report["activations"] if a["plugin"] == "mydevice"]
    assert mine["distribution"] == "sglang-mydevice-platform"
    assert mine["status"] == "unavailable"
    assert report["rule"] == "fallback"


@PLATFORM_GROUP
def test_runtime_refuses_the_named_platform_without_hardware(platform_install: Installed) -> None:
    result = platform_install.venv.run(
        "-c", "from sglang_plugin_runtime.platforms import current_platform; print(current_platform)",
        check=False, SGLANG_PLATFORM="mydevice",
    )
    assert result.returncode != 0
    assert "mydevice" in result.stderr


# ---- general ---------------------------------------------------------------------------------------------


@GENERAL_GROUP
def test_general_package_passes_its_own_tests(general_install: Installed) -> None:
    _own_tests_pass(general_install)


@GENERAL_GROUP
def test_general_wheel_has_the_plugin_entry_point_and_py_typed_and_no_caches(
    general_install: Installed, tmp_path: Path
) -> None:
    wheel, _ = _build(general_install, tmp_path)
    names = _wheel_names(wheel)
    package = general_install.package
    assert f"{package}/py.typed" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    entry_point = general_install.answers["entry_point_name"]
    assert f"[sglang.srt.plugins]\n{entry_point} = {package}:register" in _wheel_entry_points(wheel)


@GENERAL_GROUP
def test_installed_metadata_keeps_an_unusual_description(general_install: Installed) -> None:
    code = (
        "import json\nfrom importlib.metadata import metadata\n"
        "print(json.dumps(metadata('acme.sglang-hooks_demo')['Summary']))\n"
    )
    assert json.loads(general_install.venv.run("-c", code).stdout) == GENERAL_DESCRIPTION


@GENERAL_GROUP
def test_runtime_loads_the_general_plugin_and_applies_its_hooks(general_install: Installed) -> None:
    package = general_install.package
    code = (
        "from sglang_plugin_runtime.plugins import load_plugins\n"
        "load_plugins()\n"
        f"from {package}.example_target import Sampler, count_tokens\n"
        f"from {package}.hooks import TieBreakingSampler\n"
        "print(count_tokens('a b c'), Sampler is TieBreakingSampler)\n"
    )
    result = general_install.venv.run("-c", code, SGLANG_PLUGINS_STRICT="1")
    assert result.stdout.split() == ["4", "True"]
