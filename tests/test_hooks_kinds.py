"""Hook registry: every kind of target (methods, descriptors, async, generators, classes)."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import pickle
import subprocess
import sys
import textwrap

import pytest

from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookSource, HookType

CLASSES = """
class Base:
    def method(self, x):
        return ("method", type(self).__name__, x)

    @classmethod
    def make(cls, x):
        return ("make", cls.__name__, x)

    @staticmethod
    def helper(x):
        return ("helper", x)

    @property
    def value(self):
        return self._value

    @value.setter
    def value(self, v):
        self._value = v


class Sub(Base):
    pass
"""


def test_instance_method_hook_receives_self(make_module):
    name = make_module("m", CLASSES)
    mod = importlib.import_module(name)
    seen = []
    HookRegistry.register(
        f"{name}.Base.method", lambda self, x: seen.append(type(self).__name__), HookType.BEFORE
    )
    HookRegistry.apply_hooks()
    assert mod.Base().method(1) == ("method", "Base", 1)
    assert seen == ["Base"]


def test_classmethod_stays_a_classmethod(make_module):
    name = make_module("m", CLASSES)
    mod = importlib.import_module(name)
    HookRegistry.register(f"{name}.Base.make", lambda r, cls, x: r + ("hooked",))
    HookRegistry.apply_hooks()
    assert isinstance(mod.Base.__dict__["make"], classmethod)
    assert mod.Base.make(1) == ("make", "Base", 1, "hooked")


def test_staticmethod_stays_a_staticmethod(make_module):
    name = make_module("m", CLASSES)
    mod = importlib.import_module(name)
    HookRegistry.register(f"{name}.Base.helper", lambda r, x: r + ("hooked",))
    HookRegistry.apply_hooks()
    assert isinstance(mod.Base.__dict__["helper"], staticmethod)
    assert mod.Base().helper(2) == ("helper", 2, "hooked")


def test_inherited_classmethod_hooked_through_subclass_works_through_an_instance(make_module):
    name = make_module("m", CLASSES)
    mod = importlib.import_module(name)
    HookRegistry.register(f"{name}.Sub.make", lambda r, cls, x: r + ("hooked",))
    HookRegistry.apply_hooks()
    assert mod.Sub().make(1) == ("make", "Sub", 1, "hooked")


def test_hooking_through_a_subclass_never_mutates_the_base_class(make_module):
    name = make_module("m", CLASSES)
    mod = importlib.import_module(name)
    base_dict = dict(mod.Base.__dict__)
    HookRegistry.register(f"{name}.Sub.make", lambda r, cls, x: r + ("hooked",))
    HookRegistry.register(f"{name}.Sub.method", lambda r, self, x: r + ("hooked",))
    HookRegistry.apply_hooks()
    assert dict(mod.Base.__dict__) == base_dict
    assert mod.Base.make(1) == ("make", "Base", 1)
    assert mod.Sub().method(1) == ("method", "Sub", 1, "hooked")


def test_inherited_staticmethod_hooked_through_subclass(make_module):
    name = make_module("m", CLASSES)
    mod = importlib.import_module(name)
    HookRegistry.register(f"{name}.Sub.helper", lambda r, x: r + ("hooked",))
    HookRegistry.apply_hooks()
    assert mod.Sub().helper(3) == ("helper", 3, "hooked")
    assert mod.Base.helper(3) == ("helper", 3)


def test_property_hook_wraps_the_getter_and_keeps_the_setter(make_module):
    name = make_module("m", CLASSES)
    mod = importlib.import_module(name)
    HookRegistry.register(f"{name}.Base.value", lambda r, self: r * 2)
    HookRegistry.apply_hooks()
    obj = mod.Base()
    obj.value = 21
    assert obj.value == 42
    assert isinstance(mod.Base.__dict__["value"], property)


def test_async_function_wrapper_is_a_coroutine_function(make_module):
    name = make_module("m", "async def f(x):\n    return x\n")
    mod = importlib.import_module(name)
    HookRegistry.register(f"{name}.f", lambda r, x: None)
    HookRegistry.apply_hooks()
    assert inspect.iscoroutinefunction(mod.f)


def test_async_after_hook_sees_the_awaited_value(make_module):
    name = make_module("m", "async def f(x):\n    return x + 1\n")
    mod = importlib.import_module(name)
    seen = []
    HookRegistry.register(f"{name}.f", lambda r, x: seen.append(r))
    HookRegistry.apply_hooks()
    assert asyncio.run(mod.f(1)) == 2
    assert seen == [2]


def test_async_def_hooks_are_awaited_on_async_targets(make_module):
    name = make_module("m", "async def f(x):\n    return x\n")
    mod = importlib.import_module(name)

    async def before(x):
        return ((x + 1,), {})

    async def after(r, x):
        return r * 10

    HookRegistry.register(f"{name}.f", before, HookType.BEFORE)
    HookRegistry.register(f"{name}.f", after, HookType.AFTER)
    HookRegistry.apply_hooks()
    assert asyncio.run(mod.f(1)) == 20


def test_async_around_hook_awaits_original_fn(make_module):
    name = make_module("m", "async def f(x):\n    return x\n")
    mod = importlib.import_module(name)

    async def around(fn, x):
        return ("around", await fn(x))

    HookRegistry.register(f"{name}.f", around, HookType.AROUND)
    HookRegistry.apply_hooks()
    assert asyncio.run(mod.f(1)) == ("around", 1)


def test_sync_around_hook_on_async_target_has_its_returned_awaitable_awaited(make_module):
    name = make_module("m", "async def f(x):\n    return x\n")
    mod = importlib.import_module(name)
    seen = []
    HookRegistry.register(f"{name}.f", lambda fn, x: fn(x), HookType.AROUND)
    HookRegistry.register(f"{name}.f", lambda r, x: seen.append(r))
    HookRegistry.apply_hooks()
    assert asyncio.run(mod.f(5)) == 5
    assert seen == [5]


def test_async_hook_on_sync_target_fails_the_target(make_module):
    name = make_module("m", "def f():\n    return 1\n")
    mod = importlib.import_module(name)
    original = mod.f

    async def after(r):
        return r

    HookRegistry.register(f"{name}.f", after)
    HookRegistry.apply_hooks()
    report = HookRegistry.describe(f"{name}.f")[0]
    assert report.status == "failed" and "async def" in report.error
    assert mod.f is original


def test_generator_hooks_run_when_the_generator_is_created(make_module):
    name = make_module("m", "def gen(n):\n    yield from range(n)\n")
    mod = importlib.import_module(name)
    HookRegistry.register(f"{name}.gen", lambda r, n: (x * 10 for x in r))
    HookRegistry.apply_hooks()
    assert list(mod.gen(3)) == [0, 10, 20]


def test_async_generator_wrapper_returns_an_async_generator(make_module):
    name = make_module("m", "async def agen(n):\n    for i in range(n):\n        yield i\n")
    mod = importlib.import_module(name)
    seen = []
    HookRegistry.register(f"{name}.agen", lambda n: seen.append(n), HookType.BEFORE)
    HookRegistry.apply_hooks()

    async def collect():
        return [i async for i in mod.agen(3)]

    assert asyncio.run(collect()) == [0, 1, 2]
    assert seen == [3]


def test_class_replace_substitutes_the_class_itself(make_module):
    name = make_module("m", CLASSES)
    mod = importlib.import_module(name)
    original = mod.Base

    class Replacement(original):
        def method(self, x):
            return "replaced"

    HookRegistry.register(f"{name}.Base", Replacement, HookType.REPLACE)
    HookRegistry.apply_hooks()
    obj = mod.Base()
    assert mod.Base is Replacement
    assert isinstance(obj, original) and issubclass(mod.Base, original)
    assert obj.method(1) == "replaced"


def test_class_replace_warns_about_existing_subclasses(make_module, caplog):
    name = make_module("m", CLASSES)
    mod = importlib.import_module(name)

    class Replacement(mod.Base):
        pass

    HookRegistry.register(f"{name}.Base", Replacement, HookType.REPLACE)
    HookRegistry.apply_hooks()
    assert any(f"{name}.Sub" in r.getMessage() for r in caplog.records if r.levelname == "WARNING")
    kinds = [c.kind for c in HookRegistry.describe(f"{name}.Base")[0].conflicts]
    assert kinds == ["class_replace_subclasses"]


def test_method_hooks_apply_to_the_replacement_class(make_module):
    name = make_module("m", CLASSES)
    mod = importlib.import_module(name)

    class Replacement(mod.Base):
        pass

    HookRegistry.register(f"{name}.Base.method", lambda r, self, x: r + ("hooked",))
    HookRegistry.register(f"{name}.Base", Replacement, HookType.REPLACE)
    HookRegistry.apply_hooks()
    assert mod.Base().method(1) == ("method", "Replacement", 1, "hooked")


def test_non_replace_hook_on_a_class_target_fails_with_type_error_text(make_module):
    name = make_module("m", CLASSES)
    importlib.import_module(name)
    HookRegistry.register(f"{name}.Base", lambda r, *a: r)
    HookRegistry.apply_hooks()
    report = HookRegistry.describe(f"{name}.Base")[0]
    assert (
        report.status == "failed"
        and report.error.startswith("TypeError")
        and "is a class" in report.error
    )


def test_wrapper_keeps_name_qualname_doc_module_and_signature(make_module):
    name = make_module("m", "def f(a, b: int = 2) -> int:\n    'The doc.'\n    return a + b\n")
    mod = importlib.import_module(name)
    original = mod.f
    HookRegistry.register(f"{name}.f", lambda r, *a, **k: None)
    HookRegistry.apply_hooks()
    assert mod.f is not original and mod.f.__wrapped__ is original
    assert (mod.f.__name__, mod.f.__qualname__, mod.f.__doc__, mod.f.__module__) == (
        "f",
        "f",
        "The doc.",
        name,
    )
    assert inspect.signature(mod.f) == inspect.signature(original)


def test_patched_module_level_function_stays_picklable(make_module):
    name = make_module("m", "def f(x):\n    return x\n")
    mod = importlib.import_module(name)
    HookRegistry.register(f"{name}.f", lambda r, x: None)
    HookRegistry.apply_hooks()
    assert pickle.loads(pickle.dumps(mod.f)) is mod.f


def test_colon_target_spelling_hooks_a_method(make_module):
    name = make_module("m", CLASSES)
    mod = importlib.import_module(name)
    HookRegistry.register(f"{name}:Base.method", lambda r, self, x: "hooked")
    HookRegistry.apply_hooks()
    assert mod.Base().method(1) == "hooked"


def test_both_spellings_of_one_target_share_one_wrapper(make_module):
    name = make_module("m", "def f(x):\n    return [x]\n")
    mod = importlib.import_module(name)
    original = mod.f
    HookRegistry.register(f"{name}.f", lambda r, x: r + ["dotted"])
    HookRegistry.register(f"{name}:f", lambda r, x: r + ["colon"])
    HookRegistry.apply_hooks()
    assert mod.f(0) == [0, "dotted", "colon"]
    assert mod.f.__wrapped__ is original


@pytest.mark.fault(
    "hooks",
    "a hook on builtins.len, a builtin the wrapper itself would call",
    "applied: len() runs the hook, the wrapper never looks builtins up when called (was: "
    "RecursionError and len broken for the process); reset() restores the builtin",
)
def test_a_hook_on_a_builtin_the_wrapper_uses_is_applied_and_reset_restores_it():
    # In a child process: a broken len() would take the whole test session down with it.
    code = textwrap.dedent(
        """
        import builtins
        from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookType

        original = builtins.len
        seen = []

        def after(result, obj):
            if obj == "probe":
                seen.append(result)

        HookRegistry.register("builtins.len", after, HookType.AFTER)
        HookRegistry.register("builtins.len", lambda fn, *a: fn(*a), HookType.AROUND)
        HookRegistry.apply_hooks()
        assert builtins.len is not original
        assert len("probe") == 5 and seen == [5], seen
        assert HookRegistry.describe("builtins.len")[0].status == "applied"
        HookRegistry.reset()
        assert builtins.len is original
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"


@pytest.mark.parametrize("applies", ["one apply", "an apply per name"])
@pytest.mark.fault(
    "hooks",
    "one module under two names in sys.modules (os.path and posixpath), a hook through each name",
    "both hooks run, in one wrapper on the one attribute (was: only the last, while describe() "
    "said both applied)",
)
def test_hooks_through_two_names_of_one_module_both_run(make_module, applies):
    name = make_module("m", "def f(x):\n    return [x]\n")
    module = importlib.import_module(name)
    original = module.f
    alias = f"{name}_alias"
    sys.modules[alias] = module  # removed with the package's modules after the test
    HookRegistry.register(f"{name}.f", lambda r, x: [*r, "real"])
    if applies == "an apply per name":
        HookRegistry.apply_hooks()
    HookRegistry.register(f"{alias}.f", lambda r, x: [*r, "alias"])
    HookRegistry.apply_hooks()
    assert module.f(0) == [0, "real", "alias"]
    assert module.f.__wrapped__ is original
    assert [r.status for r in HookRegistry.describe()] == ["applied", "applied"]
    HookRegistry.reset()
    assert module.f is original


@pytest.mark.parametrize("applies", ["one apply", "an apply after the method hook"])
@pytest.mark.fault(
    "hooks",
    "a class REPLACE on m.C registered after a hook on m.C.meth was applied",
    "the same result as in one apply: the method hook runs on the replacement class, the original "
    "class is left untouched (was: the method hook silently lost while describe() said applied)",
)
def test_class_replace_after_a_method_hook_gives_the_same_result_as_one_apply(make_module, applies):
    name = make_module("m", CLASSES)
    mod = importlib.import_module(name)
    original = mod.Base
    raw = original.__dict__["method"]

    class Replacement(original):
        pass

    def hooked(result, self, x):
        return (*result, "hooked")

    HookRegistry.register(f"{name}.Base.method", hooked)
    if applies == "an apply after the method hook":
        HookRegistry.apply_hooks()
    HookRegistry.register(f"{name}.Base", Replacement, HookType.REPLACE)
    HookRegistry.apply_hooks()
    assert mod.Base is Replacement
    assert mod.Base().method(1) == ("method", "Replacement", 1, "hooked")
    assert original.__dict__["method"] is raw
    assert HookRegistry.is_hook_applied(f"{name}.Base.method", hooked)
    HookRegistry.reset()
    assert (
        mod.Base is original
        and original.__dict__["method"] is raw
        and "method" not in Replacement.__dict__
    )


@pytest.mark.fault(
    "hooks",
    "the plugin whose class REPLACE on m.C carried a hook on m.C.meth is discarded",
    "the method hook moves back to the original class, as if the class REPLACE had never been "
    "registered",
)
def test_discarding_a_class_replace_moves_the_method_hook_back_to_the_original_class(make_module):
    name = make_module("m", CLASSES)
    mod = importlib.import_module(name)
    original = mod.Base

    class Replacement(original):
        pass

    HookRegistry.register(f"{name}.Base.method", lambda r, self, x: (*r, "hooked"))
    HookRegistry.register(
        f"{name}.Base", Replacement, HookType.REPLACE, source=HookSource("swap", None)
    )
    HookRegistry.apply_hooks()
    HookRegistry.discard_source(HookSource("swap", None))
    assert mod.Base is original and "method" not in Replacement.__dict__
    assert mod.Base().method(1) == ("method", "Base", 1, "hooked")


@pytest.mark.fault(
    "hooks",
    "a hook on a functools.lru_cache function (SGLang calls get_model_info.cache_clear())",
    "the wrapper keeps the cache's public attributes: cache_info() and cache_clear() act on the "
    "cache (was: AttributeError)",
)
def test_a_hooked_lru_cache_function_keeps_cache_info_and_cache_clear(make_module):
    source = "import functools\n\n@functools.lru_cache\ndef info(x):\n    return [x]\n"
    name = make_module("m", source)
    mod = importlib.import_module(name)
    HookRegistry.register(f"{name}.info", lambda result, x: [*result, "hooked"])
    HookRegistry.apply_hooks()
    assert mod.info(1) == mod.info(1) == [1, "hooked"]
    assert mod.info.cache_info().hits == 1
    mod.info.cache_clear()
    assert mod.info.cache_info().currsize == 0


@pytest.mark.fault(
    "hooks",
    "a hook on a method defined with functools.partialmethod",
    "hooked like a method: the hooks see the bound arguments and the call's, and reset() restores "
    "the partialmethod (was: failed with 'attribute not callable')",
)
def test_a_partialmethod_is_hooked_like_a_method(make_module):
    source = "import functools\n\nclass C:\n    def _m(self, a, b):\n        return [a, b]\n\n"
    name = make_module("m", source + "    m = functools.partialmethod(_m, 1)\n")
    mod = importlib.import_module(name)
    raw = mod.C.__dict__["m"]
    seen = []
    HookRegistry.register(f"{name}.C.m", lambda self, *args: seen.append(args), HookType.BEFORE)
    HookRegistry.register(f"{name}.C.m", lambda result, self, *args: [*result, "hooked"])
    HookRegistry.apply_hooks()
    assert HookRegistry.describe(f"{name}.C.m")[0].status == "applied"
    assert mod.C().m(2) == [1, 2, "hooked"] and seen == [(1, 2)]
    HookRegistry.reset()
    assert mod.C.__dict__["m"] is raw and mod.C().m(2) == [1, 2]
