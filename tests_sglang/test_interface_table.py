"""The runtime's interface table says what the real SGLang 0.5.23 wheel declares and calls, as
SGLang itself sees it when imported.

The table is data, ``runtime/sglang_plugin_runtime/platforms/interface_table.jsonl`` (one JSON row
per line), written with every release's contract by ``scripts/sglang_releases.py`` from the wheels'
sources, parsed with ``ast`` (``test_release_data.py`` regenerates it). These tests hold it to the
installed package, imported: the signatures ``inspect`` gives SGLang's three platform classes, the
retired hooks SGLang serves, the files that make each call, and the calls the scan cannot see (a
bound method handed to a helper, a property that calls a method).
"""

from __future__ import annotations

import functools
import inspect
import json
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
DATA = REPO_ROOT / "runtime" / "sglang_plugin_runtime" / "platforms" / "interface_table.jsonl"
RUNTIME_SITE = "sglang_plugin_runtime"
RELEASED = "0.5.23"
#: SGLang's platform classes, by the table's ``owner``, and the host that calls each.
OWNERS = {"DeviceMixin": "srt", "SRTPlatform": "srt", "diffusion Platform": "diffusion"}


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
