"""The runtime's interface table says what the real SGLang 0.5.23 wheel declares and calls, no more,
no less.

The table is data, ``runtime/sglang_plugin_runtime/platforms/interface_table.jsonl`` (one JSON row
per line), and this module produces it: signatures are read from SGLang's three platform classes
with ``inspect``; calls are found by parsing every module of the installed ``sglang`` package (tests
and the in-tree platform implementations left out) for calls on a receiver whose name mentions
``platform`` (``current_platform.x(...)``, ``platform.x(...)``, ...). What no scan can see is kept
from the file as it is: the rows of SGLang main (``versions: ["main"]``, read from the public
repository: ``python/sglang/srt/platforms/device_mixin.py`` at commit ``0099dee6``, ``builtin.py``
at ``4ac06988``; main's call sites were not all readable, so its calls are taken to be 0.5.23's),
calls marked ``read`` (data the host reads) or ``indirect`` (a bound method handed to a helper, a
retired hook served by its replacement) and the runtime's own calls (site
``sglang_plugin_runtime...``), each row's ``probe`` (how the conformance check may call it), and the
names of other SGLang versions (rows with an ``origin``).

Check mode (the default, ``make test-sglang``) fails when the file differs from what the wheel
gives. Write mode rewrites the file from the wheel; review the diff and commit it:

    WRITE_INTERFACE_TABLE=1 SGLANG_TIER=plain \\
        bash scripts/test-sglang.sh tests_sglang/test_interface_table.py
"""

from __future__ import annotations

import ast
import functools
import inspect
import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
DATA = REPO_ROOT / "runtime" / "sglang_plugin_runtime" / "platforms" / "interface_table.jsonl"
RUNTIME_SITE = "sglang_plugin_runtime"
RELEASED = "0.5.23"
#: SGLang's platform classes, by the table's ``owner``, and the host that calls each.
OWNERS = {"DeviceMixin": "srt", "SRTPlatform": "srt", "diffusion Platform": "diffusion"}
ROW_KEYS = [
    "name",
    "owner",
    "host",
    "kind",
    "signature",
    "versions",
    "calls",
    "probe",
    "replacement",
    "served_by",
    "origin",
]
CALL_KEYS = ["args", "kwargs", "on_class", "read", "indirect", "site"]

Form = tuple[int, tuple[str, ...]]


def _file_rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()]


def _sglang_classes() -> dict[str, type]:
    from sglang.multimodal_gen.runtime.platforms.interface import Platform
    from sglang.srt.platforms.device_mixin import DeviceMixin
    from sglang.srt.platforms.interface import SRTPlatform

    return {"DeviceMixin": DeviceMixin, "SRTPlatform": SRTPlatform, "diffusion Platform": Platform}


def _sglang_root() -> Path:
    import sglang

    return Path(sglang.__file__).parent


def _shape(raw: object) -> tuple[str, str]:
    """(kind, parameters without annotations) of a class-``__dict__`` entry, as the table writes
    them."""
    if isinstance(raw, (classmethod, staticmethod)):
        kind, function = type(raw).__name__, raw.__func__
    elif isinstance(raw, (property, functools.cached_property)):
        return "property", ""
    elif callable(raw) and not isinstance(raw, type):
        kind, function = "method", raw
    else:
        return "attribute", ""
    signature = inspect.signature(inspect.unwrap(function))
    bare = signature.replace(
        parameters=[p.replace(annotation=p.empty) for p in signature.parameters.values()],
        return_annotation=signature.empty,
    )
    return kind, str(bare)


def _declared(cls: type) -> dict[str, tuple[str, str]]:
    names = {n for n in cls.__dict__ if not n.startswith("_")}
    names |= {n for n in inspect.get_annotations(cls) if not n.startswith("_")}
    return {n: _shape(cls.__dict__[n]) if n in cls.__dict__ else ("attribute", "") for n in names}


def _host_of(relative: str) -> str:
    return (
        "diffusion" if relative.startswith(("multimodal_gen/", "kernels/ops/diffusion/")) else "srt"
    )


@functools.cache
def _scanned_calls() -> dict[tuple[str, str], dict[Form, list[str]]]:
    """(host, name) -> call form (positional count, keyword names) -> the package files that make
    it, for every name of a row or of SGLang's platform classes."""
    names = {row["name"] for row in _file_rows()} | {
        n for cls in _sglang_classes().values() for n in _declared(cls)
    }
    found: dict[tuple[str, str], dict[Form, list[str]]] = defaultdict(lambda: defaultdict(list))
    root = _sglang_root()
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        parts = relative.split("/")
        if any(p.startswith("test") for p in parts) or "platforms" in parts:
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in names
            ):
                continue
            if "platform" not in ast.unparse(node.func.value).lower():
                continue
            if any(isinstance(a, ast.Starred) for a in node.args) or any(
                k.arg is None for k in node.keywords
            ):
                continue
            form = (len(node.args), tuple(sorted(k.arg for k in node.keywords if k.arg)))
            files = found[(_host_of(relative), node.func.attr)][form]
            if f"sglang/{relative}" not in files:
                files.append(f"sglang/{relative}")
    return {key: dict(forms) for key, forms in found.items()}


def _is_scanned(call: dict[str, Any]) -> bool:
    """Whether the source scan can see ``call`` (a literal ``platform.name(...)`` in SGLang's
    package)."""
    return not (call.get("read") or call.get("indirect") or call["site"].startswith(RUNTIME_SITE))


def _form(call: dict[str, Any]) -> Form:
    return call.get("args", 0), tuple(sorted(call.get("kwargs", ())))


def _canonical(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with its keys in the file's order, empty optional fields left out."""
    calls = [
        {k: c[k] for k in CALL_KEYS if c.get(k)} | {"site": c["site"]} for c in row.get("calls", ())
    ]
    row = row | {"calls": calls}
    return {k: row[k] for k in ROW_KEYS if k in row and (row[k] or k in ("signature", "versions"))}


def derived_rows() -> list[dict[str, Any]]:
    """The table as the installed SGLang wheel gives it, with what no scan can see kept from the
    file."""
    from sglang.srt.platforms import interface

    current = _file_rows()
    declared = {owner: _declared(cls) for owner, cls in _sglang_classes().items()}
    scanned = _scanned_calls()
    retired = {
        hook: f"get_kv_pool_cls(self, *, kind) for kind={kind!r}"
        for kind, hook in interface._LEGACY_KV_POOL_HOOKS.items()
    }
    rows = []
    for row in current:
        if "origin" in row:
            rows.append(row)
            continue
        owner, name = row["owner"], row["name"]
        if row["name"] in retired:
            row = row | {"replacement": retired[name]}
        elif RELEASED in row["versions"]:
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
    # A name the wheel declares and no row has: a new row after its class's last one (no probe until
    # one is chosen).
    for owner, names in declared.items():
        last = max(i for i, row in enumerate(rows) if row.get("owner") == owner)
        for offset, (name, (kind, signature)) in enumerate(sorted(names.items()), 1):
            found = scanned.get((OWNERS[owner], name), {})
            calls = [
                {"args": f[0], "kwargs": list(f[1]), "site": found[f][0]} for f in sorted(found)
            ]
            row = {
                "name": name,
                "owner": owner,
                "host": OWNERS[owner],
                "kind": kind,
                "signature": signature,
            }
            rows.insert(last + offset, row | {"versions": [RELEASED, "main"], "calls": calls})
    return [_canonical(row) for row in rows]


def test_the_data_file_is_what_the_wheel_gives() -> None:
    text = "".join(json.dumps(row) + "\n" for row in derived_rows())
    if os.environ.get("WRITE_INTERFACE_TABLE") == "1":
        DATA.write_text(text, encoding="utf-8")
    assert DATA.read_text(encoding="utf-8") == text, (
        f"{DATA.relative_to(REPO_ROOT)} differs from what SGLang {RELEASED} declares and calls; "
        "rewrite it with `WRITE_INTERFACE_TABLE=1 SGLANG_TIER=plain bash scripts/test-sglang.sh "
        "tests_sglang/test_interface_table.py` and review the diff"
    )


def _rows() -> list[dict[str, Any]]:
    return [row for row in _file_rows() if "host" in row]


@pytest.mark.parametrize("owner", list(OWNERS))
def test_rows_are_exactly_the_names_and_signatures_sglang_declares(owner: str) -> None:
    declared = _declared(_sglang_classes()[owner])
    rows = {
        r["name"]: (r["kind"], r["signature"])
        for r in _rows()
        if r["owner"] == owner and RELEASED in r["versions"]
    }
    assert rows == declared


def test_retired_rows_are_the_hooks_sglang_serves_and_what_it_asks_instead() -> None:
    from sglang.srt.platforms import interface

    retired = [row for row in _rows() if "replacement" in row]
    assert {r["name"] for r in retired} == set(interface._LEGACY_KV_POOL_HOOKS.values())
    for row in retired:
        kind = next(k for k, hook in interface._LEGACY_KV_POOL_HOOKS.items() if hook == row["name"])
        assert row["replacement"] == f"get_kv_pool_cls(self, *, kind) for kind={kind!r}"


def test_names_of_other_versions_are_no_name_of_0_5_23() -> None:
    declared = set().union(*(_declared(cls) for cls in _sglang_classes().values()))
    assert not declared & {row["name"] for row in _file_rows() if "origin" in row}


def test_recorded_calls_are_exactly_the_calls_in_sglangs_sources() -> None:
    names = {row["name"] for row in _rows()}
    scanned = {key: forms for key, forms in _scanned_calls().items() if key[1] in names}
    recorded: dict[tuple[str, str], set[Form]] = defaultdict(set)
    for row in _rows():
        recorded[(row["host"], row["name"])] |= {
            _form(c) for c in row.get("calls", ()) if _is_scanned(c)
        }
    assert {k: v for k, v in recorded.items() if v} == {
        k: set(forms) for k, forms in scanned.items()
    }


def test_every_recorded_site_is_a_file_of_the_package_that_names_the_member() -> None:
    root = _sglang_root().parent
    for row in _rows():
        for call in row.get("calls", ()):
            if call["site"].startswith(RUNTIME_SITE):
                continue
            path = root / call["site"].split(" ")[0]
            assert path.is_file(), (row["name"], call["site"])
            text = path.read_text(encoding="utf-8")
            mentioned = row["name"] if "replacement" not in row else "_LEGACY_KV_POOL_HOOKS"
            assert mentioned in text, (row["name"], call["site"])


def test_the_indirect_calls_happen_as_recorded() -> None:
    """The two indirect SRT calls: apply_server_args_defaults handed to a resolver that calls it
    with one argument, and get_cpu_architecture called with none by the cpu_arch property."""
    import sglang.srt.arg_groups.platform_hook as platform_hook
    from sglang.srt.arg_groups import overrides

    assert "current_platform.apply_server_args_defaults," in inspect.getsource(platform_hook)
    assert "result = resolve(recorder)" in inspect.getsource(overrides.record_foreign_defaults)
    from sglang.srt.platforms.device_mixin import DeviceMixin

    assert "self.get_cpu_architecture()" in inspect.getsource(DeviceMixin.cpu_arch.func)
