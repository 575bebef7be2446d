"""Four real out-of-tree plugins of SGLang, what each does that matters, and the verdicts the suite
holds them to.

sglang-kunlun (Kunlun XPU), sglang-mlu (Cambricon MLU), orbitkv (a KV-cache manager) and
qsa-hisparse (sparse attention with CPU KV offload) are not on PyPI. Facts carry over, code never
does: this file holds what their sources do (read at the commits in :data:`PLUGINS`) and, for each
behaviour, a plugin of ours written the same way under the same names (its *shape*).
``test_real_plugin_shapes.py`` runs every shape on SGLang 0.5.23 and on the runtime
(``sglang-plugins run``) and writes the "real plugins" table of docs/sglang.md;
``test_real_plugins.py`` exports the real, unmodified sources from a snapshot when one is given
(:data:`SOURCES_ENV`), installs them with pip, and checks that the real plugin gets the verdict its
shape gets."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from scenarios import Outcome, run_python

from sglang_plugin_runtime.testing import write_fake_distribution

#: A folder of snapshots, one per repository, named ``<owner>+<name>`` as ``fetch`` names them: a
#: git directory in ``<owner>+<name>/repo`` (the commit below is exported with ``git archive``) or a
#: plain source tree in ``<owner>+<name>/tree`` (used as it is). Unset (CI), the real-source tests
#: are skipped and the shapes stand in.
SOURCES_ENV = "REAL_PLUGIN_SOURCES"


@dataclass(frozen=True)
class RealPlugin:
    title: str
    repo: str  # owner/name on GitHub
    commit: str  # the commit whose sources were read (and that a snapshot must contain)
    project: str  # the folder of the installable project in the repository ("" for the root)
    distribution: str
    does: str  # what it does that matters to a plugin host, as its sources show
    read: str = "snapshot"  # how they were read: a fetched snapshot, or the code index's files


PLUGINS = {
    "kunlun": RealPlugin(
        "sglang-kunlun (Kunlun XPU)",
        "baidu-baige/sglang-kunlun",
        "0f9f0d7a8f48b1faca2f89c361631282212a0cfb",
        "",
        "sglang-kunlun",
        "platform entry point `kunlun` (`activate()` imports `torch_xmlir`); general plugin "
        "`kunlun_hooks` (`register_all()` imports twelve modules of `@plugin_hook` registrations "
        "in a fixed order); a top-level `sitecustomize` that patches `sglang.srt.server_args` as "
        "it is imported; a platform class with `device_type = 'cuda'`, a constructor that patches "
        "torch, retired `get_{mha,mla,dsa}_kv_pool_cls`",
        "the code index (no snapshot could be fetched): `pyproject.toml` at 08259458, "
        "`platform/srt.py` at 0cf4bafc, the rest at this commit or 29c85e96",
    ),
    "mlu": RealPlugin(
        "sglang-mlu (Cambricon MLU)",
        "ByteTora/sglang-mlu",
        "bb575e2a426a440bfd45daa47f7d4c887f84b00d",
        "",
        "sglang-mlu",
        "platform entry point `mlu` (`activate()` asks `torch_mlu` for a device); retired "
        "`get_{mha,mla,dsa}_kv_pool_cls`; `is_pin_memory_available(self)` without the `device` "
        "SGLang passes; extra public methods (`support_cuda_graph`, `supports_fp8`)",
    ),
    "orbitkv": RealPlugin(
        "orbitkv (KV-cache manager)",
        "feichai0017/orbitkv",
        "eb42f4c396086fbfb242ac37157af220dea6a1be",
        "integrations/sglang",
        "orbitkv-sglang",
        "general plugin `orbitkv_manager`: `register()` insists on "
        "`SGLANG_PLUGINS=orbitkv_manager` and a pinned SGLang checkout, registers REPLACE, AROUND "
        "and AFTER hooks on the scheduler, the KV allocator and its copies, calls "
        "`register_radix_cache_backend`, checks `HookRegistry._patched`, and turns every failure "
        "into `SystemExit` to stop start-up",
    ),
    "qsa": RealPlugin(
        "qsa-hisparse (sparse attention, KV offload)",
        "mochgolf/qsa-hisparse",
        "142b2f79e68937fce6f5e2ce7b8e07c01ee408c3",
        "",
        "sglang-qsa-hisparse",
        "general plugin `qsa_hisparse`: off unless a `SGLANG_QSA_*` switch is set; when on, every "
        "failure becomes its own `PluginActivationError(BaseException)`, which SGLang's `except "
        "Exception` cannot swallow; reads `HookRegistry._hooks` and `_patched`; its tests call "
        "`load_plugins()` and then inspect the registry",
        "the code index (no snapshot could be fetched): `plugin.py` and `patching.py` at this "
        "commit, `tests/regression/test_plugin_off.py` at 3fd66a41, `tests/test_framework.py` at "
        "11b48a36",
    ),
}


def export_sources(plugin: RealPlugin, destination: Path) -> Path:
    """The real project of ``plugin``, exported from the snapshot :data:`SOURCES_ENV` names; skip if
    none."""
    root = os.environ.get(SOURCES_ENV)
    if not root:
        pytest.skip(f"{SOURCES_ENV} is not set: no snapshot of {plugin.repo} (its shapes stand in)")
    folder = Path(root) / plugin.repo.replace("/", "+")
    if (folder / "repo").is_dir():
        git = ["git", f"--git-dir={folder / 'repo'}"]
        known = subprocess.run([*git, "cat-file", "-e", f"{plugin.commit}^{{commit}}"], check=False)
        if known.returncode != 0:
            pytest.skip(f"the snapshot {folder} of {plugin.repo} lacks commit {plugin.commit}")
        destination.mkdir(parents=True)
        archive = subprocess.run(
            [
                *git,
                "archive",
                "--format=tar",
                plugin.commit,
                *([plugin.project] if plugin.project else []),
            ],
            capture_output=True,
            check=True,
        )
        subprocess.run(["tar", "-x", "-C", str(destination)], input=archive.stdout, check=True)
    elif (folder / "tree").is_dir():
        shutil.copytree(folder / "tree", destination)
    else:
        pytest.skip(f"no snapshot of {plugin.repo} in {root} (no {folder}/repo or {folder}/tree)")
    return destination / plugin.project if plugin.project else destination


# --------------------------------------------------------------------------------------------------
# Scenarios: one fresh process each, on SGLang 0.5.23 ("sglang") or under `sglang-plugins run`
# ("runtime")
# --------------------------------------------------------------------------------------------------

WORLDS = ("sglang", "runtime")

CAPTURE = """
import logging, sys, warnings
warnings.simplefilter("always")
messages = []
class _Capture(logging.Handler):
    def emit(self, record):
        error = record.exc_info[1] if record.exc_info else None
        cause = f" [{type(error).__name__}: {error}]" if error is not None else ""
        messages.append(f"{record.levelname}: {record.getMessage()}{cause}")
logging.getLogger().addHandler(_Capture(logging.WARNING))
def _warned(message, category, *args, **kwargs):
    messages.append(f"{category.__name__}: {message}")
warnings.showwarning = _warned
"""

#: Runs ``load_plugins()``; reports before it (a start-up that stops leaves that report and the exit
#: status).
LOAD = (
    CAPTURE
    + """
report({"stopped": True})
from sglang.srt.plugins import load_plugins
try:
    load_plugins()
except BaseException as exc:
    report({"stopped": True, "raised": f"{type(exc).__name__}: {exc}"[:400], "messages": messages})
    raise
"""
)


def run(world: str, code: str, paths: list[Path], env: dict[str, str] | None = None) -> Outcome:
    return run_python(code, paths=paths, env=env, launcher=world == "runtime")


def stopped(out: Outcome) -> str | None:
    """How start-up stopped (``SystemExit``, an exception), or ``None`` when it went on."""
    if not out.result.get("stopped"):
        return None
    raised = out.result.get("raised", "")
    kind = raised.split(":")[0] or f"exit status {out.returncode}"
    return f"start-up stops ({kind}, exit status {out.returncode})"


def errors_naming(out: Outcome, *names: str) -> bool:
    """Whether an ERROR or WARNING logged in the process names all of ``names``."""
    return any(all(n in m for n in names) for m in out.result.get("messages", []))


# --------------------------------------------------------------------------------------------------
# Shapes: our own plugins, written the way each real one is, under its names
# --------------------------------------------------------------------------------------------------

#: The SGLang function the Kunlun-shaped hooks wrap (imported by `import sglang`, so hooks apply at
#: once).
KUNLUN_TARGET = "sglang.srt.utils.common.cdiv"


def kunlun_shape(root: Path, *, broken: bool = False) -> Path:
    """sglang-kunlun's layout: a platform entry point, a general plugin importing hook modules in a
    fixed order (``broken``: the third needs a Kunlun library this machine lacks), and a top-level
    ``sitecustomize``."""
    hook = """
        {needs}from sglang.srt.plugins.hook_registry import HookType, plugin_hook

        from sglang_kunlun.hooks import ORDER


        @plugin_hook("{target}", type=HookType.AROUND)
        def around(original_fn, *args, **kwargs):
            ORDER.append("{name}")
            return original_fn(*args, **kwargs)
        """
    needs = "import kunlun_ops_that_this_machine_lacks  # noqa: F401\n        " if broken else ""
    modules = {
        "sglang_kunlun/__init__.py": "from sglang_kunlun.bootstrap import _kunlun_pre_shim\n",
        "sglang_kunlun/bootstrap.py": """
            import sys


            def _kunlun_pre_shim():
                if "torch_xmlir" not in sys.modules:
                    return
                import torch
                torch.cuda.get_device_name = lambda *a, **k: "Kunlun-XPU"
                torch.cuda._kunlun_stubbed = True
            """,
        "sglang_kunlun/platform/__init__.py": """
            from sglang_kunlun import _kunlun_pre_shim

            _kunlun_pre_shim()

            from .device import KunlunDeviceMixin
            from .srt import KunlunSRTPlatform, activate
            """,
        "sglang_kunlun/platform/device.py": """
            from sglang.srt.platforms.device_mixin import DeviceMixin, PlatformEnum


            class KunlunDeviceMixin(DeviceMixin):
                _enum = PlatformEnum.OOT
                device_name = "kunlun"
                device_type = "cuda"

                def get_device_total_memory(self, device_id=0):
                    return 64 << 30

                def get_current_memory_usage(self, device=None):
                    return 0.0
            """,
        "sglang_kunlun/platform/srt.py": """
            from sglang.srt.platforms.interface import SRTPlatform

            from .device import KunlunDeviceMixin


            class KunlunSRTPlatform(KunlunDeviceMixin, SRTPlatform):
                def __init__(self):
                    super().__init__()
                    from sglang_kunlun.bootstrap import _kunlun_pre_shim
                    _kunlun_pre_shim()

                def get_default_attention_backend(self):
                    return "kunlun"

                def get_default_speculative_draft_attention_backend(self, algorithm):
                    return "kunlun"

                def get_mha_kv_pool_cls(self):
                    return dict

                def get_mla_kv_pool_cls(self):
                    return list

                def get_dsa_kv_pool_cls(self):
                    return set


            def activate():
                try:
                    import torch_xmlir  # noqa: F401
                except Exception:
                    return None
                return "sglang_kunlun.platform:KunlunSRTPlatform"
            """,
        "sglang_kunlun/hooks/__init__.py": "ORDER = []  # the hooks, in the order they run\n",
        "sglang_kunlun/hooks/registry.py": """
            import importlib

            NAMES = ("first", "second", "third")
            HOOK_MODULES = tuple(f"sglang_kunlun.hooks.{name}" for name in NAMES)


            def register_all():
                for module_name in HOOK_MODULES:
                    importlib.import_module(module_name)
            """,
        "sitecustomize.py": """
            import importlib.abc
            import os
            import sys


            def _enable_kunlun_attention_choice(module):
                choices = getattr(module, "ATTENTION_BACKEND_CHOICES", None)
                if choices is not None and "kunlun" not in choices:
                    choices.append("kunlun")


            class _ServerArgsLoader(importlib.abc.Loader):
                def __init__(self, wrapped):
                    self._wrapped = wrapped

                def create_module(self, spec):
                    return self._wrapped.create_module(spec)

                def exec_module(self, module):
                    self._wrapped.exec_module(module)
                    _enable_kunlun_attention_choice(module)


            class _ServerArgsFinder(importlib.abc.MetaPathFinder):
                def find_spec(self, fullname, path=None, target=None):
                    if fullname != "sglang.srt.server_args":
                        return None
                    for finder in sys.meta_path:
                        if finder is self or not hasattr(finder, "find_spec"):
                            continue
                        spec = finder.find_spec(fullname, path, target)
                        if spec is not None and spec.loader is not None:
                            spec.loader = _ServerArgsLoader(spec.loader)
                            return spec
                    return None


            if os.environ.get("SGLANG_PLATFORM") == "kunlun":
                sys.meta_path.insert(0, _ServerArgsFinder())
            """,
    }
    for number, name in enumerate(("first", "second", "third")):
        source = hook.format(target=KUNLUN_TARGET, name=name, needs=needs if number == 2 else "")
        modules[f"sglang_kunlun/hooks/{name}.py"] = source
    eps = {
        "sglang.srt.platforms": {"kunlun": "sglang_kunlun.platform:activate"},
        "sglang.srt.plugins": {"kunlun_hooks": "sglang_kunlun.hooks.registry:register_all"},
    }
    write_fake_distribution(root, "sglang-kunlun", "0.1.0", entry_points=eps, modules=modules)
    return root


def mlu_shape(root: Path, *, pin_memory_as_written: bool = True) -> Path:
    """sglang-mlu's layout; ``pin_memory_as_written=False`` gives ``is_pin_memory_available`` its
    ``device``."""
    pin = "self" if pin_memory_as_written else "self, device=None"
    modules = {
        "sglang_mlu/__init__.py": """
            def activate():
                try:
                    import torch
                    import torch_mlu  # noqa: F401
                    available = torch.mlu.is_available() and torch.mlu.device_count() > 0
                except ImportError:
                    available = False
                return "sglang_mlu.platform.MLUPlatform" if available else None
            """,
        "sglang_mlu/device.py": """
            from sglang.srt.platforms.device_mixin import DeviceMixin, PlatformEnum


            class MLUDeviceMixin(DeviceMixin):
                _enum = PlatformEnum.OOT
                device_name = "mlu"
                device_type = "mlu"

                def get_device_total_memory(self, device_id=0):
                    return 48 << 30

                def get_current_memory_usage(self, device=None):
                    return 0.0
            """,
        "sglang_mlu/platform.py": f"""
            from sglang.srt.platforms.interface import SRTPlatform

            from sglang_mlu.device import MLUDeviceMixin


            class MLUPlatform(SRTPlatform, MLUDeviceMixin):
                def support_cuda_graph(self):
                    return False

                def supports_fp8(self):
                    return True

                def is_pin_memory_available({pin}):
                    return True

                def get_default_attention_backend(self):
                    return "mlu"

                def get_default_speculative_draft_attention_backend(self, algorithm):
                    return "mlu"

                def get_mha_kv_pool_cls(self):
                    return dict

                def get_mla_kv_pool_cls(self):
                    return list

                def get_dsa_kv_pool_cls(self):
                    return set
            """,
    }
    entry_points = {"sglang.srt.platforms": {"mlu": "sglang_mlu:activate"}}
    write_fake_distribution(root, "sglang-mlu", "0.1.0", entry_points=entry_points, modules=modules)
    return root


def orbitkv_shape(root: Path) -> Path:
    """orbitkv's adapter: validation first, every failure turned into ``SystemExit``; in its
    environment, REPLACE, AROUND and AFTER hooks on a scheduler-shaped module (SGLang's needs the
    serving stack this venv lacks), then the check of ``HookRegistry._patched``."""
    modules = {
        "orbitkv_sglang/__init__.py": "",
        "orbitkv_sglang/plugin/__init__.py": """
            def register():
                from .hooks import register as hook_register

                hook_register()
            """,
        "orbitkv_sglang/plugin/hooks.py": """
            import os

            HOOK_TARGETS = (
                "orbitkv_fixture.allocation.alloc_for_extend",
                "orbitkv_fixture.scheduler.Scheduler.get_next_batch_to_run",
                "orbitkv_fixture.scheduler.Scheduler.run_batch",
            )


            def _alloc_for_extend(batch):
                return "orbitkv:" + batch


            def _get_next_batch_to_run(original_fn, scheduler, *args, **kwargs):
                return "orbitkv(" + original_fn(scheduler, *args, **kwargs) + ")"


            def _run_batch(result, scheduler, *args, **kwargs):
                return result + "+counted"


            def _register():
                if os.environ.get("SGLANG_PLUGINS") != "orbitkv_manager":
                    raise RuntimeError("SGLANG_PLUGINS must be exactly 'orbitkv_manager'")
                from sglang.srt.plugins.hook_registry import HookRegistry, HookType

                hooks = (
                    (HOOK_TARGETS[0], _alloc_for_extend, HookType.REPLACE),
                    (HOOK_TARGETS[1], _get_next_batch_to_run, HookType.AROUND),
                    (HOOK_TARGETS[2], _run_batch, HookType.AFTER),
                )
                for target, hook, hook_type in hooks:
                    HookRegistry.register(target, hook, hook_type)
                HookRegistry.apply_hooks()
                missing = [target for target in HOOK_TARGETS if target not in HookRegistry._patched]
                if missing:
                    rejected = ", ".join(missing)
                    raise RuntimeError(f"SGLang silently rejected OrbitKV hooks: {rejected}")


            def register():
                try:
                    _register()
                except Exception as error:
                    message = f"OrbitKV canonical adapter activation failed: {error}"
                    raise SystemExit(message) from error
            """,
        "orbitkv_fixture/__init__.py": "",
        "orbitkv_fixture/allocation.py": """
            def alloc_for_extend(batch):
                return "sglang:" + batch
            """,
        "orbitkv_fixture/schedule_batch.py": "from orbitkv_fixture.allocation import *  # noqa\n",
        "orbitkv_fixture/scheduler.py": """
            class Scheduler:
                def get_next_batch_to_run(self):
                    return "batch"

                def run_batch(self, batch):
                    return "ran " + batch
            """,
    }
    eps = {"sglang.srt.plugins": {"orbitkv_manager": "orbitkv_sglang.plugin:register"}}
    write_fake_distribution(root, "orbitkv-sglang", "0.2.0", entry_points=eps, modules=modules)
    return root


def qsa_shape(root: Path) -> Path:
    """qsa-hisparse's entry point: nothing without a switch; with one, a failing activation raised
    as its own ``BaseException`` subclass (the fingerprint of SGLang's sources differs from its
    pinned commit)."""
    modules = {
        "sglang_qsa_hisparse/__init__.py": "",
        "sglang_qsa_hisparse/errors.py": """
            class PluginActivationError(BaseException):
                pass


            class FingerprintMismatch(PluginActivationError):
                pass
            """,
        "sglang_qsa_hisparse/plugin.py": """
            import os

            from sglang_qsa_hisparse.errors import FingerprintMismatch, PluginActivationError


            def load():
                active = os.environ.get("SGLANG_QSA_MODEL_COMPAT") == "1"
                if not active:
                    return
                try:
                    changed = "sglang.srt.managers.scheduler: pinned source changed"
                    raise FingerprintMismatch(changed)
                except PluginActivationError:
                    raise
                except Exception as error:
                    message = f"QSA HiSparse activation failed: {error!r}"
                    raise PluginActivationError(message) from error
            """,
    }
    eps = {"sglang.srt.plugins": {"qsa_hisparse": "sglang_qsa_hisparse.plugin:load"}}
    version = "0.1.0.dev0"
    write_fake_distribution(root, "sglang-qsa-hisparse", version, entry_points=eps, modules=modules)
    return root


SHAPES: dict[str, Callable[[Path], Path]] = {
    "kunlun": kunlun_shape,
    "kunlun-broken": lambda root: kunlun_shape(root, broken=True),
    "mlu": mlu_shape,
    "mlu-pin-fixed": lambda root: mlu_shape(root, pin_memory_as_written=False),
    "orbitkv": orbitkv_shape,
    "qsa": qsa_shape,
}


# --------------------------------------------------------------------------------------------------
# The behaviours: each observes one thing in one world and says it in a few words
# --------------------------------------------------------------------------------------------------

#: The Kunlun runtime module, simulated: what ``activate()`` probes (this machine has no Kunlun
#: XPU).
WITH_TORCH_XMLIR = """
from sglang_plugin_runtime.testing import StandInModules
StandInModules().start()("torch_xmlir")
"""
#: A simulated MLU (``torch.mlu`` and ``torch_mlu``), as the testing kit provides one.
WITH_MLU = """
from sglang_plugin_runtime.testing import simulated_device
simulated_device("mlu", backend_module="torch_mlu").start()
"""

SELECT = (
    CAPTURE
    + """
try:
    from sglang.srt.platforms import current_platform as platform
except Exception as exc:
    root = exc
    while root.__cause__ is not None:
        root = root.__cause__
    error = f"{type(exc).__name__}: {root}"[:600]
    report({"error": error, "runtime_error": isinstance(exc, RuntimeError), "messages": messages})
else:
    selected = type(platform).__name__
    report({"selected": selected, "device_type": platform.device_type, "messages": messages})
"""
)


def kunlun_unavailable(world: str, paths: list[Path]) -> str:
    auto = run(world, SELECT, paths).result
    named = run(world, SELECT, paths, {"SGLANG_PLATFORM": "kunlun"}).result
    chosen = auto.get("selected") or auto["error"]
    if "error" not in named:
        return f"auto: {chosen}; SGLANG_PLATFORM=kunlun: selected {named['selected']}"
    refused = "RuntimeError" if named["runtime_error"] else named["error"].split(":")[0]
    unavailable = "kunlun" in named["error"] and "None" in named["error"]
    why = " (activate() returned None)" if unavailable else ""
    return f"auto: {chosen}; SGLANG_PLATFORM=kunlun: {refused}{why}"


KUNLUN_SELECTED = (
    WITH_TORCH_XMLIR
    + SELECT
    + """
import torch
KINDS = ("mha", "mla", "dsa")
served = {kind: getattr(platform.get_kv_pool_cls(kind=kind), "__name__", None) for kind in KINDS}
again = [platform.get_kv_pool_cls(kind=kind) for kind in KINDS]
report({"selected": type(platform).__name__, "device_type": platform.device_type, "served": served,
        "patched_torch": getattr(torch.cuda, "_kunlun_stubbed", False), "messages": messages})
"""
)


def _retired(messages: list[str]) -> int:
    """How many WARNING records named a retired KV-pool hook (the runtime adds a
    ``DeprecationWarning`` each)."""
    return sum(m.startswith("WARNING:") and "_kv_pool_cls()" in m for m in messages)


def kunlun_selected(world: str, paths: list[Path]) -> str:
    out = run(world, KUNLUN_SELECTED, paths, {"SGLANG_PLATFORM": "kunlun"}).result
    if "error" in out:
        return f"refused: {out['error']}"
    served = ", ".join(f"{kind} -> {cls}" for kind, cls in out["served"].items())
    return (
        f"selected {out['selected']} (device_type {out['device_type']!r}); its constructor patched "
        f"torch: {out['patched_torch']}; retired hooks served ({served}), each warned once: "
        f"{_retired(out['messages'])}"
    )


HOOK_ORDER = (
    LOAD
    + f"""
from {KUNLUN_TARGET.rpartition(".")[0]} import {KUNLUN_TARGET.rpartition(".")[2]} as target
from sglang_kunlun.hooks import ORDER
result = target(7, 2)
report({{"result": result, "trace": ORDER, "messages": messages}})
"""
)


def kunlun_hook_order(world: str, paths: list[Path]) -> str:
    out = run(world, HOOK_ORDER, paths).result
    return f"cdiv(7, 2) -> {out['result']}; hooks run {', '.join(out['trace']) or 'none'}"


def kunlun_broken_unselected(world: str, paths: list[Path]) -> str:
    out = run(world, HOOK_ORDER, paths)
    failed = "failed" if errors_naming(out, "kunlun_hooks") else "no error logged"
    ran = ", ".join(out["trace"]) or "none"
    return f"{failed}; start-up continues; its hooks that still run: {ran}"


def kunlun_broken_selected(world: str, paths: list[Path]) -> str:
    out = run(world, WITH_TORCH_XMLIR + HOOK_ORDER, paths, {"SGLANG_PLATFORM": "kunlun"})
    how = stopped(out)
    if how is not None and "trace" not in out.result:
        said = out.result.get("raised", "") + out.stderr
        named = " naming kunlun_hooks" if "kunlun_hooks" in said else ""
        return how.split(" (")[0] + named
    ran = ", ".join(out["trace"]) or "none"
    return f"failed; start-up continues; its hooks that still run: {ran}"


SITECUSTOMIZE = """
import sys
import sglang.srt.server_args as server_args
import sglang.srt.plugins.hook_registry as registry
report({"sitecustomize": getattr(sys.modules.get("sitecustomize"), "__file__", "") or "",
        "kunlun_choice": "kunlun" in server_args.ATTENTION_BACKEND_CHOICES,
        "adopted": registry.HookRegistry.__module__.startswith("sglang_plugin_runtime")})
"""


def kunlun_sitecustomize(world: str, paths: list[Path]) -> str:
    out = run(world, WITH_TORCH_XMLIR + SITECUSTOMIZE, paths, {"SGLANG_PLATFORM": "kunlun"}).result
    ran = out["sitecustomize"].startswith(str(paths[0]))
    unadopted = "; SGLang NOT adopted" if out["adopted"] != (world == "runtime") else ""
    added = out["kunlun_choice"]
    return f"sitecustomize ran: {ran}; 'kunlun' attention backend added: {added}{unadopted}"


MLU_KV_POOLS = (
    WITH_MLU
    + SELECT
    + """
KINDS = ("mha", "mla", "dsa")
served = {kind: getattr(platform.get_kv_pool_cls(kind=kind), "__name__", None) for kind in KINDS}
again = [platform.get_kv_pool_cls(kind=kind) for kind in KINDS]
report({"selected": type(platform).__name__, "served": served, "messages": messages})
"""
)


def mlu_kv_pools(world: str, paths: list[Path]) -> str:
    out = run(world, MLU_KV_POOLS, paths).result
    if "error" in out:
        return f"refused: {out['error']}"
    served = ", ".join(f"{kind} -> {cls}" for kind, cls in out["served"].items())
    return f"served ({served}); 6 calls, {_retired(out['messages'])} warnings (one per hook)"


MLU_PIN_MEMORY = (
    WITH_MLU
    + SELECT
    + """
try:
    from sglang.srt.utils.common import is_pin_memory_available
    is_pin_memory_available(None)
    call = "ok"
except TypeError as exc:
    call = f"TypeError: {exc}"
report({"selected": type(platform).__name__, "call": call, "messages": messages})
"""
)


def mlu_pin_memory(world: str, paths: list[Path]) -> str:
    out = run(world, MLU_PIN_MEMORY, paths).result
    if "error" in out:
        error = out["error"]
        names = "is_pin_memory_available" in error and "cannot accept the host's call" in error
        error = out["error"].split(":")[0]
        return f"refused when selected: {error}{' naming the call SGLang makes' * names}"
    call = out["call"]
    call = "TypeError at SGLang's first call" if call.startswith("TypeError") else call
    return f"selected {out['selected']}; {call}"


def orbitkv_system_exit(world: str, paths: list[Path]) -> str:
    out = run(world, LOAD + "report({'stopped': False, 'messages': messages})\n", paths)
    how = stopped(out)
    if how is None:
        named = errors_naming(out, "orbitkv_manager", "SystemExit")
        logged = "ERROR names orbitkv_manager" if named else "silent"
        return f"{logged}; start-up continues"
    named = errors_naming(out, "orbitkv_manager")
    return how + ("; ERROR names orbitkv_manager first" if named else "")


ORBITKV_HOOKS = (
    LOAD
    + """
from orbitkv_fixture import allocation, schedule_batch, scheduler
s = scheduler.Scheduler()
calls = [allocation.alloc_for_extend("b"), schedule_batch.alloc_for_extend("b"),
         s.get_next_batch_to_run(), s.run_batch("b")]
report({"stopped": False, "calls": calls, "messages": messages})
"""
)


def orbitkv_hooks(world: str, paths: list[Path]) -> str:
    out = run(world, ORBITKV_HOOKS, paths, {"SGLANG_PLUGINS": "orbitkv_manager"})
    how = stopped(out)
    failed = [m for m in out.result.get("messages", []) if "orbitkv_manager" in m]
    reads_patched = "_patched" in out.stderr + str(failed)
    private = " (`HookRegistry._patched`: no such attribute)" if reads_patched else ""
    if how is not None:
        return f"{how}{private}"
    activation = "activation completes"
    if failed:
        activation = f"activation failed{private}, start-up continues"
    return f"{activation}; " + "; ".join(out["calls"])


QSA_REGISTRY = (
    LOAD
    + """
import sys
from sglang.srt.plugins.hook_registry import HookRegistry
state = {"stopped": False, "loaded": "sglang_qsa_hisparse.plugin" in sys.modules,
         "described": len(HookRegistry.describe()) if hasattr(HookRegistry, "describe") else None}
try:
    state["hooks"], state["patched"] = sorted(HookRegistry._hooks), sorted(HookRegistry._patched)
except AttributeError as exc:
    state["private"] = str(exc)
report(state)
"""
)


def qsa_registry(world: str, paths: list[Path]) -> str:
    out = run(world, QSA_REGISTRY, paths, {"SGLANG_PLUGINS": "qsa_hisparse"}).result
    if "private" in out:
        return f"loaded: {out['loaded']}; its check fails: {out['private']}"
    return f"loaded: {out['loaded']}; `_hooks` {out['hooks']}, `_patched` {out['patched']}"


def qsa_fail_closed(world: str, paths: list[Path]) -> str:
    env = {"SGLANG_PLUGINS": "qsa_hisparse", "SGLANG_QSA_MODEL_COMPAT": "1"}
    out = run(world, LOAD + "report({'stopped': False, 'messages': messages})\n", paths, env)
    return stopped(out) or "start-up continues"


# --------------------------------------------------------------------------------------------------
# The table: what each side must do, and why the runtime differs where it does
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Behaviour:
    id: str
    plugin: str  # a key of PLUGINS
    shape: str  # a key of SHAPES
    title: str
    observe: Callable[[str, list[Path]], str]
    sglang: str
    runtime: str
    why: str = ""  # why the runtime's verdict differs from SGLang's (required when it does)
    pending: str = ""  # the work the runtime's expectation waits for (a strict xfail till then)
    extra: dict[str, Any] = field(default_factory=dict)


_LOGGED = "failed; start-up continues; its hooks that still run:"
_RETURNED_NONE = "RuntimeError (activate() returned None)"
KUNLUN_UNAVAILABLE = f"auto: SRTPlatform; SGLANG_PLATFORM=kunlun: {_RETURNED_NONE}"
BEHAVIOURS = [
    Behaviour(
        "kunlun_unavailable",
        "kunlun",
        "kunlun",
        "Platform entry point without the Kunlun runtime (`activate()` imports `torch_xmlir`)",
        kunlun_unavailable,
        sglang=KUNLUN_UNAVAILABLE,
        runtime=KUNLUN_UNAVAILABLE,
    ),
    Behaviour(
        "kunlun_selected",
        "kunlun",
        "kunlun",
        "Selected (`SGLANG_PLATFORM=kunlun`, `torch_xmlir` present): `device_type = 'cuda'` on an "
        "OOT platform, a constructor that patches torch, retired `get_{mha,mla,dsa}_kv_pool_cls`",
        kunlun_selected,
        sglang="selected KunlunSRTPlatform (device_type 'cuda'); its constructor patched torch: "
        "True; retired hooks served (mha -> dict, mla -> list, dsa -> set), each warned once: 3",
        runtime="selected KunlunSRTPlatform (device_type 'cuda'); its constructor patched torch: "
        "True; retired hooks served (mha -> dict, mla -> list, dsa -> set), each warned once: 3",
    ),
    Behaviour(
        "kunlun_hook_order",
        "kunlun",
        "kunlun",
        "General plugin `kunlun_hooks`: `register_all()` imports its hook modules in a fixed "
        "order, each registering with `@plugin_hook`",
        kunlun_hook_order,
        sglang="cdiv(7, 2) -> 4; hooks run third, second, first",
        runtime="cdiv(7, 2) -> 4; hooks run third, second, first",
    ),
    Behaviour(
        "kunlun_broken_unselected",
        "kunlun",
        "kunlun-broken",
        "A hook module fails to import half-way (a Kunlun library missing), on a machine without "
        "Kunlun (`kunlun_hooks` loads wherever the package is installed)",
        kunlun_broken_unselected,
        sglang=f"{_LOGGED} second, first",
        runtime=f"{_LOGGED} none",
        why="A plugin that failed is not half-installed: its hooks are discarded (the matrix's "
        "rule), so a non-Kunlun machine is not left running two of Kunlun's patches.",
    ),
    Behaviour(
        "kunlun_broken_selected",
        "kunlun",
        "kunlun-broken",
        "The same failure while Kunlun is the selected platform (`SGLANG_PLATFORM=kunlun`)",
        kunlun_broken_selected,
        sglang=f"{_LOGGED} second, first",
        runtime="start-up stops naming kunlun_hooks",
        why="The selected platform's own distribution failing stops start-up (the policy of "
        "SGLang's diffusion loader, issue 29): the device would otherwise serve half-patched.",
    ),
    Behaviour(
        "kunlun_sitecustomize",
        "kunlun",
        "kunlun",
        "A top-level `sitecustomize` that, with `SGLANG_PLATFORM=kunlun`, patches "
        "`sglang.srt.server_args` as it is imported",
        kunlun_sitecustomize,
        sglang="sitecustomize ran: True; 'kunlun' attention backend added: True",
        runtime="sitecustomize ran: True; 'kunlun' attention backend added: True",
    ),
    Behaviour(
        "mlu_kv_pools",
        "mlu",
        "mlu-pin-fixed",
        "Retired `get_{mha,mla,dsa}_kv_pool_cls`, each kind asked for twice (sglang-mlu's class, "
        "its `is_pin_memory_available` given the `device`)",
        mlu_kv_pools,
        sglang="served (mha -> dict, mla -> list, dsa -> set); 6 calls, 3 warnings (one per hook)",
        runtime="served (mha -> dict, mla -> list, dsa -> set); 6 calls, 3 warnings (one per hook)",
    ),
    Behaviour(
        "mlu_pin_memory",
        "mlu",
        "mlu",
        "`is_pin_memory_available(self)` without the `device` SGLang passes (as sglang-mlu writes "
        "it), selected automatically on an MLU",
        mlu_pin_memory,
        sglang="selected MLUPlatform; TypeError at SGLang's first call",
        runtime="refused when selected: InvalidPlatformError naming the call SGLang makes",
        why="The call cannot work on either: the runtime says so at start-up, naming the method "
        "and the call, instead of at the first batch.",
    ),
    Behaviour(
        "orbitkv_system_exit",
        "orbitkv",
        "orbitkv",
        "`register()` turns every failure into `SystemExit` to stop start-up (here: "
        "`SGLANG_PLUGINS` is not exactly `orbitkv_manager`)",
        orbitkv_system_exit,
        sglang="start-up stops (SystemExit, exit status 1)",
        runtime="start-up stops (SystemExit, exit status 1); ERROR names orbitkv_manager first",
        why="An intentional stop is honoured, as SGLang honours it (qsa-hisparse stops start-up "
        "the same way with its own `BaseException`); the runtime first names the plugin and its "
        "distribution, which SGLang's bare message does not. `doctor` still reports it as that "
        "plugin's failure.",
    ),
    Behaviour(
        "orbitkv_hooks",
        "orbitkv",
        "orbitkv",
        "In its environment: REPLACE on a function copied by `from x import f`, AROUND and AFTER "
        "on scheduler methods, then `HookRegistry._patched` checked for every target",
        orbitkv_hooks,
        sglang="activation completes; orbitkv:b; orbitkv:b; orbitkv(batch); ran b+counted",
        runtime="activation completes; orbitkv:b; orbitkv:b; orbitkv(batch); ran b+counted",
    ),
    Behaviour(
        "qsa_registry",
        "qsa",
        "qsa",
        "Installed with its switches off; its own test calls `load_plugins()` and reads "
        "`HookRegistry._hooks` and `_patched`",
        qsa_registry,
        sglang="loaded: True; `_hooks` [], `_patched` []",
        runtime="loaded: True; `_hooks` [], `_patched` []",
    ),
    Behaviour(
        "qsa_fail_closed",
        "qsa",
        "qsa",
        "A switch on and activation failing: its own `PluginActivationError(BaseException)`, which "
        "`except Exception` cannot swallow",
        qsa_fail_closed,
        sglang="start-up stops (FingerprintMismatch, exit status 1)",
        runtime="start-up stops (FingerprintMismatch, exit status 1)",
    ),
]


def verdict(behaviour: Behaviour, sglang: str, runtime: str) -> str:
    if sglang == runtime:
        return "same" + (", once the pending work lands" if behaviour.pending else "")
    return f"ours differs: {behaviour.why}"


def strip_paths(text: str) -> str:
    """An outcome without this machine's temporary folders."""
    return re.sub(r"/\S*/(pytest-\S*|tmp\S*)", "<tmp>", text)
