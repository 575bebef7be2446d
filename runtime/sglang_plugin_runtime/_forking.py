"""The one place that handles ``fork``: state owners register what a forked child must reset.

A forked child inherits a copy of its parent's memory, including locks a parent thread may have held
and "already done" flags that describe the parent. Each owner of such state registers a function
here; ``os.register_at_fork`` runs them in the child, in registration order.
"""

import os
from collections.abc import Callable


def after_fork_in_child(reset: Callable[[], None]) -> Callable[[], None]:
    """Run ``reset`` in every forked child (usable as a decorator)."""
    if hasattr(os, "register_at_fork"):  # not on Windows
        os.register_at_fork(after_in_child=reset)
    return reset
