"""Fixtures of the adopted-SGLang tier: every answer combination of the template, rendered and
pip-installed.

Runs only in the adopted venv (``SGLANG_TIER=adopted bash scripts/test-sglang.sh``). While the
runtime refuses one of SGLang's in-tree platform classes at class definition (issue 12), ``import
sglang`` fails there, so each test that imports SGLang is marked xfail with the exact classes and
reasons; tests marked ``no_sglang_import`` run anyway.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from adopted_kit import (
    Combination,
    ImportProbe,
    Installed,
    base_combinations,
    bool_questions,
    distinct,
    pip_install_target,
    probe_import,
    product_of_bools,
    recorded_answers,
    render,
    sglang_is_adopted,
    tree_digest,
)

HERE = Path(__file__).resolve().parent


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "no_sglang_import: the test never imports sglang (runs even if it cannot)"
    )


_PROBE: list[ImportProbe] = []


def import_probe() -> ImportProbe:
    if not _PROBE:
        _PROBE.append(probe_import())
    return _PROBE[0]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mine = [item for item in items if HERE in Path(str(item.path)).parents]
    if not mine:
        return
    if not sglang_is_adopted():
        pytest.exit(
            "tests_sglang/adopted runs in the adopted venv only: run SGLANG_TIER=adopted bash "
            "scripts/test-sglang.sh (this sglang has no integrations/sglang patch applied)",
            returncode=2,
        )
    probe = import_probe()
    if probe.imports:
        return
    if not probe.refused_by_contract:
        return  # any other import failure is a real failure: let the tests show it
    # Not run: each would only fail at `import sglang` (the probe just showed it, in a subprocess of
    # this venv).
    marker = pytest.mark.xfail(reason=probe.xfail_reason(), run=False)
    for item in mine:
        if item.get_closest_marker("no_sglang_import") is None:
            item.add_marker(marker)


@pytest.fixture(scope="session")
def installed(template_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """Render each answer combination (plugin_kind x host_api x example options x yes/no questions
    that apply), drop combinations that render the same package, and pip-install the rest in one
    call."""
    bools = bool_questions(template_dir)
    candidates = []
    index = 0
    for base in base_combinations(template_dir):
        probe = Combination(base["plugin_kind"], index, tuple(base.items()))
        first = render(template_dir, tmp_path_factory.mktemp(f"probe-{index}"), probe.data())
        applying = [name for name in bools if name in recorded_answers(first)]
        for extra in product_of_bools(applying):
            combination = Combination(base["plugin_kind"], index, tuple({**base, **extra}.items()))
            index += 1
            data = combination.data()
            project = render(
                template_dir, tmp_path_factory.mktemp(f"gen-{combination.package}"), data
            )
            names = {k: str(v) for k, v in data.items() if k.endswith(("_name", "_type", "module"))}
            candidates.append((combination, project, tree_digest(project, names)))
    kept = distinct((c, d) for c, _, d in candidates)
    projects = [p for c, p, _ in candidates if c in kept]
    site = pip_install_target(projects, tmp_path_factory.mktemp("site-adopted-combinations"))
    return Installed(site, tuple(kept))
