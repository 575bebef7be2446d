"""Private machinery behind :mod:`sglang_plugin_runtime.plugins.hook_registry`.

Nothing here is public API; import from ``hook_registry`` instead. One concept per module:

- ``_registry``: the :class:`Registry` object (its state, lock and import watcher) and the active instance;
- ``_state``: what it remembers (registrations per target string, one slot per patched attribute);
- ``_apply``: resolving targets, building wrappers and installing them; ``_undo``: restoring originals;
- ``_describe``: reports for the CLI; ``_errors``: failures and strict mode;
- ``_types`` (hook types, sources, statuses), ``_targets`` (target strings), ``_attributes`` (descriptors),
  ``_wrappers`` (the fused wrapper), ``_patching`` (recorded setattrs), ``_rebinding`` (stale
  ``from x import f`` copies), ``_import_watch`` (the post-import hook).
"""
