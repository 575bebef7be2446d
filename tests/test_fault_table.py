"""docs/reliability.md's fault table is generated from the tests marked ``@pytest.mark.fault``: it
cannot drift."""

from __future__ import annotations

from _fault_table import DOC, collect, current_section, render


def test_fault_table_in_the_docs_matches_the_marked_tests() -> None:
    expected = render(collect())
    assert current_section(DOC.read_text(encoding="utf-8")) == expected, (
        "docs/reliability.md is out of date with the @pytest.mark.fault tests: run python "
        "tests/_fault_table.py --write"
    )


def test_fault_table_lists_at_least_sixty_cases() -> None:
    assert len(collect()) >= 60


def test_every_fault_case_is_stated_once() -> None:
    faults = collect()
    cases = [(fault.area, fault.case) for fault in faults]
    assert len(cases) == len(set(cases))
    assert len({fault.test for fault in faults}) == len(faults)
