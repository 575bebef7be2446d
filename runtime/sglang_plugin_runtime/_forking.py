"""The one place that handles ``fork``: state owners register what a forked child must reset.

A forked child inherits a copy of its parent's memory, including locks a parent thread may have held
and "already done" flags that describe the parent. Each owner of such state registers a function
here; one ``os.register_at_fork`` handler runs them all in the child, in registration order.
"""

import os
from collections.abc import Callable

_in_child: list[Callable[[], None]] = []


def after_fork_in_child(reset: Callable[[], None]) -> Callable[[], None]:
    """Run ``reset`` in every forked child (usable as a decorator)."""
    _in_child.append(reset)
    return reset


def _run_in_child() -> None:
    for reset in _in_child:
        reset()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_run_in_child)
