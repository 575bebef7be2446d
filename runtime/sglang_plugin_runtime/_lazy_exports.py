"""Names a package re-exports but imports only when first used (a module ``__getattr__``, PEP 562).

Used where the import would cost every process that never touches the name: the platform classes
behind ``sglang_plugin_runtime.platforms`` (asking "which platform am I on" must stay cheap without
torch), and the testing kit, which pytest imports in every test run where the runtime is installed.
So are the old spellings of renamed names (``_deprecated``): only code that uses one loads them.
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
        if name not in where:  # an old name (deprecated), or AttributeError
            from ._deprecated import renamed_export

            return renamed_export(package, namespace, name)
        namespace[name] = getattr(importlib.import_module(where[name], package), name)
        return namespace[name]

    return __getattr__


def old_attribute(self: object, name: str) -> Any:
    """The ``__getattr__`` of the classes that renamed attributes: an old name still works,
    deprecated; any other name is an ``AttributeError``."""
    from ._deprecated import renamed_attribute

    return renamed_attribute(self, name)
