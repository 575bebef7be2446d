"""The generated ``supported.py``: the SGLang range it reads from the installed metadata, and the
check it runs when the plugin loads.

Each case installs a generated package with a real ``pip install --target`` and runs it in a fresh
interpreter beside a fake installed ``sglang`` distribution of a chosen version (metadata only: the
package then builds on the runtime, and the check reads SGLang's version from the metadata, as it
does beside a real SGLang).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from template_support import clean_env, render_template

from sglang_plugin_runtime.testing import write_fake_distribution

CHECK = """
import json, logging, sys
from sglang_example_hooks import register, supported
logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
try:
    register()
    outcome = "registered"
except Exception as exc:
    outcome = f"{type(exc).__name__}: {exc}"
print(json.dumps({"range": supported.declared_range(), "outcome": outcome}))
"""


def _installed_with(template_dir: Path, tmp_path: Path, extra_dependency: str) -> Path:
    """The default general package, with ``extra_dependency`` added to its requirements,
    pip-installed into a folder of its own."""
    project = render_template(template_dir, tmp_path / "project", plugin_kind="general")
    pyproject = project / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    anchor = "dependencies = [\n"
    assert anchor in text
    pyproject.write_text(text.replace(anchor, f'{anchor}    "{extra_dependency}",\n', 1))
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation"]
        + ["--target", str(site), str(project)],
        check=True,
        capture_output=True,
        env=clean_env(),
    )
    return site


def _load(site: Path, sglang_version: str, tmp_path: Path, **env: str) -> dict[str, str]:
    sglang = tmp_path / f"sglang-{sglang_version}"
    write_fake_distribution(sglang, "sglang", sglang_version)
    completed = subprocess.run(
        [sys.executable, "-c", CHECK],
        env=clean_env(PYTHONPATH=f"{site}:{sglang}", **env),
        capture_output=True,
        text=True,
        check=True,
    )
    return {**json.loads(completed.stdout), "stderr": completed.stderr}


@pytest.fixture(scope="module")
def with_router(template_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _installed_with(template_dir, tmp_path_factory.mktemp("router"), "sglang-router>=0.2")


@pytest.mark.fault(
    "templates",
    "a generated package that also depends on a project named like sglang (sglang-router>=0.2)",
    "supported.py finds the requirement on sglang by its exact name (packaging's Requirement): "
    "register() and activate() check the real range; it raised ValueError: cannot check the SGLang "
    "range clause '-router>=0.2' on every SGLang machine",
)
def test_a_dependency_named_like_sglang_does_not_hide_the_sglang_range(
    with_router: Path, tmp_path: Path
) -> None:
    out = _load(with_router, "0.5.23", tmp_path, SGLANG_PLUGINS_STRICT="1")
    assert out["outcome"] == "registered", out
    assert sorted(out["range"].split(",")) == ["<0.6", ">=0.5.11"]


def test_the_range_beside_a_look_alike_dependency_still_refuses_another_sglang(
    with_router: Path, tmp_path: Path
) -> None:
    out = _load(with_router, "0.7.1", tmp_path, SGLANG_PLUGINS_STRICT="1")
    assert out["outcome"].startswith("UnsupportedSGLangError: plugin 'example'"), out
    assert "but SGLang 0.7.1 is installed" in out["outcome"]


@pytest.mark.parametrize(
    ("version", "supported", "inside"),
    [
        ("0.5.23rc1", ">=0.5.23,<0.6", True),  # release numbers only
        ("0.5.24.dev3+g1234", ">=0.5.23,<0.6", True),
        ("0.6.0", ">=0.5.23,<0.6", False),
        ("0.5.30", "==0.5.*", True),
        ("0.5.22", "~=0.5.23", False),
        ("0.5.23", "", True),
    ],
)
def test_versions_compare_by_their_release_numbers(
    template_dir: Path, tmp_path: Path, version: str, supported: str, inside: bool
) -> None:
    project = render_template(template_dir, tmp_path / "project", plugin_kind="general")
    code = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "from sglang_example_hooks.supported import in_range\n"
        f"print(in_range({version!r}, {supported!r}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(project)], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == str(inside)
