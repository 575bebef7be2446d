"""Private machinery behind :mod:`sglang_plugin_runtime.plugins.hook_registry`; import from there instead.

``_registry`` (the registry object: registration, applying, undoing), ``_types`` (what it talks about and
remembers), ``_targets`` (target strings, descriptors, recorded setattrs), ``_wrappers`` (the fused wrapper),
``_import_watch`` (the post-import hook) and ``_describe``
(reports, imported only when asked for).
"""
