"""SGLang 0.5.23's second hook mechanism: ``register_resolution_hook(name)`` in
``sglang.srt.arg_groups.resolution_hooks`` wraps a named server-argument resolution step. Under the
runtime (its ``load_plugins()``, here under ``sglang-plugins run``) each wrapper is attributed to
the plugin whose code registered it, ``sglang-plugins doctor`` and ``explain`` list it, a name
outside the installed release's whitelist is that plugin's failure, and a failed plugin's wrappers
are discarded with its hooks. Each scenario in a fresh process over a fake installed plugin.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from scenarios import clean_env, run_python

from sglang_plugin_runtime.testing import write_fake_distribution

PLUGIN = """
from sglang.srt.arg_groups.resolution_hooks import register_resolution_hook

STEP = {step!r}


def keep_cpu_choice(server_args, previous):
    previous(server_args)


def register():
    register_resolution_hook(STEP)(keep_cpu_choice)
    {after}
"""


def _site(tmp_path: Path, step: str = "handle_cpu_backends", after: str = "") -> Path:
    write_fake_distribution(
        tmp_path,
        "acme-args",
        "1.0",
        {"sglang.srt.plugins": {"acme_args": "acme_args:register"}},
        {"acme_args.py": PLUGIN.format(step=step, after=after or "pass")},
    )
    return tmp_path


REPORT = """
from sglang_plugin_runtime.plugins import load_plugins
from sglang_plugin_runtime.plugins.hook_registry import describe_resolution_hooks
import sglang.srt.arg_groups.resolution_hooks as steps

loaded = load_plugins()
report({"hooks": [r.to_dict() for r in describe_resolution_hooks()],
        "sglang": {name: len(w) for name, w in steps._HOOKS.items()},
        "outcomes": [[o.plugin, o.status, o.reason] for o in loaded.outcomes]})
"""


def test_a_resolution_hook_is_attributed_to_the_plugin_that_registered_it(tmp_path: Path) -> None:
    out = run_python(REPORT, paths=[_site(tmp_path)]).result
    assert out["hooks"] == [
        {
            "step": "handle_cpu_backends",
            "position": 1,
            "hook": "acme_args.keep_cpu_choice",
            "plugin": "acme_args",
            "distribution": "acme-args",
        }
    ]


@pytest.mark.fault(
    "plugins",
    "a general plugin registers a resolution hook on a step name the installed SGLang does not "
    "offer",
    "that plugin fails (failed-call, SGLang's ValueError naming the step); the others load",
)
def test_a_step_outside_the_installed_releases_whitelist_is_the_plugins_failure(
    tmp_path: Path,
) -> None:
    out = run_python(REPORT, paths=[_site(tmp_path, step="handle_cpu_backend")]).result
    [(plugin, status, reason)] = out["outcomes"]
    assert (plugin, status) == ("acme_args", "failed-call")
    assert "'handle_cpu_backend' is not an overridable resolution hook" in reason
    assert out["hooks"] == []


@pytest.mark.fault(
    "plugins",
    "a general plugin registers a resolution hook, then raises",
    "its resolution hook is discarded with its other hooks: SGLang never runs it",
)
def test_a_failed_plugins_resolution_hooks_are_discarded(tmp_path: Path) -> None:
    site = _site(tmp_path, after="raise RuntimeError('acme broke')")
    out = run_python(REPORT, paths=[site]).result
    assert out["outcomes"][0][1] == "failed-call"
    assert out["hooks"] == [] and out["sglang"] == {"handle_cpu_backends": 0}


def _cli(site: Path, *arguments: str) -> dict[str, object]:
    command = [sys.executable, "-m", "sglang_plugin_runtime", "run", "--", sys.executable]
    command += ["-m", "sglang_plugin_runtime", *arguments, "--json"]
    done = subprocess.run(
        command, env=clean_env([site]), capture_output=True, text=True, timeout=300, check=False
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_doctor_and_explain_list_the_resolution_hooks_with_their_plugin(tmp_path: Path) -> None:
    site = _site(tmp_path)
    doctor = _cli(site, "doctor")
    explained = _cli(site, "explain", "handle_cpu_backends")
    hooks = doctor["hooks"]["resolution_hooks"]  # type: ignore[index]
    assert [(h["step"], h["plugin"]) for h in hooks] == [("handle_cpu_backends", "acme_args")]
    assert explained["found"] is True
    assert explained["resolution_hooks"] == hooks
