"""The version-sensitive parts of the runtime, exercised under every supported Python (3.10-3.13).

The runtime is standard-library only, so each interpreter runs it straight from ``runtime/`` (no
install). The discovery scan is compared with ``importlib.metadata`` in tests/test_discovery.py;
here the rest: platform selection, plugin loading, and the hook wrappers (whose generated code and
coroutine detection depend on the interpreter).
"""

from __future__ import annotations

import pytest
from _plugin_site import PluginSite, find_python

VERSIONS = ["3.10", "3.11", "3.12", "3.13"]

HOOK_KINDS = """
import asyncio, inspect, json, pickle, sys
import targets
from sglang_plugin_runtime.plugins.hook_registry import HookRegistry, HookType

original_func = targets.func
HookRegistry.register("targets.func", lambda r, *a, **k: r + 1, HookType.AFTER)
HookRegistry.register("targets.func", lambda orig, *a, **k: orig(*a, **k) * 10, HookType.AROUND)
HookRegistry.register("targets.afunc", lambda r, *a, **k: r + 1, HookType.AFTER)
HookRegistry.register("targets.Sub.make", lambda r, *a, **k: r + "!", HookType.AFTER)
HookRegistry.register("targets.Base.value", lambda r, *a, **k: r * 2, HookType.AFTER)
HookRegistry.register("targets.gen", lambda orig, *a, **k: (x * 3 for x in orig(*a, **k)),
                      HookType.AROUND)
HookRegistry.register("targets.lazy_mod.later", lambda r, *a, **k: r + 100, HookType.AFTER)
HookRegistry.apply_hooks()
lazy_imported_early = "targets.lazy_mod" in sys.modules
import targets.lazy_mod
HookRegistry.register("targets.solo", lambda r, *a, **k: r + 1, HookType.AFTER)
HookRegistry.apply_hooks()

out = {
    "python": list(sys.version_info[:2]),
    "func": targets.func(1),
    "alias": targets.alias_user(1),
    "async": asyncio.run(targets.afunc(1)),
    "still_coroutine_function": inspect.iscoroutinefunction(targets.afunc),
    "inherited_classmethod": [targets.Sub().make(), targets.Sub.make(), targets.Base.make()],
    "property": targets.Base().value,
    "generator": list(targets.gen(3)),
    "lazy_imported_early": lazy_imported_early,
    "lazy_patched_on_import": targets.lazy_mod.later(),
    "signature": str(inspect.signature(targets.func)),
    "picklable": pickle.loads(pickle.dumps(targets.func)) is targets.func,
    "solo": targets.solo(1),
}
HookRegistry.reset()
alias_globals = targets.alias_user.__globals__
out["reset_restores_identity"] = (targets.func is original_func
                                  and alias_globals["func"] is original_func)
out["base_untouched"] = "make" not in vars(targets.Sub)
print(json.dumps(out))
"""

TARGETS = {
    "targets/__init__.py": """
        def func(x, y=2):
            return x + y

        async def afunc(x):
            return x * 2

        def gen(n):
            yield from range(n)

        def solo(x):
            return x

        class Base:
            @classmethod
            def make(cls):
                return cls.__name__

            @property
            def value(self):
                return 21

        class Sub(Base):
            pass

        from targets.user import alias_user
    """,
    "targets/user.py": """
        from targets import func

        def alias_user(x):
            return func(x)
    """,
    "targets/lazy_mod.py": """
        def later():
            return 1
    """,
}


def _python(version: str) -> str:
    python = find_python(version)
    if python is None:
        pytest.skip(f"python{version} is not installed here (looked on PATH and under pyenv)")
    return python


@pytest.mark.parametrize("version", VERSIONS)
def test_hook_kinds_behave_the_same_on_each_python(site: PluginSite, version: str) -> None:
    site.add("targets", modules=TARGETS)
    out = site.run_json(HOOK_KINDS, python=_python(version))
    assert out == {
        "python": [int(part) for part in version.split(".")],
        "func": 40,  # AFTER (registered first) is inner: (1 + 2 + 1) * 10
        "alias": 40,
        "solo": 2,
        "async": 3,
        "still_coroutine_function": True,
        "inherited_classmethod": ["Sub!", "Sub!", "Base"],
        "property": 42,
        "generator": [0, 3, 6],
        "lazy_imported_early": False,
        "lazy_patched_on_import": 101,
        "signature": "(x, y=2)",
        "picklable": True,
        "reset_restores_identity": True,
        "base_untouched": True,
    }


@pytest.mark.parametrize("version", VERSIONS)
def test_selection_and_loading_work_on_each_python(site: PluginSite, version: str) -> None:
    site.add_platform("acme-npu", "acme", "acmenpu")
    site.add(
        "counter",
        entry_points={"sglang.srt.plugins": {"counter": "counter_plugin:register"}},
        modules={"counter_plugin.py": "CALLS = []\ndef register():\n    CALLS.append(1)\n"},
    )
    out = site.run_json(
        """
        import json
        from sglang_plugin_runtime.platforms import current_platform_selection
        from sglang_plugin_runtime.plugins import load_plugins
        selection = current_platform_selection()
        report = load_plugins()
        load_plugins()
        import counter_plugin
        statuses = [r.status for r in report.outcomes]
        print(json.dumps([selection.plugin, selection.distribution, statuses,
                          len(counter_plugin.CALLS)]))
        """,
        python=_python(version),
    )
    assert out == ["acme", "acme-npu", ["loaded"], 1]
