"""In one interpreter started by ``sglang-plugins run``: load SGLang's plugin modules as the
launcher adopts them.

The launcher puts a shim folder first on ``PYTHONPATH``; its only module is a ``sglang`` package
whose ``__init__`` calls :func:`enter_from_shim`. That installs :class:`AdoptedSGLangFinder` in
front of ``sys.meta_path`` and loads the real ``sglang`` package in the shim's place, adopted too
(its startup plugins run before SGLang's own imports). From then on, the modules the launcher adopts
(``_adoption``) are compiled from the installed files, each checked against its release's hash and
changed its way in memory (or an ``ImportError`` that says why); every other module is SGLang's own
file. Children inherit
``PYTHONPATH`` (spawn, forkserver, subprocesses) or the loaded modules (fork), so the whole process
tree runs the same code. The first interpreter that adopts SGLang says so (the launcher never claims
it for a command that does not get here, such as an isolated ``python -I``).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import linecache
import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import CodeType, ModuleType

from ._adoption import Adoption, adoptions

#: Set by the launcher: the SGLang version the processes adopt, and the shim folder.
VERSION_ENV = "SGLANG_PLUGINS_RUN_SGLANG_VERSION"
SHIM_ENV = "SGLANG_PLUGINS_RUN_SHIM"
#: The shim's folder for the markers below: every user may create files in it (a command that
#: drops privileges, such as setpriv, gosu or runuser, runs SGLang as another user).
MARKERS = "markers"
#: Created in the markers folder by the first interpreter of the tree that adopts SGLang.
ADOPTED_MARKER = "adopted"
#: Created in the markers folder by every interpreter that imports SGLang through the shim.
ENTERED_MARKER = "entered"


class _AdoptedLoader(importlib.machinery.SourceFileLoader):
    """SGLang's installed file, checked against its release's hash and adopted its way; never
    cached as bytecode."""

    def __init__(self, fullname: str, path: str, adoption: Adoption) -> None:
        super().__init__(fullname, path)
        self.adoption = adoption

    def get_source(self, fullname: str) -> str:
        source = self.adoption.source(self.get_data(self.path), self.path)
        # Tracebacks show the lines that run, not the file's.
        linecache.cache[self.path] = (
            len(source),
            None,
            source.splitlines(keepends=True),
            self.path,
        )
        return source

    def get_code(self, fullname: str) -> CodeType:
        return self.source_to_code(self.get_source(fullname), self.path)

    def exec_module(self, module: ModuleType) -> None:
        if self.adoption.way == "startup":  # before SGLang's own imports, as the patch does
            from ..plugins import load_startup_plugins

            load_startup_plugins()
        super().exec_module(module)
        if self.adoption.way == "select":
            from ..platforms import get_current_platform, set_fallback_platform

            # The release's resolver, with no platform plugin to load, is its in-tree chain.
            resolve = module._resolve_platform
            set_fallback_platform(lambda: type(resolve()))
            vars(module).update(
                load_plugins_by_group=lambda *_args, **_kwargs: {},
                _resolve_platform=get_current_platform,
            )


class AdoptedSGLangFinder(importlib.abc.MetaPathFinder):
    """Finds the modules the launcher adopts and loads them adopted."""

    def __init__(self, adoptions: dict[str, Adoption]) -> None:
        # sglang/srt/plugins/__init__.py -> sglang.srt.plugins
        self.adoptions = {
            path.removesuffix(".py").replace("/", ".").removesuffix(".__init__"): a
            for path, a in adoptions.items()
        }

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: object = None
    ) -> ModuleSpec | None:
        if fullname not in self.adoptions:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.origin is None:
            return None
        spec.loader = _AdoptedLoader(fullname, spec.origin, self.adoptions[fullname])
        spec.cached = None
        return spec


def find_sglang(shim_dir: str | None = None) -> ModuleSpec | None:
    """Where ``import sglang`` finds the installed package (not the shim's), without importing it.

    The import system's own finders, in their order: ``sys.path`` for a wheel, and for an editable
    install from source the finder its ``.pth`` file added (setuptools maps ``sglang`` to the
    checkout with one)."""
    # abspath("") is the working directory, as "" on sys.path means
    search = [p for p in sys.path if os.path.abspath(p) != shim_dir]
    for finder in sys.meta_path:
        if isinstance(finder, AdoptedSGLangFinder) or not hasattr(finder, "find_spec"):
            continue
        spec = finder.find_spec(
            "sglang", search if finder is importlib.machinery.PathFinder else None
        )
        if spec is not None:
            return spec
    return None


def enter_from_shim() -> None:
    """Called by the shim's ``sglang/__init__.py``: install the finder, then load the real
    ``sglang`` in its place."""
    version = os.environ.get(VERSION_ENV)
    if not version:
        raise ImportError(
            f"sglang-plugins run: {VERSION_ENV} is not set; this shim only works under the launcher"
        )
    shim_dir = os.environ[SHIM_ENV]
    _mark(shim_dir, ENTERED_MARKER)  # the launcher's report: SGLang was imported here
    finder = next((f for f in sys.meta_path if isinstance(f, AdoptedSGLangFinder)), None)
    if finder is None:  # once per interpreter
        finder = AdoptedSGLangFinder(adoptions(version))
        # Just before the path finder: a finder a vendor's sitecustomize put first to wrap an
        # SGLang module as it loads (sglang-kunlun's, on server_args) still wraps the adopted one.
        path_finder = importlib.machinery.PathFinder
        sys.meta_path.insert(
            sys.meta_path.index(path_finder) if path_finder in sys.meta_path else 0, finder
        )
    spec = find_sglang(shim_dir)
    if spec is None or spec.origin is None:
        raise ImportError(
            "sglang-plugins run: no sglang package is installed besides the launcher's shim"
        )
    # the package's own change: its startup plugins run before its imports
    spec.loader = loader = _AdoptedLoader("sglang", spec.origin, finder.adoptions["sglang"])
    spec.cached = None
    real = importlib.util.module_from_spec(spec)
    # The import system hands out whatever sys.modules holds once the shim's body returns.
    sys.modules["sglang"] = real
    try:
        loader.exec_module(real)
    except BaseException:
        sys.modules.pop("sglang", None)
        raise
    if not _mark(shim_dir, ADOPTED_MARKER):  # the first interpreter of the tree says what runs
        return
    from .. import __version__

    sys.stderr.write(
        f"sglang-plugins run: SGLang {version} runs with sglang_plugin_runtime {__version__} as "
        f"its plugin layer in this process tree ({len(finder.adoptions)} modules adopted in "
        "memory; nothing installed is changed)\n"
    )


def _mark(shim_dir: str, name: str) -> bool:
    """Create marker ``name`` for the launcher (exclusively: a link planted there is never
    followed); whether this process created it, or could not and said so now."""
    path = os.path.join(shim_dir, MARKERS, name)
    try:
        open(path, "x").close()
    except FileExistsError:
        return False
    except OSError as exc:
        sys.stderr.write(
            f"sglang-plugins run: this process (pid {os.getpid()}, uid {os.getuid()}) cannot write "
            f"the launcher's marker {path} ({exc.strerror or exc}), so its note when the command "
            "ends cannot tell that SGLang was imported here; give that user write access to the "
            "folder\n"
        )
    return True
