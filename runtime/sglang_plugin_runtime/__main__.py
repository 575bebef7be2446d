"""``python -m sglang_plugin_runtime``: the ``sglang-plugins`` command, for environments without the
script."""

from ._cli import main

if __name__ == "__main__":
    raise SystemExit(main())
