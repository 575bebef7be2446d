"""Testing kit for plugin authors, and a pytest plugin (registered through the ``pytest11`` entry
point).

Fixtures (in every pytest run where the runtime is installed): ``plugin_env``,
``fake_distributions``, ``hook_registry``, ``platform_override``, ``simulated_device`` and
``stand_in_module``. Helpers: fake distributions on ``sys.path`` without installing, stand-in
modules for a hook's target (SGLang's code without SGLang), a simulated torch device module, and a
conformance check for platform classes.

Importing this module is cheap (pytest imports it at start-up in every project where the runtime is
installed): it imports neither pytest nor torch, and the helpers are imported on first use. See
docs/testing-kit.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy_exports import lazy_exports

#: Read by pytest when it registers this module as a plugin: the fixtures live in their own module,
#: so that importing the kit outside pytest does not import pytest.
pytest_plugins = ["sglang_plugin_runtime.testing._fixtures"]

if TYPE_CHECKING:
    from .._simulated_device import SimulatedDevice, simulated_device
    from ._conformance import (
        ConformanceProblem,
        assert_platform_conformance,
        check_platform_conformance,
    )
    from ._environment import PluginEnv
    from ._fake_distributions import write_fake_distribution
    from ._fake_site import FakeDistributions
    from ._platform_override import PlatformOverride
    from ._stand_in import StandInModules

__all__ = [
    "ConformanceProblem",
    "FakeDistributions",
    "PlatformOverride",
    "PluginEnv",
    "SimulatedDevice",
    "StandInModules",
    "assert_platform_conformance",
    "check_platform_conformance",
    "simulated_device",
    "write_fake_distribution",
]

_LAZY = {
    "FakeDistributions": "._fake_site",
    "PlatformOverride": "._platform_override",
    "PluginEnv": "._environment",
    "ConformanceProblem": "._conformance",
    "assert_platform_conformance": "._conformance",
    "check_platform_conformance": "._conformance",
    "SimulatedDevice": ".._simulated_device",
    "StandInModules": "._stand_in",
    "simulated_device": ".._simulated_device",
    "write_fake_distribution": "._fake_distributions",
}


__getattr__ = lazy_exports(__name__, globals(), _LAZY)
