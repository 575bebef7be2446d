"""Plugins shaped like the ones in the wild: the runtime selects each exactly when SGLang 0.5.23
does.

Real out-of-tree platforms (a Tenstorrent plugin, FlagOS's multi-vendor plugin, the quick start in
SGLang's docs) define extra public methods, retired hooks, renamed parameters and vendor properties.
Each shape below is our own plugin written that way, installed as a distribution and selected with
``SGLANG_PLATFORM`` by SGLang 0.5.23 and by the runtime, each in a fresh process. Then the host's
own calls of every member the plugin defines are made, in the form the interface table records
(``test_interface_table.py`` proves those are SGLang's real calls). The verdict (``runs``, or
``fails: <member>``) must be the same for both; the table of outcomes becomes the "plugins in the
wild" section of docs/sglang.md, written the way the compatibility matrix is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from generated_docs import sync_section
from scenarios import run_python

from sglang_plugin_runtime.testing import write_fake_distribution

IMPLS = {
    "sglang": {
        "platforms": "sglang.srt.platforms",
        "interface": "sglang.srt.platforms.interface",
        "device_mixin": "sglang.srt.platforms.device_mixin",
    },
    "ours": {
        "platforms": "sglang_plugin_runtime.platforms",
        "interface": "sglang_plugin_runtime.platforms.interface",
        "device_mixin": "sglang_plugin_runtime.platforms.device_mixin",
    },
}

PLUGIN = """
from {device_mixin} import DeviceMixin, PlatformEnum
from {interface} import SRTPlatform


class WildDeviceMixin(DeviceMixin):
    _enum = PlatformEnum.OOT
    device_name = "wild"
    device_type = "wild"

    def get_device_total_memory(self, device_id=0):
        return 16 << 30

    def get_current_memory_usage(self, device=None):
        return 0.0
{mixin}

class WildSRTPlatform(SRTPlatform, WildDeviceMixin):
    def get_default_attention_backend(self):
        return "torch_native"

    def get_default_speculative_draft_attention_backend(self, algorithm):
        return "torch_native"
{platform}

def activate():
    return "wild_platform.WildSRTPlatform"
"""


@dataclass(frozen=True)
class Shape:
    id: str
    title: str
    verdict: str  # "runs", or "fails: <member>"
    mixin: str = ""
    platform: str = ""


SHAPES = [
    Shape("documented", "Device mixin + SRT platform, as SGLang's docs lay one out", "runs"),
    Shape(
        "extra_methods",
        "Extra public methods SGLang never calls (`support_cuda_graph`, "
        "`support_piecewise_cuda_graph`, `supports_fp8`)",
        "runs",
        platform="""
    def support_cuda_graph(self):
        return False

    def support_piecewise_cuda_graph(self):
        return False

    @classmethod
    def supports_fp8(cls):
        return False
""",
    ),
    Shape(
        "retired_hooks",
        "Retired KV-pool hooks (`get_mha_kv_pool_cls`, `get_mla_kv_pool_cls`) and an older "
        "version's `get_nsa_kv_pool_cls`",
        "runs",
        platform="""
    def get_mha_kv_pool_cls(self):
        return dict

    def get_mla_kv_pool_cls(self):
        return list

    def get_nsa_kv_pool_cls(self):
        return set
""",
    ),
    Shape(
        "renamed_parameter",
        "A renamed positional parameter without default: `get_device(self, local_rank)`",
        "runs",
        mixin="""
    def get_device(self, local_rank):
        return "wild:" + str(local_rank)
""",
    ),
    Shape(
        "vendor_property",
        "Vendor properties and methods (`vendor_name`, `firmware_version()`)",
        "runs",
        platform="""
    @property
    def vendor_name(self):
        return "Wild Silicon"

    def firmware_version(self):
        return "1.2.3"
""",
    ),
    Shape(
        "vendor_mixin",
        "A vendor `DeviceMixin` with an extra public method (`get_device_count`)",
        "runs",
        mixin="""
    def get_device_count(self):
        return 4
""",
    ),
    Shape(
        "near_miss",
        "A misspelled override (`get_devce_name`)",
        "runs",
        mixin="""
    def get_devce_name(self, device_id=0):
        return "Wild 1000"
""",
    ),
    Shape(
        "pin_memory",
        "`is_pin_memory_available(self)`, without the device SGLang passes",
        "fails: is_pin_memory_available",
        mixin="""
    def is_pin_memory_available(self):
        return False
""",
    ),
    Shape(
        "kv_pool_kind",
        "`get_kv_pool_cls(self)`, without the `kind` SGLang passes",
        "fails: get_kv_pool_cls",
        platform="""
    def get_kv_pool_cls(self):
        return None
""",
    ),
]

RUN = """
import logging, re, warnings
warnings.simplefilter("always")
messages = []
class H(logging.Handler):
    def emit(self, record):
        messages.append(record.getMessage())
logging.getLogger().addHandler(H(logging.WARNING))
warnings.showwarning = lambda message, category, *a, **k: messages.append(
    f"{{category.__name__}}: {{message}}")
out = {{"selected": None, "error": None, "calls": {{}}, "served": {{}}, "kit": []}}
try:
    from {platforms} import current_platform as platform
except Exception as exc:
    root = exc
    while root.__cause__ is not None:
        root = root.__cause__
    out["error"] = f"{{type(root).__name__}}: {{root}}"
else:
    from sglang_plugin_runtime.platforms._contract import interface_row
    from sglang_plugin_runtime.testing import check_platform_conformance
    values = {{"device_id": 0, "device": None, "local_rank": 0, "algorithm": "EAGLE",
               "backend": "triton", "phase": "draft_decode", "kind": "mha", "mode": None,
               "quantization": "fp8", "server_args": None, "model": None}}
    cls = type(platform)
    out["selected"] = cls.__name__
    own = [n for k in cls.__mro__ if k.__module__ == "wild_platform"
           for n in vars(k) if not n.startswith("_")]
    for name in dict.fromkeys(own):
        row = interface_row(name, "srt")
        if row is None:
            continue
        if "replacement" in row:
            kind = name.split("_")[1]
            served = platform.get_kv_pool_cls(kind=kind)
            out["served"][kind] = getattr(served, "__name__", repr(served))
            continue
        params = [p.strip().split("=")[0].strip("*")
                  for p in row["signature"].strip("()").split(",")][1:]
        for call in row.get("calls", ()):
            try:
                if call.get("read"):
                    getattr(platform, name)
                else:
                    args = [values[p] for p in params[: call.get("args", 0)]]
                    result = getattr(platform, name)(
                        *args, **{{k: values[k] for k in call.get("kwargs", ())}})
                    if hasattr(result, "__enter__"):
                        with result:
                            pass
                out["calls"][name] = "ok"
            except TypeError as exc:
                out["calls"][name] = f"TypeError: {{exc}}"
                break
    out["kit"] = sorted(f"{{p.kind}} {{p.attribute}}" for p in check_platform_conformance(cls)
                        if p.kind in ("misspelled", "retired", "signature", "binding"))
out["warnings"] = messages
report(out)
"""

RESULTS: dict[tuple[str, str], dict] = {}


def _observe(shape: Shape, impl: str, root: Path) -> dict:
    source = PLUGIN.format(
        mixin=shape.mixin.rstrip(), platform=shape.platform.rstrip(), **IMPLS[impl]
    )
    write_fake_distribution(
        root,
        "wild-platform",
        entry_points={"sglang.srt.platforms": {"wild": "wild_platform:activate"}},
        modules={"wild_platform.py": source},
    )
    return run_python(
        RUN.format(**IMPLS[impl]), paths=[root], env={"SGLANG_PLATFORM": "wild"}
    ).result


def verdict(out: dict) -> str:
    """``runs``, or ``fails: <member>`` for the first member whose host call cannot work."""
    if out["error"] is not None:
        names = re.findall(r"WildDeviceMixin\.(\w+):|WildSRTPlatform\.(\w+):", out["error"])
        members = sorted({a or b for a, b in names})
        return f"fails: {', '.join(members)}" if members else f"fails: {out['error']}"
    failed = [name for name, status in out["calls"].items() if status != "ok"]
    return f"fails: {', '.join(failed)}" if failed else "runs"


def _describe(impl: str, out: dict) -> str:
    """The outcome, as the docs table shows it."""
    if out["error"] is not None:
        return (
            f"refused when the class is defined: {out['error'].split(':')[0]} "
            "naming the call SGLang makes"
        )
    parts = [f"selected ({out['selected']})"]
    failed = {n: s for n, s in out["calls"].items() if s != "ok"}
    if failed:
        parts += [f"`{name}` raises TypeError when SGLang calls it" for name in failed]
    if out["served"]:
        served = ", ".join(f"{kind} -> {cls}" for kind, cls in out["served"].items())
        warned = (
            "DeprecationWarning"
            if any(w.startswith("DeprecationWarning") for w in out["warnings"])
            else "deprecation logged"
        )
        parts.append(f"`get_kv_pool_cls` serves the retired hooks ({served}; {warned})")
    typo = [w for w in out["warnings"] if "did you mean" in w]
    if typo:
        parts.append("WARNING: " + typo[0].split(": ", 1)[1].split(" (")[0])
    return "; ".join(parts)


@pytest.mark.subprocess
@pytest.mark.parametrize("impl", list(IMPLS))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.id)
def test_the_same_verdict_on_sglang_and_the_runtime(
    shape: Shape, impl: str, tmp_path: Path
) -> None:
    out = _observe(shape, impl, tmp_path)
    RESULTS[(shape.id, impl)] = out
    assert verdict(out) == shape.verdict, out


def _result(shape_id: str, impl: str) -> dict:
    if (shape_id, impl) not in RESULTS:
        pytest.skip(f"{shape_id} [{impl}] did not run in this session")
    return RESULTS[(shape_id, impl)]


def test_retired_hooks_are_served_the_same_way() -> None:
    for impl in IMPLS:
        out = _result("retired_hooks", impl)
        assert out["served"] == {"mha": "dict", "mla": "list"}
        assert any(
            "get_mha_kv_pool_cls" in w and "get_kv_pool_cls" in w for w in out["warnings"]
        ), impl
    assert any(
        w.startswith("DeprecationWarning") for w in _result("retired_hooks", "ours")["warnings"]
    )


def test_a_misspelling_is_never_silent_on_the_runtime() -> None:
    sglang, ours = _result("near_miss", "sglang"), _result("near_miss", "ours")
    assert not [w for w in sglang["warnings"] if "did you mean" in w]
    assert [w for w in ours["warnings"] if "did you mean 'get_device_name'" in w]
    # The kit fails on it, whichever host's classes the plugin is built on.
    assert sglang["kit"] == ours["kit"] == ["misspelled get_devce_name"]


def test_the_kit_passes_every_shape_sglang_runs_but_misspellings_and_retired_hooks() -> None:
    for shape in SHAPES:
        if shape.verdict != "runs":
            continue
        for impl in IMPLS:
            kit = _result(shape.id, impl)["kit"]
            expected = {
                "near_miss": ["misspelled get_devce_name"],
                "retired_hooks": ["retired get_mha_kv_pool_cls", "retired get_mla_kv_pool_cls"],
            }
            assert kit == expected.get(shape.id, []), (shape.id, impl)


def render_table() -> str:
    lines = [
        "| plugin shape | SGLang 0.5.23 | sglang_plugin_runtime | verdict | the testing kit's "
        "conformance check |",
        "|---|---|---|---|---|",
    ]
    for shape in SHAPES:
        theirs, ours = RESULTS[(shape.id, "sglang")], RESULTS[(shape.id, "ours")]
        same = "same" if verdict(theirs) == verdict(ours) else "DIFFERENT"
        # The kit judges the plugin's class on either host's bases; a class the runtime refused, on
        # SGLang's.
        kit = (ours if ours["selected"] else theirs)["kit"]
        cells = [
            shape.title,
            _describe("sglang", theirs),
            _describe("ours", ours),
            f"{same}: {verdict(ours).replace('fails: ', 'fails on ')}",
            "passes"
            if not kit
            else "fails: " + ", ".join(f"`{k.split()[1]}` ({k.split()[0]})" for k in kit),
        ]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    lines.append("")
    lines.append(
        f"{len(SHAPES)} shapes: every verdict is the same on both. The runtime refuses a class "
        "only when a call SGLang makes cannot work, and says so when the class is defined instead "
        "of at the first call."
    )
    return "\n".join(lines)


def test_the_doc_carries_the_generated_table() -> None:
    """Runs last: docs/sglang.md between the markers is exactly the table this run observed."""
    missing = [(s.id, impl) for s in SHAPES for impl in IMPLS if (s.id, impl) not in RESULTS]
    if missing:
        pytest.skip(
            f"not every shape ran in this session ({len(missing)} missing); the table needs all"
        )
    sync_section("wild", render_table(), "tests_sglang/test_plugins_in_the_wild.py")
