"""One behavioural suite, two implementations: SGLang 0.5.23's hook registry and loaders, and ours.

Every scenario runs against both (``impl`` is ``sglang`` or ``ours``) and states what each must do.
Where they differ, the difference is deliberate, documented and tested here: the expected outcome of
each side is asserted. The observed outcomes become the compatibility matrix in docs/sglang.md
(between the matrix markers): the last test renders it, rewrites the doc when it changed, and fails
so that the new doc gets committed.

Hook scenarios run in this process on throwaway target modules (SGLang's ``reset()`` leaves its
patches behind, so no scenario ever touches a shared module). Loader and platform scenarios run in a
fresh subprocess each.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import itertools
import logging
import pickle
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from generated_docs import sync_section
from scenarios import run_python

from sglang_plugin_runtime.testing import write_fake_distribution

IMPLS = {
    "sglang": {
        "hooks": "sglang.srt.plugins.hook_registry",
        "plugins": "sglang.srt.plugins",
        "platforms": "sglang.srt.platforms",
        "interface": "sglang.srt.platforms.interface",
        "device_mixin": "sglang.srt.platforms.device_mixin",
    },
    "ours": {
        "hooks": "sglang_plugin_runtime.plugins.hook_registry",
        "plugins": "sglang_plugin_runtime.plugins",
        "platforms": "sglang_plugin_runtime.platforms",
        "interface": "sglang_plugin_runtime.platforms.interface",
        "device_mixin": "sglang_plugin_runtime.platforms.device_mixin",
    },
}


@dataclass(frozen=True)
class Scenario:
    id: str
    title: str
    run: Callable[..., str]
    sglang: str  # expected outcome with SGLang 0.5.23
    ours: str  # expected outcome with sglang_plugin_runtime
    why: str = ""  # why ours differs (required when it does)
    group: str = "hooks"


SCENARIOS: list[Scenario] = []
RESULTS: dict[tuple[str, str], str] = {}


def scenario(
    title: str, *, sglang: str, ours: str | None = None, why: str = "", group: str = "hooks"
):
    def decorator(run: Callable[..., str]) -> Callable[..., str]:
        SCENARIOS.append(
            Scenario(run.__name__, title, run, sglang, sglang if ours is None else ours, why, group)
        )
        return run

    return decorator


# --------------------------------------------------------------------------------------------------
# In-process hook scenarios: throwaway modules, the implementation's registry
# --------------------------------------------------------------------------------------------------

_counter = itertools.count()


class Env:
    """What a hook scenario gets: the implementation's registry module and a maker of fresh target
    modules."""

    def __init__(self, impl: str, root: Path) -> None:
        self.impl = impl
        self.hooks = importlib.import_module(IMPLS[impl]["hooks"])
        self.Registry = self.hooks.HookRegistry
        self.T = self.hooks.HookType
        self.root = root

    def module(self, source: str, *, imported: bool = True, name: str | None = None) -> Any:
        """Write a fresh module (``{self}`` in the source is its own name); import it unless asked
        not to."""
        name = name or f"compat_{self.impl}_{next(_counter)}"
        (self.root / f"{name}.py").write_text(
            textwrap.dedent(source.replace("{self}", name)), encoding="utf-8"
        )
        importlib.invalidate_caches()
        return importlib.import_module(name) if imported else name

    def apply(self) -> None:
        self.Registry.apply_hooks()


@pytest.fixture
def env(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    impl = request.param
    root = tmp_path_factory.mktemp(f"compat-{impl}")
    sys.path.insert(0, str(root))
    e = Env(impl, root)
    e.Registry.reset()
    try:
        yield e
    finally:
        e.Registry.reset()
        sys.path.remove(str(root))


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def warned(fn: Callable[[], Any]) -> bool:
    """Whether ``fn()`` logged a WARNING (any logger)."""
    handler = _Capture()
    logging.getLogger().addHandler(handler)
    try:
        fn()
    finally:
        logging.getLogger().removeHandler(handler)
    return bool(handler.records)


FUNC = """
def f(x):
    "Doc of f."
    return x
"""


@scenario("BEFORE rewrites the arguments", sglang="f(2) -> 20")
def before(e: Env) -> str:
    m = e.module(FUNC)
    e.Registry.register(f"{m.__name__}.f", lambda x: ((x * 10,), {}), e.T.BEFORE)
    e.apply()
    return f"f(2) -> {m.f(2)}"


@scenario("AFTER replaces the result; returning None keeps it", sglang="f(2) -> 3")
def after(e: Env) -> str:
    m = e.module(FUNC)
    e.Registry.register(f"{m.__name__}.f", lambda r, x: r + 1, e.T.AFTER)
    e.Registry.register(f"{m.__name__}.f", lambda r, x: None, e.T.AFTER)
    e.apply()
    return f"f(2) -> {m.f(2)}"


@scenario(
    "Composition: REPLACE innermost, the rest nested in registration order",
    sglang="before, around-in, replace, around-out, after",
)
def composition(e: Env) -> str:
    m = e.module(FUNC)
    trace: list[str] = []
    t = f"{m.__name__}.f"

    def around(orig, x):
        trace.append("around-in")
        r = orig(x)
        trace.append("around-out")
        return r

    e.Registry.register(t, around, e.T.AROUND)
    e.Registry.register(t, lambda x: trace.append("before"), e.T.BEFORE)
    e.Registry.register(t, lambda x: trace.append("replace") or x, e.T.REPLACE)
    e.Registry.register(t, lambda r, x: trace.append("after"), e.T.AFTER)
    e.apply()
    m.f(1)
    return ", ".join(trace)


@scenario("Two REPLACE hooks: the last registered wins, with a warning", sglang="last wins; warned")
def two_replace(e: Env) -> str:
    m = e.module(FUNC)
    t = f"{m.__name__}.f"
    e.Registry.register(t, lambda x: "first", e.T.REPLACE)
    w = warned(lambda: e.Registry.register(t, lambda x: "second", e.T.REPLACE) or e.apply())
    return f"{'last wins' if m.f(0) == 'second' else 'first wins'}; {'warned' if w else 'silent'}"


@scenario(
    "Class REPLACE keeps type identity, `from x import Cls` copies follow",
    sglang="replaced; copy follows",
)
def class_replace(e: Env) -> str:
    m = e.module("class Sampler:\n    def sample(self):\n        return 'greedy'\n")
    user = e.module(f"from {m.__name__} import Sampler\n")

    class Better(m.Sampler):
        def sample(self) -> str:
            return "better"

    e.Registry.register(f"{m.__name__}.Sampler", Better, e.T.REPLACE)
    e.apply()
    ok = m.Sampler is Better and m.Sampler().sample() == "better"
    return (
        f"{'replaced' if ok else 'not replaced'}; "
        f"{'copy follows' if user.Sampler is Better else 'copy stale'}"
    )


@scenario("A non-REPLACE hook with a class is refused at register()", sglang="TypeError")
def class_hook_type(e: Env) -> str:
    m = e.module("class C:\n    pass\n")
    try:
        e.Registry.register(f"{m.__name__}.C", type("H", (), {}), e.T.AFTER)
    except TypeError:
        return "TypeError"
    return "accepted"


@scenario(
    "classmethod and staticmethod hooked on their own class", sglang="C.c() -> C!; C.s() -> s!"
)
def class_and_static(e: Env) -> str:
    m = e.module("""
        class C:
            @classmethod
            def c(cls):
                return cls.__name__
            @staticmethod
            def s():
                return "s"
    """)
    e.Registry.register(f"{m.__name__}.C.c", lambda r, *a: r + "!", e.T.AFTER)
    e.Registry.register(f"{m.__name__}.C.s", lambda r, *a: r + "!", e.T.AFTER)
    e.apply()
    return f"C.c() -> {m.C.c()}; C.s() -> {m.C.s()}"


def _call(fn: Callable[[], Any]) -> str:
    try:
        return str(fn())
    except Exception as exc:
        return type(exc).__name__


@scenario(
    "Inherited classmethod hooked through a subclass",
    sglang="Sub.m() -> Sub!; Sub().m() -> TypeError; SubSub.m() -> Sub!; Base.m() -> Base",
    ours="Sub.m() -> Sub!; Sub().m() -> Sub!; SubSub.m() -> SubSub!; Base.m() -> Base",
    why=(
        "SGLang wraps the bound method and stores a plain function on the subclass: instance calls "
        "break and sub-subclasses get the wrong `cls`. Ours rebuilds a classmethod on the "
        "subclass."
    ),
)
def inherited_classmethod(e: Env) -> str:
    m = e.module("""
        class Base:
            @classmethod
            def m(cls):
                return cls.__name__
        class Sub(Base):
            pass
        class SubSub(Sub):
            pass
    """)
    e.Registry.register(f"{m.__name__}.Sub.m", lambda r, *a: r + "!", e.T.AFTER)
    e.apply()
    return (
        f"Sub.m() -> {_call(m.Sub.m)}; Sub().m() -> {_call(lambda: m.Sub().m())}; "
        f"SubSub.m() -> {_call(m.SubSub.m)}; Base.m() -> {_call(m.Base.m)}"
    )


@scenario(
    "property hooked with AFTER",
    sglang="C().p -> method (the property is gone)",
    ours="C().p -> 2",
    why=(
        "SGLang wraps the property object in a function; ours wraps the getter and keeps a "
        "property."
    ),
)
def property_hook(e: Env) -> str:
    m = e.module("class C:\n    @property\n    def p(self):\n        return 1\n")
    e.Registry.register(f"{m.__name__}.C.p", lambda r, *a: r + 1, e.T.AFTER)
    e.apply()
    value = _call(lambda: m.C().p)
    return f"C().p -> {value if value in ('2', 'TypeError') else 'method (the property is gone)'}"


@scenario(
    "async def target with an AFTER hook",
    sglang="coroutine function: False; AFTER sees coroutine; await -> 1",
    ours="coroutine function: True; AFTER sees int; await -> 2",
    why=(
        "SGLang's wrapper is synchronous: the hook gets an un-awaited coroutine and cannot change "
        "the result, and `inspect.iscoroutinefunction` turns False (frameworks then call it "
        "wrongly)."
    ),
)
def async_after(e: Env) -> str:
    m = e.module("async def f(x):\n    return x\n")
    seen: list[str] = []

    def hook(result, *a):
        seen.append(type(result).__name__)
        return result + 1 if isinstance(result, int) else None

    e.Registry.register(f"{m.__name__}.f", hook, e.T.AFTER)
    e.apply()
    value = asyncio.run(m.f(1))
    return (
        f"coroutine function: {inspect.iscoroutinefunction(m.f)}; "
        f"AFTER sees {seen[0]}; await -> {value}"
    )


@scenario("Stale `from x import f` copy in another module", sglang="copy fires")
def stale_copy(e: Env) -> str:
    m = e.module(FUNC)
    user = e.module(f"from {m.__name__} import f\n")
    e.Registry.register(f"{m.__name__}.f", lambda r, x: "hooked", e.T.AFTER)
    e.apply()
    return "copy fires" if user.f(0) == "hooked" else "copy stale"


@scenario(
    "A hook module's own alias `from x import f as _orig`",
    sglang="alias rebound to the wrapper",
    ours="alias left alone",
    why=(
        "SGLang rebinds every global that is the original, whatever its name, so a REPLACE that "
        "calls `_orig` recurses into itself. Ours rebinds only names equal to the target's own "
        "name."
    ),
)
def renamed_alias(e: Env) -> str:
    m = e.module(FUNC)
    user = e.module(f"from {m.__name__} import f as _orig\n")
    original = m.f
    e.Registry.register(f"{m.__name__}.f", lambda r, x: "hooked", e.T.AFTER)
    e.apply()
    return "alias left alone" if user._orig is original else "alias rebound to the wrapper"


@scenario(
    "reset() after apply_hooks()",
    sglang="patch stays (registry cleared only)",
    ours="original restored (identity)",
    why=(
        "SGLang's reset() forgets hooks but leaves every patch in place; ours undoes each setattr "
        "and rebinding exactly."
    ),
)
def reset_undoes(e: Env) -> str:
    m = e.module(FUNC)
    user = e.module(f"from {m.__name__} import f\n")
    original = m.f
    e.Registry.register(f"{m.__name__}.f", lambda r, x: "hooked", e.T.AFTER)
    e.apply()
    e.Registry.reset()
    restored = m.f is original and user.f is original and m.f(0) == 0
    return "original restored (identity)" if restored else "patch stays (registry cleared only)"


@scenario(
    "Hook registered after apply_hooks() already patched the target",
    sglang="late hook never runs",
    ours="late hook runs",
    why=(
        "SGLang skips targets it already patched, so the late hook is silently dropped; ours "
        "rebuilds the target's wrapper."
    ),
)
def late_registration(e: Env) -> str:
    m = e.module(FUNC)
    t = f"{m.__name__}.f"
    e.Registry.register(t, lambda r, x: r + 1, e.T.AFTER)
    e.apply()
    e.Registry.register(t, lambda r, x: r * 10, e.T.AFTER)
    e.apply()
    return "late hook runs" if m.f(1) == 20 else "late hook never runs"


@scenario(
    "Target whose module is not imported yet",
    sglang="apply_hooks() imports it; hook fires",
    ours="patched on first import; hook fires",
    why=(
        "SGLang imports every target module inside apply_hooks() (slow, and import order changes); "
        "ours waits for the module's first import."
    ),
)
def lazy_target(e: Env) -> str:
    name = e.module(FUNC, imported=False)
    e.Registry.register(f"{name}.f", lambda r, x: "hooked", e.T.AFTER)
    e.apply()
    imported_by_apply = name in sys.modules
    m = importlib.import_module(name)
    fires = m.f(0) == "hooked"
    return (
        f"{'apply_hooks() imports it' if imported_by_apply else 'patched on first import'}; "
        f"hook {'fires' if fires else 'does not fire'}"
    )


@scenario("Entry-point style target `pkg.mod:Class.method`", sglang="fires")
def colon_target(e: Env) -> str:
    m = e.module("class C:\n    def m(self):\n        return 1\n")
    e.Registry.register(f"{m.__name__}:C.m", lambda r, *a: r + 1, e.T.AFTER)
    e.apply()
    return "fires" if m.C().m() == 2 else "does not fire"


@scenario(
    "An exception from the original reaches the caller unchanged", sglang="same exception object"
)
def exception_passthrough(e: Env) -> str:
    m = e.module("ERR = ValueError('boom')\ndef f():\n    raise ERR\n")
    e.Registry.register(f"{m.__name__}.f", lambda orig, *a, **k: orig(*a, **k), e.T.AROUND)
    e.apply()
    try:
        m.f()
    except ValueError as exc:
        return "same exception object" if exc is m.ERR else "another exception"
    return "no exception"


@scenario(
    "Metadata: name, doc, `__wrapped__` chain to the original, signature; pickles by reference",
    sglang="name, doc, unwrap, signature, pickle ok",
)
def metadata(e: Env) -> str:
    m = e.module(FUNC)
    original = m.f
    e.Registry.register(f"{m.__name__}.f", lambda r, x: r, e.T.AFTER)
    e.Registry.register(f"{m.__name__}.f", lambda orig, x: orig(x), e.T.AROUND)
    e.apply()
    checks = {
        "name": m.f.__name__ == "f",
        "doc": m.f.__doc__ == "Doc of f.",
        "unwrap": inspect.unwrap(m.f) is original,
        "signature": str(inspect.signature(m.f)) == "(x)",
        "pickle": pickle.loads(pickle.dumps(m.f)) is m.f,
    }
    bad = [k for k, ok in checks.items() if not ok]
    return "name, doc, unwrap, signature, pickle ok" if not bad else "broken: " + ", ".join(bad)


@scenario("Unresolvable target (no such module)", sglang="apply_hooks() does not raise")
def unresolvable(e: Env) -> str:
    e.Registry.register("compat_no_such_module_xyz.f", lambda r: r, e.T.AFTER)
    try:
        e.apply()
    except Exception as exc:
        return f"apply_hooks() raises {type(exc).__name__}"
    return "apply_hooks() does not raise"


@scenario("@plugin_hook returns the hook unchanged and registers it", sglang="unchanged; fires")
def decorator(e: Env) -> str:
    m = e.module(FUNC)

    def hook(r, x):
        return "hooked"

    returned = e.hooks.plugin_hook(f"{m.__name__}.f", type=e.T.AFTER)(hook)
    e.apply()
    return (
        f"{'unchanged' if returned is hook else 'changed'}; "
        f"{'fires' if m.f(0) == 'hooked' else 'silent'}"
    )


# --------------------------------------------------------------------------------------------------
# Loader and platform scenarios: a fresh subprocess each, fake distributions on sys.path
# --------------------------------------------------------------------------------------------------


def _dist(
    root: Path, impl: str, name: str, eps: dict[str, dict[str, str]], modules: dict[str, str]
) -> None:
    filled = {path: textwrap.dedent(src).format(**IMPLS[impl]) for path, src in modules.items()}
    write_fake_distribution(root, name, entry_points=eps, modules=filled)


GENERAL = "sglang.srt.plugins"
PLATFORMS = "sglang.srt.platforms"

PLUGIN_SRC = """
from {hooks} import HookRegistry, HookType
CALLED = []
def register():
    CALLED.append(True)
    HookRegistry.register("json.dumps", lambda r, *a, **k: r, HookType.AFTER)
"""


def _load(
    impl: str, root: Path, env: dict[str, str] | None = None, extra: str = ""
) -> dict[str, Any]:
    code = f"""
    import logging, sys
    records = []
    class H(logging.Handler):
        def emit(self, record):
            records.append(record)
    logging.getLogger().addHandler(H(logging.WARNING))
    from {IMPLS[impl]["plugins"]} import load_plugins
    from {IMPLS[impl]["hooks"]} import HookRegistry
    load_plugins()
    out = {{"warnings": [r.getMessage() for r in records],
           "imported": sorted(m for m in sys.modules if m.startswith("plug_"))}}
    {extra}
    report(out)
    """
    return run_python(code, paths=[root], env=env).result


@scenario(
    "SGLANG_PLUGINS allowlist (whitespace-tolerant) filters general plugins",
    group="loaders",
    sglang="only plug_a loaded",
)
def allowlist(e: str, root: Path) -> str:
    for name in ("a", "b"):
        _dist(
            root,
            e,
            f"plug-{name}",
            {GENERAL: {name: f"plug_{name}:register"}},
            {f"plug_{name}.py": PLUGIN_SRC},
        )
    out = _load(e, root, env={"SGLANG_PLUGINS": " a , "})
    return "only plug_a loaded" if out["imported"] == ["plug_a"] else f"loaded {out['imported']}"


@scenario(
    "Allowlisted name that is not installed",
    group="loaders",
    sglang="silent",
    ours="WARNING names it",
    why="A typo in SGLANG_PLUGINS otherwise disables a plugin without a word.",
)
def allowlist_missing(e: str, root: Path) -> str:
    _dist(root, e, "plug-a", {GENERAL: {"a": "plug_a:register"}}, {"plug_a.py": PLUGIN_SRC})
    out = _load(e, root, env={"SGLANG_PLUGINS": "a,typo_plugin"})
    return "WARNING names it" if any("typo_plugin" in w for w in out["warnings"]) else "silent"


@scenario(
    "A plugin that fails to import does not block the others",
    group="loaders",
    sglang="others loaded; failure logged",
)
def failing_plugin(e: str, root: Path) -> str:
    _dist(
        root,
        e,
        "plug-bad",
        {GENERAL: {"bad": "plug_bad:register"}},
        {"plug_bad.py": "raise ImportError('nope')\n"},
    )
    _dist(
        root,
        e,
        "plug-good",
        {GENERAL: {"good": "plug_good:register"}},
        {"plug_good.py": PLUGIN_SRC},
    )
    out = _load(e, root, extra="out['good'] = bool(sys.modules['plug_good'].CALLED)")
    logged = any("bad" in w for w in out["warnings"])
    return (
        f"{'others loaded' if out['good'] else 'others blocked'}; "
        f"failure {'logged' if logged else 'silent'}"
    )


@scenario(
    "Hooks registered by a module-level @plugin_hook are attributed to their plugin",
    group="loaders",
    sglang="source: None",
    ours="source: deco (plug-deco)",
    why=(
        "SGLang sets the plugin source only while register() runs, not while its module is "
        "imported."
    ),
)
def import_time_source(e: str, root: Path) -> str:
    src = """
    from {hooks} import plugin_hook, HookType
    @plugin_hook("json.dumps", type=HookType.AFTER)
    def hook(result, *args, **kwargs):
        return None
    def register():
        pass
    """
    _dist(root, e, "plug-deco", {GENERAL: {"deco": "plug_deco:register"}}, {"plug_deco.py": src})
    if e == "sglang":
        extra = (
            "out['source'] = [list(s) if s else None "
            "for h in HookRegistry._hooks.values() for _t, _h, s in h]"
        )
    else:
        extra = (
            "out['source'] = [[x.plugin, x.distribution] "
            "for t in HookRegistry.describe() for x in t.hooks]"
        )
    out = _load(e, root, extra=extra)
    source = out["source"][0]
    return "source: None" if source is None else f"source: {source[0]} ({source[1]})"


@scenario(
    "SGLANG_PLATFORM set: general plugins of other platforms' distributions are skipped unimported",
    group="loaders",
    sglang="skipped, never imported",
)
def platform_filter(e: str, root: Path) -> str:
    _dist(
        root,
        e,
        "plug-other",
        {PLATFORMS: {"other": "plug_other:activate"}, GENERAL: {"o": "plug_other:register"}},
        {"plug_other.py": PLUGIN_SRC + "def activate():\n    return None\n"},
    )
    _dist(
        root,
        e,
        "plug-mine",
        {PLATFORMS: {"mine": "plug_mine:activate"}, GENERAL: {"m": "plug_mine:register"}},
        {"plug_mine.py": PLUGIN_SRC + PLATFORM_SRC + "def activate():\n    return 'plug_mine.P'\n"},
    )
    out = _load(e, root, env={"SGLANG_PLATFORM": "mine"})
    return (
        "skipped, never imported"
        if out["imported"] == ["plug_mine"]
        else f"imported {out['imported']}"
    )


@scenario(
    "The same general entry-point name offered by two distributions",
    group="loaders",
    sglang="one silently wins",
    ours="error names both distributions",
    why="Which plugin runs must not depend on installation order.",
)
def duplicate_names(e: str, root: Path) -> str:
    for name in ("one", "two"):
        _dist(
            root,
            e,
            f"plug-{name}",
            {GENERAL: {"dup": f"plug_{name}:register"}},
            {f"plug_{name}.py": PLUGIN_SRC},
        )
    out = _load(e, root)
    text = " ".join(out["warnings"])
    return (
        "error names both distributions"
        if "plug-one" in text and "plug-two" in text
        else "one silently wins"
    )


ORDER_SRC = """
import builtins
def register():
    builtins.__dict__.setdefault("ORDER", []).append(__name__)
"""


@scenario(
    "The order general plugins run in (`plug-b` earlier on `sys.path` than `plug-a`)",
    group="loaders",
    sglang="discovery order: b, a",
    ours="(distribution, entry-point name) order: a, b",
    why=(
        "Which plugin's hooks nest outermost must not depend on where a distribution was installed "
        "or on the order a file system lists a folder: every process and every node runs the same "
        "order."
    ),
)
def plugin_order(e: str, root: Path) -> str:
    first = root / "first"
    first.mkdir()
    _dist(first, e, "plug-b", {GENERAL: {"b": "plug_b:register"}}, {"plug_b.py": ORDER_SRC})
    _dist(root, e, "plug-a", {GENERAL: {"a": "plug_a:register"}}, {"plug_a.py": ORDER_SRC})
    code = f"""
    import builtins
    from {IMPLS[e]["plugins"]} import load_plugins
    load_plugins()
    report([name.removeprefix("plug_") for name in builtins.ORDER])
    """
    order = ", ".join(run_python(code, paths=[first, root]).result)
    return {
        "b, a": "discovery order: b, a",
        "a, b": "(distribution, entry-point name) order: a, b",
    }.get(order, order)


@scenario(
    "A general plugin's register() registers a hook, then raises",
    group="loaders",
    sglang="failure logged; its hook applied",
    ours="failure logged; its hook discarded",
    why=(
        "A plugin that failed is not half-installed: `doctor` reports it failed, and none of its "
        "hooks runs."
    ),
)
def register_raises_after_a_hook(e: str, root: Path) -> str:
    src = """
    from {hooks} import HookRegistry, HookType
    def register():
        HookRegistry.register("half_target.work", lambda result, *a, **k: "hooked", HookType.AFTER)
        raise RuntimeError("half way")
    """
    modules = {"plug_half.py": src, "half_target.py": "def work():\n    return 'original'\n"}
    _dist(root, e, "plug-half", {GENERAL: {"half": "plug_half:register"}}, modules)
    out = _load(
        e, root, extra="import half_target\n    out['hooked'] = half_target.work() == 'hooked'"
    )
    logged = "logged" if any("half" in w for w in out["warnings"]) else "silent"
    return f"failure {logged}; its hook {'applied' if out['hooked'] else 'discarded'}"


UNPRINTABLE_SRC = """
class Unprintable(Exception):
    def __str__(self):
        raise ValueError("no text")
def register():
    raise Unprintable()
"""


@scenario(
    "A general plugin's register() raises an exception whose `__str__` raises",
    group="loaders",
    sglang="others loaded; failure logged",
)
def register_raises_unprintable(e: str, root: Path) -> str:
    _dist(
        root,
        e,
        "plug-bad",
        {GENERAL: {"bad": "plug_bad:register"}},
        {"plug_bad.py": UNPRINTABLE_SRC},
    )
    _dist(
        root,
        e,
        "plug-good",
        {GENERAL: {"good": "plug_good:register"}},
        {"plug_good.py": PLUGIN_SRC},
    )
    out = _load(e, root, extra="out['good'] = bool(sys.modules['plug_good'].CALLED)")
    logged = any("bad" in w for w in out["warnings"])
    return (
        f"{'others loaded' if out['good'] else 'others blocked'}; "
        f"failure {'logged' if logged else 'silent'}"
    )


WAITING_SRC = """
import threading
SEEN = []
def peek():
    from {plugins} import load_plugins
    try:
        load_plugins()
        SEEN.append("returned")
    except Exception as exc:
        SEEN.append(type(exc).__name__)
def register():
    helper = threading.Thread(target=peek)
    helper.start()
    helper.join(30)
"""


@scenario(
    "register() waits for a helper thread that calls load_plugins()",
    group="loaders",
    sglang="the helper's call returns at once, loading unfinished",
    ours="the helper gets ReentrantLoadError; the plugin fails",
    why=(
        "A helper that goes on as if plugins were loaded runs before their hooks apply; ours says "
        "so, naming the plugin, and nothing hangs in either."
    ),
)
def register_waits_for_load_plugins(e: str, root: Path) -> str:
    _dist(
        root,
        e,
        "plug-wait",
        {GENERAL: {"wait": "plug_wait:register"}},
        {"plug_wait.py": WAITING_SRC},
    )
    out = _load(e, root, extra="out['seen'] = sys.modules['plug_wait'].SEEN")
    seen = out["seen"]
    if seen == ["returned"]:
        return "the helper's call returns at once, loading unfinished"
    return (
        "the helper gets ReentrantLoadError; the plugin fails"
        if seen == ["ReentrantLoadError"]
        else str(seen)
    )


@scenario(
    "A general plugin of the selected platform's own distribution fails in register()",
    group="loaders",
    sglang="failure logged, start-up goes on",
    ours="error: startup stops",
    why=(
        "The selected platform's own plugins carry its hardware contract, so their failure stops "
        "start-up, as in SGLang's diffusion loader; a failing plugin of any other distribution is "
        "still logged and skipped."
    ),
)
def selected_platforms_plugin_fails(e: str, root: Path) -> str:
    source = PLATFORM_SRC + "def activate():\n    return 'plug_mine.P'\n"
    source += "def register():\n    raise RuntimeError('kernels missing')\n"
    _dist(
        root,
        e,
        "plug-mine",
        {PLATFORMS: {"mine": "plug_mine:activate"}, GENERAL: {"m": "plug_mine:register"}},
        {"plug_mine.py": source},
    )
    code = f"""
    from {IMPLS[e]["platforms"]} import current_platform
    from {IMPLS[e]["plugins"]} import load_plugins
    try:
        load_plugins()
        out = "failure logged, start-up goes on"
    except Exception as exc:
        out = "error: startup stops" if "kernels missing" in str(exc) else repr(exc)
    report(out)
    """
    return run_python(code, paths=[root]).result


@scenario(
    "A startup plugin (entry-point group `sglang.srt.startup_plugins`)",
    group="loaders",
    sglang="never run",
    ours="run first, before the general plugins",
    why=(
        "An early phase for patches that must precede SGLang's own imports (an open SGLang "
        "proposal names the group): under the launcher and the adopted SGLang it runs when the "
        "`sglang` package is imported, so a vendor needs no `.pth` file or `sitecustomize`."
    ),
)
def startup_plugins(e: str, root: Path) -> str:
    _dist(
        root,
        e,
        "plug-early",
        {"sglang.srt.startup_plugins": {"early": "plug_early:register"}},
        {"plug_early.py": ORDER_SRC},
    )
    _dist(
        root,
        e,
        "plug-late",
        {GENERAL: {"late": "plug_late:register"}},
        {"plug_late.py": ORDER_SRC},
    )
    code = f"""
    import builtins
    from {IMPLS[e]["plugins"]} import load_plugins
    load_plugins()
    report([name.removeprefix("plug_") for name in builtins.ORDER])
    """
    order = run_python(code, paths=[root]).result
    return {"late": "never run", "early, late": "run first, before the general plugins"}.get(
        ", ".join(order), str(order)
    )


PLATFORM_SRC = """
from {interface} import SRTPlatform
from {device_mixin} import PlatformEnum
class P(SRTPlatform):
    _enum = PlatformEnum.OOT
    device_name = "fake"
    device_type = "fake"
    def get_default_attention_backend(self):
        return "torch_native"
    def get_default_speculative_draft_attention_backend(self, algorithm):
        return "torch_native"
"""


def _select(impl: str, root: Path, env: dict[str, str] | None = None) -> str:
    """The selected class path, or ``Builtin: message`` with the nearest built-in exception class
    raised."""
    code = f"""
    import builtins, logging
    records = []
    class H(logging.Handler):
        def emit(self, record):
            records.append(record)
    logging.getLogger().addHandler(H(logging.WARNING))
    try:
        from {IMPLS[impl]["platforms"]} import current_platform as p
        out = f"{{type(p).__module__}}.{{type(p).__qualname__}}"
    except Exception as exc:
        kind = next(k for k in type(exc).__mro__ if getattr(builtins, k.__name__, None) is k)
        out = f"{{kind.__name__}}: {{exc}}"
    if any(r.levelno >= logging.WARNING for r in records):
        out = "WARNING " + out
    report(out)
    """
    return run_python(code, paths=[root], env=env).result


def _base(impl: str) -> str:
    return f"{IMPLS[impl]['interface']}.SRTPlatform"


@scenario(
    "Platform activate() raises in auto mode",
    group="platforms",
    sglang="logged, base platform used",
)
def activate_raises(e: str, root: Path) -> str:
    _dist(
        root,
        e,
        "plat-bad",
        {PLATFORMS: {"bad": "plat_bad:activate"}},
        {"plat_bad.py": "def activate():\n    raise OSError('driver missing')\n"},
    )
    out = _select(e, root)
    return "logged, base platform used" if out == "WARNING " + _base(e) else out


@scenario(
    "Platform activate() names a class that is not a platform (auto mode)",
    group="platforms",
    sglang="error: startup stops",
)
def not_a_platform(e: str, root: Path) -> str:
    _dist(
        root,
        e,
        "plat-odd",
        {PLATFORMS: {"odd": "plat_odd:activate"}},
        {"plat_odd.py": "class P:\n    pass\ndef activate():\n    return 'plat_odd.P'\n"},
    )
    out = _select(e, root)
    # SGLang raises TypeError; ours InvalidPlatformError (a RuntimeError and a TypeError) naming the
    # plugin.
    if out.startswith(("TypeError", "RuntimeError")):
        return "error: startup stops"
    return out


@scenario(
    "Two platforms activate, SGLANG_PLATFORM unset",
    group="platforms",
    sglang="RuntimeError naming both",
)
def two_platforms(e: str, root: Path) -> str:
    for name in ("x", "y"):
        _dist(
            root,
            e,
            f"plat-{name}",
            {PLATFORMS: {name: f"plat_{name}:activate"}},
            {f"plat_{name}.py": PLATFORM_SRC + f"def activate():\n    return 'plat_{name}.P'\n"},
        )
    out = _select(e, root)
    return (
        "RuntimeError naming both"
        if out.startswith("RuntimeError") and "x" in out and "y" in out
        else out
    )


@scenario(
    "SGLANG_PLATFORM names a plugin that is not installed",
    group="platforms",
    sglang="RuntimeError listing the available ones",
)
def unknown_platform(e: str, root: Path) -> str:
    _dist(
        root,
        e,
        "plat-x",
        {PLATFORMS: {"x": "plat_x:activate"}},
        {"plat_x.py": PLATFORM_SRC + "def activate():\n    return 'plat_x.P'\n"},
    )
    out = _select(e, root, env={"SGLANG_PLATFORM": "nosuch"})
    ok = out.startswith("RuntimeError") and "nosuch" in out and "'x'" in out
    return "RuntimeError listing the available ones" if ok else out


UNSELECTED_SRC = """
from {hooks} import HookRegistry, HookType
HookRegistry.register("plat_target.work", lambda result, *a, **k: "hooked", HookType.AFTER)
def activate():
    return None
"""

CONSTRUCTOR_SRC = """
from {hooks} import HookRegistry, HookType
class Q(P):
    def __init__(self):
        HookRegistry.register("plat_target.work", lambda result, *a, **k: "hooked", HookType.AFTER)
        raise RuntimeError("device lost")
def activate():
    return "plat_ctor.Q"
"""

PLATFORM_HOOKS = """
    try:
        import {platforms} as platforms
        platforms.current_platform.device_name
        out = "selected"
    except Exception:
        out = "error: startup stops"
    try:  # a host that carries on after the error
        from {plugins} import load_plugins
        load_plugins()
        import plat_target
        hooked = plat_target.work() == "hooked"
        out = (("" if out == "selected" else out + "; ")
               + ("its hook applied" if hooked else "its hook discarded"))
    except Exception:
        pass
    report(out)
"""
TARGET_SRC = {"plat_target.py": "def work():\n    return 'original'\n"}


@scenario(
    "A platform plugin whose activate() returns None registered a hook when its module was "
    "imported",
    group="platforms",
    sglang="its hook applied",
    ours="its hook discarded",
    why=(
        "A platform that is not selected patches nothing (an NPU plugin must not patch a CUDA "
        "machine), as in SGLang's diffusion loader."
    ),
)
def unselected_platform_hooks(e: str, root: Path) -> str:
    _dist(
        root,
        e,
        "plat-unsel",
        {PLATFORMS: {"unsel": "plat_unsel:activate"}},
        {"plat_unsel.py": UNSELECTED_SRC, **TARGET_SRC},
    )
    return run_python(PLATFORM_HOOKS.format(**IMPLS[e]), paths=[root]).result


@scenario(
    "The selected platform class's `__init__` registers a hook, then raises",
    group="platforms",
    sglang="error: startup stops; its hook applied",
    ours="error: startup stops; its hook discarded",
    why=(
        "The constructor is the selected plugin's code: a hook it registers is attributed to it "
        "and goes with its failure (a host that carries on after the error does not run it)."
    ),
)
def constructor_hooks(e: str, root: Path) -> str:
    _dist(
        root,
        e,
        "plat-ctor",
        {PLATFORMS: {"ctor": "plat_ctor:activate"}},
        {"plat_ctor.py": PLATFORM_SRC + CONSTRUCTOR_SRC, **TARGET_SRC},
    )
    return run_python(PLATFORM_HOOKS.format(**IMPLS[e]), paths=[root]).result


# --------------------------------------------------------------------------------------------------
# Diffusion namespace: SGLang 0.5.23's sglang.multimodal_gen against the runtime's "multimodal_gen"
# namespace
# --------------------------------------------------------------------------------------------------

MM = "sglang.multimodal_gen.platforms"
MM_GENERAL = "sglang.multimodal_gen.plugins"
MM_PLATFORM_SRC = {
    "sglang": """
from sglang.multimodal_gen.runtime.platforms.interface import Platform, PlatformEnum
class P(Platform):
    _enum = PlatformEnum.OOT
    device_name = "fake"
    device_type = "fake"
""",
    "ours": """
from sglang_plugin_runtime.platforms.device_mixin import PlatformEnum
from sglang_plugin_runtime.platforms.multimodal import MMPlatform
class P(MMPlatform):
    _enum = PlatformEnum.OOT
    device_name = "fake"
    device_type = "fake"
    dispatch_key = "PrivateUse1"
""",
}
MM_SELECT = {
    "sglang": "from sglang.multimodal_gen.runtime.platforms import current_platform as p",
    "ours": (
        "from sglang_plugin_runtime.platforms import get_current_platform\np = "
        "get_current_platform('multimodal_gen')"
    ),
}
#: How each implementation's diffusion plugins register a hook, and how to ask SRT's registry about
#: a target.
MM_HOOKS = {
    "sglang": (
        "from sglang.multimodal_gen.runtime.platforms.plugins import HookRegistry, HookType",
        "from sglang.srt.plugins.hook_registry import HookRegistry as S\nseen = 'json.dumps' in "
        "S._hooks",
    ),
    "ours": (
        "from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookType",
        "from sglang_plugin_runtime.plugins.hook_registry import HookRegistry as S\n"
        "seen = bool(S.describe('json.dumps'))",
    ),
}
MM_LOAD = {
    "sglang": (
        "from sglang.multimodal_gen.runtime.platforms.plugins import load_plugins\nload_plugins()"
    ),
    "ours": (
        "from sglang_plugin_runtime.plugins import load_plugins\nload_plugins('multimodal_gen')"
    ),
}


def _mm_platform(
    impl: str,
    root: Path,
    dist: str,
    name: str,
    activate: str = "return '{module}.P'",
    general: str | None = None,
) -> None:
    module = dist.replace("-", "_")
    source = MM_PLATFORM_SRC[impl] + f"def activate():\n    {activate.format(module=module)}\n"
    eps = {MM: {name: f"{module}:activate"}}
    if general is not None:
        eps[MM_GENERAL] = {f"{name}_hooks": f"{module}:register"}
        source += general
    write_fake_distribution(root, dist, entry_points=eps, modules={f"{module}.py": source})


def _select_mm(impl: str, root: Path, env: dict[str, str] | None = None, extra: str = "") -> str:
    """The selected diffusion class, or ``Builtin: message`` (``ValueError`` first: 0.5.23 raises
    it)."""
    code = f"""
    import builtins, logging
    records = []
    class H(logging.Handler):
        def emit(self, record):
            records.append(record)
    logging.getLogger().addHandler(H(logging.WARNING))
    try:
        {MM_SELECT[impl].replace(chr(10), chr(10) + "        ")}
        out = f"{{type(p).__module__}}.{{type(p).__qualname__}}"
    except Exception as exc:
        if isinstance(exc, ValueError):
            kind = ValueError
        else:
            kind = next(k for k in type(exc).__mro__ if getattr(builtins, k.__name__, None) is k)
        out = f"{{kind.__name__}}: {{exc}}"
    if any(r.levelno >= logging.WARNING for r in records):
        out = "WARNING " + out
    {extra}
    report(out)
    """
    return run_python(code, paths=[root], env=env).result


@scenario(
    "Diffusion: a platform plugin's activate() raises in auto mode",
    group="diffusion",
    sglang="error: startup stops",
    ours="logged, base platform used",
    why=(
        "One rule for every namespace: a WARNING naming the plugin and its distribution, `doctor` "
        "fails on it, and `SGLANG_PLUGINS_STRICT=1` stops start-up as SGLang's diffusion engine "
        "does. The runtime's fallback is the base `MMPlatform`, whose required methods refuse "
        "work, not another device."
    ),
)
def mm_activate_raises(e: str, root: Path) -> str:
    _mm_platform(e, root, "mm-bad", "bad", activate="raise OSError('driver missing')")
    out = _select_mm(e, root)
    if out.startswith(("OSError", "RuntimeError")):
        return "error: startup stops"
    if out.startswith("WARNING ") and out.endswith("MMPlatform"):
        return "logged, base platform used"
    return out


@scenario(
    "Diffusion: a platform plugin's activate() raises in auto mode, `SGLANG_PLUGINS_STRICT=1`",
    group="diffusion",
    sglang="error: startup stops",
)
def mm_activate_raises_strict(e: str, root: Path) -> str:
    _mm_platform(e, root, "mm-bad", "bad", activate="raise OSError('driver missing')")
    out = _select_mm(e, root, env={"SGLANG_PLUGINS_STRICT": "1"})
    return (
        "error: startup stops"
        if out.startswith(("OSError", "RuntimeError")) and "driver missing" in out
        else out
    )


@scenario(
    "Diffusion: a platform plugin named like a built-in (`XPU`)",
    group="diffusion",
    sglang="RuntimeError before it is imported",
)
def mm_builtin_name(e: str, root: Path) -> str:
    _mm_platform(e, root, "mm-xpu", "XPU")
    out = _select_mm(e, root, extra="out += ' imported' if 'mm_xpu' in _sys.modules else ''")
    if out.startswith("RuntimeError") and "'XPU'" in out and not out.endswith(" imported"):
        return "RuntimeError before it is imported"
    return out


@scenario(
    "Diffusion: `SGLANG_DIFFUSION_PLATFORM_OVERRIDE` names no installed plugin",
    group="diffusion",
    sglang="ValueError listing the available ones",
)
def mm_override_not_found(e: str, root: Path) -> str:
    _mm_platform(e, root, "mm-fake", "fake")
    out = _select_mm(e, root, env={"SGLANG_DIFFUSION_PLATFORM_OVERRIDE": "nosuch"})
    ok = out.startswith("ValueError") and "nosuch" in out and "'fake'" in out
    return "ValueError listing the available ones" if ok else out


@scenario(
    "Diffusion: `SGLANG_DIFFUSION_PLATFORM_OVERRIDE=cpu` names a built-in platform",
    group="diffusion",
    sglang="built-in CpuPlatform selected",
    ours="no plugin imported; the fallback selected, named a built-in of the host",
    why=(
        "The runtime ships no diffusion platforms, only the plugin machinery: a host that adopts "
        "it keeps resolving its own built-in names first, as SGLang does today, and the runtime, "
        "asked alone, imports no plugin and says the name is the host's (it raised ValueError). "
        "The names stay reserved, so no plugin can shadow a built-in."
    ),
)
def mm_override_builtin(e: str, root: Path) -> str:
    _mm_platform(e, root, "mm-fake", "fake")
    out = _select_mm(e, root, env={"SGLANG_DIFFUSION_PLATFORM_OVERRIDE": "cpu"})
    if out.endswith(".CpuPlatform"):
        return "built-in CpuPlatform selected"
    if out.endswith(".MMPlatform"):
        return "no plugin imported; the fallback selected, named a built-in of the host"
    return out


MM_FAILING_GENERAL = """
def register():
    raise RuntimeError("hook setup failed")
"""


@scenario(
    "Diffusion: a general plugin of the selected platform's distribution fails",
    group="diffusion",
    sglang="error: startup stops",
)
def mm_selected_general_fails(e: str, root: Path) -> str:
    _mm_platform(e, root, "mm-fake", "fake", general=MM_FAILING_GENERAL)
    out = _select_mm(
        e,
        root,
        env={"SGLANG_DIFFUSION_PLATFORM_OVERRIDE": "fake"},
        extra=f"""
    try:
        {MM_LOAD[e].replace(chr(10), chr(10) + "        ")}
        out = "WARNING; start-up continues" if any(
            "hook setup failed" in r.getMessage() or "fake_hooks" in r.getMessage()
            for r in records) else "silent"
    except Exception as exc:
        out = ("error: startup stops" if "hook setup failed" in str(exc)
               else f"{{type(exc).__name__}}: {{exc}}")
    """,
    )
    return out


@scenario(
    "Diffusion: a general plugin of the selected platform's distribution fails, "
    "`SGLANG_PLUGINS_STRICT=1`",
    group="diffusion",
    sglang="error: startup stops",
)
def mm_selected_general_fails_strict(e: str, root: Path) -> str:
    _mm_platform(e, root, "mm-fake", "fake", general=MM_FAILING_GENERAL)
    env = {"SGLANG_DIFFUSION_PLATFORM_OVERRIDE": "fake", "SGLANG_PLUGINS_STRICT": "1"}
    return _select_mm(
        e,
        root,
        env=env,
        extra=f"""
    try:
        {MM_LOAD[e].replace(chr(10), chr(10) + "        ")}
        out = "start-up continues"
    except Exception as exc:
        out = ("error: startup stops" if "hook setup failed" in str(exc)
               else f"{{type(exc).__name__}}: {{exc}}")
    """,
    )


MM_HOOK_GENERAL = """
{registry}
def register():
    HookRegistry.register("json.dumps", lambda result, *a, **k: result, HookType.AFTER)
"""


@scenario(
    "Diffusion: a diffusion plugin's hook, seen from SRT's `HookRegistry`",
    group="diffusion",
    sglang="not seen (two registries)",
    ours="seen (one registry)",
    why="One process patches each target once: two registries hooking the same target would stack "
    "wrappers without knowing of each other, and neither could undo the other's patch. Every hook "
    "keeps its plugin and distribution, so `doctor` and `explain` tell them apart.",
)
def mm_one_registry(e: str, root: Path) -> str:
    _mm_platform(
        e, root, "mm-fake", "fake", general=MM_HOOK_GENERAL.format(registry=MM_HOOKS[e][0])
    )
    out = _select_mm(
        e,
        root,
        env={"SGLANG_DIFFUSION_PLATFORM_OVERRIDE": "fake"},
        extra=f"""
    {MM_LOAD[e].replace(chr(10), chr(10) + "    ")}
    {MM_HOOKS[e][1].replace(chr(10), chr(10) + "    ")}
    out = "seen (one registry)" if seen else "not seen (two registries)"
    """,
    )
    return out


# --------------------------------------------------------------------------------------------------
# The tests
# --------------------------------------------------------------------------------------------------

PROCESS_CASES = [
    pytest.param(s, impl, id=f"{s.id}-{impl}", marks=pytest.mark.subprocess)
    for s in SCENARIOS
    if s.group != "hooks"
    for impl in IMPLS
]


def _check(s: Scenario, impl: str, outcome: str) -> None:
    RESULTS[(s.id, impl)] = outcome
    assert outcome == getattr(s, impl), f"{s.title} [{impl}]: observed {outcome!r}"
    if s.sglang != s.ours:
        assert s.why, f"{s.id}: a difference must say why"


@pytest.mark.parametrize("env", list(IMPLS), indirect=True)
@pytest.mark.parametrize("s", [s for s in SCENARIOS if s.group == "hooks"], ids=lambda s: s.id)
def test_hook_behaviour(s: Scenario, env: Env) -> None:
    if env.impl == "sglang":
        import sglang.srt.platforms  # noqa: F401 - `import sglang` resolves SGLang's platform; do it plainly
    _check(s, env.impl, s.run(env))


@pytest.mark.parametrize(("s", "impl"), PROCESS_CASES)
def test_process_behaviour(s: Scenario, impl: str, tmp_path: Path) -> None:
    _check(s, impl, s.run(impl, tmp_path))


def render_matrix() -> str:
    lines = []
    titles = {
        "hooks": "Hooks (`HookRegistry`, `plugin_hook`)",
        "loaders": "General plugins (`load_plugins()`)",
        "platforms": "Platform selection (`current_platform`)",
        "diffusion": "Diffusion namespace (`sglang.multimodal_gen`)",
    }
    for group, title in titles.items():
        lines += [
            f"**{title}**",
            "",
            "| behaviour | SGLang 0.5.23 | sglang_plugin_runtime | verdict |",
            "|---|---|---|---|",
        ]
        for s in (s for s in SCENARIOS if s.group == group):
            theirs, ours = RESULTS[(s.id, "sglang")], RESULTS[(s.id, "ours")]
            verdict = "same" if theirs == ours else f"ours differs: {s.why}"
            cells = [c.replace("|", "\\|") for c in (s.title, theirs, ours, verdict)]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    same = sum(RESULTS[(s.id, "sglang")] == RESULTS[(s.id, "ours")] for s in SCENARIOS)
    lines.append(
        f"{len(SCENARIOS)} scenarios: {same} behave the same, {len(SCENARIOS) - same} differ on "
        "purpose (each difference is asserted on both sides)."
    )
    return "\n".join(lines)


def test_the_doc_carries_the_generated_matrix() -> None:
    """Runs last: docs/sglang.md between the markers is exactly the matrix this run observed."""
    missing = [(s.id, impl) for s in SCENARIOS for impl in IMPLS if (s.id, impl) not in RESULTS]
    if missing:
        pytest.skip(
            f"not every scenario ran in this session ({len(missing)} missing); the matrix needs all"
        )
    sync_section("matrix", render_matrix(), "tests_sglang/test_compat_matrix.py")
