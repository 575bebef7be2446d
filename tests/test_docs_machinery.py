"""The doc-test machinery itself: a broken example fails, naming page and line; the conventions
hold.

Every page here is written into a temporary folder, never into docs/.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from _docs_support import REPO_ROOT, collect, invalid_settings, run_example

PAGE = """\
# A page

```python
total = sum([1, 2, 3])
assert total == 6
```

Then a broken one:

```python
values = {"a": 1}
print(values["b"])
```

```python
print("hello", 1 + 1)
#> hello 2
```

```python
print("hello", 1 + 1)
#> hello 3
```

```py test="skip" reason="a fragment"
this is not python
```

```python group="tour"
greeting = "hi"
```

Some prose between the blocks of the tour.

```python group="tour"
assert greeting == "hi"
print(greeting.upper())
#> HI
```

```python
import multiprocessing as mp


def square(x):
    return x * x


if __name__ == "__main__":
    with mp.get_context("spawn").Pool(1) as pool:
        print(pool.map(square, [3]))
        #> [9]
```

```python
import os

assert not any(name.startswith("SGLANG_") for name in os.environ)
```

```bash
echo "shell blocks are not run by the example runner"
```

```python test="pytest"
def test_passes():
    assert 1 + 1 == 2


def test_fails():
    assert 1 + 1 == 3
```
"""


@pytest.fixture
def page(tmp_path: Path) -> Path:
    path = tmp_path / "page.md"
    path.write_text(PAGE, encoding="utf-8")
    return path


def by_line(tests, line: int):
    (test,) = [t for t in tests if t.first_line == line]
    return test


def test_collects_python_blocks_with_their_options(page: Path) -> None:
    tests = collect([page])
    assert [t.first_line for t in tests] == [3, 10, 15, 20, 25, 29, 41, 55, 65]
    assert by_line(tests, 25).skip_reason == "a fragment"
    tour = by_line(tests, 29)
    assert tour.group == "tour" and [ex.start_line for ex in tour.examples] == [29, 35]
    assert invalid_settings([page]) == []


def test_a_passing_example_passes(page: Path) -> None:
    result = run_example(by_line(collect([page]), 3))
    assert result.ok, result.output


def test_a_broken_example_fails_naming_page_line_and_error(page: Path) -> None:
    result = run_example(by_line(collect([page]), 10))
    assert not result.ok
    assert result.line == 12  # the page's line of `print(values["b"])`
    assert result.error == "KeyError: 'b'"
    report = result.report("page.md:10")
    assert report.startswith("page.md:10: example failed at line 12: KeyError: 'b'")
    assert f'File "{page}", line 12' in report


def test_shown_print_output_is_checked(page: Path) -> None:
    tests = collect([page])
    assert run_example(by_line(tests, 15)).ok
    wrong = run_example(by_line(tests, 20))
    assert not wrong.ok
    assert wrong.error.startswith("PrintOutputMismatch")
    assert wrong.line == 22  # the `#> hello 3` line
    assert "-#> hello 3" in wrong.output and "+#> hello 2" in wrong.output


def test_a_group_runs_as_one_script(page: Path) -> None:
    result = run_example(by_line(collect([page]), 29))
    assert result.ok, result.output


def test_multiprocessing_spawn_works_in_an_example(page: Path) -> None:
    result = run_example(by_line(collect([page]), 41))
    assert result.ok, result.output


def test_examples_run_without_plugin_environment_variables(
    page: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SGLANG_PLATFORM", "leaked")
    assert run_example(by_line(collect([page]), 55)).ok


def test_unknown_options_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "bad.md"
    path.write_text(
        '```python test="skipp"\npass\n```\n\n```py test="skip"\npass\n```\n', encoding="utf-8"
    )
    problems = invalid_settings([path])
    assert len(problems) == 2
    assert 'test="skipp"' in problems[0] and "needs reason" in problems[1]


class _PythonName(str):
    """A ``!!python/name:module.attr`` value of mkdocs.yml (the Mermaid fence's formatter), kept as
    written."""


class _ConfigLoader(yaml.SafeLoader):
    pass


class _ConfigDumper(yaml.SafeDumper):
    pass


_ConfigLoader.add_multi_constructor(
    "tag:yaml.org,2002:python/name:", lambda loader, suffix, node: _PythonName(suffix)
)
_ConfigDumper.add_representer(
    _PythonName,
    lambda dumper, value: dumper.represent_scalar(f"tag:yaml.org,2002:python/name:{value}", ""),
)


def _mini_site(tmp_path: Path, pages: dict[str, str]) -> Path:
    """A site with the real mkdocs.yml's settings (validation, hooks, extensions), but only
    ``pages``."""
    config = yaml.load((REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_ConfigLoader)
    docs = tmp_path / "docs"
    docs.mkdir(parents=True)
    for name, text in pages.items():
        (docs / name).write_text(textwrap.dedent(text), encoding="utf-8")
    config["docs_dir"] = str(docs)
    config["nav"] = list(pages)
    config["hooks"] = [str(REPO_ROOT / hook) for hook in config["hooks"]]
    config["plugins"] = [
        p
        for p in config["plugins"]
        if p != "mkdocstrings" and not (isinstance(p, dict) and "mkdocstrings" in p)
    ]
    (tmp_path / "mkdocs.yml").write_text(yaml.dump(config, Dumper=_ConfigDumper), encoding="utf-8")
    return tmp_path


def _build(site: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_")}
    env["NO_MKDOCS_2_WARNING"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site / "site")],
        cwd=site,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_strict_build_fails_on_a_broken_link_and_a_failing_command(tmp_path: Path) -> None:
    good = _mini_site(
        tmp_path / "good",
        {
            "index.md": """
            # Home

            See [the other page](other.md#a-heading).

            ```console exec="on" source="console" result="text"
            $ python -c "print('generated at build time')"
            ```

            <!-- contract-table:start sglang_plugin_runtime.platforms.interface:SRTPlatform -->
            <!-- contract-table:end -->
            """,
            "other.md": """
            # Other

            ## A heading

            ```python setup="on"
            from sglang_plugin_runtime.testing import write_fake_distribution

            write_fake_distribution(
                "site", "zeta-gpu", "0.3", {"sglang.srt.platforms": {"zeta": "zeta:activate"}}
            )
            ```

            ```console exec="on" source="console" result="text"
            $ PYTHONPATH=site sglang-plugins list
            ```
            """,
        },
    )
    proc = _build(good)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    html = (good / "site" / "index.html").read_text(encoding="utf-8")
    assert "generated at build time" in html
    assert "get_default_attention_backend() -&gt; str" in html  # the generated contract table
    other = (good / "site" / "other" / "index.html").read_text(encoding="utf-8")
    # the console block ran where the page's setup block wrote its site
    assert "zeta-gpu 0.3" in other
    assert "setup=" not in other  # doc-test options never reach the page

    broken = _mini_site(
        tmp_path / "broken",
        {
            "index.md": """
            # Home

            See [a missing page](missing.md) and [a missing anchor](other.md#nowhere).

            ```console exec="on" source="console" result="text"
            $ python -c "raise SystemExit(3)"
            ```
            """,
            "other.md": "# Other\n",
        },
    )
    proc = _build(broken)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "missing.md" in out and "#nowhere" in out
    assert "unexpected code 3" in out


def test_a_pytest_block_runs_its_tests_under_pytest(page: Path) -> None:
    result = run_example(by_line(collect([page]), 65))
    assert not result.ok
    assert "1 failed, 1 passed" in result.output
    assert result.line == 71  # the page's line of `assert 1 + 1 == 3`
