"""``sglang-plugins run``: the released SGLang, unmodified on disk, with the runtime as its plugin
layer.

Runs in the plain venv (the released wheel; test_adoption_patch.py proves its files stay the
wheel's), and, for the tests marked ``every_release``, in the venv of every release with a plugin
system (``make test-releases``). A package generated for the runtime host, which released SGLang
refuses on its own, is selected and a general plugin's hook fires when the command runs under the
launcher, in the command's process and in children started by spawn, fork and forkserver; with no
platform plugin the release's own chain of in-tree platforms is the fallback, as released SGLang
chooses it. The same code without the launcher still sees the released SGLang: the effect ends with
the process tree.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import REPO_ROOT, GeneratedPackage, pin_to_runtime_classes
from generated_docs import sync_section
from scenarios import SGLANG_VERSION, clean_env, pip_install_target, render, run_python
from sglang_import_probe import IMPORT_PROBE, ImportProbe

from sglang_plugin_runtime._launcher._adoption import adoptions
from sglang_plugin_runtime.testing import write_fake_distribution

pytestmark = pytest.mark.subprocess
every_release = pytest.mark.every_release

PLATFORM = {
    "plugin_kind": "platform",
    "project_name": "Launched Device",
    "distribution_name": "launched-device",
    "package_name": "launched_device",
    "entry_point_name": "launched",
    "device_name": "launched",
    "device_type": "launched",
    "backend_module": "torch_launched",
}
GENERAL = {
    "plugin_kind": "general",
    "project_name": "Launched Hooks",
    "distribution_name": "launched-hooks",
    "package_name": "launched_hooks",
    "entry_point_name": "launched_hooks",
    # Every example, in the variants that change what SGLang does: their effects are checked.
    "example_hooks": ["before", "after", "around_timer", "replace_class"],
    "example_hooks_change_behaviour": True,
}
#: A general plugin whose AFTER hook answers True for one variable, on a function every release
#: has (``sglang.srt.utils.common.get_bool_env_var``).
PROBE_HOOK = """
from sglang_plugin_runtime.plugins.hook_registry import HookType, plugin_hook

def register():
    @plugin_hook("sglang.srt.utils.common.get_bool_env_var", type=HookType.AFTER)
    def probe(result, name, *args, **kwargs):
        return True if name == "SGLANG_LAUNCHED_PROBE" else result
"""


@pytest.fixture(scope="module")
def launched_site(template_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A platform and a general package built on the runtime's classes even where SGLang is
    installed (a default package pinned to them), which released SGLang refuses and the launcher
    runs, and the probe hook's plugin."""
    projects = [
        render(template_dir, tmp_path_factory.mktemp(f"launched-{a['plugin_kind']}"), a)
        for a in (PLATFORM, GENERAL)
    ]
    for project, answers in zip(projects, (PLATFORM, GENERAL), strict=True):
        pin_to_runtime_classes(project, answers["package_name"])
    site = pip_install_target(projects, tmp_path_factory.mktemp("launched-site"))
    write_fake_distribution(
        site,
        "launched-probe",
        entry_points={"sglang.srt.plugins": {"launched_probe": "launched_probe:register"}},
        modules={"launched_probe.py": PROBE_HOOK},
    )
    return site


_PROBE: list[ImportProbe] = []


@pytest.fixture
def sglang_imports_under_the_launcher() -> None:
    """xfail (naming the classes) while the runtime refuses SGLang's in-tree platform classes (issue
    12)."""
    if not _PROBE:
        out = run_python(IMPORT_PROBE, launcher=True, timeout=300)
        _PROBE.append(
            ImportProbe(out["imports"], out.result.get("first", ""), out.result.get("refused", {}))
        )
    if _PROBE[0].refused_by_contract:
        pytest.xfail(_PROBE[0].xfail_reason())


SIMULATE = """
from sglang_plugin_runtime.testing import simulated_device
simulated_device("launched", backend_module="torch_launched", privateuse1=True).start()
"""

OBSERVE = """
import sglang.srt.plugins.hook_registry as theirs
import sglang_plugin_runtime.plugins.hook_registry as ours
from sglang.srt.platforms import current_platform
from sglang.srt.plugins import load_plugins
from sglang.srt.utils.common import get_bool_env_var
loaded = load_plugins()
report({
    "runtime_registry": theirs.HookRegistry is ours.HookRegistry,
    "platform": type(current_platform).__name__,
    "hooked": get_bool_env_var("SGLANG_LAUNCHED_PROBE"),
    "loaded": sorted(o.plugin for o in loaded.outcomes if o.ok),
})
"""


@every_release
@pytest.mark.usefixtures("sglang_imports_under_the_launcher")
def test_a_runtime_host_platform_and_general_plugin_work_on_released_sglang_under_the_launcher(
    launched_site: Path,
) -> None:
    out = run_python(SIMULATE + OBSERVE, paths=[launched_site], launcher=True)
    assert out.result == {
        "runtime_registry": True,
        "platform": "LaunchedSRTPlatform",
        "hooked": True,
        "loaded": ["launched_hooks", "launched_probe"],
    }
    assert f"sglang-plugins run: SGLang {SGLANG_VERSION} runs with sglang_plugin_runtime" in (
        out.stderr
    )
    adopted = len(adoptions(SGLANG_VERSION))  # 8 on 0.5.23, 4 or 5 on the others
    assert f"({adopted} modules adopted in memory; nothing installed is changed)" in out.stderr


@every_release
def test_without_the_launcher_the_same_venv_runs_the_released_sglang(launched_site: Path) -> None:
    out = run_python(
        SIMULATE
        + textwrap.dedent("""
        import traceback
        try:
            from sglang.srt.platforms import current_platform
        except TypeError as exc:
            report([str(exc), traceback.extract_tb(exc.__traceback__)[-1].filename])
        """),
        paths=[launched_site],
    )
    error, raised_in = out.result
    # Released SGLang's own selection refuses the runtime-host platform: nothing of the launcher is
    # left here.
    assert "Expected an SRTPlatform subclass" in error and "LaunchedSRTPlatform" in error
    assert raised_in.endswith("sglang/srt/platforms/__init__.py")
    assert "sglang-plugins run" not in out.stderr


def test_without_the_launcher_sglangs_hook_registry_is_its_own() -> None:
    out = run_python(
        """
        import sglang.srt.plugins.hook_registry as theirs
        import sglang_plugin_runtime.plugins.hook_registry as ours
        report(theirs.HookRegistry is ours.HookRegistry)
        """
    )
    assert out.result is False


CHILD = """
def observe(call_load_plugins):
    import torch
    from sglang_plugin_runtime.testing import simulated_device
    if getattr(torch, "launched", None) is None:  # a spawned child starts from nothing
        simulated_device("launched", backend_module="torch_launched", privateuse1=True).start()
    import sglang.srt.plugins.hook_registry as theirs
    import sglang_plugin_runtime.plugins.hook_registry as ours
    from sglang.srt.platforms import current_platform
    if call_load_plugins:
        from sglang.srt.plugins import load_plugins
        load_plugins()
    from sglang.srt.utils.common import get_bool_env_var
    return [theirs.HookRegistry is ours.HookRegistry, type(current_platform).__name__,
            get_bool_env_var("SGLANG_LAUNCHED_PROBE")]
"""


@every_release
@pytest.mark.usefixtures("sglang_imports_under_the_launcher")
def test_spawned_forked_and_forkserver_children_run_the_runtime_too(
    launched_site: Path, tmp_path: Path
) -> None:
    (tmp_path / "launched_child.py").write_text(textwrap.dedent(CHILD), encoding="utf-8")
    out = run_python(
        """
        import multiprocessing as mp
        import launched_child

        def run(method, call_load_plugins):
            with mp.get_context(method).Pool(1) as pool:
                return pool.apply(launched_child.observe, (call_load_plugins,))

        report({"parent": launched_child.observe(True), "fork": run("fork", False),
                "spawn": run("spawn", True),
                "forkserver": run("forkserver", True)})
        """,
        paths=[launched_site, tmp_path],
        launcher=True,
    )
    expected = [True, "LaunchedSRTPlatform", True]
    assert out.result == {
        "parent": expected,
        "fork": expected,
        "spawn": expected,
        "forkserver": expected,
    }


FALLBACK = """
from sglang.srt.platforms import current_platform
report([type(current_platform).__module__, type(current_platform).__qualname__])
"""


@pytest.mark.parametrize(
    # the CPU engine's class exists from 0.5.14 only: the case that tells the releases apart
    "cpu_engine",
    ["0", pytest.param("1", marks=pytest.mark.every_release)],
)
def test_with_no_platform_plugin_the_launcher_falls_back_to_the_releases_own_platform(
    cpu_engine: str,
) -> None:
    """The release's own chain (``SGLANG_USE_CPU_ENGINE``, then the devices it knows, then its base
    class): the class released SGLang picks is the class the launcher picks."""
    env = {"SGLANG_USE_CPU_ENGINE": cpu_engine}
    released = run_python(FALLBACK, env=env).result
    launched = run_python(
        FALLBACK + "from sglang_plugin_runtime.platforms import current_platform_selection\n"
        "assert current_platform_selection().rule == 'fallback'\n",
        env=env,
        launcher=True,
    ).result
    # (on 0.5.23 the adopted base class is the runtime's SRTPlatform, under SGLang's own name)
    assert launched[1] == released[1]
    assert released[0].startswith("sglang.srt.platforms.")


@every_release
def test_a_platform_built_on_the_releases_own_classes_is_selected_under_the_launcher(
    platform_plugin: GeneratedPackage,
) -> None:
    """A vendor's plugin for this release subclasses its ``SRTPlatform``: the runtime's selection
    accepts the host's base class."""
    simulate = SIMULATE.replace("launched", platform_plugin.entry_point)
    out = run_python(
        simulate
        + textwrap.dedent("""
        from sglang.srt.platforms import current_platform
        from sglang.srt.platforms.interface import SRTPlatform
        from sglang_plugin_runtime.platforms import current_platform_selection
        report([type(current_platform).__name__, isinstance(current_platform, SRTPlatform),
                current_platform_selection().plugin])
        """),
        paths=[platform_plugin.site],
        launcher=True,
    )
    assert out.result == ["SimdevSRTPlatform", True, platform_plugin.entry_point]


@every_release
@pytest.mark.fault(
    "cli",
    "sglang-plugins run: SGLANG_PLATFORM names a plugin that is not installed, on any adopted "
    "release",
    "the runtime's PlatformNotFoundError (a RuntimeError, as the release raised) listing the "
    "installed platform plugins and how to install one, before SGLang's import finishes",
)
def test_the_runtimes_selection_errors_replace_the_releases_under_the_launcher(
    platform_plugin: GeneratedPackage,
) -> None:
    out = run_python(
        """
        from sglang_plugin_runtime import errors
        try:
            from sglang.srt.platforms import current_platform
        except RuntimeError as exc:
            report([type(exc).__name__, isinstance(exc, errors.PlatformNotFoundError), str(exc)])
        """,
        paths=[platform_plugin.site],
        env={"SGLANG_PLATFORM": "nosuch"},
        launcher=True,
    )
    name, ours, message = out.result
    assert (name, ours) == ("PlatformNotFoundError", True)
    assert "'nosuch'" in message and platform_plugin.entry_point in message


# --------------------------------------------------------------------------------------------------
# What the launcher refuses, and what it passes through
# --------------------------------------------------------------------------------------------------


def launch(*command: str, paths: list[Path] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sglang_plugin_runtime", "run", "--", *command],
        env=clean_env(paths or []),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_commands_exit_status_is_returned_and_the_shim_is_removed() -> None:
    completed = launch(
        sys.executable,
        "-c",
        "import os, sys; print(os.environ['SGLANG_PLUGINS_RUN_SHIM']); sys.exit(7)",
    )
    assert completed.returncode == 7, completed.stderr
    shim = Path(completed.stdout.strip())
    assert shim.name.startswith("sglang-plugins-run-") and not shim.exists()


def test_an_isolated_python_is_refused_because_it_would_run_sglang_unadopted() -> None:
    completed = launch(sys.executable, "-I", "-c", "pass")
    assert completed.returncode == 2
    assert "-I ignores PYTHONPATH" in completed.stderr


@pytest.mark.parametrize("options", [["-X", "utf8", "-I"], ["-W", "ignore", "-E"], ["-sI"]])
def test_an_isolated_python_after_other_options_is_refused_and_nothing_runs(
    options: list[str],
) -> None:
    completed = launch(sys.executable, *options, "-c", "import sglang; print('ran')")
    assert completed.returncode == 2 and completed.stdout == ""
    assert (
        "ignores PYTHONPATH" in completed.stderr
        and "runs with sglang_plugin_runtime" not in completed.stderr
    )


def test_adoption_is_claimed_only_by_a_process_that_adopts() -> None:
    """A process of the command that imports SGLang without the shim (an isolated python it starts)
    is not adopted, and nothing claims it is."""
    inner = (
        "import subprocess, sys; "
        "subprocess.run([sys.executable, '-I', '-c', 'import sglang'], check=True)"
    )
    completed = launch(sys.executable, "-c", inner)
    assert completed.returncode == 0, completed.stderr
    assert "runs with sglang_plugin_runtime" not in completed.stderr
    assert "no process of the command imported SGLang through the launcher" in completed.stderr


#: Runs the rest of the command as user nobody, as a container's entry point drops root.
AS_NOBODY = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")
ADOPTED_HERE = (
    "import sglang.srt.plugins.hook_registry as theirs, sglang_plugin_runtime.plugins.hook_registry"
    " as ours; print(theirs.HookRegistry is ours.HookRegistry)"
)


def _drops_privileges() -> None:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run a command as another user")


@pytest.mark.fault(
    "cli",
    "sglang-plugins run (as root) -- setpriv --reuid=nobody ... python: a command that drops "
    "privileges (setpriv, gosu, runuser)",
    "SGLang is adopted in the command, which reads the shim and writes its markers: no note (was: "
    "the root-only 0700 shim could not be read, SGLang ran unadopted with exit 0, and a misleading "
    "note came after the command ended)",
)
def test_a_command_that_drops_privileges_runs_sglang_adopted() -> None:
    _drops_privileges()
    completed = launch(*AS_NOBODY, sys.executable, "-c", ADOPTED_HERE)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "True"
    assert "runs with sglang_plugin_runtime" in completed.stderr
    assert "no process of the command" not in completed.stderr


@pytest.mark.fault(
    "cli",
    "message: a process of the command adopts SGLang but cannot write the launcher's markers "
    "(another user, the markers folder not writable for it)",
    "that process says so at once, naming its uid and the marker file and how to fix it (was: only "
    "'no process of the command imported SGLang through the launcher', after the command ended)",
)
def test_a_process_that_cannot_write_the_launchers_markers_says_so_at_once() -> None:
    _drops_privileges()
    python = " ".join([*AS_NOBODY, sys.executable])
    script = f'chmod 0755 "$SGLANG_PLUGINS_RUN_SHIM/markers" && exec {python} -c "{ADOPTED_HERE}"'
    completed = launch("sh", "-c", script)
    assert completed.returncode == 0 and completed.stdout.strip() == "True", completed.stderr
    assert "(pid " in completed.stderr and "uid 65534) cannot write the launcher's marker" in (
        completed.stderr
    )
    assert "give that user write access to the folder" in completed.stderr
    assert "runs with sglang_plugin_runtime" in completed.stderr


def launch_env(*command: str, paths: list[Path], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sglang_plugin_runtime", "run", "--", *command],
        env=clean_env(paths, **env),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.fault(
    "cli",
    "sglang-plugins run -- python -c 'print(1)': a command that never imports SGLang",
    "exit 0; one note that no process imported SGLang through the launcher, blaming nothing (it "
    "blamed 'an isolated python -I/-E'); -I/-E is named only when the command line shows it",
)
def test_run_of_a_command_that_never_imports_sglang_blames_no_isolated_python(
    tmp_path: Path,
) -> None:
    plain = launch_env(sys.executable, "-c", "print(1)", paths=[])
    assert plain.returncode == 0 and plain.stdout == "1\n", plain.stderr
    assert "no process of the command imported SGLang through the launcher" in plain.stderr
    assert "-I" not in plain.stderr and "-E" not in plain.stderr
    inner = f"{sys.executable} -I -c 'import sglang'"
    shown = launch_env("sh", "-c", inner, paths=[])
    assert shown.returncode == 0, shown.stderr
    assert "its -I ignores PYTHONPATH, so SGLang is imported without the launcher" in shown.stderr


@pytest.mark.fault(
    "cli",
    "sglang-plugins run: a startup plugin fails in the adopted import (SGLANG_PLUGINS_STRICT=1)",
    "the command's error names the plugin; the launcher's note says SGLang's import failed, not "
    "that an isolated python -I/-E ran it",
)
def test_run_blames_the_plugin_not_an_isolated_python_when_the_adopted_import_fails(
    tmp_path: Path,
) -> None:
    write_fake_distribution(
        tmp_path,
        "broken-shim",
        entry_points={"sglang.srt.startup_plugins": {"broken_shim": "broken_shim:register"}},
        modules={"broken_shim.py": "def register():\n    raise RuntimeError('shim broke')\n"},
    )
    failed = launch_env(
        sys.executable, "-c", "import sglang", paths=[tmp_path], SGLANG_PLUGINS_STRICT="1"
    )
    assert failed.returncode == 1
    assert "'broken_shim'" in failed.stderr and "shim broke" in failed.stderr
    assert "SGLang was not adopted: its import failed in the command" in failed.stderr
    assert "-I" not in failed.stderr


@every_release
@pytest.mark.fault(
    "cli",
    "sglang-plugins run with one of the release's files edited (a vendor fork of that release)",
    "refused before anything runs (exit 2), naming the file and the release: each file the "
    "launcher adopts must have the sha256 its release's wheel has (an edit outside the patch's "
    "hunks was accepted)",
)
def test_a_modified_sglang_is_refused_naming_the_file_and_release(tmp_path: Path) -> None:
    """A fork whose file differs from the release's, where no hunk of the patch touches it."""
    real = Path(importlib.util.find_spec("sglang").submodule_search_locations[0]).parent
    # With its own sglang/__init__.py the fork is the package Python imports (as when installed).
    files = adoptions(SGLANG_VERSION)
    modules = {path: (real / path).read_text(encoding="utf-8") for path in files}
    modules["sglang/srt/plugins/__init__.py"] += "# a vendor fork\n"
    write_fake_distribution(tmp_path, "sglang", SGLANG_VERSION, modules=modules)
    completed = launch(sys.executable, "-c", "print('ran')", paths=[tmp_path])
    assert completed.returncode == 2 and completed.stdout == ""
    changed = tmp_path / "sglang/srt/plugins/__init__.py"
    assert f"{changed} is not the file of the released SGLang {SGLANG_VERSION}" in completed.stderr


def test_an_sglang_release_it_does_not_adopt_is_refused_naming_the_adopted_ones(
    tmp_path: Path,
) -> None:
    write_fake_distribution(tmp_path, "sglang", "0.4.0", modules={"sglang/__init__.py": ""})
    completed = launch(sys.executable, "-c", "pass", paths=[tmp_path])
    assert completed.returncode == 2
    assert "SGLang 0.4.0 is not a release this launcher adopts" in completed.stderr
    assert "0.5.11" in completed.stderr and "0.5.23" in completed.stderr


def test_a_missing_command_is_a_usage_error() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "sglang_plugin_runtime", "run"],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 2 and "give the command to run" in completed.stderr


def test_the_launcher_reports_what_it_adopted() -> None:
    completed = launch(
        sys.executable, "-c", "import json, os, sglang; print(json.dumps(os.environ['PYTHONPATH']))"
    )
    assert completed.returncode == 0, completed.stderr
    assert (
        json.loads(completed.stdout)
        .split(":")[0]
        .rsplit("/", 1)[-1]
        .startswith("sglang-plugins-run-")
    )
    adopted = len(adoptions(SGLANG_VERSION))  # 11 on 0.5.23, 4 or 5 on the others
    assert (
        f"({adopted} modules adopted in memory; nothing installed is changed)" in completed.stderr
    )


# --------------------------------------------------------------------------------------------------
# A launcher inside a launcher, and SGLang installed from source
# --------------------------------------------------------------------------------------------------

ADOPTED_ONCE = """
import sys
import sglang.srt.plugins.hook_registry as theirs
import sglang_plugin_runtime.plugins.hook_registry as ours
from sglang_plugin_runtime._launcher._finder import AdoptedSGLangFinder
finders = [f for f in sys.meta_path if isinstance(f, AdoptedSGLangFinder)]
print(theirs.HookRegistry is ours.HookRegistry, len(finders), theirs.__file__)
"""


@pytest.mark.fault(
    "cli",
    "sglang-plugins run inside sglang-plugins run (a start script that wraps itself, say)",
    "the inner launcher sees the outer one's shim and runs the command as it is: SGLang is adopted "
    "once, and the outer launcher says so (every Python died with RecursionError: the two shims "
    "handed `import sglang` to each other)",
)
def test_a_launcher_inside_a_launcher_runs_the_command_as_it_is() -> None:
    inner = [sys.executable, "-m", "sglang_plugin_runtime", "run", "--"]
    completed = launch(*inner, sys.executable, "-c", ADOPTED_ONCE)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "RecursionError" not in completed.stderr
    same, finders, path = completed.stdout.split()
    assert (same, finders) == ("True", "1") and path.endswith("sglang/srt/plugins/hook_registry.py")
    assert "already inside 'sglang-plugins run' (shim " in completed.stderr
    assert completed.stderr.count("runs with sglang_plugin_runtime") == 1
    assert "no process of the command adopted SGLang" not in completed.stderr


IGNORE_CACHES = shutil.ignore_patterns("__pycache__", "*.pyc")
Edit = tuple[str, str, str]
#: The packaging facts of SGLang's python/pyproject.toml at a release: setuptools, packages found.
SGLANG_PACKAGING = """\
[build-system]
requires = ["setuptools>=61.0", "wheel"]
build-backend = "setuptools.build_meta"

[project]
name = "sglang"
version = "0.5.23"
requires-python = ">=3.10"

[tool.setuptools.packages.find]
exclude = ["assets*", "benchmark*", "docs*", "dist*", "playground*", "scripts*", "tests*"]
"""


def _site_dirs_without_sglang(root: Path) -> list[Path]:
    """This interpreter's package folders (the runtime's, then each holding distributions), each a
    folder of links to all it holds except SGLang: what a source install of SGLang runs with."""
    runtime_parent = Path(importlib.util.find_spec("sglang_plugin_runtime").origin).parents[1]
    sites = [Path(p) for p in sys.path if p and any(Path(p).glob("*.dist-info"))]
    sources = [runtime_parent, *sites]
    farms = []
    for number, source in enumerate(dict.fromkeys(sources)):
        farm = root / f"deps-{number}"
        farm.mkdir()
        for entry in source.iterdir():
            if entry.name != "sglang" and not entry.name.startswith("sglang-"):
                (farm / entry.name).symlink_to(entry)
        farms.append(farm)
    return farms


def install_sglang_from_source(root: Path, mode: str, edit: Edit | None = None) -> Path:
    """SGLang 0.5.23 as a developer installs it from a checkout of the release: its files (the
    wheel's, which are the release's sources) in ``python/sglang`` with the release's packaging,
    ``pip install -e python`` into a fresh venv (setuptools' editable ``mode``). ``edit`` = (file,
    old, new) changes the checkout first. Returns the venv's python."""
    released = Path(importlib.util.find_spec("sglang").origin).parent
    checkout = root / "checkout" / "python"
    checkout.mkdir(parents=True)
    try:  # the release's files, linked where the file system allows (10,000 files, 220 MB)
        shutil.copytree(released, checkout / "sglang", copy_function=os.link, ignore=IGNORE_CACHES)
    except OSError:
        shutil.rmtree(checkout / "sglang", ignore_errors=True)
        shutil.copytree(released, checkout / "sglang", ignore=IGNORE_CACHES)
    if edit is not None:
        path, old, new = checkout / edit[0], edit[1], edit[2]
        text = path.read_text(encoding="utf-8")
        path.unlink()  # a linked file is the wheel's own: never write through the link
        path.write_text(text.replace(old, new, 1), encoding="utf-8")
    (checkout / "pyproject.toml").write_text(SGLANG_PACKAGING, encoding="utf-8")
    venv = root / "venv"
    create = [sys.executable, "-m", "venv", "--without-pip", str(venv)]
    subprocess.run(create, check=True, timeout=120)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout.strip()
    )
    farms = "\n".join(str(p) for p in _site_dirs_without_sglang(root))
    (site / "zz-sglang-dependencies.pth").write_text(farms + "\n", encoding="utf-8")
    pip = [str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation"]
    if mode != "lenient":  # setuptools' default
        pip += ["--config-settings", f"editable_mode={mode}"]
    installed = subprocess.run(
        [*pip, "-e", str(checkout)],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert installed.returncode == 0, installed.stderr
    return python


def launch_with(python: Path, code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), "-m", "sglang_plugin_runtime", "run", "--", str(python), "-c", code],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=python.parents[2],
    )


@pytest.mark.fault(
    "cli",
    "sglang-plugins run with SGLang 0.5.23 installed from source at the release (pip install -e, "
    "setuptools' lenient, strict and compat editable modes)",
    "the checkout's files are checked (by their release's hashes) where Python imports them from, "
    "and adopted "
    "(it was refused as 'differs from the released files ... reinstall': the files were looked for "
    "beside the dist-info)",
)
@pytest.mark.parametrize("mode", ["lenient", "strict", "compat"])
def test_sglang_installed_from_source_at_the_release_is_adopted(mode: str, tmp_path: Path) -> None:
    python = install_sglang_from_source(tmp_path, mode)
    completed = launch_with(python, ADOPTED_ONCE)
    assert completed.returncode == 0, completed.stderr[-3000:]
    same, finders, path = completed.stdout.split()
    assert (same, finders) == ("True", "1")
    # The checkout's file (strict mode: via the tree of links setuptools builds in the checkout).
    assert path.startswith(str(tmp_path / "checkout" / "python")), path
    assert "SGLang 0.5.23 runs with sglang_plugin_runtime" in completed.stderr


def test_a_changed_checkout_of_sglang_is_refused_naming_the_file(tmp_path: Path) -> None:
    edit = ("sglang/srt/plugins/__init__.py", "import logging\n", "import logging  # changed\n")
    python = install_sglang_from_source(tmp_path, "lenient", edit)
    completed = launch_with(python, "print('ran')")
    assert completed.returncode == 2 and completed.stdout == ""
    checked = tmp_path / "checkout" / "python" / "sglang" / "srt" / "plugins" / "__init__.py"
    assert f"{checked} is not the file of the released SGLang 0.5.23" in completed.stderr


#: A startup plugin that records what SGLang had imported when it ran, and hooks a module SGLang
#: imports later.
EARLY_SHIM = """
import sys
SEEN = {}
def upper(result):
    return result.upper()
def register():
    from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookType
    SEEN.update(torch="torch" in sys.modules, srt_utils="sglang.srt.utils" in sys.modules, ran=True)
    HookRegistry.register("sglang.srt.utils.common.get_bool_env_var",
                          lambda result, *a, **k: True, HookType.AFTER)
"""

STARTUP_OBSERVED = """
import sglang, early_shim
from sglang.srt.plugins import load_plugins
from sglang.srt.utils.common import get_bool_env_var
seen = dict(early_shim.SEEN)
load_plugins()  # the startup phase applies no hooks: load_plugins() applies them
report({**seen, "hooked": get_bool_env_var("SGLANG_NO_SUCH_VARIABLE")})
"""


@every_release
def test_startup_plugins_run_before_sglangs_own_imports_under_the_launcher(tmp_path: Path) -> None:
    write_fake_distribution(
        tmp_path,
        "early-shim",
        entry_points={"sglang.srt.startup_plugins": {"early": "early_shim:register"}},
        modules={"early_shim.py": EARLY_SHIM},
    )
    out = run_python(STARTUP_OBSERVED, paths=[tmp_path], launcher=True)
    assert out.result == {"torch": False, "srt_utils": False, "ran": True, "hooked": True}, (
        out.stderr
    )


def test_released_sglang_runs_no_startup_plugins(tmp_path: Path) -> None:
    write_fake_distribution(
        tmp_path,
        "early-shim",
        entry_points={"sglang.srt.startup_plugins": {"early": "early_shim:register"}},
        modules={"early_shim.py": EARLY_SHIM},
    )
    assert run_python(STARTUP_OBSERVED, paths=[tmp_path]).result == {"hooked": False}


# --------------------------------------------------------------------------------------------------
# What the launcher does to each release, in docs/sglang.md
# --------------------------------------------------------------------------------------------------

#: The columns of the table: the files a release other than 0.5.23 has adopted, in this order.
LAYER_FILES = (
    "sglang/__init__.py",
    "sglang/srt/plugins/__init__.py",
    "sglang/srt/plugins/hook_registry.py",
    "sglang/srt/platforms/__init__.py",
    "sglang/multimodal_gen/runtime/platforms/plugins.py",
)


def test_the_doc_states_what_the_launcher_does_to_each_release() -> None:
    data = json.loads(
        (REPO_ROOT / "runtime/sglang_plugin_runtime/_sglang_releases/launcher.json").read_text(
            encoding="utf-8"
        )
    )
    rows: list[
        tuple[list[str], str]
    ] = []  # (releases, the row's cells), consecutive equal rows merged
    for version, files in data["releases"].items():
        ways = [f"`{files[path][0]}`" if path in files else "-" for path in LAYER_FILES]
        others = sorted(set(files) - set(LAYER_FILES))
        rest = ", ".join(f"`{p.removeprefix('sglang/')}` `{files[p][0]}`" for p in others) or "-"
        cells = " | ".join([*ways, rest])
        if rows and rows[-1][1] == cells:
            rows[-1][0].append(version)
        else:
            rows.append(([version], cells))
    names = " | ".join(f"`{p.removeprefix('sglang/')}`" for p in LAYER_FILES)
    lines = [f"| SGLang | {names} | other files |", "|---|" + "---|" * (len(LAYER_FILES) + 1)]
    for versions, cells in rows:
        span = versions[0] if len(versions) == 1 else f"{versions[0]} to {versions[-1]}"
        lines.append(f"| {span} | {cells} |")
    sync_section("launcher-releases", "\n".join(lines), "tests_sglang/test_launcher.py")
