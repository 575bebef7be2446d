"""Names a package re-exports but imports only when first used (a module ``__getattr__``, PEP 562).

Used where the import would cost every process that never touches the name: the platform classes
behind ``sglang_plugin_runtime.platforms`` (asking "which platform am I on" must stay cheap without
torch), and the testing kit, which pytest imports in every test run where the runtime is installed.
"""

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, namespace: dict[str, Any], where: Mapping[str, str]
) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that imports ``where[name]`` (a module relative to
    it) on first access and caches the value in the package's ``namespace``."""

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = getattr(importlib.import_module(where[name], package), name)
        return namespace[name]

    return __getattr__
