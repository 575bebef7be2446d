"""The fused wrapper: one generated function runs a target's whole hook chain.

Hooks nest as in SGLang (``chain`` arrives outermost first). For AFTER ``a``, AROUND ``w``, BEFORE ``b`` around
``f`` the generated code is the closure one would write by hand::

    def _wrapper(*args, **kwargs):      # a's level
        _res = w(_inner1, *args, **kwargs)
        _m = a(_res, *args, **kwargs)   # an AFTER may replace the result
        if _m is not None:
            _res = _m
        return _res

    def _inner1(*args, **kwargs):       # what w gets as original_fn: the hooks inside it, then f
        _r = b(*args, **kwargs)
        if _r is not None:              # a BEFORE may replace the arguments
            args, kwargs = _new_args(_r, b, _label)
        return f(*args, **kwargs)

except that only an AROUND starts a new function (BEFORE and AFTER hooks run inline, hooks are closure constants)
and each function has a copy of its body for calls without keywords and with at most three positional arguments
(a method's ``self`` and two), which calls ``b(_p0)`` instead of ``b(*args, **kwargs)``. CPython makes the first
much faster. Measured with callgrind on CPython 3.11, BEFORE+AROUND+AFTER on ``f(x)``, instructions per call above
the bare call: SGLang's closure per hook 8,900; the two closures above, written by hand, 7,700; this wrapper with
``b(*args)`` copies instead of positional ones 7,000, and as it is 5,600 -- the only one within the goal of 0.65x
SGLang's per-call cost (docs/benchmarks.md, case 4). A BEFORE that returns new arguments sends the rest of its
body down the generic path.

An AFTER sees the arguments of its own level: when a BEFORE inside it may replace them, it keeps a copy first.
For an ``async def`` target the functions are ``async def``: ``async def`` hooks are awaited, and whatever a
plain AROUND (or the core) returns is awaited when it is awaitable.

The generated code looks no builtin up when called (``len`` is bound when this module is imported), so hooking
``builtins.len`` itself is safe.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import linecache
from collections.abc import Callable, Sequence
from typing import Any, cast

Fn = Callable[..., object]
_GENERIC = "*args, **kwargs"
_FAST_ARITIES = range(4)  # calls with 0 to 3 positional arguments and no keywords take the fast path
_GLOBALS = {"__builtins__": {}, "len": len, "_isawaitable": inspect.isawaitable}
_numbers = itertools.count(1)


def build_wrapper(func: Fn, core: Fn, chain: Sequence[tuple[str, Fn]], label: str) -> Fn:
    """``core`` (the original ``func``, or a REPLACE) inside ``chain``: ``("before"|"after"|"around", hook)`` pairs,
    outermost first. ``func`` gives the wrapper its metadata and decides whether it is ``async def``."""
    is_async = inspect.iscoroutinefunction(func)
    awaited = tuple(is_async and inspect.iscoroutinefunction(hook) for _kind, hook in chain)
    declared = getattr(getattr(func, "__code__", None), "co_argcount", None)
    make = _factory(tuple(kind for kind, _hook in chain), awaited, is_async, declared)
    return functools.update_wrapper(make(core, label, *(hook for _kind, hook in chain)), func)


def _new_args(result: Any, hook: object, label: str) -> tuple[Any, Any]:
    """A BEFORE hook's ``(args, kwargs)``; anything else it returned is an error naming it (same exception type)."""
    __tracebackhide__ = True
    try:
        args, kwargs = result
    except (TypeError, ValueError) as error:
        name = f"{getattr(hook, '__module__', None)}.{getattr(hook, '__qualname__', hook)}"
        raise type(error)(
            f"BEFORE hook {name} on {label} returned {result!r} ({type(result).__name__}); a BEFORE hook returns None "
            f"(arguments unchanged) or a pair (args, kwargs), e.g. return (args, kwargs)"
        ) from None
    return args, kwargs


@functools.lru_cache(maxsize=256)
def _factory(
    kinds: tuple[str, ...], awaited: tuple[bool, ...], is_async: bool, declared: int | None
) -> Callable[..., Any]:
    """Compile, once per chain shape, ``_make(_core, _label, _h0, _h1, ...)``, which returns a wrapper. ``declared``:
    how many positional parameters the original declares."""
    # The arity the original declares is tested first: each arity tested before a call's own costs it about 4%.
    arities = sorted(_FAST_ARITIES, key=lambda n: n != declared)
    # Function k runs the BEFORE/AFTER hooks bodies[k] around a call of the k-th AROUND (the last: of the core).
    arounds = [i for i, kind in enumerate(kinds) if kind == "around"]
    edges = [-1, *arounds, len(kinds)]
    bodies = [list(range(start + 1, end)) for start, end in itertools.pairwise(edges)]
    if len(bodies) > 1 and not bodies[-1]:
        bodies.pop()  # nothing inside the innermost AROUND: its original_fn is the core itself
    names = ["_wrapper", *(f"_inner{k}" for k in range(1, len(bodies))), "_core"]
    aws = ["await " if hook_awaited else "" for hook_awaited in awaited]
    lines = [f"def _make(_core, _label, {', '.join(f'_h{i}' for i in range(len(kinds)))}):"]

    def emit(pad: str, ops: list[int], call: str, args: str, afters: list[tuple[int, str]]) -> None:
        """The code running the hooks ``ops``, then ``call``, then the AFTER hooks; the arguments spelled ``args``."""
        afters = list(afters)
        for pos, i in enumerate(ops):
            if kinds[i] == "before":
                lines.extend((f"{pad}_r = {aws[i]}_h{i}({args})", f"{pad}if _r is not None:"))
                lines.append(f"{pad}    args, kwargs = _new_args(_r, _h{i}, _label)")
                if args != _GENERIC:  # new arguments: the rest of this body takes the generic path
                    emit(pad + "    ", ops[pos + 1 :], call, _GENERIC, afters)
            elif args == _GENERIC and any(kinds[j] == "before" for j in ops[pos + 1 :]):
                lines.append(f"{pad}_a{i}, _k{i} = args, kwargs")  # a BEFORE inside may replace them
                afters.append((i, f"*_a{i}, **_k{i}"))
            else:
                afters.append((i, args))
        if not afters and not is_async:
            lines.append(f"{pad}return {call}{args})")
            return
        lines.append(f"{pad}_res = {call}{args})")
        if is_async:  # an async def AROUND or core, or a plain AROUND returning original_fn(...)
            lines.extend((f"{pad}if _isawaitable(_res):", f"{pad}    _res = await _res"))
        for i, level_args in reversed(afters):
            lines.append(f"{pad}_m = {aws[i]}_h{i}(_res, {level_args})")
            lines.extend((f"{pad}if _m is not None:", f"{pad}    _res = _m"))
        lines.append(f"{pad}return _res")

    for k, ops in enumerate(bodies):
        call = f"_h{arounds[k]}({names[k + 1]}, " if k < len(arounds) else "_core("
        lines.append(f"    {'async ' if is_async else ''}def {names[k]}(*args, **kwargs):")
        lines += ["        __tracebackhide__ = True", "        if not kwargs:", "            n = len(args)"]
        for n in arities:
            params = ", ".join(f"_p{j}" for j in range(n))
            lines.append(f"            {'elif' if n != arities[0] else 'if'} n == {n}:")
            lines += [f"                {params}, = args"] if n else []
            emit(" " * 16, ops, call, params, [])
        emit(" " * 8, ops, call, _GENERIC, [])
    lines.append("    return _wrapper")
    source = "\n".join(lines) + "\n"
    filename = f"<sglang-plugin hooks: {'async ' if is_async else ''}{'+'.join(kinds) or 'replace'} #{next(_numbers)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict[str, Any] = {**_GLOBALS, "_new_args": _new_args}
    exec(compile(source, filename, "exec"), namespace)
    return cast("Callable[..., Any]", namespace["_make"])
