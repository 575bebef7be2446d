"""In one interpreter started by ``sglang-plugins run``: load SGLang's plugin modules as the
adoption patch makes them.

The launcher puts a shim folder first on ``PYTHONPATH``; its only module is a ``sglang`` package
whose ``__init__`` calls :func:`enter_from_shim`. That installs :class:`AdoptedSGLangFinder` in
front of ``sys.meta_path`` and loads the real ``sglang`` package in the shim's place, patched too
(its change runs the startup plugins before SGLang's own imports). From then on, the modules the
patch changes are compiled from the installed files with the patch applied in memory (exactly, or an
``ImportError`` that says why); every other module is SGLang's own file. Children inherit
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

from ._patch import Hunk, PatchError, apply, parse, patch_text

#: Set by the launcher: the SGLang version whose patch the processes apply, and the shim folder.
VERSION_ENV = "SGLANG_PLUGINS_RUN_SGLANG_VERSION"
SHIM_ENV = "SGLANG_PLUGINS_RUN_SHIM"
#: The shim's folder for the markers below: every user may create files in it (a command that
#: drops privileges, such as setpriv, gosu or runuser, runs SGLang as another user).
MARKERS = "markers"
#: Created in the markers folder by the first interpreter of the tree that adopts SGLang.
ADOPTED_MARKER = "adopted"
#: Created in the markers folder by every interpreter that imports SGLang through the shim.
ENTERED_MARKER = "entered"


class _PatchedSourceLoader(importlib.machinery.SourceFileLoader):
    """SGLang's installed file, with its hunks applied in memory; never cached as bytecode."""

    def __init__(self, fullname: str, path: str, hunks: tuple[Hunk, ...]) -> None:
        super().__init__(fullname, path)
        self._hunks = hunks

    def get_source(self, fullname: str) -> str:
        try:  # the file as the import system reads it (PEP 263, universal newlines), then patched
            patched = apply(
                importlib.util.decode_source(self.get_data(self.path)), self._hunks, name=self.path
            )
        except PatchError as exc:
            raise ImportError(
                f"sglang-plugins run: cannot adopt {fullname}: {exc}. The installed SGLang is not "
                "the release the patch was made for; run without 'sglang-plugins run', or install "
                "that release.",
                name=fullname,
            ) from exc
        # Tracebacks show the lines that run, not the file's.
        linecache.cache[self.path] = (
            len(patched),
            None,
            patched.splitlines(keepends=True),
            self.path,
        )
        return patched

    def get_code(self, fullname: str) -> CodeType:
        return self.source_to_code(self.get_source(fullname), self.path)


class AdoptedSGLangFinder(importlib.abc.MetaPathFinder):
    """Finds the modules the adoption patch changes and loads them patched."""

    def __init__(self, patches: dict[str, tuple[Hunk, ...]]) -> None:
        # sglang/srt/plugins/__init__.py -> sglang.srt.plugins
        self.patches = {
            path.removesuffix(".py").replace("/", ".").removesuffix(".__init__"): h
            for path, h in patches.items()
        }
        self.modules = frozenset(self.patches)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: object = None
    ) -> ModuleSpec | None:
        if fullname not in self.patches:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
            return None
        spec.loader = _PatchedSourceLoader(fullname, spec.origin, self.patches[fullname])
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


def enter_from_shim(shim_module: ModuleType) -> None:
    """Called by the shim's ``sglang/__init__.py``: install the finder, then load the real
    ``sglang`` in its place."""
    version = os.environ.get(VERSION_ENV)
    if not version:
        raise ImportError(
            f"sglang-plugins run: {VERSION_ENV} is not set; this shim only works under the launcher"
        )
    shim_dir = os.path.dirname(os.path.dirname(os.path.abspath(shim_module.__file__ or "")))
    _mark(shim_dir, ENTERED_MARKER)  # the launcher's report: SGLang was imported here
    finder = next((f for f in sys.meta_path if isinstance(f, AdoptedSGLangFinder)), None)
    if finder is None:  # once per interpreter: first on sys.meta_path
        finder = AdoptedSGLangFinder(parse(patch_text(version)))
        sys.meta_path.insert(0, finder)
    spec = find_sglang(shim_dir)
    if spec is None or spec.loader is None or spec.origin is None:
        raise ImportError(
            "sglang-plugins run: no sglang package is installed besides the launcher's shim"
        )
    # the package's own change: its startup plugins run before its imports
    if "sglang" in finder.modules:
        spec.loader = _PatchedSourceLoader("sglang", spec.origin, finder.patches["sglang"])
        spec.cached = None
    real = importlib.util.module_from_spec(spec)
    # The import system hands out whatever sys.modules holds once the shim's body returns.
    sys.modules["sglang"] = real
    try:
        spec.loader.exec_module(real)
    except BaseException:
        sys.modules.pop("sglang", None)
        raise
    if not _mark(shim_dir, ADOPTED_MARKER):  # the first interpreter of the tree says what runs
        return
    from .. import __version__

    sys.stderr.write(
        f"sglang-plugins run: SGLang {version} runs with sglang_plugin_runtime {__version__} as "
        f"its plugin layer in this process tree ({len(finder.modules)} modules adopted in memory; "
        "nothing installed is changed)\n"
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
