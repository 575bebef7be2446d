"""The hook registry against a model of its documented rules (docs/hooks.md), in random sequences.

A Hypothesis rule-based state machine registers hooks of every type and priority from three
plugins, in both target spellings, on a function, its re-exports and a ``from x import f`` copy, a
method and a classmethod, the same inherited through a subclass (also spelled through a module that
re-exports the class), a class REPLACE of that subclass, and on a module imported only when a rule
says so; and it applies, discards plugins and resets, in any order. After every step each binding
is called (positionally and with keywords) and its result and the order in which the hooks ran are
compared with the model: the chain a call runs is the live registrations on what the binding's path
names now, nested by ``(priority, registration order)``, last outermost, with a REPLACE innermost,
as SGLang's nested closures run it. Where nothing is in effect, every binding must hold the very
original object (so ``reset()`` restores everything).

``make test`` runs a bounded budget (``HOOKS_MODEL_EXAMPLES``, default 40 sequences);
``make test-hooks-model`` runs 20,000.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import itertools
import os
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from sglang_plugin_runtime.plugins.hook_registry import (
    HookRegistry,
    HookSource,
    HookType,
    Target,
    isolated_registry,
)

SOURCES = {
    "core": "def f(x):\n    return ['f', x]\n\n\n"
    "class Base:\n"
    "    def m(self, x):\n        return ['m', type(self).__name__, x]\n\n"
    "    @classmethod\n    def cm(cls, x):\n        return ['cm', cls.__name__, x]\n\n\n"
    "class Sub(Base):\n    pass\n",
    "api": "from .core import Sub, f\n",
    "user": "from .api import f\n",
    "late": "from .core import f\n\n\ndef g(x):\n    return ['g', x]\n",
}

#: What each target names: "f" (the function, wherever bound), "g", "Base.m", "Sub.m" (inherited,
#: on whatever class the path names), "Base.cm", "Sub.cm", "Sub" (the class, for a class REPLACE).
TARGETS = [
    ("f", "core.f"), ("f", "core:f"), ("f", "api.f"), ("f", "api:f"),
    ("f", "late.f"), ("f", "late:f"),
    ("g", "late.g"), ("g", "late:g"),
    ("Base.m", "core.Base.m"), ("Base.m", "core:Base.m"),
    ("Sub.m", "core.Sub.m"), ("Sub.m", "api.Sub.m"), ("Sub.m", "api:Sub.m"),
    ("Base.cm", "core.Base.cm"), ("Base.cm", "core:Base.cm"),
    ("Sub.cm", "core:Sub.cm"), ("Sub.cm", "api.Sub.cm"),
    ("Sub", "core.Sub"), ("Sub", "api:Sub"),
]  # fmt: skip
HOOK_TYPES = [HookType.BEFORE, HookType.AFTER, HookType.AROUND, HookType.REPLACE]
LOG: list[str] = []


class MemoryModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Modules made on the fly from source text (a package and its submodules), importable."""

    def __init__(self, package: str) -> None:
        self.package = package
        self.sources = {
            package: "",
            **{f"{package}.{name}": text for name, text in SOURCES.items()},
        }

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name not in self.sources:
            return None
        return importlib.util.spec_from_loader(name, self, is_package=name == self.package)

    def create_module(self, spec: Any) -> None:
        return None

    def exec_module(self, module: Any) -> None:
        exec(
            compile(self.sources[module.__name__], f"<model {module.__name__}>", "exec"),
            module.__dict__,
        )


def make_hook(hook_type: HookType, label: str, changes: bool) -> Callable[..., Any]:
    """A hook that logs when it runs and leaves a visible trace (``changes``: a BEFORE's new
    arguments, an AFTER's new result)."""
    if hook_type is HookType.BEFORE:

        def hook(*args: Any, **kwargs: Any) -> Any:
            LOG.append(f"before {label}")
            if not changes:
                return None
            if "x" in kwargs:
                return args, {**kwargs, "x": (*kwargs["x"], label)}
            return (*args[:-1], (*args[-1], label)), kwargs

    elif hook_type is HookType.AFTER:

        def hook(result: Any, *args: Any, **kwargs: Any) -> Any:
            LOG.append(f"after {label} {kwargs['x'] if 'x' in kwargs else args[-1]}")
            return [*result, label] if changes else None

    elif hook_type is HookType.AROUND:

        def hook(original_fn: Any, *args: Any, **kwargs: Any) -> Any:
            LOG.append(f"around-in {label}")
            result = original_fn(*args, **kwargs)
            LOG.append(f"around-out {label}")
            return [*result, label]

    else:

        def hook(*args: Any, **kwargs: Any) -> Any:
            LOG.append(f"replace {label}")
            return [f"replaced by {label}", kwargs["x"] if "x" in kwargs else args[-1]]

    hook.__qualname__ = f"{hook_type.value}_{label}"
    return hook


def nest(regs: list[Reg], core: Callable[..., Any]) -> Callable[..., Any]:
    """SGLang's composition, one closure per hook: REPLACE innermost (the last wins), then the
    others in ``(priority, registration order)``, the last outermost."""
    regs = sorted(regs, key=lambda r: (r.priority, r.seq))
    replaces = [r for r in regs if r.hook_type is HookType.REPLACE]
    fn = replaces[-1].hook if replaces else core
    for reg in (r for r in regs if r.hook_type is not HookType.REPLACE):
        fn = LAYERS[reg.hook_type](reg.hook, fn)
    return fn


def _before(hook: Callable[..., Any], fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        new = hook(*args, **kwargs)
        if new is not None:
            args, kwargs = new
        return fn(*args, **kwargs)

    return call


def _after(hook: Callable[..., Any], fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        result = fn(*args, **kwargs)
        new = hook(result, *args, **kwargs)
        return result if new is None else new

    return call


def _around(hook: Callable[..., Any], fn: Callable[..., Any]) -> Callable[..., Any]:
    return lambda *args, **kwargs: hook(fn, *args, **kwargs)


LAYERS = {HookType.BEFORE: _before, HookType.AFTER: _after, HookType.AROUND: _around}


@dataclass
class Reg:
    seq: int
    names: str  # what the target names (TARGETS)
    target: str
    hook_type: HookType
    priority: int
    source: str
    hook: Any


class HookRegistryModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.package = f"hook_model_{uuid.uuid4().hex[:10]}"
        self.finder = MemoryModules(self.package)
        sys.meta_path.append(self.finder)
        self.isolation = isolated_registry()
        self.isolation.__enter__()
        self.core = importlib.import_module(f"{self.package}.core")
        self.api = importlib.import_module(f"{self.package}.api")
        self.user = importlib.import_module(f"{self.package}.user")
        self.late: Any = None
        self.f, self.base, self.sub = self.core.f, self.core.Base, self.core.Sub
        self.raw = {name: self.base.__dict__[name] for name in ("m", "cm")}
        self.replacements = {label: type(label, (self.sub,), {}) for label in ("R1", "R2")}
        self.regs: list[Reg] = []
        self.applied = False
        self.seq = itertools.count()

    def teardown(self) -> None:
        self.isolation.__exit__(None, None, None)
        self.regs, self.applied = [], False
        self.check_every_binding()  # what reset() left: every original
        sys.meta_path.remove(self.finder)
        for name in [m for m in sys.modules if m.partition(".")[0] == self.package]:
            del sys.modules[name]

    # ------------------------------------------------------------------ rules

    @initialize()
    def start(self) -> None:
        self.check_every_binding()

    @rule(
        where=st.sampled_from(TARGETS),
        hook_type=st.sampled_from(HOOK_TYPES),
        priority=st.sampled_from([0, 0, 1, -1]),
        source=st.sampled_from(["p0", "p1", "p2"]),
        changes=st.booleans(),
        replacement=st.sampled_from(["R1", "R2"]),
    )
    def register(
        self,
        where: tuple[str, str],
        hook_type: HookType,
        priority: int,
        source: str,
        changes: bool,
        replacement: str,
    ) -> None:
        names, path = where
        if names == "Sub":  # a class target takes a class REPLACE only
            hook_type, hook = HookType.REPLACE, self.replacements[replacement]
        else:
            hook = make_hook(hook_type, f"{hook_type.value[0]}{next(self.seq)}", changes)
        seq = next(self.seq)
        target = f"{self.package}.{path}"
        self.regs.append(Reg(seq, names, target, hook_type, priority, source, hook))
        source_of = HookSource(source, None)
        HookRegistry.register(target, hook, hook_type, source=source_of, priority=priority)

    @rule()
    def apply_hooks(self) -> None:
        self.applied = True
        HookRegistry.apply_hooks()

    @rule(source=st.sampled_from(["p0", "p1", "p2"]))
    def discard_source(self, source: str) -> None:
        dropped = HookRegistry.discard_source(HookSource(source, None))
        assert dropped == sum(r.source == source for r in self.regs)
        self.regs = [r for r in self.regs if r.source != source]

    @rule()
    def reset(self) -> None:
        HookRegistry.reset()
        self.regs, self.applied = [], False

    @precondition(lambda self: self.late is None)
    @rule()
    def import_late_module(self) -> None:
        self.late = importlib.import_module(f"{self.package}.late")
        self.g = getattr(self.late.g, "__wrapped__", self.late.g)  # pending hooks apply at once

    # ------------------------------------------------------------------ the model

    def in_effect(self, reg: Reg) -> bool:
        """Applied (apply_hooks() ran since the last reset) and resolvable (its module imported)."""
        return self.applied and (".late" not in reg.target or self.late is not None)

    def chain(self, names: str) -> list[Reg]:
        return [r for r in self.regs if r.names == names and self.in_effect(r)]

    def current_sub(self) -> type:
        """The class ``core.Sub`` names: the winning class REPLACE, or the original."""
        replaces = sorted(self.chain("Sub"), key=lambda r: (r.priority, r.seq))
        return replaces[-1].hook if replaces else self.sub

    def expected_method(self, klass: type, attribute: str) -> Callable[..., Any]:
        core = self.raw[attribute].__func__ if attribute == "cm" else self.raw[attribute]
        fn = nest(self.chain(f"Base.{attribute}"), core)
        if self.current_sub() in klass.__mro__ and self.chain(f"Sub.{attribute}"):  # inherits it
            fn = nest(self.chain(f"Sub.{attribute}"), fn)
        first = klass if attribute == "cm" else klass()
        return lambda *args, **kwargs: fn(first, *args, **kwargs)

    # ------------------------------------------------------------------ checks

    @invariant()
    def check_every_binding(self) -> None:
        calls: list[tuple[str, Callable[..., Any], Callable[..., Any]]] = []
        modules = [self.core, self.api, self.user] + ([self.late] if self.late is not None else [])
        for module in modules:
            calls.append((f"{module.__name__}.f", module.f, nest(self.chain("f"), self.f)))
        if self.late is not None:
            calls.append(("late.g", self.late.g, nest(self.chain("g"), self.g)))
        current = self.current_sub()
        assert self.core.Sub is current and self.api.Sub is current
        for klass in [self.base, self.sub, *self.replacements.values()]:
            for attribute in ("m", "cm"):
                owner = klass if attribute == "cm" else klass()
                calls.append(
                    (
                        f"{klass.__name__}.{attribute}",
                        getattr(owner, attribute),
                        self.expected_method(klass, attribute),
                    )
                )
        for name, actual, expected in calls:
            for keywords in (False, True):
                args, kwargs = ((), {"x": ()}) if keywords else (((),), {})
                LOG.clear()
                want = (expected(*args, **kwargs), list(LOG))
                LOG.clear()
                got = (actual(*args, **kwargs), list(LOG))
                assert got == want, f"{name}: {got} != {want} (keywords: {keywords})"
        self.check_identities()
        self.check_reports()

    def check_identities(self) -> None:
        """Nothing in effect: the very original object; else one wrapper of the original."""
        modules = [m for m in (self.core, self.api, self.user, self.late) if m is not None]
        functions = [(module, "f", self.f, self.chain("f")) for module in modules]
        if self.late is not None:
            functions.append((self.late, "g", self.g, self.chain("g")))
        for module, name, original, chain in functions:
            bound = module.__dict__[name]
            assert bound is original if not chain else bound.__wrapped__ is original, (module, name)
        for attribute, raw in self.raw.items():
            assert (self.base.__dict__[attribute] is raw) == (not self.chain(f"Base.{attribute}"))
            for klass in [self.sub, *self.replacements.values()]:
                hooked = klass is self.current_sub() and bool(self.chain(f"Sub.{attribute}"))
                assert (attribute in klass.__dict__) == hooked, (klass, attribute)

    def check_reports(self) -> None:
        """describe() has one report per live target path, with the status the model expects;
        is_hook_applied() agrees."""
        statuses = {Target.parse(r.target).dotted: r.status for r in HookRegistry.describe()}
        expected = {}
        for reg in self.regs:
            in_effect = self.in_effect(reg)
            status = "applied" if in_effect else "pending" if self.applied else "registered"
            expected[Target.parse(reg.target).dotted] = status
            assert HookRegistry.is_hook_applied(reg.target, reg.hook, reg.hook_type) == in_effect
        assert statuses == expected


def test_the_hook_registry_follows_its_model_in_random_sequences() -> None:
    examples = int(os.environ.get("HOOKS_MODEL_EXAMPLES", "40"))
    budget = settings(
        max_examples=examples,
        stateful_step_count=12,
        deadline=None,
        database=None,
        derandomize=examples <= 40,  # the bounded run in make test: the same sequences every time
        suppress_health_check=list(HealthCheck),
    )
    HookRegistryModel.TestCase.settings = budget
    HookRegistryModel.TestCase().runTest()
