"""Fake installed distributions in a folder, and a runner for real subprocesses over them.

A plain module (not conftest.py) so test files can import it by name: two conftest modules exist in
this tree.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sglang_plugin_runtime.testing._fake_distributions import (
    EntryPoints,
    write_fake_distribution,
)

REPO_ROOT = Path(__file__).resolve().parent.parent
RUNTIME_SRC = REPO_ROOT / "runtime"
_PLUGIN_ENV_VARS = (
    "SGLANG_PLATFORM",
    "SGLANG_PLUGINS",
    "SGLANG_PLUGINS_STRICT",
    "SGLANG_DIFFUSION_PLATFORM_OVERRIDE",
)


def platform_module(
    cls_name: str,
    device: str,
    activate_body: str = "return __name__ + '.{cls}'",
    *,
    extra: str = "",
) -> str:
    """Source of a platform plugin module with one out-of-tree SRTPlatform subclass and an
    ``activate()``."""
    body = activate_body.replace("{cls}", cls_name)
    return textwrap.dedent(
        f"""
        from sglang_plugin_runtime.platforms.device_mixin import PlatformEnum
        from sglang_plugin_runtime.platforms.interface import SRTPlatform

        class {cls_name}(SRTPlatform):
            _enum = PlatformEnum.OOT
            device_name = {device!r}
            device_type = {device!r}

        def activate():
            {body}
        """
    ) + textwrap.dedent(extra)


def find_python(version: str) -> str | None:
    """An interpreter of ``version`` (``"3.12"``) that runs: pyenv's install folders first, then
    ``PATH``."""
    pyenv_root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates = sorted(
        glob.glob(os.path.join(pyenv_root, "versions", f"{version}.*", "bin", f"python{version}"))
    )
    found = shutil.which(f"python{version}")
    for python in [*candidates, *([found] if found else [])]:
        if subprocess.run([python, "-c", "pass"], capture_output=True).returncode == 0:
            return python
    return None


@dataclass
class PluginSite:
    """A folder of fake installed distributions and a way to run Python over it in a fresh
    process."""

    root: Path

    def add(
        self,
        name: str,
        version: str = "1.0",
        entry_points: EntryPoints | None = None,
        modules: Mapping[str, str] | None = None,
        *,
        entry_points_text: str | None = None,
    ) -> Path:
        return write_fake_distribution(
            self.root, name, version, entry_points, modules, entry_points_text=entry_points_text
        )

    def add_platform(
        self, dist: str, plugin: str, device: str, activate_body: str = "return __name__ + '.{cls}'"
    ) -> None:
        module = f"{plugin}_platform"
        self.add(
            dist,
            entry_points={"sglang.srt.platforms": {plugin: f"{module}:activate"}},
            modules={
                f"{module}.py": platform_module(
                    f"{plugin.title().replace('_', '')}Platform", device, activate_body
                )
            },
        )

    def run(
        self,
        code: str,
        env: Mapping[str, str] | None = None,
        python: str | None = None,
        check: bool = False,
    ) -> subprocess.CompletedProcess[str]:
        full_env = {k: v for k, v in os.environ.items() if k not in _PLUGIN_ENV_VARS}
        full_env["PYTHONPATH"] = os.pathsep.join([str(self.root), str(RUNTIME_SRC)])
        full_env.update(env or {})
        result = subprocess.run(
            [python or sys.executable, "-c", textwrap.dedent(code)],
            capture_output=True,
            text=True,
            env=full_env,
            cwd=self.root,
            timeout=120,
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"subprocess failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
            )
        return result

    def run_json(
        self, code: str, env: Mapping[str, str] | None = None, python: str | None = None
    ) -> Any:
        """Run ``code``, which must print one JSON document as its last stdout line, and parse
        it."""
        result = self.run(code, env, python, check=True)
        return json.loads(result.stdout.strip().splitlines()[-1])
