"""Testing kit for plugin authors, and a pytest plugin (registered through the ``pytest11`` entry point).

Helpers: fake distributions on ``sys.path`` without installing, a simulated torch device module, and a
conformance check for platform classes. Importing this module is cheap (pytest imports it at start-up in every
project where the runtime is installed): the helpers are imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._conformance import ConformanceProblem, assert_platform_conformance, check_platform_conformance
    from ._fake_distributions import write_fake_distribution
    from ._simulated_device import SimulatedDevice, simulated_device

__all__ = [
    "ConformanceProblem",
    "SimulatedDevice",
    "assert_platform_conformance",
    "check_platform_conformance",
    "simulated_device",
    "write_fake_distribution",
]

_LAZY = {
    "ConformanceProblem": "._conformance",
    "assert_platform_conformance": "._conformance",
    "check_platform_conformance": "._conformance",
    "SimulatedDevice": "._simulated_device",
    "simulated_device": "._simulated_device",
    "write_fake_distribution": "._fake_distributions",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
