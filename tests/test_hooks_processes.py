"""Hook registry: threads, fork and fresh interpreters."""

from __future__ import annotations

import importlib
import os
import sys
import threading

import pytest

from sglang_plugin_runtime.plugins.hook_registry import HookRegistry


@pytest.mark.fault(
    "processes",
    "apply_hooks() called from many threads at once",
    "each target is wrapped once",
)
def test_concurrent_apply_hooks_from_threads_wraps_once(make_module):
    name = make_module("m", "def f():\n    return 1\n")
    mod = importlib.import_module(name)
    original = mod.f
    for _ in range(5):
        HookRegistry.register(f"{name}.f", lambda r: r + 1)
    barrier = threading.Barrier(8)

    def run():
        barrier.wait()
        HookRegistry.apply_hooks()

    threads = [threading.Thread(target=run) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert mod.f.__wrapped__ is original
    assert mod.f() == 6


@pytest.mark.fault(
    "processes",
    "threads import a pending target's module at the same time",
    "the target is patched once",
)
def test_concurrent_first_imports_of_a_pending_target_patch_once(make_module):
    name = make_module("m", "def f():\n    return 1\n")
    HookRegistry.register(f"{name}.f", lambda r: r + 1)
    HookRegistry.apply_hooks()
    barrier = threading.Barrier(6)
    results = []

    def run():
        barrier.wait()
        results.append(importlib.import_module(name).f())

    threads = [threading.Thread(target=run) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [2] * 6


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.fault(
    "processes",
    "a forked child calls apply_hooks() again",
    "no double wrapping",
)
def test_forked_child_calling_apply_hooks_again_does_not_double_wrap(make_module):
    name = make_module("m", "def f():\n    return 1\n")
    mod = importlib.import_module(name)
    original = mod.f
    HookRegistry.register(f"{name}.f", lambda r: r + 1)
    HookRegistry.apply_hooks()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        try:
            HookRegistry.apply_hooks()
            ok = mod.f.__wrapped__ is original and mod.f() == 2
            os.write(write, b"ok" if ok else b"double-wrapped")
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        answer = pipe.read()
    os.waitpid(pid, 0)
    assert answer == b"ok"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_child_applies_a_hook_registered_after_the_fork(make_module):
    name = make_module("m", "def f():\n    return 1\n")
    mod = importlib.import_module(name)
    HookRegistry.register(f"{name}.f", lambda r: r + 1)
    HookRegistry.apply_hooks()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        try:
            HookRegistry.register(f"{name}.f", lambda r: r * 10)
            os.write(write, str(mod.f()).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        answer = pipe.read()
    os.waitpid(pid, 0)
    assert answer == b"20"
    assert mod.f() == 2


def test_hooks_apply_in_a_fresh_spawned_interpreter(tmp_path):
    import subprocess

    (tmp_path / "spawned_target.py").write_text("def f():\n    return 1\n")
    code = (
        "from sglang_plugin_runtime.plugins.hook_registry import HookRegistry\n"
        "HookRegistry.register('spawned_target.f', lambda r: r + 1)\n"
        "HookRegistry.apply_hooks()\n"
        "HookRegistry.apply_hooks()\n"
        "import spawned_target\n"
        "print(spawned_target.f())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "2"
