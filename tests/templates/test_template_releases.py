"""What a template generates holds on every SGLang release of the range it declares, judged from the
runtime's data of the released wheels (no SGLang installed).

The range question (``sglang_versions``) defaults to every release with a plugin system; the
template knows those releases by number (``kit_sglang_releases`` in ``copier.yml``) and picks the
ones a range holds in Jinja (``sglang_releases_in_range``), for the platform class, its README and
the CI pins.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import jinja2
import pytest
import yaml
from template_support import REPO_ROOT, Render, clean_env

from sglang_plugin_runtime.testing import missing_hook_target, sglang_releases

COPIER = yaml.safe_load((REPO_ROOT / "copier.yml").read_text(encoding="utf-8"))
DEFAULT_RANGE = COPIER["sglang_versions"]["default"]
#: The testing kit's serving venv's torchvision, the one of its torch.
TORCHVISION = next(
    line
    for line in (REPO_ROOT / "runtime/sglang_plugin_runtime/testing/serve-requirements.txt")
    .read_text(encoding="utf-8")
    .splitlines()
    if line.startswith("torchvision==")
)
TARGET = re.compile(r'^(?P<name>\w+_TARGET) = "(?P<target>[^"]+)"$', re.MULTILINE)


def _in_range(supported: str) -> list[str]:
    """``sglang_releases_in_range`` as Copier renders it (its Jinja, with Copier's filters)."""
    env = jinja2.Environment(extensions=["jinja2_ansible_filters.AnsibleCoreFiltersExtension"])
    template = env.from_string(COPIER["sglang_releases_in_range"]["default"])
    rendered = template.render(
        kit_sglang_releases=COPIER["kit_sglang_releases"]["default"], sglang_versions=supported
    )
    return rendered.split()


def test_the_template_knows_every_release_the_kits_data_lists() -> None:
    assert COPIER["kit_sglang_releases"]["default"].split() == sglang_releases()


def test_the_default_range_is_every_release_with_a_plugin_system() -> None:
    assert DEFAULT_RANGE == ">=0.5.11,<0.6"
    assert sglang_releases(DEFAULT_RANGE) == sglang_releases()


@pytest.mark.parametrize(
    "supported",
    [
        "",
        DEFAULT_RANGE,
        ">=0.5.17",
        "<0.5.13",
        ">0.5.13,<=0.5.17,!=0.5.15",
        "==0.5.21",
        "==0.5.*",
        "!=0.5.*",
        "~=0.5.20",
        "~=0.5",
        ">=0.6",
    ],
)
def test_the_template_picks_the_releases_the_runtime_reads_from_a_range(supported: str) -> None:
    assert _in_range(supported) == sglang_releases(supported or None)


def test_every_example_hook_target_exists_in_every_release_of_the_default_range(
    render: Render,
) -> None:
    project = render(
        plugin_kind="general", example_hooks=["before", "after", "around_timer", "replace_class"]
    )
    hooks = (project / "sglang_example_hooks" / "hooks.py").read_text(encoding="utf-8")
    targets = [m.group("target") for m in TARGET.finditer(hooks)]
    assert len(targets) == 4
    missing = {
        (target, release, missing_hook_target(target, release))
        for target in targets
        for release in sglang_releases(DEFAULT_RANGE)
    }
    assert {(t, r, m) for t, r, m in missing if m is not None} == set()


def _lazy_imports(platform_py: Path) -> dict[str, list[str]]:
    """Method name -> the SGLang classes it imports when called (``module.Class``)."""
    found: dict[str, list[str]] = {}
    for node in ast.walk(ast.parse(platform_py.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef):
            found[node.name] = [
                f"{imp.module}.{alias.name}"
                for imp in ast.walk(node)
                if isinstance(imp, ast.ImportFrom) and (imp.module or "").startswith("sglang.")
                for alias in imp.names
            ]
    return {name: classes for name, classes in found.items() if classes}


def test_the_platform_class_returns_sglang_classes_each_asking_release_has(
    render: Render,
) -> None:
    project = render(plugin_kind="platform")
    methods = _lazy_imports(project / "sglang_mydevice_platform" / "platform.py")
    assert "get_paged_allocator_cls" in methods and "get_mha_kv_pool_cls" in methods
    base = "sglang.srt.platforms.interface.SRTPlatform"
    wrong = [
        (method, release, cls)
        for method, classes in methods.items()
        for release in sglang_releases(DEFAULT_RANGE)
        if missing_hook_target(f"{base}.{method}", release) is None  # the release asks for it
        for cls in classes
        if missing_hook_target(cls, release) is not None
    ]
    assert wrong == []


CONFORMS = """
import sys, warnings
from sglang_plugin_runtime.testing import assert_platform_conformance, sglang_releases
from sglang_mydevice_platform.platform import MydeviceSRTPlatform
warnings.simplefilter("error")
for release in sglang_releases(sys.argv[1] or None):
    assert_platform_conformance(MydeviceSRTPlatform, release=release)
print(sorted(name for name in vars(MydeviceSRTPlatform) if name.endswith("_cls")))
"""


@pytest.mark.parametrize(
    ("supported", "overrides"),
    [
        (
            "<0.5.13",
            [
                "get_graph_runner_cls",
                "get_kv_pool_cls",
                "get_mha_kv_pool_cls",
                "get_mla_kv_pool_cls",
                "get_nsa_kv_pool_cls",
                "get_paged_allocator_cls",
                "get_piecewise_backend_cls",
            ],
        ),
        (
            ">=0.5.17,<0.5.23",
            [
                "get_dsa_kv_pool_cls",
                "get_graph_runner_cls",
                "get_kv_pool_cls",
                "get_mha_kv_pool_cls",
                "get_mla_kv_pool_cls",
                "get_paged_allocator_cls",
                "get_piecewise_backend_cls",
            ],
        ),
        (">=0.5.22", []),  # nothing the newer releases do not ask for
    ],
)
def test_a_platform_generated_for_a_range_conforms_to_each_release_of_it(
    render: Render, supported: str, overrides: list[str]
) -> None:
    project = render(plugin_kind="platform", sglang_versions=supported)
    result = subprocess.run(
        [sys.executable, "-c", CONFORMS, supported],
        cwd=project,
        env=clean_env(PYTHONPATH=str(project)),
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == repr(overrides)


@pytest.mark.parametrize("supported", [DEFAULT_RANGE, ">=0.5.21,<0.6", "==0.5.17"])
def test_ci_pins_the_oldest_and_the_newest_release_of_the_range(
    render: Render, supported: str
) -> None:
    project = render(plugin_kind="general", sglang_versions=supported)
    held = sglang_releases(supported)
    for which, release in (("oldest", held[0]), ("newest", held[-1])):
        pins = (project / ".github" / f"sglang-requirements-{which}.txt").read_text()
        requirements = [line for line in pins.splitlines() if not line.startswith("#")]
        # SGLang up to 0.5.20 imports torchvision at the top of sglang.srt.utils
        torchvision = (
            [TORCHVISION]
            if missing_hook_target("sglang.srt.utils.common.decode_jpeg", release) is None
            else []
        )
        assert requirements == [f"sglang=={release}", *torchvision], which
    shared = (project / ".github" / "sglang-requirements.txt").read_text()
    assert "\nsglang==" not in shared  # the releases are the two files' alone


def test_a_range_of_no_known_release_has_no_pins_and_no_release_proposals(
    render: Render,
) -> None:
    project = render(plugin_kind="general", sglang_versions=">=0.6")
    assert not list((project / ".github").glob("sglang-requirements-*.txt"))
    assert not (project / ".github" / "workflows" / "sglang-release.yml").exists()
    jobs = yaml.safe_load((project / ".github" / "workflows" / "ci.yml").read_text())["jobs"]
    assert "test-sglang" not in jobs and "sglang-main" in jobs
