"""``scripts/sglang_releases.py`` reads SGLang's sources with ``ast``, never importing them: what it
makes of a signature, a class's bases, a package's names, and which releases hold a fact. The whole
script, on the released wheels, runs in ``make test-sglang``
(``tests_sglang/test_release_data.py``)."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "sglang_releases.py"


@pytest.fixture(scope="module")
def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sglang_releases", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its process pool pickles its functions by module name
    spec.loader.exec_module(module)
    return module


SIGNATURES = """
def plain(self): ...
def defaults(self, device_id=0, name='x', *, kind, flag=None): ...
def varargs(cls, *args, **kwargs): ...
def positional(a, b=1, /, c=2, *d, e, **f): ...
def negative(self, offset=-1, ratio=0.5, sizes=(1, 2)): ...
"""


def test_a_signature_reads_as_inspect_prints_it(script: ModuleType) -> None:
    namespace: dict[str, object] = {}
    exec(SIGNATURES, namespace)
    for node in ast.parse(SIGNATURES).body:
        assert isinstance(node, ast.FunctionDef)
        expected = str(inspect.signature(namespace[node.name]))  # type: ignore[arg-type]
        assert script.render_parameters(node.args) == expected


def test_a_member_says_whether_its_base_raises_and_its_literal_default(script: ModuleType) -> None:
    source = textwrap.dedent(
        '''
        class Base:
            supported: list[str] = []
            def required(self):
                """Doc."""
                raise NotImplementedError
            def default(self, mode=None) -> str:
                return "inductor"
            def nothing(self):
                pass
            def computed(self):
                return self.x + 1
            @classmethod
            def klass(cls, device_id=0):
                raise NotImplementedError("say why")
            @property
            def prop(self):
                return 1
        '''
    )
    (cls,) = ast.parse(source).body
    assert isinstance(cls, ast.ClassDef)
    assert script.class_members(cls) == {
        "supported": {"kind": "attribute", "signature": "", "default": []},
        "required": {"kind": "method", "signature": "(self)", "required": True},
        "default": {"kind": "method", "signature": "(self, mode=None)", "default": "inductor"},
        "nothing": {"kind": "method", "signature": "(self)", "default": None},
        "computed": {"kind": "method", "signature": "(self)"},
        "klass": {"kind": "classmethod", "signature": "(cls, device_id=0)", "required": True},
        "prop": {"kind": "property", "signature": "", "default": 1},
    }


def test_a_class_base_is_resolved_to_where_sglang_defines_it(script: ModuleType) -> None:
    files = {
        "sglang/__init__.py": b"",
        "sglang/a.py": b"class Base:\n    def run(self): ...\n",
        "sglang/b/__init__.py": b"from ..a import Base as Alias\n",
        "sglang/b/c.py": (
            b"import torch\nfrom sglang.b import Alias\n"
            b"class Mixed(Alias, torch.nn.Module):\n    def step(self): ...\n"
            b"    class Inner:\n        pass\n"
        ),
        "sglang/d.py": b"from .a import *\n",
    }
    keyed = {path: (path, data) for path, data in files.items()}
    summaries = {path: script.summarize(path, data) for path, data in files.items()}
    release = script.Release("9.9", keyed, summaries)
    facts = set(release.facts())
    assert ("sglang.b.c", ".Mixed", "(sglang.a:Base,?)") in facts  # torch's Module: unknown
    assert {("sglang.b.c", ".Mixed", "step"), ("sglang.b.c", ".Mixed.Inner")} <= facts
    assert ("sglang.b", "Alias") in facts and ("sglang.d", "*") in facts


def test_a_span_names_runs_of_releases_open_to_the_newest(script: ModuleType) -> None:
    versions = ["0.1", "0.2", "0.3", "0.4", "0.5"]
    assert script.span([0, 1, 2, 3, 4], versions) == "0.1-"
    assert script.span([1, 2], versions) == "0.2-0.3"
    assert script.span([0, 2, 4], versions) == "0.1,0.3,0.5-"
