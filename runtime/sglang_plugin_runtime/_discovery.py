"""One scan of the installed distributions, shared by every entry-point group of every namespace.

The scan is ``importlib.metadata``'s, run once per process and kept in memory (dropped after
``fork`` and when ``sys.path`` changes). Nothing is saved on disk: which plugin code a process
imports is decided by the installed distributions alone. Each ``sys.path`` entry and each
distribution is read on its own, so one that cannot be read (an undecodable ``entry_points.txt``, a
broken ``METADATA``) is reported with its path and skipped; it never hides the others. Versions are
read (a ``METADATA`` parse) only for distributions that offer an entry point in a group somebody
asks about.
"""

# No ``from __future__ import annotations`` here: typing.NamedTuple would compile a ForwardRef for
# every string annotation of its fields, a cost paid by every process at start-up.
import logging
import os
import re
import stat
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import PurePath
from typing import TYPE_CHECKING, NamedTuple

from ._forking import after_fork_in_child
from ._lazy_exports import old_attribute

if TYPE_CHECKING:
    from importlib.metadata import Distribution

    #: What the scan read of one entry point: name, value, its distribution, that one's PEP 503 name
    #: and folder.
    Offer = tuple[str, str, Distribution, str, str]

logger = logging.getLogger(__name__)

_SEPARATORS = re.compile(r"[-_.]+")
_DIGITS = re.compile(r"(\d+)")


def normalize_distribution_name(name: str) -> str:
    """The PEP 503 form of a distribution name: lower case, runs of ``-_.`` collapsed to ``-``."""
    return _SEPARATORS.sub("-", name).lower()


class PluginEntryPoint(NamedTuple):
    """An entry point with the distribution that offers it (name PEP 503 normalised, version,
    folder)."""

    group: str
    name: str
    value: str
    distribution: str
    version: str
    path: str
    """The distribution's ``*.dist-info`` / ``*.egg-info`` folder (or the ``sys.path`` entry it came
    from)."""

    @property
    def module(self) -> str:
        return self.value.partition(":")[0].strip()

    @property
    def label(self) -> str:
        """The distribution as users see it in messages: ``name version``."""
        return f"{self.distribution} {self.version}"

    def load(self) -> object:
        """Import the module and walk to the attribute (``importlib.metadata.EntryPoint.load``)."""
        from importlib.metadata import EntryPoint

        return EntryPoint(self.name, self.value, self.group).load()


# old attribute names, deprecated
PluginEntryPoint.__getattr__ = old_attribute  # type: ignore[attr-defined]


class MalformedDistribution(NamedTuple):
    """A distribution (or ``sys.path`` entry) that could not be read; it is skipped, the others are
    not."""

    path: str
    reason: str


class MalformedEntryPoints(ValueError):
    """An ``entry_points.txt`` that does not follow the format."""


def parse_entry_points_text(text: str) -> Iterator[tuple[str, str, str]]:
    """Yield ``(group, name, value)`` from the INI-like ``entry_points.txt`` format.

    Stricter than ``importlib.metadata``, which drops what it cannot read: a line without ``=``, an
    entry outside a ``[group]`` or a value that is not ``module[:attr]`` is an error, so a broken
    plugin is reported at once.
    """
    from importlib.metadata import EntryPoint

    group = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line[0] == "[":
            if not line.endswith("]") or len(line) < 3:
                raise MalformedEntryPoints(f"line {lineno}: bad section header {raw!r}")
            group = line[1:-1].strip()
            continue
        name, sep, value = map(str.strip, line.partition("="))
        if group is None:
            raise MalformedEntryPoints(
                f"line {lineno}: entry point {raw!r} outside any [group] section"
            )
        if not sep or not name:
            raise MalformedEntryPoints(f"line {lineno}: expected 'name = module:attr', got {raw!r}")
        if not EntryPoint.pattern.match(value):
            raise MalformedEntryPoints(
                f"line {lineno}: entry point {name!r} has value {value!r}, expected 'module' or "
                f"'module:attr'"
            )
        yield group, name, value


class DiscoveryResult:
    """Everything one scan found: entry points by group, the distributions, and what had to be
    skipped."""

    def __init__(
        self,
        offers: "dict[str, list[Offer]]",
        malformed: list[MalformedDistribution],
        distributions: frozenset[str],
    ) -> None:
        #: ``distributions``: the PEP 503 names of every distribution found (the first of each name
        #: on the path).
        self._offers = offers
        self.malformed = malformed
        self.distributions = distributions
        self._groups: dict[str, tuple[PluginEntryPoint, ...]] = {}
        self._versions: dict[str, str | None] = {}
        self._lock = threading.Lock()

    @property
    def entry_points(self) -> dict[str, tuple[PluginEntryPoint, ...]]:
        """Every group's entry points (reads the version of every distribution that offers one)."""
        return {group: self.group(group) for group in self._offers}

    def group(self, name: str) -> tuple[PluginEntryPoint, ...]:
        """Entry points of one group, sorted by (distribution, entry-point name)."""
        with self._lock:
            if name not in self._groups:
                eps = [
                    PluginEntryPoint(name, ep_name, value, distribution, version, path)
                    for ep_name, value, dist, distribution, path in self._offers.get(name, ())
                    if (version := self._version(dist, path))
                ]
                self._groups[name] = tuple(sorted(eps, key=lambda ep: (ep.distribution, ep.name)))
            return self._groups[name]

    def _version(self, dist: "Distribution", path: str) -> str | None:
        """The distribution's version, read once; one without a readable version is reported and
        skipped."""
        if path not in self._versions:
            version = None
            reason = "no version in its metadata"
            try:
                version = dist.version or None
            except Exception as exc:  # a broken METADATA hides this distribution only
                reason = f"unreadable metadata: {type(exc).__name__}: {exc}"
            if not version:
                _skip(self.malformed, path, reason)
            self._versions[path] = version
        return self._versions[path]

    def duplicates(self, group: str) -> dict[str, tuple[PluginEntryPoint, ...]]:
        """Entry-point names that more than one distribution (or one file, twice) offers in
        ``group``."""
        eps = self.group(group)
        counts = Counter(ep.name for ep in eps)
        return {n: tuple(ep for ep in eps if ep.name == n) for n, k in counts.items() if k > 1}


def _skip(malformed: list[MalformedDistribution], path: str, reason: str) -> None:
    logger.warning("Skipping distribution at %s: %s", path, reason)
    malformed.append(MalformedDistribution(path, reason))


def duplicate_reason(eps: tuple[PluginEntryPoint, ...]) -> str:
    """Why a duplicated entry-point name cannot be used, and how to fix it."""
    if len({ep.path for ep in eps}) == 1:
        where = os.path.join(eps[0].path, "entry_points.txt")
        lines = " and ".join(repr(f"{ep.name} = {ep.value}") for ep in eps)
        return (
            f"{where} of {eps[0].label} lists it twice ({lines}); its author must remove one of "
            f"the lines"
        )
    dists = " and ".join(ep.label for ep in eps)
    return (
        f"offered by {dists}; entry-point names must be unique, uninstall one of these "
        f"distributions"
    )


def _absolute(path: str) -> str:
    """``path`` made absolute (a ``''`` entry on ``sys.path`` yields relative ones), unless the cwd
    is gone."""
    try:
        return os.path.abspath(path)
    except OSError:
        return path


def _folder_version(dist: "Distribution") -> list[int | str]:
    """A sort key of a distribution's folder name that orders the numbers in it as numbers."""
    parts: list[int | str] = _DIGITS.split(os.path.basename(str(getattr(dist, "_path", ""))))
    parts[1::2] = map(int, parts[1::2])
    return parts


def _entry_points_text(dist: "Distribution", where: str) -> str | None:
    """``dist.read_text("entry_points.txt")``, read without pathlib from a folder: the scan reads
    one per installed distribution, and pathlib's path objects cost more than the read."""
    if not isinstance(getattr(dist, "_path", None), PurePath):  # a zip, another finder's
        return dist.read_text("entry_points.txt")
    try:
        with open(os.path.join(where, "entry_points.txt"), encoding="utf-8") as file:
            return file.read()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
        return None  # as read_text: no such file


def scan_distributions(path: list[str] | None = None) -> DiscoveryResult:
    """Scan ``path`` (default ``sys.path``) once, no caching; prefer
    :func:`discover_entry_points`."""
    from importlib.metadata import distributions

    seen: set[str] = set()
    offers: dict[str, list[Offer]] = {}
    malformed: list[MalformedDistribution] = []
    for entry in list(sys.path if path is None else path):
        try:  # a FIFO or a device: Python's imports skip it, and reading it could wait forever
            mode = os.stat(entry or os.curdir).st_mode
            if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                continue
        except OSError:  # missing: nothing is found there either way
            pass
        try:  # newest first by folder name (-1.10 after -1.9): of two of one project, it is used
            found = sorted(distributions(path=[entry]), key=_folder_version, reverse=True)
        # a sys.path entry importlib.metadata cannot walk hides nothing else
        except Exception as exc:
            _skip(malformed, entry or os.curdir, f"unreadable: {type(exc).__name__}: {exc}")
            continue
        here: dict[str, str] = {}
        for dist in found:
            where = _absolute(str(getattr(dist, "_path", None) or entry))
            try:
                # The name importlib.metadata itself tells distributions apart by (from the folder
                # name, no parse).
                name = normalize_distribution_name(
                    getattr(dist, "_normalized_name", None) or dist.metadata["Name"]
                )
                if name in here:  # a stale copy an upgrade left (importlib.metadata: either)
                    _skip(
                        malformed,
                        where,
                        f"a second metadata folder of {name} in one folder: {here[name]} is used "
                        "(the highest version by folder name); remove one",
                    )
                if name in seen:
                    # the first distribution of a name on the path wins, as in importlib.metadata
                    continue
                seen.add(name)
                here[name] = where
                text = _entry_points_text(dist, where)
                parsed = list(parse_entry_points_text(text)) if text else []  # all, or nothing
            except Exception as exc:
                reason = (
                    "malformed entry_points.txt"
                    if isinstance(exc, MalformedEntryPoints)
                    else "unreadable"
                )
                _skip(malformed, where, f"{reason}: {type(exc).__name__}: {exc}")
                continue
            for group, ep_name, value in parsed:
                offers.setdefault(group, []).append((ep_name, value, dist, name, where))
    return DiscoveryResult(offers, malformed, frozenset(seen))


class _DiscoveryCache:
    """The per-process scan, in memory: keyed by pid (so a forked child scans again) and by
    ``sys.path``."""

    lock = threading.Lock()
    key: object = None
    result: DiscoveryResult
    #: How many scans this process ran (tests prove the in-memory scan is reused with it).
    scans = 0

    def discover(self, refresh: bool = False) -> DiscoveryResult:
        """The scan of this process; ``refresh=True`` rescans (e.g. after installing a package)."""
        key = (os.getpid(), tuple(sys.path))
        with self.lock:
            if refresh or self.key != key:
                self.result = scan_distributions()
                self.key = key
                self.scans += 1
            return self.result


_CACHE = _DiscoveryCache()
# A forked child scans again anyway (its pid differs); it needs a fresh lock, which a parent's
# thread may have held.
after_fork_in_child(lambda: setattr(_CACHE, "lock", threading.Lock()))
discover_entry_points = _CACHE.discover


def refresh_discovery() -> None:
    """Drop the scan kept in memory; the next :func:`discover_entry_points` rescans."""
    _CACHE.key = None
