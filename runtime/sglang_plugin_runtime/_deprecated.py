"""The old spellings of the public names that one lifecycle renamed (issue 29): each still works
until the next minor release (0.2), with a ``DeprecationWarning`` naming the new one.

Imported only when code uses an old name: the classes that renamed attributes send an attribute
lookup that failed here (their ``__getattr__``), the packages that renamed exports send a name they
do not have, and ``Status`` a comparison with a retired status.
"""

import os
import sys
import warnings
from typing import Any

_RUNTIME_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep

#: By class (and its subclasses): old attribute -> new one.
_ATTRIBUTES = {
    "LoadReport": {"records": "outcomes"},
    "HookReport": {"hook_type": "type", "dist": "distribution"},
    "PluginError": {"dist": "distribution", "activations": "outcomes"},
    "PluginEntryPoint": {
        "dist_name": "distribution",
        "dist_version": "version",
        "dist_path": "path",
        "dist_label": "label",
    },
    "PlatformSelection": {"dist_name": "distribution", "dist_version": "version"},
    "PluginOutcome": {"dist_name": "distribution", "dist_version": "version"},
}
#: By package: old export -> new one.
_EXPORTS = {
    "sglang_plugin_runtime.platforms": {
        "Activation": "PluginOutcome",
        "RULE_EXPLICIT": "Rule.EXPLICIT",
        "RULE_SINGLE": "Rule.SINGLE",
        "RULE_FALLBACK": "Rule.FALLBACK",
        "RULE_OVERRIDE": "Rule.OVERRIDE",
    },
    "sglang_plugin_runtime.plugins": {"PluginRecord": "PluginOutcome"},
}
#: Retired statuses: what each became.
RETIRED_STATUSES = {
    "failed": ("failed-import", "failed-call"),  # a platform plugin's failure
    "failed-register": ("failed-call",),  # a general plugin's register() raised
}


def _warn(old: str, new: str) -> None:
    """Warn, pointing at the first caller outside the runtime (the code that used the old name)."""
    level, frame = 2, sys._getframe(1)
    while frame.f_back and frame.f_code.co_filename.startswith(_RUNTIME_DIR):
        level, frame = level + 1, frame.f_back
    warnings.warn(
        f"{old} is deprecated and goes in sglang-plugin-runtime 0.2: use {new}",
        DeprecationWarning,
        stacklevel=level,
    )


def renamed_attribute(obj: object, name: str) -> Any:
    """``obj``'s attribute that ``name`` was renamed to; ``AttributeError`` for any other name."""
    kind = type(obj)
    for klass in kind.__mro__:
        if (new := _ATTRIBUTES.get(klass.__name__, {}).get(name)) is not None:
            _warn(f"{klass.__name__}.{name}", f"{klass.__name__}.{new}")
            return getattr(obj, new)
    raise AttributeError(f"{kind.__name__!r} object has no attribute {name!r}")


def renamed_export(package: str, namespace: dict[str, Any], name: str) -> Any:
    """What ``package`` exports now under the new name of ``name``; ``AttributeError`` for any
    other name."""
    if (new := _EXPORTS.get(package, {}).get(name)) is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    _warn(f"{package}.{name}", f"{package}.{new}")
    export, _, member = new.partition(".")  # (an enum's member: Rule.EXPLICIT)
    return getattr(namespace[export], member) if member else namespace[export]


def is_retired_status(status: str, old: str) -> bool:
    """Whether ``status`` is one that retired status ``old`` became (``old == status``, as old code
    compares them)."""
    _warn(f"the status {old!r}", " or ".join(map(repr, RETIRED_STATUSES[old])))
    return status in RETIRED_STATUSES[old]
