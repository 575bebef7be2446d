"""The main job, end to end: from the Copier template to plugins the runtime discovers, selects and
applies.

    make demo            # or: .venv/bin/python scripts/demo.py
    make demo KEEP=1     # or: .venv/bin/python scripts/demo.py --keep

In a scratch folder it generates one package of each kind with the default answers (Copier's Python
API, no --trust), installs both into this Python environment (pip install -e), runs each package's
own tests, builds a wheel of each, and shows what the runtime discovered, selected and patched:
first on this machine as it is (no accelerator), then on a SIMULATED device so the platform plugin
activates. Each step prints its time. At the end both demo packages are uninstalled again, so the
environment is left as it was; --keep (KEEP=1) keeps the generated packages and their wheels in the
scratch folder and prints where it is.

Last, where the serving venv is cached (``make serve-venv``, under .cache/) or with --serve
(SERVE=1, which builds it first), SGLang's own server (``python -m sglang.launch_server``, released
SGLang on the CPU) runs with the generated general plugin, and the demo shows the line its hook logs
from SGLang's scheduler process; otherwise it prints the one command that shows it.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable

# What the defaults of copier.yml produce; checked after rendering.
PLATFORM = {
    "dist": "sglang-mydevice-platform",
    "package": "sglang_mydevice_platform",
    "entry_point": "mydevice",
}
GENERAL = {
    "dist": "sglang-example-hooks",
    "package": "sglang_example_hooks",
    "entry_point": "example",
}


class DemoError(RuntimeError):
    """A step of the demo failed; the message says which and shows the output."""


_STEP_NUMBERS = itertools.count(1)


@contextlib.contextmanager
def step(title: str) -> Iterator[None]:
    """Print the step's title, then, when it ends, how long it took."""
    number = next(_STEP_NUMBERS)
    print(f"\n== {number}. {title}", flush=True)
    started = time.monotonic()
    try:
        yield
    finally:
        print(f"   -- step {number} took {time.monotonic() - started:.1f} s", flush=True)


def say(text: str = "") -> None:
    print(textwrap.indent(text, "   "), flush=True)


def run(
    args: list[str | Path], *, cwd: Path | None = None, env: dict[str, str] | None = None
) -> str:
    """Run a command; return its stdout, or raise DemoError with everything it printed."""
    result = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True
    )
    if result.returncode != 0:
        raise DemoError(
            f"command failed ({result.returncode}): {' '.join(map(str, args))}\n"
            f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
        )
    return result.stdout


def python_json(code: str, **env_vars: str) -> dict:
    """Run ``code`` in a fresh interpreter (fresh discovery, like a new SGLang process); parse its
    last line."""
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_")}
    env.update(env_vars)
    out = run([PYTHON, "-c", textwrap.dedent(code)], env=env)
    return json.loads(out.strip().splitlines()[-1])


def snapshot_template(scratch: Path) -> Path:
    """The template as a user would get it from this repository (copier.yml and templates/)."""
    template = scratch / "template"
    template.mkdir()
    shutil.copy2(REPO_ROOT / "copier.yml", template / "copier.yml")
    shutil.copytree(
        REPO_ROOT / "templates",
        template / "templates",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    return template


def generate(template: Path, scratch: Path, kind: str, expected: dict[str, str]) -> Path:
    from copier import run_copy

    destination = scratch / kind
    run_copy(
        str(template),
        destination,
        data={"plugin_kind": kind},
        defaults=True,
        unsafe=False,
        quiet=True,
    )
    if not (destination / expected["package"]).is_dir():
        raise DemoError(f"the {kind} package was not generated where expected: {destination}")
    files = sorted(
        p.relative_to(destination).as_posix() for p in destination.rglob("*") if p.is_file()
    )
    say(
        f"{kind:8} -> <scratch>/{kind}  ({len(files)} files: "
        f"{', '.join(f for f in files if '/' not in f)}, ...)"
    )
    return destination


def install(project: Path) -> None:
    run([PYTHON, "-m", "pip", "install", "--quiet", "--no-deps", "-e", project])


def own_tests(project: Path) -> str:
    out = run([PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=project)
    return out.strip().splitlines()[-1]


def build_wheel(project: Path, outdir: Path) -> tuple[str, list[str]]:
    run([PYTHON, "-m", "build", "--wheel", "--outdir", outdir, project])
    (wheel,) = outdir.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        (ep_file,) = [n for n in archive.namelist() if n.endswith(".dist-info/entry_points.txt")]
        entry_points = [
            line for line in archive.read(ep_file).decode().splitlines() if line.strip()
        ]
    return wheel.name, entry_points


SELECTION_CODE = """
    import json
    {prelude}
    from sglang_plugin_runtime.platforms import current_platform, current_platform_selection
    platform = current_platform
    selection = current_platform_selection()
    print(json.dumps({{
        "platform": repr(platform),
        "rule": selection.rule,
        "reason": selection.reason,
        "plugin": selection.plugin,
        "distribution": selection.distribution,
        "version": selection.version,
        "activations": [[a.plugin, a.distribution, a.status, a.result]
                        for a in selection.activations],
    }}))
"""

SIMULATED_PRELUDE = """
    from sglang_plugin_runtime.testing import simulated_device
    simulated = simulated_device("mydevice", backend_module="torch_mydevice",
                                 name="Simulated MyDevice").start()
    """

HOOKS_CODE = f"""
    import json, sys
    # The package's hooks target SGLang's own code: as in its own tests, stand-ins shaped like
    # that code take the place of SGLang's modules (sglang_stand_ins.py; the testing kit's
    # StandInModules), since SGLang is not here.
    sys.path.insert(0, {{tests!r}})
    from sglang_plugin_runtime.testing import StandInModules, resolve_target, target_owner
    from sglang_stand_ins import put_stand_ins
    put_stand_ins(StandInModules().start())
    from sglang_plugin_runtime.plugins import load_plugins
    report = load_plugins()
    from {GENERAL["package"]} import hooks
    results = {{{{
        "generate_completion_prompt('  hi  ')  (BEFORE)":
            resolve_target(hooks.PROMPT_TARGET)("  hi  "),
        "num_image_tokens('a b')  (AFTER)": resolve_target(hooks.COUNT_TARGET)("a b"),
        "Scheduler().run_batch(['a', 'b'])  (AROUND)":
            target_owner(hooks.TIMER_TARGET)().run_batch(["a", "b"]),
        "what the hooks counted": dict(hooks.COUNTS),
        "timer: calls counted": hooks.TIMINGS[hooks.TIMER_TARGET].calls,
    }}}}
    from sglang_plugin_runtime.plugins.hook_registry import HookRegistry
    HookRegistry.reset()
    results["after HookRegistry.reset(): num_image_tokens('a b')"] = (
        resolve_target(hooks.COUNT_TARGET)("a b"))
    print(json.dumps({{{{"report": repr(report)[:300], "results": results}}}}))
"""

#: The command that builds the serving venv for the last step, and the one that shows it in one go.
SERVE_COMMANDS = ("make serve-venv", "make demo SERVE=1")


def real_server(general_dir: Path, scratch: Path, build: bool) -> bool:
    """SGLang's real server with the generated general plugin; the line its hook logs from the
    scheduler. Skipped (False), with the command that shows it, where no serving venv is cached
    (and not ``build``)."""
    import os

    # The serving venv of make serve-venv and make test-serve (.cache/); the tiny model beside it.
    os.environ.setdefault("SGLANG_SERVER_CACHE", str(REPO_ROOT / ".cache"))
    from sglang_plugin_runtime.testing._sglang_server import running_sglang_server
    from sglang_plugin_runtime.testing.serving import server_options, serving_venv_path

    if not build and not (serving_venv_path() / ".complete").exists():
        say(
            "No serving venv is cached, so SGLang's real server is left out. To see the\n"
            f"general plugin's hook log from SGLang's scheduler: {SERVE_COMMANDS[1]} (the first\n"
            f"time builds the serving venv, a few minutes; {SERVE_COMMANDS[0]} builds only that)."
        )
        return False
    options = server_options(general_dir, say)
    with running_sglang_server(log=scratch / "server.log", **options) as server:
        say(f"python -m sglang.launch_server ready in {server.ready_after:.0f} s; log {server.log}")
        say(f"POST /generate -> {server.generate('Hello')['status']}")
        calls = server.hook_first_calls()
        lines = [line for line in server.log_text().splitlines() if "first call of hook" in line]
    for line in lines:
        say(f"log: {line.strip()}")
    for hook, processes in calls.items():
        for pid, name in processes.items():
            say(f"hook {hook} ran in pid {pid}: {name or 'ended'}")
    if not any(n.startswith("sglang::scheduler") for p in calls.values() for n in p.values()):
        raise DemoError(f"no hook of the general plugin ran in SGLang's scheduler: {server.log}")
    return True


def show_selection(title: str, data: dict) -> None:
    say(title)
    say(f"  current_platform = {data['platform']}")
    origin = (
        f"plugin {data['plugin']!r} from {data['distribution']} {data['version']}"
        if data["plugin"]
        else "no plugin"
    )
    say(f"  chosen by rule {data['rule']!r}: {origin}")
    if data.get("reason"):
        say(f"  why: {data['reason']}")
    for plugin, dist, status, result in data["activations"]:
        say(f"  activate() of {plugin!r} ({dist}): {status}" + (f" -> {result}" if result else ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    parser.add_argument(
        "--serve",
        action="store_true",
        help="end in SGLang's real server, building the serving venv first if none is cached",
    )
    args = parser.parse_args(argv)

    started = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix="sglang-plugin-demo-"))
    installed: list[str] = []
    failed = served = False
    try:
        with step(
            "Generate one package of each kind from the Copier template (default answers, no "
            "--trust)"
        ):
            template = snapshot_template(scratch)
            platform_dir = generate(template, scratch, "platform", PLATFORM)
            general_dir = generate(template, scratch, "general", GENERAL)

        with step(f"pip install -e both into this environment ({PYTHON})"):
            for project, info in ((platform_dir, PLATFORM), (general_dir, GENERAL)):
                say(f"installing {info['dist']} ...")
                install(project)
                installed.append(info["dist"])
                say(f"installed {info['dist']} (editable)")

        with step("Each package's own test suite"):
            for project in (platform_dir, general_dir):
                say(f"{project.name:8} pytest: {own_tests(project)}")

        with step("python -m build: a wheel of each, with its entry points"):
            for project in (platform_dir, general_dir):
                name, entry_points = build_wheel(project, scratch / "dist" / project.name)
                say(f"{name}: " + "; ".join(entry_points))

        with step("What the runtime discovers and selects (each in a fresh process)"):
            show_selection(
                "This machine, as it is (no MyDevice hardware):",
                python_json(SELECTION_CODE.format(prelude="")),
            )
            say()
            show_selection(
                "SIMULATED MyDevice (sglang_plugin_runtime.testing.simulated_device; no real "
                "hardware):",
                python_json(
                    SELECTION_CODE.format(prelude=SIMULATED_PRELUDE),
                    SGLANG_PLATFORM=PLATFORM["entry_point"],
                ),
            )

        with step("The general plugin's hooks, loaded by load_plugins() in a fresh process"):
            code = HOOKS_CODE.format(tests=str(general_dir / "tests"))
            hooks = python_json(
                code, SGLANG_PLUGINS=GENERAL["entry_point"], SGLANG_PLUGINS_STRICT="1"
            )
            for expression, value in hooks["results"].items():
                say(f"{expression:50} -> {value!r}")

        with step("The general plugin inside SGLang's real server (the seed's acceptance)"):
            served = real_server(general_dir, scratch, args.serve)
    except RuntimeError as exc:  # DemoError, or the real server's SGLangServerError
        failed = True
        print(f"\nDEMO FAILED: {exc}", file=sys.stderr)
    finally:
        if installed:
            with step("Clean up: uninstall the demo packages"):
                subprocess.run(
                    [PYTHON, "-m", "pip", "uninstall", "--quiet", "--yes", *installed], check=False
                )
                say("uninstalled " + ", ".join(installed))
        if args.keep:
            say(f"\nKept the generated packages and their wheels in {scratch}:")
            for child in sorted(p for p in scratch.iterdir() if p.name != "template"):
                say(f"  {child}")
            say(f"Install one again with: {PYTHON} -m pip install -e {scratch / 'platform'}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
            say("\nScratch folder removed (make demo KEEP=1 keeps the generated packages).")
    if failed:
        return 1

    print(
        f"\nDemo passed in {time.monotonic() - started:.0f} s: template -> packages -> tests -> "
        "wheels -> discovered, selected (simulated device) and hooks applied"
        + (" -> the hook in SGLang's real server." if served else ".")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
