"""The fused wrapper: one generated function runs a target's whole hook chain.

Hooks nest as in SGLang (``chain`` arrives outermost first). For AFTER ``a``, AROUND ``w``, BEFORE
``b`` around ``f`` the generated code is the closure one would write by hand::

    def _wrapper(*args, **kwargs):      # a's level
        _res = w(_inner1, *args, **kwargs)
        _m = a(_res, *args, **kwargs)   # an AFTER may replace the result
        if _m is not None:
            _res = _m
        return _res

    def _inner1(*args, **kwargs):       # what w gets as original_fn: the hooks inside it, then f
        _r = b(*args, **kwargs)
        if _r is not None:              # a BEFORE may replace the arguments
            args, kwargs = _new_args(_r, _key, _regs[2])
        return f(*args, **kwargs)

except that only an AROUND starts a new function (BEFORE and AFTER hooks run inline, hooks are
closure constants) and each function has a copy of its body for calls without keywords and with at
most three positional arguments (a method's ``self`` and two), which calls ``b(_p0)`` instead of
``b(*args, **kwargs)``. CPython makes the first much faster. Measured with callgrind on CPython
3.11, BEFORE+AROUND+AFTER on ``f(x)``, instructions per call above the bare call: SGLang's closure
per hook 8,900; the two closures above, written by hand, 7,700; this wrapper with ``b(*args)``
copies instead of positional ones 7,000, and as it is 5,600 -- the only one within the goal of
0.65x SGLang's per-call cost (docs/benchmarks.md, case 4).

Other calls go to the function's generic copy, ``_resume1(-1, (), args, kwargs)``. A BEFORE that
returns new arguments in a fast copy hands the rest of the body to it too, as
``_resume1(at, caller's args, args, kwargs)``: the BEFORE hooks up to ``at`` have run, and the
AFTER hooks outside ``at`` see the caller's arguments. So every copy is as long as the chain, and
the code grows linearly with the number of hooks (a long chain is also built in parts of eight, see
``build_wrapper``). An AFTER sees the arguments of its own level: in the generic copy it keeps
them before the BEFORE hooks inside it run. For an ``async def`` target the functions are
``async def``: ``async def`` hooks are awaited, and whatever a plain AROUND (or the core) returns is
awaited when it is awaitable.

The generated code looks no builtin up when called (``len`` is bound when this module is imported),
so hooking ``builtins.len`` itself is safe.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import linecache
from collections.abc import Callable, Sequence
from typing import Any, cast

from ._types import Registration

Fn = Callable[..., object]
_GENERIC = "*args, **kwargs"
_PART = 8  # hooks per generated function at most (see build_wrapper)
_numbers = itertools.count(1)


def build_wrapper(func: Fn, core: Fn, chain: Sequence[Registration], key: str, init: bool) -> Fn:
    """``core`` (the original ``func``, or a REPLACE) inside ``chain``: BEFORE, AFTER and AROUND
    hooks, outermost first, on the target ``key``. ``func`` gives the wrapper its metadata and
    decides whether it is ``async def``; ``init``: it is an ``__init__``, whose AFTER hooks must
    return ``None``.

    A long chain is built in parts of ``_PART`` hooks, each the core of the part outside it
    (nesting is associative): each part is compiled once per shape, so the cost is linear."""
    is_async = inspect.iscoroutinefunction(func)
    declared = getattr(getattr(func, "__code__", None), "co_argcount", None)
    wrapper = core
    for end in range(len(chain), 0, -_PART) if chain else [0]:
        part = chain[max(0, end - _PART) : end]
        awaited = tuple(is_async and inspect.iscoroutinefunction(r.hook) for r in part)
        kinds = tuple(r.hook_type.value for r in part)
        make = _factory(kinds, awaited, is_async, declared, init)
        wrapper = make(wrapper, key, part, *(r.hook for r in part))
    functools.update_wrapper(wrapper, func)
    for name in dir(func):  # lru_cache's cache_info() and cache_clear() belong to its type
        if not name.startswith("_") and not hasattr(wrapper, name):
            setattr(wrapper, name, getattr(func, name))
    return wrapper


def _new_args(result: Any, key: str, reg: Registration) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """A BEFORE hook's ``(args, kwargs)``; anything else it returned is an error naming it."""
    __tracebackhide__ = True
    try:
        args, kwargs = result
        return tuple(args), dict(kwargs)
    except (TypeError, ValueError) as error:
        raise type(error)(
            f"BEFORE hook {reg.label()} on {key} returned {result!r} ({type(result).__name__}); "
            "it must return None (arguments unchanged) or a pair (args, kwargs): a sequence of "
            "positional arguments and a dict of keyword arguments, e.g. return (args, kwargs)"
        ) from None


def _init_result(result: Any, key: str, reg: Registration) -> None:
    __tracebackhide__ = True
    raise TypeError(
        f"AFTER hook {reg.label()} on {key} returned {result!r} ({type(result).__name__}); "
        "__init__ must return None, so an AFTER hook on it must return None too"
    )


_GLOBALS = {
    "__builtins__": {},
    "len": len,
    "_isawaitable": inspect.isawaitable,
    "_new_args": _new_args,
    "_init_result": _init_result,
}


@functools.lru_cache(maxsize=256)
def _factory(
    kinds: tuple[str, ...],
    awaited: tuple[bool, ...],
    is_async: bool,
    declared: int | None,
    init: bool,
) -> Callable[..., Any]:
    """Compile, once per chain shape, ``_make(_core, _key, _regs, _h0, _h1, ...)``, which returns
    a wrapper. ``declared``: how many positional parameters the original declares."""
    # The fast path: calls with 0 to 3 positional arguments and no keywords. The arity the original
    # declares is tested first: each arity tested before costs about 4%.
    arities = sorted(range(4), key=lambda n: n != declared)
    # Function k runs the BEFORE/AFTER hooks bodies[k] around a call of the k-th AROUND (the last:
    # of the core).
    arounds = [i for i, kind in enumerate(kinds) if kind == "around"]
    bodies = [list(range(a + 1, b)) for a, b in itertools.pairwise([-1, *arounds, len(kinds)])]
    if len(bodies) > 1 and not bodies[-1]:
        bodies.pop()  # nothing inside the innermost AROUND: its original_fn is the core itself
    names = ["_wrapper", *(f"_inner{k}" for k in range(1, len(bodies))), "_core"]
    hooks = [f"{'await ' if hook_awaited else ''}_h{i}" for i, hook_awaited in enumerate(awaited)]
    define, wait = ("async def", "await ") if is_async else ("def", "")
    lines = [f"def _make(_core, _key, _regs, {', '.join(f'_h{i}' for i in range(len(kinds)))}):"]

    def emit(pad: str, ops: list[int], call: str, args: str, k: int) -> None:
        """The code of function ``k`` running the hooks ``ops``, then ``call``, then the AFTER
        hooks; the arguments spelled ``args`` (a fast copy's parameters, or the generic
        ``_resume{k}``'s)."""
        afters = []
        for i in ops:
            new_args = f"_new_args(_r, _key, _regs[{i}])"
            if kinds[i] == "before" and args == _GENERIC:  # only those inside the one at _at run
                lines.extend(
                    [
                        f"{pad}if _at < {i}:",
                        f"{pad}    _r = {hooks[i]}({args})",
                        f"{pad}    if _r is not None:",
                        f"{pad}        args, kwargs = {new_args}",
                    ]
                )
            elif kinds[i] == "before":  # new arguments: the rest of the body is _resume{k}'s
                caller = f"({args},)" if args else "()"
                lines.extend(
                    [
                        f"{pad}_r = {hooks[i]}({args})",
                        f"{pad}if _r is not None:",
                        f"{pad}    return {wait}_resume{k}({i}, {caller}, *{new_args})",
                    ]
                )
            elif args == _GENERIC:  # the arguments at this level: a BEFORE inside may replace them
                lines.append(f"{pad}_a{i}, _k{i} = (args, kwargs) if _at < {i} else (_orig, {{}})")
                afters.append((i, f"*_a{i}, **_k{i}"))
            else:
                afters.append((i, args))
        if not afters and not is_async:
            lines.append(f"{pad}return {call}{args})")
            return
        lines.append(f"{pad}_res = {call}{args})")
        if is_async:  # an async def AROUND or core, or a plain AROUND returning original_fn(...)
            lines.extend([f"{pad}if _isawaitable(_res):", f"{pad}    _res = await _res"])
        for i, level_args in reversed(afters):
            keep = f"_init_result(_m, _key, _regs[{i}])" if init else "_res = _m"
            lines.extend(
                [
                    f"{pad}_m = {hooks[i]}(_res, {level_args})",
                    f"{pad}if _m is not None:",
                    f"{pad}    {keep}",
                ]
            )
        lines.append(f"{pad}return _res")

    for k, ops in enumerate(bodies):
        call = f"_h{arounds[k]}({names[k + 1]}, " if k < len(arounds) else "_core("
        lines += [
            f"    {define} {names[k]}(*args, **kwargs):",
            "        __tracebackhide__ = True",
            "        if not kwargs:",
            "            n = len(args)",
        ]
        for n in arities:
            params = ", ".join(f"_p{j}" for j in range(n))
            lines.append(f"            {'elif' if n != arities[0] else 'if'} n == {n}:")
            lines += [f"                {params}, = args"] if n else []
            emit(" " * 16, ops, call, params, k)
        lines += [
            f"        return {wait}_resume{k}(-1, (), args, kwargs)",
            f"    {define} _resume{k}(_at, _orig, args, kwargs):",
            "        __tracebackhide__ = True",
        ]
        emit(" " * 8, ops, call, _GENERIC, k)

    lines.append("    return _wrapper")
    source = "\n".join(lines) + "\n"
    shape = "+".join(kinds) if len(kinds) < 4 else f"{len(kinds)} hooks"
    name = f"{'async ' if is_async else ''}{shape or 'replace'} #{next(_numbers)}"
    filename = f"<sglang-plugin hooks: {name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = dict(_GLOBALS)

    exec(compile(source, filename, "exec"), namespace)
    return cast("Callable[..., Any]", namespace["_make"])
