"""The SGLang plugin runtime: discover, select and apply platform and general plugins.

The public modules mirror SGLang's own paths (``sglang.srt`` <-> ``sglang_plugin_runtime``):

- :mod:`sglang_plugin_runtime.platforms` -- ``current_platform`` and the selection API
- :mod:`sglang_plugin_runtime.platforms.device_mixin` -- ``DeviceMixin`` and friends
- :mod:`sglang_plugin_runtime.platforms.interface` -- ``SRTPlatform``
- :mod:`sglang_plugin_runtime.plugins` -- ``load_plugins()``
- :mod:`sglang_plugin_runtime.plugins.hook_registry` -- ``HookRegistry`` and ``plugin_hook``

Importing this package is cheap: it never imports torch and never scans entry points.
"""

__version__ = "0.1.0"
