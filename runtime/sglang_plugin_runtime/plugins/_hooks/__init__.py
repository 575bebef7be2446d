"""Private machinery behind :mod:`sglang_plugin_runtime.plugins.hook_registry`.

Nothing here is public API; import from ``hook_registry`` instead. Each module holds one concept:
``_types`` (hook types and sources), ``_targets`` (target strings), ``_attributes`` (descriptor
unwrapping), ``_wrappers`` (the fused wrapper), ``_patching`` (recorded setattrs and undo),
``_rebinding`` (stale ``from x import f`` copies), ``_import_watch`` (the post-import hook),
``_errors`` (failures and strict mode), ``_introspection`` (reports) and ``_engine`` (the
registry state and how a batch of targets is applied).
"""
