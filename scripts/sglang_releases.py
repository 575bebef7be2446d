"""The SGLang releases with a plugin system, as data written from their wheels (never by hand).

From each wheel listed in ``runtime/sglang_plugin_runtime/_sglang_releases/releases.json``
(downloaded with ``pip download --no-deps`` into ``.cache/sglang-wheels/``, its SHA-256 checked
against the list), this script reads SGLang's sources straight from the zip and parses them with
``ast`` (SGLang is never imported), and writes beside the list:

- ``contract.json``: per release, ``SRTPlatform``, ``DeviceMixin`` and the diffusion ``Platform``
  member by member (kind, signature, whether the base raises ``NotImplementedError``, its default
  where it is a literal), ``PlatformEnum``, ``PlatformCapabilities``, the resolution-hook names and
  the host's calls on the platform (every ``<...platform...>.name(...)`` in the package, the call
  scan ``platforms/interface_table.jsonl`` also takes its calls from);
- ``modules.txt.gz``: every module of the package with its top-level names, and each class with
  its bases (resolved to where they are defined in SGLang; ``?`` for one defined elsewhere) and its
  own members, so that a hook target can be judged where SGLang is not installed (a test module,
  an extension module, ``import *`` or a module ``__getattr__``: the name ``*``, any name);
  ``--write`` stores it with gzip (4.4 MB of text, 0.9 MB stored), check mode compares the text;
- ``releases.json`` itself (the wheels' names and hashes; a ``.postN`` release whose plugin layer
  is byte for byte its base release's is listed under that release, ``same_plugin_layer``);
- ``platforms/interface_table.jsonl``: the newest release's rows (names, signatures, calls), with
  what no scan can see kept from the file (SGLang main's rows, probes, retired hooks' replacements,
  calls the runtime makes itself, calls marked ``read`` or ``indirect``, other versions' names),
  and a row naming where each name only older releases declare comes from.

Each distinct file (path and content) is parsed once, in a process pool: all 13 releases take
about 2 minutes of CPU.

Which releases hold a fact is written as a span: ``0.5.17-`` (from 0.5.17 to the newest),
``0.5.11-0.5.21``, ``0.5.23-``, pieces joined by commas; a line of the module index without one
holds where the line above it (its module, its class) does.

Usage::

    python scripts/sglang_releases.py            # check: regenerate, fail on any difference
    python scripts/sglang_releases.py --write    # rewrite the data; review the diff
    python scripts/sglang_releases.py --write --add 0.5.24   # a new release (or 0.5.23.post1)

Environment: ``SGLANG_WHEELS_DIR`` (default ``<repo>/.cache/sglang-wheels``).
"""

from __future__ import annotations

import argparse
import ast
import base64
import gzip
import hashlib
import json
import os
import re
import subprocess
import sys
import zipfile
from collections import defaultdict
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
DATA = REPO_ROOT / "runtime" / "sglang_plugin_runtime" / "_sglang_releases"
INTERFACE_TABLE = DATA.parent / "platforms" / "interface_table.jsonl"
WHEELS = Path(os.environ.get("SGLANG_WHEELS_DIR", REPO_ROOT / ".cache" / "sglang-wheels"))
#: The wheel each release is read from (SGLang publishes one per Python; the sources are the same).
WHEEL_TAGS = ["--python-version", "3.11", "--platform", "manylinux_2_34_x86_64"]
ABOUT = (
    "SGLang releases with a plugin system, oldest first; written by scripts/sglang_releases.py "
    "from the released wheels (never by hand)"
)
#: The files that make a release's plugin layer: a .postN release whose files are these, byte for
#: byte, is its base release's plugin layer.
PLUGIN_LAYER = (
    "sglang/srt/plugins/",
    "sglang/srt/platforms/",
    "sglang/multimodal_gen/runtime/platforms/",
    "sglang/srt/arg_groups/resolution_hooks.py",
)
#: SGLang's platform classes, by the name the data (and the interface table's ``owner``) uses.
CLASSES = {
    "DeviceMixin": ("sglang/srt/platforms/device_mixin.py", "DeviceMixin", "srt"),
    "SRTPlatform": ("sglang/srt/platforms/interface.py", "SRTPlatform", "srt"),
    "diffusion Platform": (
        "sglang/multimodal_gen/runtime/platforms/interface.py",
        "Platform",
        "diffusion",
    ),
}
ENUM = ("sglang/srt/platforms/device_mixin.py", "PlatformEnum")
CAPABILITIES = ("sglang/srt/platforms/interface.py", "PlatformCapabilities")
RESOLUTION_HOOKS = ("sglang/srt/arg_groups/resolution_hooks.py", "_OVERRIDABLE_HOOKS")
LEGACY_KV_POOL_HOOKS = ("sglang/srt/platforms/interface.py", "_LEGACY_KV_POOL_HOOKS")
#: Bases that add no members a hook would target: a class on them alone is closed.
CLOSED_BASES = {
    "object",
    "abc.ABC",
    "typing.Generic",
    "typing.Protocol",
    "typing_extensions.Protocol",
}
DECORATOR_KINDS = {
    "classmethod": "classmethod",
    "staticmethod": "staticmethod",
    "property": "property",
    "cached_property": "property",
    "functools.cached_property": "property",
}
RUNTIME_SITE = "sglang_plugin_runtime"
ROW_KEYS = [
    "name", "owner", "host", "kind", "signature", "versions", "calls", "probe", "replacement",
    "served_by", "origin",
]  # fmt: skip
CALL_KEYS = ["args", "kwargs", "on_class", "read", "indirect", "site"]
SHAPE_KEYS = ["kind", "signature", "required", "default"]
#: The ``origin`` of an interface-table row written from the releases' data (not by hand).
RELEASE_ORIGIN = re.compile(r".+ in SGLang [0-9][^ ]*$")

Form = tuple[int, tuple[str, ...]]


class ReleaseError(Exception):
    """A wheel that cannot be had or does not match its recorded hash."""


# --------------------------------------------------------------------------------------------------
# The wheels
# --------------------------------------------------------------------------------------------------


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_wheel(version: str, wheel: str | None = None, sha256: str | None = None) -> Path:
    """The wheel of ``version`` in the cache (``pip download`` fills it), checked against
    ``sha256``."""
    pattern = wheel or f"sglang-{version}-cp311-*.whl"
    if not any(WHEELS.glob(pattern)):
        WHEELS.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
        command += ["--only-binary", ":all:", *WHEEL_TAGS, "-d", str(WHEELS), f"sglang=={version}"]
        print(f"sglang_releases: downloading sglang {version}", file=sys.stderr)
        subprocess.run(command, check=True)
    found = sorted(WHEELS.glob(pattern))
    if not found:
        raise ReleaseError(f"pip download left no {pattern} in {WHEELS}")
    if sha256 is not None and (actual := sha256_of(found[0])) != sha256:
        raise ReleaseError(
            f"{found[0]}: SHA-256 {actual}, but releases.json records {sha256} for sglang "
            f"{version}; delete the file to download it again"
        )
    return found[0]


def python_files(wheel: Path) -> dict[str, tuple[str, bytes]]:
    """Every ``sglang/`` file of ``wheel`` a module is made of: path -> (key, bytes) (``.py``
    sources; an extension module is an empty ``b""`` with the key ``""``). A key names the path
    and the content: what a file says depends on both (relative imports, tests)."""
    files = {}
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if not name.startswith("sglang/"):
                continue
            if name.endswith(".py"):
                data = archive.read(name)
                digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode()
                files[name] = (f"{name}:{digest}", data)
            elif name.endswith(".so"):
                files[name] = ("", b"")
    return files


# --------------------------------------------------------------------------------------------------
# One source file: its names, classes and calls on the platform (computed once per content)
# --------------------------------------------------------------------------------------------------


def module_name(path: str) -> str:
    """``sglang/srt/x/__init__.py`` -> ``sglang.srt.x``; an extension module loses its ABI tag."""
    stem = path.split(".", 1)[0] if path.endswith(".so") else path[: -len(".py")]
    parts = stem.split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _statements(body: Iterable[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of a module or class body, including those under ``if``, ``try`` and
    ``with`` (a definition there is a definition of the body too)."""
    for node in body:
        yield node
        if isinstance(node, (ast.If, ast.For, ast.While)):
            yield from _statements(node.body + node.orelse)
        elif isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            handlers = [s for h in node.handlers for s in h.body]
            yield from _statements(node.body + handlers + node.orelse + node.finalbody)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            yield from _statements(node.body)


def _targets(node: ast.expr) -> Iterator[str]:
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, (ast.Tuple, ast.List)):
        for element in node.elts:
            yield from _targets(element)
    elif isinstance(node, ast.Starred):
        yield from _targets(node.value)


def bound_names(body: Iterable[ast.stmt]) -> dict[str, ast.stmt]:
    """The names a module or class body binds, each with (the last) statement that binds it; the
    key ``*`` when it cannot say (``import *``, a module ``__getattr__``)."""
    names: dict[str, ast.stmt] = {}
    for node in _statements(body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = node
            if node.name == "__getattr__":
                names["*"] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.update(dict.fromkeys(_targets(target), node))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names[alias.asname or alias.name.split(".")[0]] = node
    return names


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The module an ``import from`` names, relative imports resolved."""
    if not node.level:
        return node.module or ""
    parts = module.split(".")
    base = parts[: len(parts) - node.level + (1 if is_package else 0)]
    return ".".join(base + ([node.module] if node.module else []))


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and (head := _dotted(node.value)):
        return f"{head}.{node.attr}"
    return None


def summarize(path: str, data: bytes) -> dict[str, Any]:
    """What the release-level data needs of one source file."""
    module = module_name(path)
    if path.endswith(".so") or is_test(path):  # an extension module; tests: only that they exist
        return {"names": ["*"], "classes": {}, "aliases": {}, "calls": []}
    tree = ast.parse(data)
    names = bound_names(tree.body)
    # where each imported name comes from, as a dotted path (``import a.b as c``: c -> a.b)
    aliases: dict[str, str] = {}
    for node in _statements(tree.body):
        if isinstance(node, ast.ImportFrom):
            source = _absolute(module, path.endswith("__init__.py"), node)
            for alias in node.names:
                if alias.name != "*":
                    aliases[alias.asname or alias.name] = f"{source}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                aliases[alias.asname or top] = alias.name if alias.asname else top
    classes: dict[str, Any] = {}

    def add_class(node: ast.ClassDef, prefix: str) -> None:
        members = bound_names(node.body)
        qualname = prefix + node.name
        bases = []
        for base in node.bases:
            while isinstance(base, ast.Subscript):  # Generic[T], Base[int]
                base = base.value
            dotted = _dotted(base)
            if dotted is None:
                bases.append("?")
                continue
            head, _, rest = dotted.partition(".")
            if head in aliases:
                dotted = aliases[head] + (f".{rest}" if rest else "")
            elif head in names:  # defined in this module
                dotted = f"{module}.{dotted}"
            bases.append(dotted)
        classes[qualname] = {"bases": bases, "members": sorted(n for n in members if n != "*")}
        for inner in members.values():
            if isinstance(inner, ast.ClassDef) and inner in node.body:
                add_class(inner, qualname + ".")

    for node in _statements(tree.body):
        if isinstance(node, ast.ClassDef) and names.get(node.name) is node:
            add_class(node, "")
    return {
        "names": sorted(names),
        "classes": classes,
        "aliases": {k: v for k, v in aliases.items() if v.startswith("sglang.")},
        "calls": platform_calls(tree) if scans_calls(path) else [],
    }


def is_test(path: str) -> bool:
    return any(part.startswith("test") for part in path.split("/"))


def scans_calls(path: str) -> bool:
    """Whether the host's calls are read from this file: SGLang's code, not its tests nor its own
    platform implementations."""
    return not is_test(path) and "platforms" not in path.split("/")


def platform_calls(tree: ast.AST) -> list[tuple[str, int, tuple[str, ...]]]:
    """Every call ``<receiver>.name(...)`` whose receiver mentions ``platform``, as (name, number
    of positional arguments, keyword names); calls with ``*args`` or ``**kwargs`` say no form."""
    calls = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if "platform" not in ast.unparse(node.func.value).lower():
            continue
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords
        ):
            continue
        keywords = tuple(sorted(k.arg for k in node.keywords if k.arg))
        calls.add((node.func.attr, len(node.args), keywords))
    return sorted(calls)


# --------------------------------------------------------------------------------------------------
# The platform classes of one release
# --------------------------------------------------------------------------------------------------


def _class(source: bytes | None, name: str) -> ast.ClassDef | None:
    if source is None:
        return None
    tree = ast.parse(source)
    return next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)


def render_parameters(args: ast.arguments) -> str:
    """The parameters as ``inspect.signature`` prints them without annotations."""
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    parts = []
    for index, (arg, default) in enumerate(zip(positional, defaults, strict=True)):
        parts.append(arg.arg + (f"={ast.unparse(default)}" if default is not None else ""))
        if args.posonlyargs and index == len(args.posonlyargs) - 1:
            parts.append("/")
    if args.vararg:
        parts.append(f"*{args.vararg.arg}")
    elif args.kwonlyargs:
        parts.append("*")
    for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        parts.append(arg.arg + (f"={ast.unparse(default)}" if default is not None else ""))
    if args.kwarg:
        parts.append(f"**{args.kwarg.arg}")
    return f"({', '.join(parts)})"


def _body(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.stmt]:
    """The body without its docstring."""
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return body


def _literal(node: ast.expr | None) -> tuple[bool, Any]:
    """``(True, value)`` for a literal JSON can hold, else ``(False, None)``."""
    if node is None:
        return True, None
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None
    try:
        return True, json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return False, None


def member(node: ast.stmt) -> dict[str, Any]:
    """One member of a platform class: kind, signature, ``required`` (its body only raises
    ``NotImplementedError``), ``default`` (what it returns, or its value, where a literal)."""
    if isinstance(node, ast.ClassDef):
        return {"kind": "attribute", "signature": ""}
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        found, default = _literal(value) if value is not None else (False, None)
        return {"kind": "attribute", "signature": ""} | ({"default": default} if found else {})
    decorators = {_dotted(d) for d in node.decorator_list}
    kind = next((DECORATOR_KINDS[d] for d in decorators if d in DECORATOR_KINDS), "method")
    shape: dict[str, Any] = {
        "kind": kind,
        "signature": "" if kind == "property" else render_parameters(node.args),
    }
    body = _body(node)
    only = body[0] if len(body) == 1 else None
    if isinstance(only, ast.Raise) and only.exc is not None:
        raised = only.exc.func if isinstance(only.exc, ast.Call) else only.exc
        if isinstance(raised, ast.Name) and raised.id == "NotImplementedError":
            return shape | {"required": True}
    if not body or (only is not None and isinstance(only, ast.Pass)):
        return shape | {"default": None}
    if isinstance(only, ast.Return):
        found, default = _literal(only.value)
        if found:
            return shape | {"default": default}
    return shape


def class_members(cls: ast.ClassDef) -> dict[str, dict[str, Any]]:
    """The public members ``cls`` declares, in order (annotations without a value included)."""
    return {
        name: member(node)
        for name, node in bound_names(cls.body).items()
        if not name.startswith("_") and name != "*"
    }


def module_literal(source: bytes | None, name: str) -> Any:
    """The literal assigned to module-level ``name`` (a ``frozenset({...})`` as a sorted list)."""
    if source is None:
        return None
    for node in ast.parse(source).body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            value = node.value  # type: ignore[attr-defined]
            if isinstance(value, ast.Call) and _dotted(value.func) in ("frozenset", "set"):
                return sorted(ast.literal_eval(value.args[0]))
            return ast.literal_eval(value)
    return None


# --------------------------------------------------------------------------------------------------
# A release, read
# --------------------------------------------------------------------------------------------------


class Release:
    """One wheel's sources, summarised."""

    def __init__(
        self, version: str, files: dict[str, tuple[str, bytes]], summaries: dict[str, Any]
    ):
        self.version = version
        self.sources = {path: data for path, (_, data) in files.items()}
        self.files = {path: summaries[key] for path, (key, _) in files.items() if key}
        self.files.update({p: summaries[""] for p, (key, _) in files.items() if not key})
        self.modules = {module_name(path): path for path in self.files}
        # packages without __init__.py (namespace packages) are modules too: their submodules
        for module in list(self.modules):
            parts = module.split(".")
            for depth in range(1, len(parts)):
                self.modules.setdefault(".".join(parts[:depth]), "")

    def source(self, path: str) -> bytes | None:
        return self.sources.get(path)

    def resolve_class(self, dotted: str, hops: int = 0) -> str:
        """``module:Class.Inner`` where the class ``dotted`` names is defined (through the imports
        that re-export it), or ``?``."""
        parts = dotted.split(".")
        cut = next(
            (c for c in range(len(parts) - 1, 0, -1) if ".".join(parts[:c]) in self.modules), 0
        )
        summary = self.files.get(self.modules.get(".".join(parts[:cut]), ""))
        if summary is None or hops > 8:
            return "?"
        qualname = ".".join(parts[cut:])
        if qualname in summary["classes"]:
            return f"{'.'.join(parts[:cut])}:{qualname}"
        alias = summary["aliases"].get(parts[cut])
        return (
            "?"
            if alias is None
            else self.resolve_class(".".join([alias, *parts[cut + 1 :]]), hops + 1)
        )

    def facts(self) -> Iterator[tuple[str, ...]]:
        """The module index of this release, as facts: ``(module,)``, ``(module, name)``,
        ``(module, ".Class")``, ``(module, ".Class", "(bases)")``, ``(module, ".Class",
        member)``."""
        for module, path in self.modules.items():
            yield (module,)
            summary = self.files.get(path)
            names = summary["names"] if summary else []
            if not summary:  # a namespace package: its submodules only
                continue
            for name in names:
                yield (module, name)
            for qualname, cls in summary["classes"].items():
                bases = [
                    self.resolve_class(base) if base.startswith("sglang.") else "?"
                    for base in cls["bases"]
                    if base not in CLOSED_BASES
                ]
                yield (module, "." + qualname)
                if bases:
                    yield (module, "." + qualname, f"({','.join(bases)})")
                for name in cls["members"]:
                    yield (module, "." + qualname, name)

    def contract(self) -> dict[str, Any]:
        """The release's platform classes, enum, capabilities and resolution hooks."""
        classes = {}
        for owner, (path, name, _) in CLASSES.items():
            cls = _class(self.source(path), name)
            if cls is not None:
                classes[owner] = class_members(cls)
        enum = _class(self.source(ENUM[0]), ENUM[1])
        capabilities = _class(self.source(CAPABILITIES[0]), CAPABILITIES[1])
        return {
            "classes": classes,
            "enum": [n for n in bound_names(enum.body) if n != "*" and n.isupper()] if enum else [],
            "capabilities": {
                name: shape.get("default")
                for name, shape in (class_members(capabilities) if capabilities else {}).items()
                if shape["kind"] == "attribute"
            },
            "resolution_hooks": module_literal(
                self.source(RESOLUTION_HOOKS[0]), RESOLUTION_HOOKS[1]
            )
            or [],
        }

    def calls(self, names: set[str]) -> dict[tuple[str, str], dict[Form, list[str]]]:
        """(host, name) -> call form -> the files that make it (sorted), for ``names``."""
        found: dict[tuple[str, str], dict[Form, list[str]]] = defaultdict(lambda: defaultdict(list))
        for path in sorted(self.files):
            for name, count, keywords in self.files[path]["calls"]:
                if name in names:
                    relative = path[len("sglang/") :]
                    host = (
                        "diffusion"
                        if relative.startswith(("multimodal_gen/", "kernels/ops/diffusion/"))
                        else "srt"
                    )
                    found[(host, name)][(count, keywords)].append(path)
        return {key: dict(forms) for key, forms in found.items()}


def read_releases(versions: list[tuple[str, str | None, str | None]]) -> list[Release]:
    """Each ``(version, wheel, sha256)`` read and summarised (each distinct file parsed once)."""
    wheels = [
        (version, python_files(fetch_wheel(version, wheel, sha)))
        for version, wheel, sha in versions
    ]
    unique = {
        key: (path, data) for _, files in wheels for path, (key, data) in files.items() if key
    }
    workers = max(1, min(4, os.cpu_count() or 1))
    with ProcessPoolExecutor(workers) as pool:
        keys = list(unique)
        paths, sources = [unique[k][0] for k in keys], [unique[k][1] for k in keys]
        done = pool.map(summarize, paths, sources, chunksize=64)
        summaries: dict[str, Any] = dict(zip(keys, done, strict=True))
    summaries[""] = summarize("x.so", b"")
    return [Release(version, files, summaries) for version, files in wheels]


# --------------------------------------------------------------------------------------------------
# Spans: which releases hold a fact
# --------------------------------------------------------------------------------------------------


def span(indices: Iterable[int], versions: list[str]) -> str:
    """``0.5.17-`` (to the newest), ``0.5.11-0.5.21``, ``0.5.14``, pieces joined by commas."""
    pieces, run = [], []
    for index in sorted(set(indices)):
        if run and index != run[-1] + 1:
            pieces.append(run)
            run = []
        run.append(index)
    pieces.append(run)
    text = []
    for piece in filter(None, pieces):
        first, last = versions[piece[0]], versions[piece[-1]]
        if piece[-1] == len(versions) - 1:
            text.append(f"{first}-")
        else:
            text.append(first if len(piece) == 1 else f"{first}-{last}")
    return ",".join(text)


def variants(shapes: list[tuple[int, Any]], versions: list[str]) -> list[dict[str, Any]]:
    """Per-release shapes of one member, as its distinct shapes, each with its span (in the order
    first seen)."""
    held: dict[str, list[int]] = {}
    for index, shape in shapes:
        held.setdefault(json.dumps(shape, sort_keys=True), []).append(index)
    shapes_in_order = [(json.loads(key), span(indices, versions)) for key, indices in held.items()]
    return [{"in": where} | {k: s[k] for k in SHAPE_KEYS if k in s} for s, where in shapes_in_order]


# --------------------------------------------------------------------------------------------------
# The data files
# --------------------------------------------------------------------------------------------------


def contract_data(releases: list[Release], names: set[str]) -> dict[str, Any]:
    versions = [r.version for r in releases]
    contracts = [r.contract() for r in releases]
    members: dict[str, dict[str, list[tuple[int, Any]]]] = {owner: {} for owner in CLASSES}
    for index, contract in enumerate(contracts):
        for owner, declared in contract["classes"].items():
            for name, shape in declared.items():
                members[owner].setdefault(name, []).append((index, shape))
    classes = {
        owner: {
            "module": CLASSES[owner][0][: -len(".py")].replace("/", "."),
            "class": CLASSES[owner][1],
            "in": span((i for i, c in enumerate(contracts) if owner in c["classes"]), versions),
            "members": {name: variants(held, versions) for name, held in by_name.items()},
        }
        for owner, by_name in members.items()
    }

    def spans_of(key: str) -> dict[str, str]:
        held: dict[str, list[int]] = {}
        for index, contract in enumerate(contracts):
            for name in contract[key]:
                held.setdefault(name, []).append(index)
        return {name: span(indices, versions) for name, indices in held.items()}

    capabilities: dict[str, list[tuple[int, Any]]] = {}
    for index, contract in enumerate(contracts):
        for name, default in contract["capabilities"].items():
            capabilities.setdefault(name, []).append((index, {"default": default}))
    calls: dict[str, dict[str, list[dict[str, Any]]]] = {"srt": {}, "diffusion": {}}
    scanned = [release.calls(names) for release in releases]
    keys = sorted({key for found in scanned for key in found}, key=lambda k: (k[0] != "srt", k[1]))
    for host, name in keys:
        forms: dict[Form, list[int]] = {}
        sites: dict[Form, str] = {}
        for index, found in enumerate(scanned):
            for form, files in found.get((host, name), {}).items():
                forms.setdefault(form, []).append(index)
                sites[form] = files[0]  # the newest release's first file that makes the call
        calls[host][name] = [
            {
                "args": form[0],
                "kwargs": list(form[1]),
                "in": span(forms[form], versions),
                "site": sites[form],
            }
            for form in sorted(forms)
        ]
    return {
        "about": ABOUT.replace("SGLang releases", "The platform contract of each SGLang release")
        + "; spans: 0.5.17- is 0.5.17 to the newest",
        "classes": classes,
        "PlatformEnum": spans_of("enum"),
        "capabilities": {name: variants(held, versions) for name, held in capabilities.items()},
        "resolution_hooks": spans_of("resolution_hooks"),
        "calls": calls,
    }


def module_index(releases: list[Release]) -> str:
    """The module index as text (see ``_sglang_releases/__init__.py`` for how it is read)."""
    versions = [r.version for r in releases]
    held: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for index, release in enumerate(releases):
        for fact in release.facts():
            held[fact].append(index)
    lines = []
    inherited: dict[tuple[str, ...], str] = {}
    for fact in sorted(held):
        where = span(held[fact], versions)
        parent = inherited.get(fact[:-1], "") if len(fact) > 1 else ""
        inherited[fact] = where
        lines.append(" " * (len(fact) - 1) + fact[-1] + ("" if where == parent else f" {where}"))
    return "\n".join(lines) + "\n"


def releases_data(
    base: list[dict[str, Any]], posts: list[dict[str, Any]], layers: dict[str, dict[str, bytes]]
) -> dict[str, Any]:
    releases = []
    for entry in base:
        same = [p["version"] for p in posts if _post_of(p, entry, layers)]
        releases.append(
            {k: entry[k] for k in ("version", "wheel", "sha256")} | {"same_plugin_layer": same}
        )
    return {
        "about": ABOUT,
        "releases": releases,
        "post_releases": [{k: p[k] for k in ("version", "wheel", "sha256")} for p in posts],
    }


def _post_of(post: dict[str, Any], entry: dict[str, Any], layers: dict[str, Any]) -> bool:
    """Whether ``post`` is a ``.postN`` of ``entry`` with its plugin layer, byte for byte."""
    same_layer = layers[post["version"]] == layers[entry["version"]]
    return post["version"].split(".post")[0] == entry["version"] and same_layer


def plugin_layer(wheel: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as archive:
        return {n: archive.read(n) for n in archive.namelist() if n.startswith(PLUGIN_LAYER)}


# --------------------------------------------------------------------------------------------------
# The interface table's newest-release rows
# --------------------------------------------------------------------------------------------------


def _is_scanned(call: dict[str, Any]) -> bool:
    """Whether the source scan can see ``call`` (a literal ``platform.name(...)`` in SGLang's
    package)."""
    return not (call.get("read") or call.get("indirect") or call["site"].startswith(RUNTIME_SITE))


def _form(call: dict[str, Any]) -> Form:
    return call.get("args", 0), tuple(sorted(call.get("kwargs", ())))


def _canonical(row: dict[str, Any]) -> dict[str, Any]:
    calls = [
        {k: c[k] for k in CALL_KEYS if c.get(k)} | {"site": c["site"]} for c in row.get("calls", ())
    ]
    row = row | {"calls": calls}
    return {k: row[k] for k in ROW_KEYS if k in row and (row[k] or k in ("signature", "versions"))}


def interface_rows(
    current: list[dict[str, Any]],
    newest: Release,
    scanned: dict[tuple[str, str], dict[Form, list[str]]],
    older: dict[str, dict[str, str]],
) -> list[dict[str, Any]]:
    """The interface table as the newest release gives it, with what no scan can see kept from
    ``current``."""
    released = newest.version
    contract = newest.contract()["classes"]
    declared = {
        owner: {n: (s["kind"], s["signature"]) for n, s in members.items()}
        for owner, members in contract.items()
    }
    legacy = module_literal(newest.source(LEGACY_KV_POOL_HOOKS[0]), LEGACY_KV_POOL_HOOKS[1]) or {}
    retired = {
        hook: f"get_kv_pool_cls(self, *, kind) for kind={kind!r}" for kind, hook in legacy.items()
    }
    rows = []
    for row in current:
        if "origin" in row:
            if not RELEASE_ORIGIN.fullmatch(row["origin"]):
                rows.append(row)
            continue
        owner, name = row["owner"], row["name"]
        if name in retired:
            row = row | {"replacement": retired[name]}
        elif released in row["versions"]:
            if name not in declared[owner]:
                continue  # the wheel no longer declares it
            row = row | dict(zip(("kind", "signature"), declared[owner].pop(name), strict=True))
        else:
            declared[owner].pop(name, None)
        sites = {_form(c): c["site"] for c in row.get("calls", ()) if _is_scanned(c)}
        found = scanned.get((row["host"], name), {})
        calls = []
        for form in sorted(found):
            site = sites.get(form) if sites.get(form) in found[form] else found[form][0]
            calls.append({"args": form[0], "kwargs": list(form[1]), "site": site})
        rows.append(
            row | {"calls": calls + [c for c in row.get("calls", ()) if not _is_scanned(c)]}
        )
    # A name the wheel declares and no row has: a new row after its class's last one (no probe
    # until one is chosen).
    for owner, names in declared.items():
        last = max(i for i, row in enumerate(rows) if row.get("owner") == owner)
        for offset, (name, (kind, signature)) in enumerate(sorted(names.items()), 1):
            found = scanned.get((CLASSES[owner][2], name), {})
            calls = [
                {"args": f[0], "kwargs": list(f[1]), "site": found[f][0]} for f in sorted(found)
            ]
            row = {"name": name, "owner": owner, "host": CLASSES[owner][2], "kind": kind}
            row |= {"signature": signature, "versions": [released, "main"], "calls": calls}
            rows.insert(last + offset, row)
    # A name only older releases declare: a row saying where it comes from, so it is no misspelling.
    named = {row["name"] for row in rows}
    for owner, members in older.items():
        for name, where in members.items():
            if name not in named:
                rows.append({"name": name, "origin": f"{owner} in SGLang {where}"})
                named.add(name)
    return [_canonical(row) for row in rows]


# --------------------------------------------------------------------------------------------------


def generate(added: list[str]) -> dict[Path, bytes]:
    """Every data file, as the wheels give it (``added``: new releases to take in)."""
    listed = json.loads((DATA / "releases.json").read_text(encoding="utf-8"))
    base = list(listed["releases"])
    posts = list(listed.get("post_releases", []))
    posts += [
        {"version": v} for r in base for v in r.get("same_plugin_layer", ())
        if v not in {p["version"] for p in posts}
    ]  # fmt: skip
    for version in added:
        if version in {e["version"] for e in base + posts}:
            raise ReleaseError(f"sglang {version} is listed already")
        wheel = fetch_wheel(version)
        entry = {"version": version, "wheel": wheel.name, "sha256": sha256_of(wheel)}
        (posts if ".post" in version else base).append(entry)
    base.sort(key=lambda e: [int(p) for p in re.findall(r"[0-9]+", e["version"])])
    for entry in base + posts:
        wheel = fetch_wheel(entry["version"], entry.get("wheel"), entry.get("sha256"))
        entry.setdefault("wheel", wheel.name)
        entry.setdefault("sha256", sha256_of(wheel))
    layers = {e["version"]: plugin_layer(WHEELS / e["wheel"]) for e in base + posts}
    stray = [p["version"] for p in posts if not any(_post_of(p, e, layers) for e in base)]
    if stray:
        raise ReleaseError(
            f"{', '.join(stray)}: a post release whose plugin layer differs from every release "
            "listed; add it as a release of its own"
        )
    releases = read_releases([(e["version"], e["wheel"], e["sha256"]) for e in base])
    current = [
        json.loads(line) for line in INTERFACE_TABLE.read_text(encoding="utf-8").splitlines()
    ]
    names = {row["name"] for row in current}
    for release in releases:
        for members in release.contract()["classes"].values():
            names |= set(members)
    contract = contract_data(releases, names)
    versions = [release.version for release in releases]
    declared = [release.contract()["classes"] for release in releases]
    older = {
        owner: {
            name: span(
                [i for i, classes in enumerate(declared) if name in classes.get(owner, {})],
                versions,
            )
            for name in cls["members"]
        }
        for owner, cls in contract["classes"].items()
    }
    table = interface_rows(current, releases[-1], releases[-1].calls(names), older)
    return {
        DATA / "releases.json": _json(releases_data(base, posts, layers)),
        DATA / "contract.json": _json(contract),
        DATA / "modules.txt.gz": module_index(releases).encode(),
        INTERFACE_TABLE: "".join(json.dumps(row) + "\n" for row in table).encode(),
    }


def _json(document: Any) -> bytes:
    return (json.dumps(document, indent=1) + "\n").encode()


def _stored(path: Path) -> bytes | None:
    if not path.is_file():
        return None
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite the data files")
    parser.add_argument(
        "--add", action="append", default=[], metavar="VERSION", help="a new release"
    )
    args = parser.parse_args(argv)
    if args.add and not args.write:
        parser.error("--add needs --write")
    try:
        files = generate(args.add)
    except (ReleaseError, subprocess.CalledProcessError) as exc:
        print(f"sglang_releases: {exc}", file=sys.stderr)
        return 2
    stale = [path for path, data in files.items() if _stored(path) != data]
    if args.write:
        for path in stale:
            # mtime 0: the same data gives the same bytes
            path.write_bytes(
                gzip.compress(files[path], 9, mtime=0) if path.suffix == ".gz" else files[path]
            )
            print(f"sglang_releases: wrote {path.relative_to(REPO_ROOT)}", file=sys.stderr)
        return 0
    for path in stale:
        print(
            f"sglang_releases: {path.relative_to(REPO_ROOT)} differs from what the wheels give; "
            "rewrite it with `python scripts/sglang_releases.py --write` and review the diff",
            file=sys.stderr,
        )
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
