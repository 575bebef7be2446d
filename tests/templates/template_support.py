"""Helpers of the template tests: rendering, subprocesses, real virtual environments, git, workflow
steps."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import venv
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
TORCH_REQUIREMENT = "torch==2.13.0"
IGNORE = shutil.ignore_patterns(
    "__pycache__", "*.pyc", "*.egg-info", ".pytest_cache", ".ruff_cache"
)

Render = Callable[..., Path]

#: The plugin kit's runtime and the supported SGLang releases, as generated packages name them by
#: default.
RUNTIME_REQUIREMENT = "sglang-plugin-runtime>=0.1,<0.2"
SGLANG_REQUIREMENT = "sglang>=0.5.11,<0.6"
#: What a generated package requires, per ``host_api`` answer: packaging (supported.py reads the
#: SGLang range with it), and the released SGLang with host_api=sglang.
PACKAGING_REQUIREMENT = "packaging>=22"
HOST_REQUIREMENTS: dict[str, list[str]] = {
    "auto": [PACKAGING_REQUIREMENT],
    "sglang": [SGLANG_REQUIREMENT, PACKAGING_REQUIREMENT],
}
#: Answers a vendor would give (a device, an author, a license): nothing of the template's defaults
#: must show.
PLATFORM_REALISTIC = {
    "plugin_kind": "platform",
    "project_name": "Acme NPU Platform",
    "distribution_name": "acme-sglang-npu",
    "entry_point_name": "acme_npu",
    "device_name": "acme_npu",
    "device_type": "npu",
    "backend_module": "torch_npu",
    "distributed_backend": "hccl",
    "with_mm_platform": True,
    "with_startup_plugin": True,
    "description": "Runs SGLang on Acme NPU accelerators",
    "author_name": "Acme Devices GmbH",
    "author_email": "oss@acme.example",
    "python_min": "3.11",
    "license": "MIT",
}
GENERAL_REALISTIC = {
    "plugin_kind": "general",
    "project_name": "Acme Scheduler Hooks",
    "distribution_name": "acme.sglang-hooks_demo",
    "example_hooks": ["before", "after", "replace_class"],
    "description": 'Hooks for "SGLang" \\ with Zoë’s ✓ and 🚀',
    "author_name": "Zoë Example",
    "license": "BSD-3-Clause",
}
#: What the defaults put in a package, which realistic answers replace everywhere.
DEFAULT_PLACEHOLDERS = (
    "mydevice",
    "SGLang Example Hooks",
    "sglang_example_hooks",
    "sglang-example-hooks",
    "SGLang Plugin Author",
    "example.org",
)

#: The template as it was before packages bound to SGLang where it is installed (host_api=runtime by
#: default, the diffusion class in platform.py): the "older tag" of the update test. A commit of
#: main.
OLDER_TEMPLATE_COMMIT = "1bdf9f520dc438238357e87c1035d7e8574cc9e2"


def copy_template(destination: Path) -> Path:
    """Copy the template (``copier.yml`` and ``templates/``) to ``destination``; return it."""
    destination.mkdir(parents=True, exist_ok=True)
    shutil.copy2(REPO_ROOT / "copier.yml", destination / "copier.yml")
    shutil.copytree(REPO_ROOT / "templates", destination / "templates", ignore=IGNORE)
    return destination


def render_template(
    template: Path, destination: Path, *, vcs_ref: str | None = None, **answers: Any
) -> Path:
    """Render ``template`` into ``destination`` with ``answers`` (defaults for the rest), as a user
    would; ``vcs_ref`` picks the version of a git template (Copier's default: the newest tag)."""
    from copier import run_copy

    run_copy(
        str(template),
        destination,
        vcs_ref=vcs_ref,
        data=answers,
        defaults=True,
        unsafe=False,
        quiet=True,
        overwrite=True,
    )
    return destination


def clean_env(**overrides: str) -> dict[str, str]:
    """The environment for subprocesses: no plugin selection leaking in, no venv of ours
    activated."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_")}
    for key in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PIP_REQUIRE_VIRTUALENV"):
        env.pop(key, None)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env.update(overrides)
    return env


def run(
    args: list[Any],
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run a command, capturing text output; on failure (with ``check``) show everything it
    printed."""
    result = subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        env=env if env is not None else clean_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    if check and result.returncode != 0:
        pytest.fail(
            f"command failed ({result.returncode}): {' '.join(map(str, args))}\n"
            f"--- stdout ---\n{result.stdout[-6000:]}\n--- stderr ---\n{result.stderr[-6000:]}",
            pytrace=False,
        )
    return result


class VirtualEnv:
    """A real virtual environment (no system site-packages)."""

    def __init__(self, path: Path, *, create: bool = True) -> None:
        self.path = path
        if create:
            venv.EnvBuilder(with_pip=True, system_site_packages=False, clear=True).create(path)
        self.python = path / ("Scripts" if os.name == "nt" else "bin") / "python"

    @classmethod
    def existing(cls, path: Path) -> VirtualEnv:
        """A venv created earlier (by another xdist worker, for example)."""
        return cls(path, create=False)

    def pip_install(self, *requirements: Any) -> None:
        run([self.python, "-m", "pip", "install", "--quiet", *requirements])

    def run(
        self, *args: Any, cwd: Path | None = None, check: bool = True, **env: str
    ) -> subprocess.CompletedProcess[str]:
        return run([self.python, *args], cwd=cwd, env=clean_env(**env), check=check)


def git(cwd: Path, *args: str) -> str:
    """Run git with a fixed identity; return its stdout."""
    env = clean_env(
        GIT_AUTHOR_NAME="Template Tests",
        GIT_AUTHOR_EMAIL="tests@example.org",
        GIT_COMMITTER_NAME="Template Tests",
        GIT_COMMITTER_EMAIL="tests@example.org",
    )
    return run(["git", *args], cwd=cwd, env=env).stdout


def project_version() -> str:
    """The runtime's ``__version__`` (the one place the version is written; pyproject.toml reads it
    too)."""
    import ast

    source = (REPO_ROOT / "runtime" / "sglang_plugin_runtime" / "__init__.py").read_text(
        encoding="utf-8"
    )
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(
            getattr(t, "id", None) == "__version__" for t in node.targets
        ):
            return str(ast.literal_eval(node.value))
    raise AssertionError("runtime/sglang_plugin_runtime/__init__.py has no __version__")


def working_tree_files() -> list[str]:
    """The files of this checkout as a commit of it would hold them: tracked and untracked, minus
    ignored."""
    out = run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO_ROOT
    ).stdout
    return sorted(name for name in set(out.split("\0")) if name and (REPO_ROOT / name).is_file())


def snapshot_repository(destination: Path, *, older_tag: str, current_tag: str) -> Path:
    """A clone of this repository with ``older_tag`` on :data:`OLDER_TEMPLATE_COMMIT` and
    ``current_tag`` on a commit holding the working tree as it is (so uncommitted changes are what
    is tested)."""
    run(["git", "clone", "--quiet", "--no-local", REPO_ROOT, destination], env=clean_env())
    if run(
        ["git", "cat-file", "-e", f"{OLDER_TEMPLATE_COMMIT}^{{commit}}"],
        cwd=destination,
        check=False,
    ).returncode:
        pytest.fail(
            f"commit {OLDER_TEMPLATE_COMMIT} (the older template) is not in this clone's history; "
            "the update test needs the full history (git fetch --unshallow)",
            pytrace=False,
        )
    git(destination, "tag", older_tag, OLDER_TEMPLATE_COMMIT)
    for path in destination.iterdir():
        if path.name != ".git":
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    for name in working_tree_files():
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / name, target)
    git(destination, "add", "-A")
    git(destination, "commit", "--quiet", "--allow-empty", "-m", "the working tree under test")
    git(destination, "tag", current_tag)
    return destination


# --------------------------------------------------------------------------------------------------
# GitHub Actions workflows: the `run` steps of a job, run as a runner would
# --------------------------------------------------------------------------------------------------

_EXPRESSION = re.compile(r"\$\{\{\s*([^}]*?)\s*\}\}")


@dataclass(frozen=True)
class WorkflowStep:
    name: str
    run: str
    env: dict[str, str]


def workflow_job(path: Path, job: str) -> dict[str, Any]:
    import yaml

    return yaml.safe_load(path.read_text(encoding="utf-8"))["jobs"][job]


def workflow_run_steps(
    path: Path, job: str, expressions: Mapping[str, str] = {}
) -> list[WorkflowStep]:
    """The steps of ``job`` that run commands, in order, with ``${{ ... }}`` replaced from
    ``expressions``.

    ``uses:`` steps (checkout, setup-python, artifacts) are the caller's to provide; an expression
    the caller does not give is an error, so a workflow that starts depending on more context fails
    here, visibly.
    """

    def substitute(text: str) -> str:
        def value(match: re.Match[str]) -> str:
            if match.group(1) not in expressions:
                raise AssertionError(
                    f"{path}: no value for the expression {match.group(0)!r} in job {job!r}"
                )
            return expressions[match.group(1)]

        return _EXPRESSION.sub(value, text)

    steps = []
    for index, step in enumerate(workflow_job(path, job)["steps"]):
        if "run" in step:
            env = {key: substitute(str(v)) for key, v in (step.get("env") or {}).items()}
            steps.append(
                WorkflowStep(step.get("name", f"step {index}"), substitute(step["run"]), env)
            )
    return steps


def run_workflow_step(
    step: WorkflowStep,
    *,
    venv: VirtualEnv,
    cwd: Path,
    env: Mapping[str, str] = {},
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run one step as GitHub's runner does (``bash -e -o pipefail``), with ``venv`` as the set-up
    Python."""
    bin_dir = venv.python.parent
    step_env = clean_env(
        PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        VIRTUAL_ENV=str(venv.path),
        **env,
        **step.env,
    )
    result = subprocess.run(
        ["bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-c", step.run],
        cwd=cwd,
        env=step_env,
        capture_output=True,
        text=True,
        check=False,
    )
    if check and result.returncode != 0:
        pytest.fail(
            f"workflow step {step.name!r} failed ({result.returncode}) in {cwd}\n--- run "
            f"---\n{step.run}\n--- stdout ---\n{result.stdout[-6000:]}\n--- stderr "
            f"---\n{result.stderr[-6000:]}",
            pytrace=False,
        )
    return result


def simple_index(root: Path, *distributions: Path) -> str:
    """A PEP 503 package index on disk serving ``distributions`` (wheels, sdists); its ``file://``
    URL."""
    for dist in distributions:
        project = re.sub(r"[-_.]+", "-", dist.name.split("-")[0]).lower()
        folder = root / "simple" / project
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy2(dist, folder / dist.name)
    for folder in (root / "simple").iterdir():
        links = "".join(
            f'<a href="{f.name}">{f.name}</a>\n'
            for f in sorted(folder.iterdir())
            if f.name != "index.html"
        )
        (folder / "index.html").write_text(
            f"<!DOCTYPE html>\n<html><body>\n{links}</body></html>\n"
        )
    return (root / "simple").as_uri()
