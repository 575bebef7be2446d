"""The doc-test machinery: find every Python example in README.md and docs/, run each in a fresh
process.

Used by ``tests/test_docs.py`` (the real docs) and ``tests/test_docs_machinery.py`` (a broken
example fails). The conventions it implements are the ones docs/contributing.md documents:

- A fence whose language is ``python`` or ``py`` is executed, as its own fresh ``python`` process in
  an empty temporary folder with no ``SGLANG_*`` variables set: exactly what a reader gets by
  pasting it into a file. A failure names the page and the line (the script is padded so its line
  numbers are the page's).
- ``test="skip"`` (with a ``reason="..."``): not run. For fragments and code that needs what a test
  machine has not (hardware, the network).
- ``test="pytest"``: the block is a test file: it runs under ``python -m pytest`` (the runtime's
  pytest plugin and its fixtures are active), and every test in it must pass.
- ``group="NAME"``: the blocks of one page with the same group run in order, as one script (a
  tutorial).
- ``site="demo"``: the docs' demo installation (``docs/_hooks/demo_site.py``) is on ``PYTHONPATH``.
- A block with ``#>`` lines is run with pytest-examples' print check: every ``print()`` in it must
  be followed by the ``#>`` lines it prints.
- ``setup="on"``: runs here like any block, and also at build time in the page's working directory,
  before the page's ``exec="on"`` shell blocks (docs/_hooks/sglang_docs.py).
- ``exec="on"``: run by markdown-exec when the site is built (``make docs``), not here.

It also reads the ```` ```mermaid ```` diagrams of a page (``mermaid_blocks``, for
``tests/test_docs_diagrams.py``) and builds the site once per test process (``build_site``, for the
tests that read the built pages).

Run as a script (``python tests/_docs_support.py run PAGE SCRIPT [--check-prints]``) it is the child
process that runs one example.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DOCS_DIR = REPO_ROOT / "docs"
RUN_LANGUAGES = {"py", "python", "python3"}
TIMEOUT_S = 120


def doc_files(root: Path = REPO_ROOT) -> list[Path]:
    """README.md and every page of docs/ (not the build hooks), sorted."""
    docs = sorted(
        p
        for p in (root / "docs").rglob("*.md")
        if "_hooks" not in p.relative_to(root / "docs").parts
    )
    readme = root / "README.md"
    return ([readme] if readme.exists() else []) + docs


_MERMAID = re.compile(
    r"^(?P<indent> *)```mermaid[ \t]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.M | re.S
)


def mermaid_blocks(markdown: str) -> list[str]:
    """The source of each ```` ```mermaid ```` diagram of a page, in page order (dedented)."""
    import textwrap

    return [textwrap.dedent(m.group("body")) for m in _MERMAID.finditer(markdown)]


def _language(prefix: str) -> str:
    words = prefix.strip(" {}").split()
    return words[0].lstrip(".") if words else ""


def _is_exec(settings: dict[str, str]) -> bool:
    return settings.get("exec", "").lower() in {"1", "on", "true", "yes"}


@dataclass
class DocExample:
    """One test: a single fenced block, or the blocks of one group of one page."""

    path: Path
    examples: list = field(default_factory=list)  # pytest_examples.CodeExample
    group: str | None = None
    site: str | None = None
    skip_reason: str | None = None

    @property
    def first_line(self) -> int:
        return self.examples[0].start_line

    def label(self, root: Path = REPO_ROOT) -> str:
        try:
            rel = self.path.relative_to(root)
        except ValueError:
            rel = self.path
        where = f"{rel}:{self.first_line}"
        return f"{where}[{self.group}]" if self.group else where

    @property
    def is_pytest(self) -> bool:
        return any(ex.prefix_settings().get("test") == "pytest" for ex in self.examples)

    @property
    def checks_prints(self) -> bool:
        return any(re.search(r"^\s*#>", ex.source, re.M) for ex in self.examples)


def collect(paths: Iterable[Path]) -> list[DocExample]:
    """Every runnable example of ``paths``, in page order; skipped ones carry their reason."""
    from pytest_examples import find_examples

    tests: list[DocExample] = []
    for path in paths:
        groups: dict[str, DocExample] = {}
        for example in find_examples(path):
            if _language(example.prefix) not in RUN_LANGUAGES:
                continue
            settings = example.prefix_settings()
            if _is_exec(settings):
                continue  # markdown-exec runs it at build time
            group = settings.get("group")
            site = settings.get("site")
            if group is not None and group in groups:
                test = groups[group]
                test.examples.append(example)
                test.site = test.site or site
                continue
            test = DocExample(path, [example], group, site)
            if settings.get("test") == "skip":
                test.skip_reason = settings.get("reason", 'marked test="skip"')
            if group is not None:
                groups[group] = test
            tests.append(test)
    return tests


def invalid_settings(paths: Iterable[Path]) -> list[str]:
    """Fence options the runner does not understand (a typo would silently change what runs)."""
    from pytest_examples import find_examples

    problems = []
    for path in paths:
        for example in find_examples(path):
            if _language(example.prefix) not in RUN_LANGUAGES:
                continue
            settings = example.prefix_settings()
            where = f"{path}:{example.start_line}"
            if settings.get("test") not in (None, "skip", "run", "pytest"):
                problems.append(
                    f'{where}: test="{settings["test"]}" (use test="skip", test="pytest" or '
                    "nothing)"
                )
            if settings.get("setup") not in (None, "on"):
                problems.append(f'{where}: setup="{settings["setup"]}" (use setup="on" or nothing)')
            if settings.get("site") not in (None, "demo"):
                problems.append(f'{where}: site="{settings["site"]}" (only site="demo" exists)')
            if settings.get("test") == "skip" and "reason" not in settings:
                problems.append(f'{where}: test="skip" needs reason="..." saying why it cannot run')
    return problems


@dataclass
class RunResult:
    ok: bool
    output: str
    line: int | None = None
    error: str = ""

    def report(self, label: str) -> str:
        head = f"{label}: example failed"
        if self.line is not None:
            head += f" at line {self.line}"
        if self.error:
            head += f": {self.error}"
        return f"{head}\n\n{self.output}"


def _padded_script(test: DocExample) -> str:
    """The example(s) as one script whose line N is line N of the page."""
    lines: list[str] = []
    for example in test.examples:
        # 0-based index of the first code line == 1-based line of the fence
        first = example.start_line
        while len(lines) < first:
            lines.append("")
        lines.extend(example.source.rstrip("\n").splitlines())
    return "\n".join(lines) + "\n"


def child_env(site_dir: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_") and k != "PYTHONPATH"}
    if site_dir is not None:
        env["PYTHONPATH"] = str(site_dir)
        env["SGLANG_DOCS_DEMO_SITE"] = str(site_dir)
    # As in a reader's activated venv: this interpreter's scripts (sglang-plugins, pytest) come
    # first.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["COLUMNS"] = "100"
    return env


def _failing_line(output: str, page: str) -> int | None:
    pattern = rf'File "{re.escape(page)}", line (\d+)|^{re.escape(page)}:(\d+):'
    lines = [int(m.group(1) or m.group(2)) for m in re.finditer(pattern, output, re.M)]
    return lines[-1] if lines else None


def _last_error(output: str) -> str:
    for line in reversed(output.strip().splitlines()):
        if re.match(
            r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning)?\b.*", line
        ) and not line.startswith(" "):
            return line.strip()
    return ""


def run_example(
    test: DocExample, *, demo_site: Path | None = None, workdir: Path | None = None
) -> RunResult:
    """Run ``test`` in a fresh Python process; return whether it passed, and a report naming page
    and line."""
    page = str(test.path)
    site_dir = demo_site if test.site == "demo" else None
    if test.site == "demo" and demo_site is None:
        raise ValueError("site='demo' needs the demo installation")
    with tempfile.TemporaryDirectory(prefix="sglang-doctest-") as tmp:
        cwd = Path(workdir or tmp)
        stem = re.sub(r"\W", "_", test.path.stem) + "_md.py"
        script = Path(tmp) / (f"test_{stem}" if test.is_pytest else stem)
        script.write_text(_padded_script(test), encoding="utf-8")
        if test.is_pytest:
            command = [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "--rootdir",
                tmp,
                str(script),
            ]
        else:
            command = [sys.executable, str(Path(__file__).resolve()), "run", page, str(script)]
            if test.checks_prints:
                command.append("--check-prints")
        try:
            proc = subprocess.run(
                command,
                cwd=cwd,
                env=child_env(site_dir),
                capture_output=True,
                text=True,
                timeout=TIMEOUT_S,
            )
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            return RunResult(
                False, out.replace(str(script), page), None, f"timed out after {TIMEOUT_S} s"
            )
        output = (proc.stdout + proc.stderr).replace(str(script), page)
        output = re.sub(rf"(?<![\w/]){re.escape(script.name)}\b", page, output)
        if proc.returncode == 0:
            return RunResult(True, output)
        return RunResult(False, output, _failing_line(output, page), _last_error(output))


# --------------------------------------------------------------------------------------------------
# The built site: one strict build per test process, shared by the tests that read the pages.
# --------------------------------------------------------------------------------------------------

_BUILT: dict[str, tuple[subprocess.CompletedProcess[str], Path]] = {}


def build_site() -> tuple[subprocess.CompletedProcess[str], Path]:
    """``make docs`` into a temporary folder, once per process: the build's result and the site
    folder.

    Tests that read the built pages share it; mark them ``@pytest.mark.xdist_group("docs-site")`` so
    that pytest-xdist runs them in one process and the site is built once.
    """
    if "site" not in _BUILT:
        import atexit
        import shutil

        site = Path(tempfile.mkdtemp(prefix="sglang-docs-site-"))
        atexit.register(shutil.rmtree, site, True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_")}
        env["NO_MKDOCS_2_WARNING"] = "1"
        proc = subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
            cwd=REPO_ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        _BUILT["site"] = (proc, site)
    return _BUILT["site"]


def page_html(site: Path, page: str) -> Path:
    """The built file of ``page`` (``"index.md"``, ``"hooks.md"``) under ``site``."""
    stem = page.removesuffix(".md")
    return site / "index.html" if stem == "index" else site / stem / "index.html"


# --------------------------------------------------------------------------------------------------
# The child process: run the padded script as ``__main__`` (so multiprocessing's spawn finds its
# functions), with pytest-examples' print recorder when the example shows ``#>`` output.
# --------------------------------------------------------------------------------------------------


def _child(page: str, script: str, check_prints: bool) -> int:
    import runpy

    script_path = Path(script)
    sys.argv = [script]
    sys.path[0] = str(script_path.parent)
    if not check_prints:
        runpy.run_path(script, run_name="__main__")
        return 0

    from pytest_examples import CodeExample
    from pytest_examples.config import ExamplesConfig
    from pytest_examples.lint import code_diff
    from pytest_examples.run_code import InsertPrintStatements

    config = ExamplesConfig()
    recorder = InsertPrintStatements(script_path, config, True, None, None)
    with recorder:
        runpy.run_path(script, run_name="__main__")
    example = CodeExample.create(script_path.read_text(encoding="utf-8"), path=Path(page))
    new_source = recorder.updated_print_statements(example)
    if new_source is None:
        return 0
    print(
        "The #> lines are not what the example prints (- the page, + the run; @@ numbers are page "
        "lines):\n" + code_diff(example, new_source, config),
        file=sys.stderr,
    )
    first = _first_changed_line(example.source, new_source)
    if first is not None:
        print(f'  File "{page}", line {first}', file=sys.stderr)
    print(
        "PrintOutputMismatch: the #> output shown is not what the example prints", file=sys.stderr
    )
    return 1


def _first_changed_line(before: str, after: str) -> int | None:
    for number, (old, new) in enumerate(
        zip(before.splitlines(), after.splitlines(), strict=False), start=1
    ):
        if old.rstrip() != new.rstrip():
            return number
    return None


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "run":
        sys.exit(_child(sys.argv[2], sys.argv[3], "--check-prints" in sys.argv[4:]))
    sys.exit(f"usage: {sys.argv[0]} run PAGE SCRIPT [--check-prints]")
