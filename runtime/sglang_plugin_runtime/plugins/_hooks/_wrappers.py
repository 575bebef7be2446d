"""The fused wrapper: one generated function runs a target's whole hook chain.

SGLang nests one closure per hook. Here the chain is compiled once, when the target is
(re)built, into straight-line code: BEFORE and AFTER hooks between two AROUND hooks run inline in
one frame, and each AROUND gets one extra function (its ``original_fn``) only where there is
something left to run inside it. Hooks are bound as closure constants, so a call does no tuple
iteration and no per-hook dispatch.

The semantics are exactly those of SGLang's nesting; ``hooks`` arrives outermost first:

- BEFORE ``fn(*args, **kwargs) -> (args, kwargs) | None`` replaces the arguments seen by
  everything inside it;
- AFTER ``fn(result, *args, **kwargs) -> new | None`` sees the arguments as they were at its own
  level (inner BEFORE hooks do not leak outwards) and may replace the result;
- AROUND ``fn(original_fn, *args, **kwargs)`` receives a callable that runs the rest of the chain.

For ``async def`` targets the wrapper is ``async def`` too. An ``async def`` hook is awaited; a
plain AROUND (or REPLACE) hook's return value is awaited when it is awaitable, so a sync timer that
returns ``original_fn(...)`` works unchanged.

Why generated code rather than a closure per hook: with BEFORE+AROUND+AFTER on a function, the closure chain
SGLang uses costs about 8,900 instructions per call on CPython 3.11 (callgrind), one closure per segment
between AROUND hooks about 9,700, this wrapper without its positional fast path about 7,900 and with it about
5,800 -- the only one of the four within the goal of 0.65x SGLang's per-call cost (docs/benchmarks.md, case 4).
"""

from __future__ import annotations

import builtins
import functools
import inspect
import itertools
import linecache
from collections.abc import Callable, Sequence
from typing import Any

from ._types import HookType

_counter = itertools.count(1)
_BEFORE = HookType.BEFORE
_AFTER = HookType.AFTER
_AROUND = HookType.AROUND

#: Set on every generated wrapper; holds the canonical target it was built for.
WRAPPER_MARKER = "__sglang_hook_target__"


def is_async_callable(obj: object) -> bool:
    """True for ``async def`` functions (and partials of them), False for async generators."""
    return inspect.iscoroutinefunction(obj)


def check_hook_kinds(func: object, hooks: Sequence[tuple[HookType, Callable[..., object]]]) -> None:
    """Reject combinations that cannot work: an ``async def`` hook on a synchronous target."""
    if is_async_callable(func):
        return
    for hook_type, hook in hooks:
        if hook_type is not HookType.REPLACE and is_async_callable(hook):
            raise TypeError(
                f"{hook_type.name} hook {getattr(hook, '__qualname__', hook)!r} is 'async def' "
                "but the target is synchronous; its coroutine would never be awaited"
            )


def build_wrapper(
    func: Callable[..., object],
    core: Callable[..., object],
    hooks: Sequence[tuple[HookType, Callable[..., object]]],
    label: str,
) -> Callable[..., object]:
    """Bind the chain ``hooks`` (outermost first, no REPLACE) around ``core``.

    ``func`` is the original target: it supplies the metadata (``__wrapped__``, names, doc) and
    decides whether the wrapper is a coroutine function.
    """
    is_async = is_async_callable(func)
    hook_async = tuple(is_async and is_async_callable(hook) for _t, hook in hooks)
    core_async = is_async and is_async_callable(core)
    shape = (tuple(t for t, _h in hooks), hook_async, core_async, is_async)
    make = _factory(shape)
    wrapper = make(core, inspect.isawaitable, label, *(hook for _t, hook in hooks))
    functools.update_wrapper(wrapper, func)
    setattr(wrapper, WRAPPER_MARKER, label)
    return wrapper  # type: ignore[no-any-return]


def _bad_before(hook: object, result: object, error: Exception, label: str) -> None:
    """Raise what unpacking a BEFORE hook's result raised (same type), with a message that names the hook."""
    __tracebackhide__ = True
    from ._types import describe_callable

    raise type(error)(
        f"BEFORE hook {describe_callable(hook)} on {label} returned {result!r} ({type(result).__name__}); a BEFORE "
        f"hook returns None (arguments unchanged) or a pair (args, kwargs), e.g. return (args, kwargs)"
    ) from None


#: Calls without keyword arguments and with at most this many positional ones (a method's ``self`` and two
#: arguments) take a path that calls each hook with plain positional arguments, which CPython calls much faster
#: than ``f(*args, **kwargs)``: about a quarter of the wrapper's per-call cost. One branch per arity; other
#: calls take the generic path, with identical results.
_FAST_PATH_MAX_ARGS = 3

#: A BEFORE hook that returns new arguments switches the rest of its segment to the generic path, so the fast
#: path repeats the rest of the segment once per BEFORE: the generated code grows with the square of the number
#: of BEFORE hooks in a segment. Past this many, the segment has only the generic path.
_FAST_PATH_MAX_BEFORES = 3


@functools.lru_cache(maxsize=256)
def _factory(shape: tuple[tuple[HookType, ...], tuple[bool, ...], bool, bool]) -> Callable[..., Any]:
    """Compile (once per chain shape) the factory that binds hooks into a wrapper."""
    types_, hook_async, core_async, is_async = shape
    segments: list[tuple[list[tuple[int, HookType]], int | None]] = []
    current: list[tuple[int, HookType]] = []
    for index, hook_type in enumerate(types_):
        if hook_type is _AROUND:
            segments.append((current, index))
            current = []
        elif hook_type is _BEFORE or hook_type is _AFTER:
            current.append((index, hook_type))
        else:
            raise ValueError(f"Unknown hook type in chain: {hook_type!r}")
    segments.append((current, None))

    def callable_name(k: int) -> str:
        ops, terminator = segments[k]
        if k > 0 and not ops and terminator is None:
            return "_core"
        return "_hook_wrapper" if k == 0 else f"_chain{k}"

    body: list[str] = []
    for k in range(len(segments) - 1, -1, -1):
        if k > 0 and callable_name(k) == "_core":
            continue
        body.extend(_segment_source(k, segments, callable_name, list(hook_async), core_async, is_async))
    params = ", ".join(["_core", "_isawaitable", "_label"] + [f"_h{i}" for i in range(len(types_))])
    source = f"def _make({params}):\n" + "".join(f"    {line}\n" for line in body)
    source += "    return _hook_wrapper\n"
    kinds = "+".join(t.value for t in types_) or "replace"
    filename = f"<sglang-plugin hooks: {'async ' if is_async else ''}{kinds} #{next(_counter)}>"
    code = compile(source, filename, "exec")
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict[str, object] = {"__builtins__": builtins, "__name__": __name__, "_bad_before": _bad_before}
    exec(code, namespace)
    return namespace["_make"]  # type: ignore[return-value]


def _segment_source(
    k: int,
    segments: list[tuple[list[tuple[int, HookType]], int | None]],
    callable_name: Callable[[int], str],
    hook_async: list[bool],
    core_async: bool,
    is_async: bool,
) -> list[str]:
    ops, terminator = segments[k]
    if terminator is None:
        head, certain_await = "_core(", core_async
    else:
        head, certain_await = f"_h{terminator}({callable_name(k + 1)}, ", hook_async[terminator]
    ctx = _Emitter(ops, head, certain_await, hook_async, is_async)
    lines = [
        f"{'async ' if is_async else ''}def {callable_name(k)}(*args, **kwargs):",
        "    __tracebackhide__ = True",
    ]
    befores = sum(1 for _i, t in ops if t is _BEFORE)
    if befores <= _FAST_PATH_MAX_BEFORES:
        lines.append("    if not kwargs:")
        lines.append("        _n = len(args)")
        for n in range(_FAST_PATH_MAX_ARGS + 1):
            names = [f"_p{j}" for j in range(n)]
            lines.append(f"        {'if' if n == 0 else 'elif'} _n == {n}:")
            if n:
                lines.append(f"            {', '.join(names)}, = args")
            ctx.emit(lines, 3, 0, ", ".join(names), [])
    ctx.emit(lines, 1, 0, None, [])
    return lines


class _Emitter:
    """Writes the straight-line code of one segment, for one argument mode.

    ``positional`` is the argument list of the fast path (``"_p0, _p1"``) or ``None`` for the
    generic ``*args, **kwargs`` mode. A BEFORE that returns new arguments switches the rest of
    the segment to the generic mode.
    """

    def __init__(
        self,
        ops: list[tuple[int, HookType]],
        head: str,
        certain_await: bool,
        hook_async: list[bool],
        is_async: bool,
    ) -> None:
        self.ops = ops
        self.head = head
        self.certain_await = certain_await
        self.hook_async = hook_async
        self.is_async = is_async

    def emit(
        self,
        out: list[str],
        depth: int,
        start: int,
        positional: str | None,
        afters: list[tuple[int, str]],
    ) -> None:
        pad = "    " * depth
        generic = "*args, **kwargs"
        spread = generic if positional is None else positional
        afters = list(afters)
        for pos in range(start, len(self.ops)):
            i, hook_type = self.ops[pos]
            aw = "await " if self.hook_async[i] else ""
            if hook_type is _BEFORE:
                out.append(f"{pad}_r = {aw}_h{i}({spread})")
                out += [
                    f"{pad}if _r is not None:",
                    f"{pad}    try:",
                    f"{pad}        args, kwargs = _r",
                    f"{pad}    except (TypeError, ValueError) as _e:",
                    f"{pad}        _bad_before(_h{i}, _r, _e, _label)",
                ]
                if positional is not None:
                    self.emit(out, depth + 1, pos + 1, None, afters)
                continue
            if positional is None and any(t is _BEFORE for _i, t in self.ops[pos + 1 :]):
                # An inner BEFORE may replace the arguments; this AFTER keeps its own level's.
                out.append(f"{pad}_a{i}, _k{i} = args, kwargs")
                afters.append((i, f"*_a{i}, **_k{i}"))
            else:
                afters.append((i, spread))
        call = f"{self.head}{spread})" if spread else f"{self.head.rstrip(', ')})"
        if self.certain_await:
            first = [f"_res = await {call}"]
        elif self.is_async:
            first = [f"_res = {call}", "if _isawaitable(_res):", "    _res = await _res"]
        else:
            first = [f"_res = {call}"]
        if not afters:
            if self.certain_await:
                out.append(f"{pad}return await {call}")
            elif self.is_async:
                out += [pad + line for line in first] + [f"{pad}return _res"]
            else:
                out.append(f"{pad}return {call}")
            return
        out += [pad + line for line in first]
        for i, after_spread in reversed(afters):
            aw = "await " if self.hook_async[i] else ""
            sep = ", " if after_spread else ""
            out += [
                f"{pad}_m = {aw}_h{i}(_res{sep}{after_spread})",
                f"{pad}if _m is not None:",
                f"{pad}    _res = _m",
            ]
        out.append(f"{pad}return _res")
