"""The runtime's interface table says what the real SGLang 0.5.23 wheel declares and calls, no more, no less.

Signatures are read from SGLang's three platform classes with ``inspect``; calls are found by parsing every module
of the installed ``sglang`` package (tests and the in-tree platform implementations left out) for calls on a
receiver whose name mentions ``platform`` (``current_platform.x(...)``, ``platform.x(...)``, ...). The table must
record exactly those call forms, plus its rows marked ``indirect`` (a bound method handed to a helper, a retired hook
served by its replacement) whose site names them, and the runtime's own calls.
"""

from __future__ import annotations

import ast
import functools
import inspect
from collections import defaultdict
from pathlib import Path

import pytest

from sglang_plugin_runtime.platforms import _interface_table as table

RUNTIME_SITE = "sglang_plugin_runtime"


def _sglang_classes() -> dict[str, type]:
    from sglang.multimodal_gen.runtime.platforms.interface import Platform
    from sglang.srt.platforms.device_mixin import DeviceMixin
    from sglang.srt.platforms.interface import SRTPlatform

    return {"DeviceMixin": DeviceMixin, "SRTPlatform": SRTPlatform, "diffusion Platform": Platform}


def _sglang_root() -> Path:
    import sglang

    return Path(sglang.__file__).parent


def _shape(raw: object) -> tuple[str, str]:
    """(kind, parameters without annotations) of a class-``__dict__`` entry, as the table writes them."""
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


@pytest.mark.parametrize("owner", ["DeviceMixin", "SRTPlatform", "diffusion Platform"])
def test_rows_are_exactly_the_names_and_signatures_sglang_declares(owner: str) -> None:
    declared = _declared(_sglang_classes()[owner])
    rows = {r.name: (r.kind, r.signature) for r in table.entries() if r.owner == owner and "0.5.23" in r.versions}
    assert rows == declared


def test_retired_rows_are_the_hooks_sglang_serves_and_what_it_asks_instead() -> None:
    from sglang.srt.platforms import interface

    served = set(interface._LEGACY_KV_POOL_HOOKS.values())
    assert {r.name for r in table.retired_entries()} == served
    for row in table.retired_entries():
        kind = next(k for k, hook in interface._LEGACY_KV_POOL_HOOKS.items() if hook == row.name)
        assert row.replacement == f"get_kv_pool_cls(self, *, kind) for kind={kind!r}"


def test_names_of_other_versions_are_no_name_of_0_5_23() -> None:
    declared = set().union(*(_declared(cls) for cls in _sglang_classes().values()))
    assert not declared & set(table.OTHER_VERSION_NAMES)


def _host_of(relative: str) -> str:
    return table.DIFFUSION if relative.startswith(("multimodal_gen/", "kernels/ops/diffusion/")) else table.SRT


def _scanned_calls() -> dict[tuple[str, str], set[tuple[int, tuple[str, ...]]]]:
    """(host, name) -> call forms (positional count, keyword names) found in the installed package."""
    names = {r.name for r in table.entries()}
    found: dict[tuple[str, str], set[tuple[int, tuple[str, ...]]]] = defaultdict(set)
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
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in names):
                continue
            if "platform" not in ast.unparse(node.func.value).lower():
                continue
            if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
                continue
            form = (len(node.args), tuple(sorted(k.arg for k in node.keywords if k.arg)))
            found[(_host_of(relative), node.func.attr)].add(form)
    return found


def test_recorded_calls_are_exactly_the_calls_in_sglangs_sources() -> None:
    scanned = _scanned_calls()
    recorded: dict[tuple[str, str], set[tuple[int, tuple[str, ...]]]] = defaultdict(set)
    for row in table.entries():
        for call in row.calls:
            if call.read or call.indirect or call.site.startswith(RUNTIME_SITE):
                continue
            recorded[(row.host, row.name)].add((call.args, tuple(sorted(call.kwargs))))
    assert dict(recorded) == dict(scanned)


def test_every_recorded_site_is_a_file_of_the_package_that_names_the_member() -> None:
    root = _sglang_root()
    for row in table.entries():
        for call in row.calls:
            if call.site.startswith(RUNTIME_SITE):
                continue
            path = root / call.site.split(" ")[0]
            assert path.is_file(), (row.name, call.site)
            text = path.read_text(encoding="utf-8")
            mentioned = row.name if not row.retired else "_LEGACY_KV_POOL_HOOKS"
            assert mentioned in text, (row.name, call.site)


def test_the_indirect_calls_happen_as_recorded() -> None:
    """The two indirect SRT calls: apply_server_args_defaults handed to a resolver that calls it with one
    argument, and get_cpu_architecture called with none by the cpu_arch property."""
    import sglang.srt.arg_groups.platform_hook as platform_hook
    from sglang.srt.arg_groups import overrides

    assert "current_platform.apply_server_args_defaults," in inspect.getsource(platform_hook)
    assert "result = resolve(recorder)" in inspect.getsource(overrides.record_foreign_defaults)
    from sglang.srt.platforms.device_mixin import DeviceMixin

    assert "self.get_cpu_architecture()" in inspect.getsource(DeviceMixin.cpu_arch.func)
