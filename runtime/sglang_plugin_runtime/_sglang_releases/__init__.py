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

import itertools
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
        stop = listed.index(last or listed[-1]) if dash else start
        found.update(listed[start : stop + 1])
    return frozenset(found)


def describe(chosen: Iterable[str]) -> str:
    """Releases in words: ``from 0.5.20``, ``up to 0.5.21``, ``0.5.13 to 0.5.19``, ``0.5.14``."""
    listed, wanted, words = releases(), set(chosen), []
    for kept, group in itertools.groupby(listed, wanted.__contains__):
        run = list(group)
        first, last = run[0], run[-1]
        if not kept:
            continue
        if first == last:
            words.append(first)
        elif last == listed[-1]:
            words.append(f"from {first}")
        else:
            words.append(f"up to {last}" if first == listed[0] else f"{first} to {last}")
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


@cache
def sections(release: str) -> dict[str, dict[str, Any]]:
    """The platform contract of ``release`` by section: each of SGLang's platform classes
    (``DeviceMixin``, ``SRTPlatform``, ``diffusion Platform``) and ``capabilities``, member -> its
    ``kind``, ``signature``, ``required`` (the base raises ``NotImplementedError``) and
    ``default`` (a literal it returns or holds); ``PlatformEnum`` and ``resolution_hooks``, name
    -> ``True``; ``srt calls`` and ``diffusion calls``, member -> the calls the host's code makes
    on the platform (``args``: how many positional arguments, ``kwargs``: their names, ``site``:
    a file that makes it)."""
    data = _data("contract.json")

    def held_in(entries: dict[str, list[dict[str, Any]]], one: bool = True) -> dict[str, Any]:
        """Each entry's variants that ``release`` holds (without their span): the one, or all."""
        found = {
            name: [
                {k: v for k, v in e.items() if k != "in"} for e in es if release in held(e["in"])
            ]
            for name, es in entries.items()
        }
        return {name: value[0] if one else value for name, value in found.items() if value}

    found = {owner: held_in(cls["members"]) for owner, cls in data["classes"].items()}
    found["capabilities"] = held_in(data["capabilities"])
    for key in ("PlatformEnum", "resolution_hooks"):
        found[key] = {name: True for name, where in data[key].items() if release in held(where)}
    for host, calls in data["calls"].items():
        found[f"{host} calls"] = held_in(calls, one=False)
    return found


def contract(release: str, host: str) -> dict[str, dict[str, Any]]:
    """Each member ``release`` declares on the platform classes ``host`` calls (``srt``: DeviceMixin
    and SRTPlatform; ``diffusion``: its Platform), as :func:`sections` gives it."""
    return {
        name: shape for owner in OWNERS[host] for name, shape in sections(release)[owner].items()
    }


def as_in(release: str, row: dict[str, Any], name: str, host: str) -> dict[str, Any]:
    """The interface table's ``row`` of ``name`` (for ``host``) as ``release`` has it: that
    release's calls, the runtime's own, and its signature."""
    own = [c for c in row.get("calls", ()) if c["site"].startswith("sglang_plugin_runtime")]
    calls = own + sections(release)[f"{host} calls"].get(name, [])
    return {"calls": calls, "signature": contract(release, host).get(name, {}).get("signature", "")}


def declared(host: str) -> dict[str, frozenset[str]]:
    """Every member of the platform classes ``host`` calls, with the releases that declare it."""
    return {
        name: frozenset(r for r in releases() if name in contract(r, host))
        for name in set().union(*(contract(r, host) for r in releases()))
    }


def base_classes() -> set[tuple[str, str]]:
    """``(module, name)`` of SGLang's platform base classes, whose definitions are the contract's
    defaults."""
    return {(c["module"], c["class"]) for c in _data("contract.json")["classes"].values()}


def diff(before: str, after: str) -> list[dict[str, Any]]:
    """What changed in the platform contract from release ``before`` to ``after``: each member
    added, removed or changed, by section (see :func:`sections`)."""
    old, new = sections(check_release(before)), sections(check_release(after))
    changes = []
    for section, members in new.items():
        for name in members | old[section]:  # the release's order, then what it removed
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
def _module(name: str) -> dict[str, frozenset[str]]:
    """Module ``name`` in the index, each entry with the releases that hold it: ``""`` the module,
    ``name`` a top-level name (``*``: any name), ``.Class`` a class, ``.Class member`` its own
    member, ``.Class (bases)`` its bases; empty when no release has the module."""
    # its line, and the indented lines after it
    found = re.search(rf"\n{re.escape(name)}(?: .*)?$(?:\n .*)*", _index(), re.MULTILINE)
    if found is None:
        return {}
    entries: dict[str, frozenset[str]] = {}
    owner = ""
    for line in found[0].split("\n")[1:]:
        item, _, span = line.strip().partition(" ")
        depth = len(line) - len(line.lstrip(" "))
        key = ("", item, f"{owner} {item}")[depth]
        entries[key] = held(span) if span else entries[owner if depth == 2 else ""]
        owner = item if depth == 1 and item.startswith(".") else owner
    return entries


def _members(path: str, qualname: str, release: str, depth: int = 0) -> set[str] | None:
    """The members class ``path:qualname`` has in ``release`` (its own and inherited), or
    ``None`` when the index cannot tell (a base defined outside SGLang, no such class here)."""
    entries, owner = _module(path), f".{qualname} "
    if release not in entries.get(owner[:-1], ()) or depth > 20:
        return None
    members = set()
    for key, where in entries.items():
        item = key[len(owner) :]
        if not key.startswith(owner) or release not in where:
            continue
        if not item.startswith("("):
            members.add(item)
            continue
        for base in item[1:-1].split(","):
            module, _, qualname = base.partition(":")  # "?": a base outside SGLang
            inherited = _members(module, qualname, release, depth + 1) if qualname else None
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
    cut = next((c for c in cuts if release in _module(".".join(parts[:c])).get("", ())), 0)
    if not cut:
        return module if colon else parts[0]
    path = ".".join(parts[:cut])
    entries = _module(path)
    if "*" in entries or cut == len(parts):
        return None
    if release not in entries.get(parts[cut], ()):
        return f"{path}.{parts[cut]}"
    for depth in range(cut + 1, len(parts)):
        qualname, name = ".".join(parts[cut:depth]), parts[depth]
        if f".{qualname}" not in entries or (name.startswith("__") and name.endswith("__")):
            return None
        members = _members(path, qualname, release)
        if members is None:
            return None
        if name not in members:
            return ".".join(parts[: depth + 1])
    return None
