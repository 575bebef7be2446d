"""The SGLang releases with a plugin system and what each one asks of a plugin, read from the data
``scripts/sglang_releases.py`` writes from the released wheels: ``releases.json`` (the releases),
``contract.json`` (each release's platform classes, ``PlatformEnum``, capabilities, resolution
hooks and calls on the platform) and ``modules.txt.gz`` (each release's modules, their top-level
names, and each class's bases and own members).

Only tools read it (the conformance check, ``doctor``, ``explain``, ``contract``), and the
definition-time check where the installed SGLang is an older release than the one the interface
table describes. A span names releases: ``0.5.17-`` is 0.5.17 to the newest, ``0.5.11-0.5.21``
a run, pieces joined by commas; a line of the module index without one holds where its module (or
class) does.
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Iterable
from functools import cache
from importlib.resources import files
from typing import Any

#: SGLang's platform classes that each host calls, by the data's names.
OWNERS = {"srt": ("DeviceMixin", "SRTPlatform"), "diffusion": ("diffusion Platform",)}
_REQUIREMENT = re.compile(
    r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*\(?\s*(?P<range>[^;()@]*?)\s*\)?"
    r"\s*(?:;.*)?"
)
_CLAUSE = re.compile(r"(?P<op>~=|==|!=|<=|>=|<|>)\s*(?P<version>[0-9.]+?)(?P<prefix>\.\*)?")
_COMPARE = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}


@cache
def _data(name: str) -> Any:
    return json.loads(files(__package__).joinpath(name).read_bytes())


@cache
def releases() -> tuple[str, ...]:
    """Every release with a plugin system, oldest first."""
    return tuple(r["version"] for r in _data("releases.json")["releases"])


def release_of(version: str) -> str | None:
    """The release whose data describes SGLang ``version`` (a ``.postN`` whose plugin layer is its
    base release's: that release), or ``None``."""
    listed = _data("releases.json")["releases"]
    return next(
        (r["version"] for r in listed if version in (r["version"], *r["same_plugin_layer"])), None
    )


def installed() -> tuple[str | None, str | None]:
    """The installed SGLang's version and the release that describes it (``None``: not installed,
    or not a release with a plugin system)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("sglang")
    except PackageNotFoundError:
        return None, None
    return found, release_of(found)


def check_release(release: str) -> str:
    """``release``, or ``ValueError`` naming the releases there are."""
    if release not in releases():
        known = ", ".join(releases())
        raise ValueError(f"SGLang {release!r} is no release with a plugin system: one of {known}")
    return release


# ---- spans and ranges ----------------------------------------------------------------------------


@cache
def held(span: str) -> frozenset[str]:
    """The releases a span names."""
    listed, found = releases(), set[str]()
    for piece in span.split(","):
        first, dash, last = piece.partition("-")
        start = listed.index(first)
        stop = (listed.index(last) if last else len(listed) - 1) if dash else start
        found.update(listed[start : stop + 1])
    return frozenset(found)


def describe(chosen: Iterable[str]) -> str:
    """Releases in words: ``from 0.5.20``, ``up to 0.5.21``, ``0.5.13 to 0.5.19``, ``0.5.14``."""
    listed, wanted, runs = releases(), set(chosen), list[list[int]]()
    for index, release in enumerate(listed):
        if release in wanted:
            if runs and runs[-1][-1] == index - 1:
                runs[-1].append(index)
            else:
                runs.append([index])
    words = []
    for run in runs:
        first, last = listed[run[0]], listed[run[-1]]
        if len(run) == 1:
            words.append(first)
        elif run[-1] == len(listed) - 1:
            words.append(f"from {first}")
        else:
            words.append(f"up to {last}" if run[0] == 0 else f"{first} to {last}")
    return ", ".join(words) or "none"


def sglang_range(requires: Iterable[str] | None) -> str | None:
    """The range of the requirement on ``sglang`` among ``requires`` (a distribution's
    ``Requires-Dist`` lines; ``""``: any version), or ``None``. The name is matched exactly (PEP 503
    normalised): ``sglang-router`` is another distribution."""
    for line in requires or ():
        match = _REQUIREMENT.fullmatch(line.strip())
        if match and re.sub(r"[-_.]+", "-", match["name"]).lower() == "sglang":
            return match["range"]
    return None


def _release(version: str, size: int = 0) -> tuple[int, ...]:
    match = re.match(r"\s*v?([0-9]+(?:\.[0-9]+)*)", version)
    numbers = tuple(map(int, match[1].split("."))) if match else ()
    return numbers + (0,) * (size - len(numbers))


def in_range(version: str, supported: str) -> bool | None:
    """Whether ``version`` satisfies ``supported``, by the rule generated packages use (release
    numbers only: ``0.5.23rc1`` is ``0.5.23``, ``0.6`` is ``0.6.0``; ``.*`` prefixes; ``~=``);
    ``None`` for a clause this rule cannot read."""
    for clause in filter(None, (c.strip() for c in supported.split(","))):
        match = _CLAUSE.fullmatch(clause)
        if match is None:
            return None
        op, wanted = match["op"], _release(match["version"])
        have = _release(version, len(wanted))
        if match["prefix"]:
            ok = (have[: len(wanted)] == wanted) == (op == "==")
        elif op == "~=":
            ok = have >= wanted and have[: len(wanted) - 1] == wanted[:-1]
        else:
            ok = _COMPARE[op](have, _release(match["version"], len(have)))
        if not ok:
            return False
    return True


def releases_in(supported: str) -> tuple[str, ...] | None:
    """The releases ``supported`` holds, oldest first (``None``: a clause the rule cannot read)."""
    found = [(release, in_range(release, supported)) for release in releases()]
    return None if any(ok is None for _, ok in found) else tuple(r for r, ok in found if ok)


# ---- the platform contract -----------------------------------------------------------------------


def contract(release: str, host: str) -> dict[str, dict[str, Any]]:
    """Each member ``release`` declares on the platform classes ``host`` calls (``srt``: DeviceMixin
    and SRTPlatform; ``diffusion``: its Platform): ``kind``, ``signature``, ``required`` (the base
    raises ``NotImplementedError``), ``default`` (a literal it returns or holds)."""
    classes = _data("contract.json")["classes"]
    return {
        name: shape
        for owner in OWNERS[host]
        for name, shapes in classes[owner]["members"].items()
        for shape in shapes
        if release in held(shape["in"])
    }


def declared(host: str) -> dict[str, frozenset[str]]:
    """Every member of the platform classes ``host`` calls, with the releases that declare it."""
    classes = _data("contract.json")["classes"]
    found: dict[str, frozenset[str]] = {}
    for owner in OWNERS[host]:
        for name, shapes in classes[owner]["members"].items():
            found[name] = found.get(name, frozenset()).union(*(held(s["in"]) for s in shapes))
    return found


def base_classes() -> set[tuple[str, str]]:
    """``(module, name)`` of SGLang's platform base classes, whose definitions are the contract's
    defaults."""
    return {(c["module"], c["class"]) for c in _data("contract.json")["classes"].values()}


def host_calls(release: str, host: str) -> dict[str, list[dict[str, Any]]]:
    """The calls ``host``'s code in ``release`` makes on the platform, by member: ``args`` (how
    many positional arguments), ``kwargs`` (their names), ``site`` (a file that makes it)."""
    calls = _data("contract.json")["calls"][host].items()
    found = {name: [c for c in forms if release in held(c["in"])] for name, forms in calls}
    return {name: forms for name, forms in found.items() if forms}


def _sections(release: str) -> dict[str, dict[str, Any]]:
    """The contract of ``release`` by section, each member with what can change about it."""
    data = _data("contract.json")
    sections = {
        owner: {
            name: {k: v for k, v in shape.items() if k != "in"}
            for name, shapes in cls["members"].items()
            for shape in shapes
            if release in held(shape["in"])
        }
        for owner, cls in data["classes"].items()
    }
    for key in ("PlatformEnum", "resolution_hooks"):
        sections[key] = {name: True for name, where in data[key].items() if release in held(where)}
    sections["capabilities"] = {
        name: {"default": shape["default"]}
        for name, shapes in data["capabilities"].items()
        for shape in shapes
        if release in held(shape["in"])
    }
    for host in OWNERS:
        sections[f"{host} calls"] = {
            name: [[c["args"], c["kwargs"]] for c in forms]
            for name, forms in host_calls(release, host).items()
        }
    return sections


def diff(before: str, after: str) -> list[dict[str, Any]]:
    """What changed in the platform contract from release ``before`` to ``after``: each member
    added, removed or changed, by section (the three platform classes, ``PlatformEnum``,
    ``capabilities``, ``resolution_hooks``, ``srt calls``, ``diffusion calls``)."""
    old, new = _sections(check_release(before)), _sections(check_release(after))
    changes = []
    for section, members in new.items():
        for name in [*members, *(n for n in old[section] if n not in members)]:
            was, now = old[section].get(name), members.get(name)
            if was != now:
                change = "added" if was is None else "removed" if now is None else "changed"
                changes.append(
                    {
                        "section": section,
                        "name": name,
                        "change": change,
                        "before": was,
                        "after": now,
                    }
                )
    return changes


# ---- the module index: does a hook target exist in a release? ------------------------------------


@cache
def _index() -> str:
    import gzip

    return (
        "\n" + gzip.decompress(files(__package__).joinpath("modules.txt.gz").read_bytes()).decode()
    )


@cache
def _module(name: str) -> tuple[frozenset[str], dict[str, frozenset[str]], dict[str, Any]] | None:
    """Module ``name`` in the index: the releases it is in, its top-level names (``*``: any) and
    its classes (``qualname -> (releases, members, [(bases, releases)])``), or ``None``."""
    text = _index()
    found = re.search(rf"\n{re.escape(name)}( [^\n]*)?\n", text)
    if found is None:
        return None
    end = re.compile(r"\n(?! )").search(text, found.end() - 1)
    module, *lines = text[found.start() + 1 : end.start() if end else None].split("\n")
    where = held(module.partition(" ")[2])
    names: dict[str, frozenset[str]] = {}
    classes: dict[str, Any] = {}
    for line in lines:
        item, _, span = line.strip().partition(" ")
        if not line.startswith("  "):
            if item.startswith("."):
                cls = classes[item[1:]] = (held(span) if span else where, {}, [])
            else:
                names[item] = held(span) if span else where
        elif item.startswith("("):
            cls[2].append((item[1:-1].split(","), held(span) if span else cls[0]))
        else:
            cls[1][item] = held(span) if span else cls[0]
    return where, names, classes


def _members(module: str, qualname: str, release: str, depth: int = 0) -> set[str] | None:
    """The members class ``module:qualname`` has in ``release`` (its own and inherited), or
    ``None`` when the index cannot tell (a base defined outside SGLang, no such class here)."""
    found = _module(module)
    cls = found[2].get(qualname) if found else None
    if cls is None or release not in cls[0] or depth > 20:
        return None
    members = {name for name, where in cls[1].items() if release in where}
    for bases, where in cls[2]:
        for base in bases if release in where else ():
            inherited = None if base == "?" else _members(*base.split(":"), release, depth + 1)
            if inherited is None:
                return None
            members |= inherited
    return members


def missing(target: str, release: str) -> str | None:
    """The part of hook target ``target`` (``pkg.mod.Class.method``, ``pkg.mod:Class.method``)
    that SGLang ``release`` lacks: a module, or a dotted name in one; ``None`` when the release has
    it or the index cannot tell (a name made at run time, a member a base outside SGLang may
    give, a dunder every class has)."""
    module, colon, _ = target.rpartition(":")
    parts = target.replace(":", ".").split(".")
    cuts = [module.count(".") + 1] if colon else range(len(parts), 0, -1)
    cut = next((c for c in cuts if (m := _module(".".join(parts[:c]))) and release in m[0]), 0)
    path = ".".join(parts[:cut])
    if not cut:
        return module if colon else parts[0]
    _, names, classes = _module(path)  # type: ignore[misc]
    if "*" in names or cut == len(parts):
        return None
    if release not in names.get(parts[cut], ()):
        return f"{path}.{parts[cut]}"
    for depth in range(cut + 1, len(parts)):
        qualname, name = ".".join(parts[cut:depth]), parts[depth]
        if qualname not in classes or (name.startswith("__") and name.endswith("__")):
            return None
        members = _members(path, qualname, release)
        if members is None:
            return None
        if name not in members:
            return ".".join(parts[: depth + 1])
    return None
