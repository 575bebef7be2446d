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
            args, kwargs = _new_args(_r, _labels, 2)
        return f(*args, **kwargs)

except that only an AROUND starts a new function (BEFORE and AFTER hooks run inline, hooks are closure constants)
and each function has a copy of its body for calls without keywords and with at most three positional arguments
(a method's ``self`` and two), which calls ``b(_p0)`` instead of ``b(*args, **kwargs)``. CPython makes the first
much faster. Measured with callgrind on CPython 3.11, BEFORE+AROUND+AFTER on ``f(x)``, instructions per call above
the bare call: SGLang's closure per hook 8,900; the two closures above, written by hand, 7,700; this wrapper with
``b(*args)`` copies instead of positional ones 7,000, and as it is 5,600 -- the only one within the goal of 0.65x
SGLang's per-call cost (docs/benchmarks.md, case 4).

A BEFORE that returns new arguments in such a copy hands the rest of the body to the function's *resume* copy
(``_resume1(at, caller's args, args, kwargs)``): the generic body, where BEFORE hooks up to ``at`` are skipped and
AFTER hooks outside ``at`` see the caller's arguments. Every copy is as long as the chain, so the code grows
linearly with the number of hooks. An AFTER sees the arguments of its own level: when a BEFORE inside it may
replace them, it keeps a copy first. For an ``async def`` target the functions are ``async def``: ``async def``
hooks are awaited, and whatever a plain AROUND (or the core) returns is awaited when it is awaitable.

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
_numbers = itertools.count(1)


def build_wrapper(func: Fn, core: Fn, chain: Sequence[tuple[str, Fn, str]], init: bool) -> Fn:
    """``core`` (the original ``func``, or a REPLACE) inside ``chain``: ``(kind, hook, label)`` triples, outermost
    first, ``kind`` one of "before", "after", "around". ``func`` gives the wrapper its metadata and decides whether
    it is ``async def``; ``init``: the target is an ``__init__``, whose AFTER hooks must return ``None``."""
    is_async = inspect.iscoroutinefunction(func)
    awaited = tuple(is_async and inspect.iscoroutinefunction(hook) for _kind, hook, _label in chain)
    declared = getattr(getattr(func, "__code__", None), "co_argcount", None)
    make = _factory(tuple(kind for kind, _hook, _label in chain), awaited, is_async, declared, init)
    hooks = [hook for _kind, hook, _label in chain]
    wrapper = functools.update_wrapper(make(core, [label for *_, label in chain], *hooks), func)
    for name in dir(func):  # lru_cache's cache_info() and cache_clear() are its type's, not in its __dict__
        if not name.startswith("_") and not hasattr(wrapper, name):
            setattr(wrapper, name, getattr(func, name))
    return wrapper


def _new_args(result: Any, labels: list[str], i: int) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """A BEFORE hook's ``(args, kwargs)``; anything else it returned is an error naming it."""
    __tracebackhide__ = True
    try:
        args, kwargs = result
        return tuple(args), dict(kwargs)
    except (TypeError, ValueError) as error:
        raise type(error)(
            f"{labels[i]} returned {result!r} ({type(result).__name__}); a BEFORE hook returns None (arguments "
            "unchanged) or a pair (args, kwargs): a sequence of positional arguments and a dict of keyword "
            "arguments, e.g. return (args, kwargs)"
        ) from None


def _init_result(result: Any, labels: list[str], i: int) -> None:
    __tracebackhide__ = True
    raise TypeError(
        f"{labels[i]} returned {result!r} ({type(result).__name__}); __init__ must return None, so an AFTER hook "
        "on __init__ must return None too (change the instance instead)"
    )


_GLOBALS = {"__builtins__": {}, "len": len, "_isawaitable": inspect.isawaitable}
_GLOBALS.update(_new_args=_new_args, _init_result=_init_result)


@functools.lru_cache(maxsize=256)
def _factory(
    kinds: tuple[str, ...], awaited: tuple[bool, ...], is_async: bool, declared: int | None, init: bool
) -> Callable[..., Any]:
    """Compile, once per chain shape, ``_make(_core, _labels, _h0, _h1, ...)``, which returns a wrapper.
    ``declared``: how many positional parameters the original declares."""
    # The arity the original declares is tested first: each arity tested before a call's own costs it about 4%.
    arities = sorted(_FAST_ARITIES, key=lambda n: n != declared)
    # Function k runs the BEFORE/AFTER hooks bodies[k] around a call of the k-th AROUND (the last: of the core).
    arounds = [i for i, kind in enumerate(kinds) if kind == "around"]
    bodies = [list(range(a + 1, b)) for a, b in itertools.pairwise([-1, *arounds, len(kinds)])]
    if len(bodies) > 1 and not bodies[-1]:
        bodies.pop()  # nothing inside the innermost AROUND: its original_fn is the core itself
    names = ["_wrapper", *(f"_inner{k}" for k in range(1, len(bodies))), "_core"]
    hooks = [f"{'await ' if hook_awaited else ''}_h{i}" for i, hook_awaited in enumerate(awaited)]
    define, wait = ("async def", "await ") if is_async else ("def", "")
    lines = [f"def _make(_core, _labels, {', '.join(f'_h{i}' for i in range(len(kinds)))}):"]

    def emit(pad: str, ops: list[int], call: str, args: str, resume: str | None = None) -> None:
        """The code running the hooks ``ops``, then ``call``, then the AFTER hooks; the arguments spelled
        ``args``. ``resume``: in a fast copy, the function a BEFORE's new arguments go to; "": in that function."""
        afters: list[tuple[int, str]] = []
        last_before = max((i for i in ops if kinds[i] == "before"), default=-1)
        for i in ops:
            if kinds[i] == "before":
                code = [f"_r = {hooks[i]}({args})", "if _r is not None:"]
                if args == _GENERIC:
                    code.append(f"    args, kwargs = _new_args(_r, _labels, {i})")
                else:
                    caller = f"({args},)" if args else "()"
                    code.append(f"    return {wait}{resume}({i}, {caller}, *_new_args(_r, _labels, {i}))")
                if resume == "":  # the BEFORE hooks up to the one whose new arguments led here already ran
                    code = [f"if _at < {i}:", *(f"    {line}" for line in code)]
                lines.extend(pad + line for line in code)
            elif args == _GENERIC and (resume == "" or i < last_before):  # a BEFORE inside may replace them
                level = f"(args, kwargs) if _at < {i} else (_orig, {{}})" if resume == "" else "args, kwargs"
                lines.append(f"{pad}_a{i}, _k{i} = {level}")
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
            lines.extend((f"{pad}_m = {hooks[i]}(_res, {level_args})", f"{pad}if _m is not None:"))
            lines.append(f"{pad}    _init_result(_m, _labels, {i})" if init else f"{pad}    _res = _m")
        lines.append(f"{pad}return _res")

    for k, ops in enumerate(bodies):
        call = f"_h{arounds[k]}({names[k + 1]}, " if k < len(arounds) else "_core("
        resume = f"_resume{k}"
        lines += [f"    {define} {names[k]}(*args, **kwargs):", "        __tracebackhide__ = True"]
        lines += ["        if not kwargs:", "            n = len(args)"]
        for n in arities:
            params = ", ".join(f"_p{j}" for j in range(n))
            lines.append(f"            {'elif' if n != arities[0] else 'if'} n == {n}:")
            lines += [f"                {params}, = args"] if n else []
            emit(" " * 16, ops, call, params, resume)
        emit(" " * 8, ops, call, _GENERIC)
        if any(kinds[i] == "before" for i in ops):
            lines += [f"    {define} {resume}(_at, _orig, args, kwargs):", "        __tracebackhide__ = True"]
            emit(" " * 8, ops, call, _GENERIC, "")
    lines.append("    return _wrapper")
    source = "\n".join(lines) + "\n"
    shape = "+".join(kinds) if len(kinds) < 6 else f"{len(kinds)} hooks"
    filename = f"<sglang-plugin hooks: {'async ' if is_async else ''}{shape or 'replace'} #{next(_numbers)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict[str, Any] = dict(_GLOBALS)
    exec(compile(source, filename, "exec"), namespace)
    return cast("Callable[..., Any]", namespace["_make"])
