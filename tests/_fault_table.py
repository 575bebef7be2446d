"""The fault table of docs/reliability.md, built from the tests that prove each row.

A test that pins down what happens when something goes wrong carries ``@pytest.mark.fault(area,
case, behaviour)``. The table in docs/reliability.md is generated from those markers (read from the
test sources with ``ast``, so no test has to run), and ``tests/test_fault_table.py`` fails when the
page and the tests disagree.

    # regenerate the table after adding or changing a marked test
    python tests/_fault_table.py --write
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

TESTS = Path(__file__).resolve().parent
DOC = TESTS.parent / "docs" / "reliability.md"
START, END = "<!-- fault-table:start -->", "<!-- fault-table:end -->"

#: Areas in the order the page lists them; a marker naming another area is an error.
AREAS = {
    "security": "Security: what decides which code runs",
    "discovery": "Discovery",
    "selection": "Platform selection",
    "plugins": "General plugins",
    "hooks": "Hooks",
    "processes": "Processes and threads",
    "cli": "sglang-plugins (doctor, list, explain)",
    "testing": "The testing kit (pytest fixtures)",
    "templates": "Generating a plugin package (the Copier template)",
}


@dataclass(frozen=True)
class Fault:
    area: str
    case: str
    behaviour: str
    test: str
    """``tests/<file>.py::<test name>``"""


def _marker_arguments(decorator: ast.expr) -> tuple[str, ...] | None:
    """The string arguments of ``@pytest.mark.fault(...)``, or ``None`` for any other decorator."""
    if not isinstance(decorator, ast.Call):
        return None
    func = decorator.func
    if not (
        isinstance(func, ast.Attribute)
        and func.attr == "fault"
        and ast.unparse(func.value) == "pytest.mark"
    ):
        return None
    values = []
    for arg in decorator.args:
        if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
            raise ValueError(
                f"pytest.mark.fault takes three string literals, got {ast.unparse(arg)}"
            )
        values.append(arg.value)
    return tuple(values)


#: Where marked tests live: the project's tests, the real-SGLang tier (the released wheel's) and the
#: real-server tier.
TREES = (TESTS, TESTS.parent / "tests_sglang", TESTS.parent / "tests_serve")


def collect(trees: tuple[Path, ...] = TREES) -> list[Fault]:
    """Every marked test under ``trees``, in area order, then by tree, file and position."""
    faults = []
    for path in [path for tests in trees for path in sorted(tests.rglob("test_*.py"))]:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in tree.body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for decorator in node.decorator_list:
                arguments = _marker_arguments(decorator)
                if arguments is None:
                    continue
                if len(arguments) != 3 or arguments[0] not in AREAS:
                    raise ValueError(
                        f"{path.name}::{node.name}: @pytest.mark.fault(area, case, behaviour) with "
                        f"area one of {', '.join(AREAS)}; got {arguments}"
                    )
                test = f"{path.relative_to(TESTS.parent).as_posix()}::{node.name}"
                faults.append(Fault(arguments[0], arguments[1], arguments[2], test))
    order = list(AREAS)
    return sorted(faults, key=lambda fault: order.index(fault.area))


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def render(faults: list[Fault]) -> str:
    """The generated part of the page: one table per area."""
    lines = [START, f"{len(faults)} cases, each proven by the test named in its row.", ""]
    for area, title in AREAS.items():
        rows = [fault for fault in faults if fault.area == area]
        if not rows:
            continue
        lines += [f"### {title}", "", "| case | what happens | test |", "|---|---|---|"]
        lines += [f"| {_cell(f.case)} | {_cell(f.behaviour)} | `{f.test}` |" for f in rows]
        lines.append("")
    lines.append(END)
    return "\n".join(lines)


def current_section(text: str) -> str:
    start = text.index(START)
    end = text.index(END) + len(END)
    return text[start:end]


def write() -> None:
    text = DOC.read_text(encoding="utf-8")
    DOC.write_text(text.replace(current_section(text), render(collect())), encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write()
        print(f"wrote the fault table of {DOC}")
    else:
        sys.stdout.write(render(collect()) + "\n")
