"""Testing kit for plugin authors, and a pytest plugin (registered through the ``pytest11`` entry
point).

Fixtures (in every pytest run where the runtime is installed): ``plugin_env``,
``fake_distributions``, ``hook_registry``, ``platform_override``, ``simulated_device``,
``stand_in_module`` and ``sglang_server`` (a real SGLang server on the CPU, for tests marked
``sglang_server``: they run only with ``pytest -m sglang_server``; where this Python has no SGLang
server, the serving venv is built once and cached, see ``serving_venv``). Helpers: fake
distributions on ``sys.path`` without installing, stand-in modules for a hook's target (SGLang's
code without SGLang), a simulated torch device module, a conformance check for platform classes
(also against one SGLang release), and the SGLang releases a range holds.

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
    from ..plugins.hook_registry import describe_resolution_hooks
    from ._conformance import (
        ConformanceProblem,
        assert_platform_conformance,
        check_platform_conformance,
    )
    from ._environment import PluginEnv
    from ._fake_distributions import write_fake_distribution
    from ._fake_site import FakeDistributions
    from ._host_registry import isolated_hooks, resolve_target, target_owner
    from ._platform_override import PlatformOverride
    from ._releases import missing_hook_target, sglang_releases
    from ._sglang_server import (
        SGLangServer,
        SGLangServerError,
        running_sglang_server,
        tiny_model,
        vllm_placeholder,
    )
    from ._stand_in import StandInModules
    from .serving import serving_venv

__all__ = [
    "ConformanceProblem",
    "FakeDistributions",
    "PlatformOverride",
    "PluginEnv",
    "SGLangServer",
    "SGLangServerError",
    "SimulatedDevice",
    "StandInModules",
    "assert_platform_conformance",
    "check_platform_conformance",
    "describe_resolution_hooks",
    "isolated_hooks",
    "missing_hook_target",
    "resolve_target",
    "running_sglang_server",
    "serving_venv",
    "sglang_releases",
    "simulated_device",
    "target_owner",
    "tiny_model",
    "vllm_placeholder",
    "write_fake_distribution",
]

_LAZY = {
    "FakeDistributions": "._fake_site",
    "PlatformOverride": "._platform_override",
    "PluginEnv": "._environment",
    "ConformanceProblem": "._conformance",
    "assert_platform_conformance": "._conformance",
    "check_platform_conformance": "._conformance",
    "describe_resolution_hooks": "..plugins.hook_registry",
    "SGLangServer": "._sglang_server",
    "SGLangServerError": "._sglang_server",
    "running_sglang_server": "._sglang_server",
    "tiny_model": "._sglang_server",
    "vllm_placeholder": "._sglang_server",
    "serving_venv": ".serving",
    "SimulatedDevice": ".._simulated_device",
    "StandInModules": "._stand_in",
    "simulated_device": ".._simulated_device",
    "isolated_hooks": "._host_registry",
    "resolve_target": "._host_registry",
    "missing_hook_target": "._releases",
    "sglang_releases": "._releases",
    "target_owner": "._host_registry",
    "write_fake_distribution": "._fake_distributions",
}


__getattr__ = lazy_exports(__name__, globals(), _LAZY)
