"""What ``doctor`` can tell about a hook's target without importing it: the check a deployment gate
needs beyond what the registry reports.

A target whose module can be found (its spec, found without importing the module or its parents) is
fine until it is imported: its hooks apply then. A target whose module cannot be found never
applies: an error naming it. Where the host package (``sglang``) is not installed at all, its
targets cannot be judged here: information.
"""

from __future__ import annotations

import re
import sys

from ..plugins._hooks._missing import find_spec
from ..plugins._hooks._missing import missing_module as missing_module  # for the reports

HOST_PACKAGE = "sglang"


def host_not_installed(target: str) -> bool:
    """Whether ``target`` is in the host package, which is not installed in this environment."""
    top = re.split("[.:]", target)[0]
    return top == HOST_PACKAGE and top not in sys.modules and find_spec(top, None) is None
