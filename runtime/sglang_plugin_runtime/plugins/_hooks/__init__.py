"""Private machinery behind :mod:`sglang_plugin_runtime.plugins.hook_registry`; import from there.

``_registry`` (the registry object: finding targets, registering, applying, undoing, the post-import
hook), ``_types`` (what it talks about and remembers), ``_wrappers`` (the fused wrapper) and
``_describe`` (reports, imported only when asked for).
"""
