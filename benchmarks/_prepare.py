"""Everything the cases need on disk, built once under ``.cache/bench/`` (git-ignored).

- SGLang's own plugin modules, unzipped from the released wheel (``pip download --no-deps``). Only
  ``sglang/srt/environ.py``, ``sglang/srt/plugins/*.py`` and ``sglang/srt/platforms/*.py`` are
  extracted. ``sglang/__init__.py`` is left out on purpose: it imports SGLang's whole front end
  (transformers patches, ``sglang.lang``), which the platform layer does not need; ``sglang`` and
  ``sglang.srt`` are then namespace packages (``sglang/srt`` has no ``__init__.py`` in the wheel
  either). Nothing of SGLang's is copied into this repository and nothing in it is replaced by a
  stand-in.
- The light third-party dependencies of SGLang's platform layer (numpy, psutil, msgspec), pinned,
  installed with ``pip install --target`` into a folder that goes on the children's PYTHONPATH
  (torch comes from the dev venv).
- Fake installed distributions (``*.dist-info`` folders) for the discovery case, a synthetic package
  of thousands of modules for the apply case, and a package of fresh modules for the import-hook
  case.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from _common import CACHE, REPO

SGLANG_VERSION = "0.5.23"
#: SGLang's platform layer imports these at module level; pinned so runs are comparable.
SGLANG_LIGHT_DEPS = ["numpy==2.4.6", "psutil==7.2.2", "msgspec==0.22.0"]
#: Bump when a generator below changes, so stale trees are rebuilt.
GENERATOR_VERSION = "3"


def _stamp_ok(folder: Path, value: str) -> bool:
    stamp = folder / ".bench-stamp"
    return stamp.is_file() and stamp.read_text() == value


def _write_stamp(folder: Path, value: str) -> None:
    (folder / ".bench-stamp").write_text(value)


def _pip(python: str, *args: str) -> None:
    cmd = [python, "-m", "pip", "--disable-pip-version-check", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")


def ensure_sglang(python: str, log) -> Path:
    """Download the SGLang wheel (cached) and unzip its plugin and platform modules; return the
    root."""
    target = CACHE / f"sglang-{SGLANG_VERSION}"
    if _stamp_ok(target, GENERATOR_VERSION):
        return target
    wheels = CACHE / "wheels"
    wheel = next(wheels.glob(f"sglang-{SGLANG_VERSION}-*.whl"), None) if wheels.is_dir() else None
    if wheel is None:
        log(f"downloading sglang=={SGLANG_VERSION} (pip download --no-deps, about 39 MB) ...")
        _pip(
            python,
            "download",
            "--no-deps",
            "--quiet",
            f"sglang=={SGLANG_VERSION}",
            "-d",
            str(wheels),
        )
        wheel = next(wheels.glob(f"sglang-{SGLANG_VERSION}-*.whl"))
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    wanted_dirs = ("sglang/srt/plugins/", "sglang/srt/platforms/")
    with zipfile.ZipFile(wheel) as zf:
        members = [
            name
            for name in zf.namelist()
            if name == "sglang/srt/environ.py"
            or (name.startswith(wanted_dirs) and name.endswith(".py") and name.count("/") == 3)
        ]
        zf.extractall(target, members)
    log(f"extracted {len(members)} SGLang modules from {wheel.name}")
    _write_stamp(target, GENERATOR_VERSION)
    return target


def ensure_light_deps(python: str, log) -> Path:
    target = CACHE / "deps"
    value = ",".join(SGLANG_LIGHT_DEPS)
    if _stamp_ok(target, value):
        return target
    if target.exists():
        shutil.rmtree(target)
    log(f"installing {' '.join(SGLANG_LIGHT_DEPS)} into {target.relative_to(REPO)} ...")
    _pip(python, "install", "--quiet", "--no-compile", "--target", str(target), *SGLANG_LIGHT_DEPS)
    _write_stamp(target, value)
    return target


# --- case 2: fake installed distributions -------------------------------------------------------

_PLATFORM_MODULE = """
import os
if os.environ.get("BENCH_SIDE") == "sglang":
    from sglang.srt.platforms.device_mixin import PlatformEnum
    from sglang.srt.platforms.interface import SRTPlatform
else:
    from sglang_plugin_runtime.platforms.device_mixin import PlatformEnum
    from sglang_plugin_runtime.platforms.interface import SRTPlatform


class {cls}(SRTPlatform):
    _enum = PlatformEnum.OOT
    device_name = "{name}"
    device_type = "cpu"
"""

_ACTIVATE_MODULE = """
def activate():
    return {result!r}
"""

_HOOKS_MODULE = """
import os


def _around(original_fn, *args, **kwargs):
    return original_fn(*args, **kwargs)


def register():
    if os.environ.get("BENCH_SIDE") == "sglang":
        from sglang.srt.plugins.hook_registry import HookRegistry, HookType
    else:
        from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookType
    HookRegistry.register("bench_targets.{target}", _around, HookType.AROUND)
"""

_TARGETS_MODULE = "".join(
    f"def {name}(x):\n    return x\n\n\n"
    for name in ("work_alpha", "work_beta", "work_one", "work_two", "work_three")
)

#: The plugin distributions: (distribution, package, platform entry point or None, general entry
#: point or None).
PLUGIN_DISTS = [
    ("bench-platform-alpha", "bench_alpha", "alpha", "alpha_hooks"),
    ("bench-platform-beta", "bench_beta", "beta", "beta_hooks"),
    ("bench-general-one", "bench_gen_one", None, "gen_one"),
    ("bench-general-two", "bench_gen_two", None, "gen_two"),
    ("bench-general-three", "bench_gen_three", None, "gen_three"),
]


def ensure_fake_dists(count: int, log, plugins: bool = True) -> Path:
    """``count`` filler distributions plus (``plugins``) the five plugin distributions, in one site
    folder."""
    from sglang_plugin_runtime.testing._fake_distributions import write_fake_distribution

    target = CACHE / "dists" / (f"n{count}" if plugins else f"n{count}-no-plugins")
    if _stamp_ok(target, GENERATOR_VERSION):
        return target
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for i in range(count):
        # Like a real site-packages: a third have console scripts, a few offer other plugin groups.
        eps: dict[str, dict[str, str]] = {}
        if i % 3 == 0:
            eps["console_scripts"] = {f"filler-tool-{i}": f"filler_pkg_{i}.cli:main"}
        if i % 10 == 0:
            eps["pytest11"] = {f"filler_{i}": f"filler_pkg_{i}.plugin"}
        write_fake_distribution(target, f"filler-package-{i}", f"1.{i % 7}.0", eps or None)
    for dist, package, platform_ep, general_ep in PLUGIN_DISTS if plugins else ():
        eps = {}
        modules = {}
        if platform_ep:
            cls = f"{platform_ep.capitalize()}Platform"
            eps["sglang.srt.platforms"] = {platform_ep: f"{package}:activate"}
            # Only "alpha" finds its hardware; "beta" returns None, as on a machine without it.
            result = f"{package}.platform:{cls}" if platform_ep == "alpha" else None
            modules[f"{package}/__init__.py"] = _ACTIVATE_MODULE.format(result=result)
            modules[f"{package}/platform.py"] = _PLATFORM_MODULE.format(cls=cls, name=platform_ep)
        else:
            modules[f"{package}/__init__.py"] = ""
        if general_ep:
            eps["sglang.srt.plugins"] = {general_ep: f"{package}.hooks:register"}
            short = package.replace("bench_gen_", "").replace("bench_", "")
            modules[f"{package}/hooks.py"] = _HOOKS_MODULE.format(target=f"work_{short}")
        write_fake_distribution(target, dist, "0.1.0", eps, modules)
    (target / "bench_targets.py").write_text(_TARGETS_MODULE)
    _write_stamp(target, GENERATOR_VERSION)
    plugin_count = len(PLUGIN_DISTS) if plugins else 0
    log(
        f"wrote {count} filler + {plugin_count} plugin distributions into "
        f"{target.relative_to(REPO)}"
    )
    return target


# --- case 3: a large synthetic package ----------------------------------------------------------

TARGET_FUNCTIONS = 60


def _synthetic_module(index: int) -> str:
    lines = ["import os", "import sys", "from typing import Any, Optional", ""]
    if index % 20 == 0:
        # A stale ``from x import f`` copy of a hook target, which both registries must rebind.
        lines.append(f"from benchsynth.targets import t_{(index // 20) % TARGET_FUNCTIONS}")
    lines += [f"CONST_{k} = {index * 100 + k}" for k in range(16)]
    lines += [f"NAME_{k} = 'name-{index}-{k}'" for k in range(8)]
    for k in range(8):
        lines += [
            "",
            "",
            f"def f_{k}(x: Any, y: Optional[int] = None) -> Any:",
            f"    return (x, y, {k})",
        ]
    for k in range(3):
        lines += [
            "",
            "",
            f"class C_{k}:",
            f"    value = {k}",
            "",
            "    def method(self, x):",
            "        return x",
        ]
    return "\n".join(lines) + "\n"


def ensure_synthetic(modules: int, log) -> Path:
    """``benchsynth``: ``modules`` small modules in packages of 50, plus ``benchsynth.targets``."""
    target = CACHE / "synth" / f"m{modules}"
    value = f"{GENERATOR_VERSION}:{modules}"
    if _stamp_ok(target, value):
        return target
    if target.exists():
        shutil.rmtree(target)
    root = target / "benchsynth"
    root.mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "targets.py").write_text(
        "".join(f"def t_{k}(x):\n    return x\n\n\n" for k in range(TARGET_FUNCTIONS))
    )
    names = []
    per_package = 50
    for index in range(modules):
        package = root / f"p{index // per_package}"
        if index % per_package == 0:
            package.mkdir()
            (package / "__init__.py").write_text("")
            names.append(f"benchsynth.p{index // per_package}")
        (package / f"m{index % per_package}.py").write_text(_synthetic_module(index))
        names.append(f"benchsynth.p{index // per_package}.m{index % per_package}")
    (target / "benchsynth_names.txt").write_text("\n".join(names) + "\n")
    _write_stamp(target, value)
    log(f"wrote a synthetic package of {len(names)} modules into {target.relative_to(REPO)}")
    return target


# --- case 5: fresh modules to import ------------------------------------------------------------


def ensure_import_package(modules: int, log) -> Path:
    """``benchimp``: ``modules`` tiny modules nobody has hooks on."""
    target = CACHE / "imports" / f"m{modules}"
    value = f"{GENERATOR_VERSION}:{modules}"
    if _stamp_ok(target, value):
        return target
    if target.exists():
        shutil.rmtree(target)
    root = target / "benchimp"
    root.mkdir(parents=True)
    (root / "__init__.py").write_text("")
    for index in range(modules):
        (root / f"m{index}.py").write_text(
            f"VALUE = {index}\n\n\ndef f(x):\n    return x + VALUE\n"
        )
    _write_stamp(target, value)
    log(f"wrote {modules} fresh modules into {target.relative_to(REPO)}")
    return target


def python_for_children() -> str:
    """The dev venv's interpreter when present (it has torch and the runtime), else this one."""
    venv = REPO / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable
