"""A simulated torch device module, so device code runs on machines without the hardware.

``simulated_device("npu")`` installs a module as ``torch.npu`` (and in ``sys.modules["torch.npu"]``)
that answers the questions platform code asks a device module (count, names, properties, memory,
capability, seeding, synchronisation) from a small in-memory model, records every call, and puts
back exactly what was there before when it stops. Use it as a context manager in tests, or
``start()``/``stop()`` from a command line tool.
"""

from __future__ import annotations

import importlib
import sys
import threading
import types
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from typing import Any, NamedTuple

_GIB = 1024**3
_PROTECTED_TYPES = ("cpu", "cuda", "meta")
_MISSING = object()
_LOCK = threading.RLock()
_ACTIVE: list[SimulatedDevice] = []
#: The one line that installs the CPU build of torch (from PyPI, ``pip install torch`` pulls the
#: multi-GB CUDA one).
TORCH_INSTALL = "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"


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


class SimulatedDevice:
    """A fake accelerator of type ``device_type``; inactive until started.

    ``calls`` lists every call the device module received, in order. Memory is a per-device model:
    :meth:`allocate` and :meth:`free` move ``memory_allocated``, the peak follows, and
    ``mem_get_info`` reports ``total - reserved``.
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
        if not device_type.isidentifier():
            raise ValueError(
                f"device_type must be an identifier such as 'npu', got {device_type!r}"
            )
        if device_type in _PROTECTED_TYPES and not replace_existing:
            raise ValueError(
                f"refusing to simulate {device_type!r}: it would hide torch's real "
                f"torch.{device_type}; pass replace_existing=True if you mean it"
            )
        if device_count < 1:
            raise ValueError(f"device_count must be at least 1, got {device_count}")
        if total_memory < 0:
            raise ValueError(f"total_memory must not be negative, got {total_memory}")
        self.device_type = device_type
        self.device_count = device_count
        self.backend_module = backend_module
        self.name = f"Simulated {device_type.upper()}" if name is None else name
        self.total_memory = int(total_memory)
        self.capability = (int(capability[0]), int(capability[1]))
        self.replace_existing = replace_existing
        self.privateuse1 = privateuse1
        self.calls: list[SimulatedCall] = []
        self.current_index = 0
        self.seed: int | None = None
        # per device: bytes allocated, their peak, and reserved (the allocator's cache)
        self._allocated = [0] * device_count
        self._peak = [0] * device_count
        self._reserved = [0] * device_count
        self.module = self._build_module()
        self.backend: types.ModuleType | None = None
        self._saved: list[tuple[MutableMapping[str, Any], str, Any]] = []

    @property
    def active(self) -> bool:
        """Whether this simulation is installed right now."""
        return self in _ACTIVE

    def start(self) -> SimulatedDevice:
        """Install the device module (and the backend module, if any) into torch and sys.modules."""
        with _LOCK:
            if self.active:
                raise RuntimeError(f"{self!r} is already started")
            try:
                torch: Any = importlib.import_module("torch")
            except ImportError as exc:
                raise RuntimeError(
                    f"simulated_device() needs real torch to attach a device module to: "
                    f"{TORCH_INSTALL}"
                ) from exc
            # none there: this simulation's own module stands in (it hides nothing)
            existing = torch.__dict__.get(self.device_type, self.module)
            if not self.replace_existing and not getattr(existing, "__simulated__", False):
                raise ValueError(
                    f"torch.{self.device_type} already exists ({existing!r}); refusing to replace "
                    "a real device module: pass replace_existing=True if you mean it"
                )
            if self.privateuse1 and torch._C._get_privateuse1_backend_name() != self.device_type:
                current = torch._C._get_privateuse1_backend_name()
                if current != "privateuseone":
                    raise RuntimeError(
                        f"torch's PrivateUse1 backend is already named {current!r} in this "
                        f"process; it cannot be renamed to {self.device_type!r}"
                    )
                # for good: torch allows one rename only
                torch.utils.rename_privateuse1_backend(self.device_type)
            self._swap(torch.__dict__, self.device_type, self.module)
            self._swap(sys.modules, f"torch.{self.device_type}", self.module)
            if self.backend_module:
                self.backend = self._install_backend(self.backend_module)
            _clear_device_module_cache(torch)
            _ACTIVE.append(self)
        return self

    def _install_backend(self, name: str) -> types.ModuleType:
        """The fake backend package ``name`` (and, for a dotted name such as
        ``habana_frameworks.torch``, each parent package not imported yet), carrying the device
        module as an attribute and a submodule."""
        simulated = {"__version__": "0.0.0+simulated", "__simulated__": True, "__path__": []}
        backend = types.ModuleType(name, f"Simulated {name} backend package.")
        backend.__dict__.update(simulated, **{self.device_type: self.module})
        child, child_name = backend, name
        # parents first hold their child, as the import system would leave them
        while "." in child_name:
            parent_name, _, attribute = child_name.rpartition(".")
            parent = sys.modules.get(parent_name)
            if parent is None:
                parent = types.ModuleType(parent_name, f"Simulated parent package of {name}.")
                parent.__dict__.update(simulated)
                self._swap(sys.modules, parent_name, parent)
            self._swap(parent.__dict__, attribute, child)
            child, child_name = parent, parent_name
        self._swap(sys.modules, name, backend)
        self._swap(sys.modules, f"{name}.{self.device_type}", self.module)
        return backend

    def stop(self) -> None:
        """Put back exactly what ``start()`` replaced; stops must mirror starts (last in, first
        out)."""
        with _LOCK:
            if not self.active:
                return
            if active_simulated_device(self.device_type) is not self:
                raise RuntimeError(
                    f"{self!r} cannot stop before the simulated {self.device_type!r} device "
                    "started after it; stop that one first"
                )
            for mapping, key, previous in reversed(self._saved):
                if previous is _MISSING:
                    mapping.pop(key, None)
                else:
                    mapping[key] = previous
            self._saved = []
            _clear_device_module_cache(sys.modules.get("torch"))
            _ACTIVE.remove(self)

    def __enter__(self) -> SimulatedDevice:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return (
            f"SimulatedDevice(device_type={self.device_type!r}, device_count={self.device_count}, "
            f"name={self.name!r}, {'active' if self.active else 'inactive'})"
        )

    def called(self, name: str) -> bool:
        """Whether the device module's ``name`` function was called."""
        return bool(self.calls_to(name))

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

    def _swap(self, mapping: MutableMapping[str, Any], key: str, value: Any) -> None:
        self._saved.append((mapping, key, mapping.get(key, _MISSING)))
        mapping[key] = value

    def _index(self, device: Any) -> int:
        """The device index ``device`` (``None``, an int, ``"npu:1"`` or a ``torch.device``) names,
        checked."""
        kind, index = self.device_type, device
        if isinstance(device, str):
            kind, _, rest = device.partition(":")
            index = int(rest) if rest else None
        elif hasattr(device, "type") and hasattr(device, "index"):
            kind, index = device.type, device.index
        elif device is not None and not isinstance(device, int):
            raise TypeError(f"cannot interpret {device!r} as a {self.device_type} device")
        if kind != self.device_type:
            raise ValueError(f"expected a {self.device_type!r} device, got {device!r}")
        index = self.current_index if index is None else index
        if not 0 <= index < self.device_count:
            raise RuntimeError(
                f"invalid device ordinal {index}: the simulated {self.device_type} has "
                f"{self.device_count} device(s)"
            )
        return int(index)

    def _properties(self, i: int) -> SimulatedDeviceProperties:
        return SimulatedDeviceProperties(
            self.name, self.total_memory, *self.capability, f"SIM-{self.device_type}-{i:04d}", i
        )

    def _reset_peak(self, i: int) -> None:
        self._peak[i] = self._allocated[i]

    def _build_module(self) -> types.ModuleType:
        """The device module: what each function of ``torch.<device_type>`` answers, every call
        recorded."""

        # the device argument checked first
        def per_device(answer: Callable[[int], Any]) -> Callable[..., Any]:
            return lambda device=None: answer(self._index(device))

        api: dict[str, Callable[..., Any]] = {
            **dict.fromkeys(("is_available", "is_initialized"), lambda: True),
            "init": lambda: None,
            "device_count": lambda: self.device_count,
            "current_device": lambda: self.current_index,
            "set_device": lambda device: setattr(self, "current_index", self._index(device)),
            "get_device_name": per_device(lambda i: self.name),
            "get_device_properties": per_device(self._properties),
            "get_device_capability": per_device(lambda i: self.capability),
            "mem_get_info": per_device(
                lambda i: (self.total_memory - self._reserved[i], self.total_memory)
            ),
            "memory_allocated": per_device(lambda i: self._allocated[i]),
            "max_memory_allocated": per_device(lambda i: self._peak[i]),
            **dict.fromkeys(
                ("memory_reserved", "max_memory_reserved"), per_device(lambda i: self._reserved[i])
            ),
            "reset_peak_memory_stats": per_device(self._reset_peak),
            "empty_cache": lambda: setattr(self, "_reserved", list(self._allocated)),
            "synchronize": per_device(lambda i: None),
            **dict.fromkeys(
                ("manual_seed", "manual_seed_all"), lambda seed: setattr(self, "seed", int(seed))
            ),
        }
        module = types.ModuleType(
            f"torch.{self.device_type}", f"Simulated torch.{self.device_type} device module."
        )
        for name, answer in api.items():
            setattr(module, name, self._recorded(name, answer))
        # torch.manual_seed() seeds a privateuse1 backend only when its module offers this (and
        # manual_seed_all); a simulated device is never in a bad fork. Not recorded: torch calls it
        # itself.
        module.__dict__.update(_is_in_bad_fork=lambda: False, __simulated__=True)
        return module

    def _recorded(self, name: str, answer: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(SimulatedCall(name, args, kwargs))
            return answer(*args, **kwargs)

        call.__name__ = call.__qualname__ = name
        return call


def _clear_device_module_cache(torch: Any) -> None:
    # torch.get_device_module caches its answer per device; a stale one would outlive us.
    getattr(getattr(torch, "get_device_module", None), "cache_clear", lambda: None)()


#: ``simulated_device("npu", device_count=2, backend_module="torch_npu")``: the factory (the kit's,
#: ``--simulate``'s) is the class; ``privateuse1=True`` renames torch's PrivateUse1 backend to the
#: device type so ``torch.device("npu")`` parses (torch allows that once per process, and it is not
#: undone on exit).
simulated_device = SimulatedDevice


def active_simulated_device(device_type: str | None = None) -> SimulatedDevice | None:
    """The most recently started simulation (of ``device_type``, when given), or ``None``."""
    with _LOCK:
        return next(
            (sim for sim in reversed(_ACTIVE) if device_type in (None, sim.device_type)), None
        )
