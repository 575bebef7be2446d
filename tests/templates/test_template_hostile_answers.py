"""Answers that would break or subvert the generated files: refused, or rendered harmlessly.

A project name reaches the header of every generated ``.py`` file; ``runtime_source`` reaches shell
commands (the README's steps, the CI workflow's ``run:`` steps) and the text a project publishes.
Each case below is what a careless or hostile answer did before, and what happens now.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from template_support import REPO_ROOT, render_template

PROJECT_NAME_WITH_CODING = "Speculative Decoding: EAGLE hooks"


@pytest.mark.fault(
    "templates",
    'a project name with "coding:" in it ("Speculative Decoding: EAGLE hooks")',
    "every generated .py file compiles from its bytes: no answer stands on the two lines Python "
    "reads an encoding declaration from",
)
@pytest.mark.parametrize("kind", ["platform", "general"])
def test_a_project_name_with_coding_leaves_every_python_file_importable(
    template_dir: Path, tmp_path: Path, kind: str
) -> None:
    project = render_template(
        template_dir, tmp_path / "out", plugin_kind=kind, project_name=PROJECT_NAME_WITH_CODING
    )
    python_files = sorted(project.rglob("*.py"))
    assert python_files
    for path in python_files:
        # bytes: the encoding declaration is honoured, as on import
        compile(path.read_bytes(), str(path), "exec")
        assert (
            f"# Project: {PROJECT_NAME_WITH_CODING}"
            in path.read_text(encoding="utf-8").splitlines()[2]
        )


SHELL_SOURCES = [
    "git+https://example.com/$(touch pwned)/kit.git",
    "git+https://example.com/kit.git@`id`",
    "git+https://example.com/kit.git@${HOME}",
    "https://example.com/kit.whl;touch-pwned",
    "git+https://example.com/kit!.git",
]


@pytest.mark.fault(
    "templates",
    "runtime_source with shell syntax ($(...), backticks, ${...}, ;, !)",
    "refused at generation, naming the characters allowed: it never reaches the README's commands "
    "or the CI workflow's run: steps",
)
@pytest.mark.parametrize("source", SHELL_SOURCES)
def test_runtime_source_with_shell_syntax_is_refused(
    template_dir: Path, tmp_path: Path, source: str
) -> None:
    with pytest.raises(ValueError, match="runtime_source") as excinfo:
        render_template(
            template_dir, tmp_path / "out", plugin_kind="general", runtime_source=source
        )
    assert "has spaces, quotes or shell characters ($)" in str(excinfo.value)
    assert not (tmp_path / "out" / "README.md").exists()


CREDENTIAL_SOURCES = [
    "git+https://user:s3cr3t-t0ken@git.example.com/org/sglang-plugin-kit.git",
    "https://ghp_s3cr3tt0ken@github.com/org/sglang-plugin-kit/archive/main.zip",
    "git+ssh://git:s3cr3t-t0ken@git.example.com/org/sglang-plugin-kit.git",
]


@pytest.mark.fault(
    "templates",
    "runtime_source with credentials (https://user:<token>@host/...)",
    "refused at generation with a message that never echoes them; nothing is written, so the token "
    "reaches neither README.md nor ci.yml",
)
@pytest.mark.parametrize("source", CREDENTIAL_SOURCES)
def test_runtime_source_with_credentials_is_refused_without_echoing_them(
    template_dir: Path, tmp_path: Path, source: str
) -> None:
    with pytest.raises(ValueError, match="carries credentials") as excinfo:
        render_template(
            template_dir, tmp_path / "out", plugin_kind="general", runtime_source=source
        )
    assert "s3cr3t" not in str(excinfo.value)
    assert not (tmp_path / "out" / "README.md").exists()


QUERY_TOKEN_SOURCES = [
    "https://gitlab.example.com/api/v4/projects/7/packages/kit.whl?private_token=s3cr3t-t0ken",
    "https://bucket.s3.amazonaws.com/kit-0.1.0-py3-none-any.whl?X-Amz-Algorithm=AWS4-HMAC-SHA256"
    "&X-Amz-Credential=AKIAs3cr3t&X-Amz-Signature=s3cr3t",
    "https://acct.blob.core.windows.net/wheels/kit.whl?sv=2024-01-01&sig=s3cr3t",
    "git+https://git.example.com/kit.git?access_token=s3cr3t",
]


@pytest.mark.fault(
    "templates",
    "runtime_source with a token in its query (?private_token=..., a presigned or SAS URL's "
    "signature)",
    "refused at generation like user:token@ credentials, with a message that never echoes it; "
    "nothing is written, so it reaches neither README.md, ci.yml nor .copier-answers.yml",
)
@pytest.mark.parametrize("source", QUERY_TOKEN_SOURCES)
def test_runtime_source_with_a_token_in_its_query_is_refused(
    template_dir: Path, tmp_path: Path, source: str
) -> None:
    with pytest.raises(ValueError, match="runtime_source") as excinfo:
        render_template(
            template_dir, tmp_path / "out", plugin_kind="general", runtime_source=source
        )
    assert "query carries a token or signature" in str(excinfo.value)
    assert "s3cr3t" not in str(excinfo.value)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_a_query_without_a_secret_is_accepted(template_dir: Path, tmp_path: Path) -> None:
    source = "https://example.com/dl/sglang_plugin_runtime-0.1.0-py3-none-any.whl?raw=true"
    project = render_template(
        template_dir, tmp_path / "out", plugin_kind="general", runtime_source=source
    )
    assert source in (project / ".github" / "runtime-requirements.txt").read_text(encoding="utf-8")


def test_an_ssh_user_name_is_not_a_credential(template_dir: Path, tmp_path: Path) -> None:
    source = "git+ssh://git@github.com/org/sglang-plugin-kit.git"
    project = render_template(
        template_dir, tmp_path / "out", plugin_kind="general", runtime_source=source
    )
    assert f"sglang-plugin-runtime @ {source}" in (
        project / ".github" / "runtime-requirements.txt"
    ).read_text(encoding="utf-8")


def _derived(name: str, **context: object) -> str:
    """The default of ``name`` in copier.yml, rendered as Copier does (its Jinja filters, strict
    undefined)."""
    from jinja2 import StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    env = SandboxedEnvironment(
        extensions=["jinja2_ansible_filters.AnsibleCoreFiltersExtension"], undefined=StrictUndefined
    )
    questions = yaml.safe_load((REPO_ROOT / "copier.yml").read_text(encoding="utf-8"))
    return env.from_string(str(questions[name]["default"])).render(**context).strip()


@pytest.mark.fault(
    "templates",
    "generating from a template URL with credentials (https://user:<token>@host/kit)",
    "the derived runtime_source, the contract link and the answers file's _src_path carry the URL "
    "without them",
)
def test_a_template_url_with_credentials_is_never_copied_with_them() -> None:
    src = "https://user:s3cr3t-t0ken@git.example.com/org/sglang-plugin-kit.git"
    location = _derived("template_location", _src_path=src)
    assert location == "https://git.example.com/org/sglang-plugin-kit.git"
    conf = {"vcs_ref_hash": "0" * 40}
    assert (
        _derived("runtime_source", template_location=location, _copier_conf=conf)
        == "git+" + location
    )
    answers = (REPO_ROOT / "templates" / "_shared" / "answers.yml.jinja").read_text(
        encoding="utf-8"
    )
    assert '"_src_path": template_location' in answers  # what the answers file stores
