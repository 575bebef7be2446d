"""A simulated torch device module, so device code runs on machines without the hardware.

``simulated_device("npu")`` installs a module as ``torch.npu`` (and in
``sys.modules["torch.npu"]``) that answers the questions platform code asks a device
module (count, names, properties, memory, capability, seeding, synchronisation) from a
small in-memory model, records every call, and puts back exactly what was there before
when it stops. Use it as a context manager in tests, or ``start()``/``stop()`` from a
command line tool.
"""

from __future__ import annotations

import logging
import sys
import threading
import types
from dataclasses import dataclass
from typing import Any, NamedTuple

__all__ = ["SimulatedCall", "SimulatedDevice", "active_simulated_device", "simulated_device"]

logger = logging.getLogger(__name__)

_GIB = 1024**3
_PROTECTED_TYPES = frozenset({"cpu", "cuda", "meta"})
_MISSING = object()
_LOCK = threading.RLock()
_ACTIVE: list[SimulatedDevice] = []


class SimulatedCall(NamedTuple):
    """One call that reached the simulated device module."""

    name: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


@dataclass(frozen=True)
class SimulatedDeviceProperties:
    """What ``get_device_properties()`` returns: the fields platform code reads."""

    name: str
    total_memory: int
    major: int
    minor: int
    uuid: str
    index: int
    multi_processor_count: int = 1


def _import_torch() -> Any:
    try:
        import torch
    except ImportError as exc:
        raise RuntimeError(
            "simulated_device() needs real torch to attach a device module to: pip install torch==2.13.0"
        ) from exc
    return torch


class SimulatedDevice:
    """A fake accelerator of type ``device_type``; inactive until started.

    ``calls`` lists every call the device module received, in order. Memory is a
    per-device model: :meth:`allocate` and :meth:`free` move ``memory_allocated``, the
    peak follows, and ``mem_get_info`` reports ``total - reserved``.
    """

    def __init__(
        self,
        device_type: str = "npu",
        *,
        device_count: int = 1,
        name: str | None = None,
        total_memory: int = 16 * _GIB,
        capability: tuple[int, int] = (1, 0),
        backend_module: str | None = None,
        replace_existing: bool = False,
        privateuse1: bool = False,
    ) -> None:
        if not device_type or not device_type.isidentifier():
            raise ValueError(f"device_type must be an identifier such as 'npu', got {device_type!r}")
        if device_type in _PROTECTED_TYPES and not replace_existing:
            raise ValueError(
                f"refusing to simulate {device_type!r}: it would hide torch's real "
                f"torch.{device_type}; pass replace_existing=True if you mean it"
            )
        if device_count < 1:
            raise ValueError(f"device_count must be at least 1, got {device_count}")
        if total_memory < 0:
            raise ValueError(f"total_memory must not be negative, got {total_memory}")
        major, minor = capability
        self.device_type = device_type
        self.device_count = device_count
        self.name = name if name is not None else f"Simulated {device_type.upper()}"
        self.total_memory = int(total_memory)
        self.capability = (int(major), int(minor))
        self.backend_module = backend_module
        self.replace_existing = replace_existing
        self.privateuse1 = privateuse1
        self.calls: list[SimulatedCall] = []
        self.current_index = 0
        self.seed: int | None = None
        self._allocated = [0] * device_count
        self._peak = [0] * device_count
        self._reserved = [0] * device_count
        self.module = self._build_module()
        self.backend: types.ModuleType | None = None
        self._saved: list[tuple[str, Any, str, Any]] = []
        self._torch: Any = None

    # ---- lifecycle ---------------------------------------------------------------------

    @property
    def active(self) -> bool:
        """Whether this simulation is installed right now."""
        return self in _ACTIVE

    def start(self) -> SimulatedDevice:
        """Install the device module (and the backend module, if any) into torch and sys.modules."""
        with _LOCK:
            if self.active:
                raise RuntimeError(f"{self!r} is already started")
            torch = _import_torch()
            existing = torch.__dict__.get(self.device_type, _MISSING)
            if existing is not _MISSING and not self.replace_existing and not _is_simulated(existing):
                raise ValueError(
                    f"torch.{self.device_type} already exists ({existing!r}); refusing to "
                    f"replace a real device module: pass replace_existing=True if you mean it"
                )
            if self.privateuse1:
                self._rename_privateuse1(torch)
            self._torch = torch
            self._saved = []
            self._save_and_set("attr", torch, self.device_type, self.module)
            self._save_and_set("module", sys.modules, f"torch.{self.device_type}", self.module)
            if self.backend_module:
                self.backend = self._build_backend()
                self._save_and_set("module", sys.modules, self.backend_module, self.backend)
                self._save_and_set("module", sys.modules, f"{self.backend_module}.{self.device_type}", self.module)
            _clear_device_module_cache(torch)
            _ACTIVE.append(self)
            logger.debug("simulated device started: %r", self)
        return self

    def stop(self) -> None:
        """Put back exactly what ``start()`` replaced; stops must mirror starts (last in, first out)."""
        with _LOCK:
            if not self.active:
                return
            same_type = [sim for sim in _ACTIVE if sim.device_type == self.device_type]
            if same_type[-1] is not self:
                raise RuntimeError(
                    f"{self!r} cannot stop before the simulated {self.device_type!r} device "
                    f"started after it; stop that one first"
                )
            for kind, container, key, previous in reversed(self._saved):
                if kind == "attr":
                    if previous is _MISSING:
                        delattr(container, key)
                    else:
                        setattr(container, key, previous)
                elif previous is _MISSING:
                    container.pop(key, None)
                else:
                    container[key] = previous
            self._saved = []
            _clear_device_module_cache(self._torch)
            _ACTIVE.remove(self)
            logger.debug("simulated device stopped: %r", self)

    def __enter__(self) -> SimulatedDevice:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "active" if self.active else "inactive"
        return (
            f"SimulatedDevice(device_type={self.device_type!r}, device_count={self.device_count}, "
            f"name={self.name!r}, {state})"
        )

    # ---- inspection and memory model ---------------------------------------------------

    def called(self, name: str) -> bool:
        """Whether the device module's ``name`` function was called."""
        return any(call.name == name for call in self.calls)

    def calls_to(self, name: str) -> list[SimulatedCall]:
        """Every recorded call to the device module's ``name`` function."""
        return [call for call in self.calls if call.name == name]

    def allocate(self, nbytes: int, device: int = 0) -> None:
        """Pretend ``nbytes`` were allocated on ``device`` (moves allocated, peak, reserved)."""
        self._allocated[device] += nbytes
        self._peak[device] = max(self._peak[device], self._allocated[device])
        self._reserved[device] = max(self._reserved[device], self._allocated[device])

    def free(self, nbytes: int, device: int = 0) -> None:
        """Pretend ``nbytes`` were freed on ``device`` (reserved stays until ``empty_cache``)."""
        self._allocated[device] = max(0, self._allocated[device] - nbytes)

    # ---- internals ---------------------------------------------------------------------

    def _save_and_set(self, kind: str, container: Any, key: str, value: Any) -> None:
        if kind == "attr":
            previous = container.__dict__.get(key, _MISSING)
            setattr(container, key, value)
        else:
            previous = container.get(key, _MISSING)
            container[key] = value
        self._saved.append((kind, container, key, previous))

    def _rename_privateuse1(self, torch: Any) -> None:
        current = torch._C._get_privateuse1_backend_name()
        if current == self.device_type:
            return
        if current != "privateuseone":
            raise RuntimeError(
                f"torch's PrivateUse1 backend is already named {current!r} in this process; "
                f"it cannot be renamed to {self.device_type!r}"
            )
        # Irreversible for the life of the process: torch allows one rename only.
        torch.utils.rename_privateuse1_backend(self.device_type)

    def _index(self, device: Any) -> int:
        if device is None:
            return self.current_index
        if isinstance(device, int):
            index = device
        elif isinstance(device, str):
            kind, _, rest = device.partition(":")
            if kind != self.device_type:
                raise ValueError(f"expected a {self.device_type!r} device, got {device!r}")
            index = int(rest) if rest else self.current_index
        elif hasattr(device, "type") and hasattr(device, "index"):
            if device.type != self.device_type:
                raise ValueError(f"expected a {self.device_type!r} device, got {device!r}")
            index = self.current_index if device.index is None else device.index
        else:
            raise TypeError(f"cannot interpret {device!r} as a {self.device_type} device")
        if not 0 <= index < self.device_count:
            raise RuntimeError(
                f"invalid device ordinal {index}: the simulated {self.device_type} has {self.device_count} device(s)"
            )
        return index

    def _uuid(self, index: int) -> str:
        return f"SIM-{self.device_type}-{index:04d}"

    def _build_module(self) -> types.ModuleType:
        sim = self
        module = types.ModuleType(f"torch.{self.device_type}", f"Simulated torch.{self.device_type} device module.")

        def recorded(func: Any) -> Any:
            name = func.__name__

            def call(*args: Any, **kwargs: Any) -> Any:
                sim.calls.append(SimulatedCall(name, args, kwargs))
                return func(*args, **kwargs)

            call.__name__ = call.__qualname__ = name
            call.__doc__ = func.__doc__
            setattr(module, name, call)
            return call

        @recorded
        def is_available() -> bool:
            return True

        @recorded
        def is_initialized() -> bool:
            return True

        @recorded
        def init() -> None:
            return None

        @recorded
        def device_count() -> int:
            return sim.device_count

        @recorded
        def current_device() -> int:
            return sim.current_index

        @recorded
        def set_device(device: Any) -> None:
            sim.current_index = sim._index(device)

        @recorded
        def get_device_name(device: Any = None) -> str:
            sim._index(device)
            return sim.name

        @recorded
        def get_device_properties(device: Any = None) -> SimulatedDeviceProperties:
            index = sim._index(device)
            major, minor = sim.capability
            return SimulatedDeviceProperties(sim.name, sim.total_memory, major, minor, sim._uuid(index), index)

        @recorded
        def get_device_capability(device: Any = None) -> tuple[int, int]:
            sim._index(device)
            return sim.capability

        @recorded
        def mem_get_info(device: Any = None) -> tuple[int, int]:
            index = sim._index(device)
            return sim.total_memory - sim._reserved[index], sim.total_memory

        @recorded
        def memory_allocated(device: Any = None) -> int:
            return sim._allocated[sim._index(device)]

        @recorded
        def max_memory_allocated(device: Any = None) -> int:
            return sim._peak[sim._index(device)]

        @recorded
        def memory_reserved(device: Any = None) -> int:
            return sim._reserved[sim._index(device)]

        @recorded
        def max_memory_reserved(device: Any = None) -> int:
            return sim._reserved[sim._index(device)]

        @recorded
        def reset_peak_memory_stats(device: Any = None) -> None:
            index = sim._index(device)
            sim._peak[index] = sim._allocated[index]

        @recorded
        def empty_cache() -> None:
            sim._reserved = list(sim._allocated)

        @recorded
        def synchronize(device: Any = None) -> None:
            sim._index(device)

        @recorded
        def manual_seed(seed: int) -> None:
            sim.seed = int(seed)

        @recorded
        def manual_seed_all(seed: int) -> None:
            sim.seed = int(seed)

        def _is_in_bad_fork() -> bool:
            # torch.manual_seed() seeds a privateuse1 backend only when its module offers this (and
            # manual_seed_all); a simulated device is never in a bad fork. Not recorded: torch calls it itself.
            return False

        module._is_in_bad_fork = _is_in_bad_fork  # type: ignore[attr-defined]

        module.__simulated__ = True  # type: ignore[attr-defined]
        return module

    def _build_backend(self) -> types.ModuleType:
        assert self.backend_module is not None
        backend = types.ModuleType(self.backend_module, f"Simulated {self.backend_module} backend package.")
        backend.__version__ = "0.0.0+simulated"  # type: ignore[attr-defined]
        backend.__simulated__ = True  # type: ignore[attr-defined]
        backend.__path__ = []  # a package, so submodule imports resolve
        setattr(backend, self.device_type, self.module)
        return backend


def _is_simulated(obj: Any) -> bool:
    return getattr(obj, "__simulated__", False) is True


def _clear_device_module_cache(torch: Any) -> None:
    # torch.get_device_module caches its answer per device; a stale one would outlive us.
    cache_clear = getattr(getattr(torch, "get_device_module", None), "cache_clear", None)
    if cache_clear is not None:
        cache_clear()


def simulated_device(
    device_type: str = "npu",
    *,
    device_count: int = 1,
    name: str | None = None,
    total_memory: int = 16 * _GIB,
    capability: tuple[int, int] = (1, 0),
    backend_module: str | None = None,
    replace_existing: bool = False,
    privateuse1: bool = False,
) -> SimulatedDevice:
    """A simulated ``torch.<device_type>``: use ``with simulated_device(...) as sim:`` or ``start()``.

    ``backend_module`` also registers a fake vendor package (e.g. ``"torch_npu"``).
    ``privateuse1=True`` renames torch's PrivateUse1 backend to ``device_type`` so
    ``torch.device(device_type)`` parses; torch allows that once per process and it is
    not undone on exit.
    """
    return SimulatedDevice(
        device_type,
        device_count=device_count,
        name=name,
        total_memory=total_memory,
        capability=capability,
        backend_module=backend_module,
        replace_existing=replace_existing,
        privateuse1=privateuse1,
    )


def active_simulated_device(device_type: str | None = None) -> SimulatedDevice | None:
    """The most recently started simulation (of ``device_type``, when given), or ``None``."""
    with _LOCK:
        for sim in reversed(_ACTIVE):
            if device_type is None or sim.device_type == device_type:
                return sim
    return None
