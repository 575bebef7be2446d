"""``--simulate``: run a report on a simulated torch device, for machines without the vendor's hardware."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ._report import Simulation


@contextmanager
def simulated(simulation: Simulation | None) -> Iterator[None]:
    """Run the body with ``simulation``'s device installed into torch (nothing when ``None``)."""
    if simulation is None:
        yield
        return
    from .._simulated_device import simulated_device

    device = simulated_device(
        simulation.device_type, device_count=simulation.device_count, backend_module=simulation.backend_module
    )
    device.start()
    try:
        yield
    finally:
        device.stop()
