"""One scan of the installed distributions, shared by every entry-point group of every namespace.

``importlib.metadata.entry_points()`` builds a ``Distribution`` object per installed package, reads each one's
``METADATA`` to learn its name, and SGLang calls it up to three times per process. Here one pass over ``sys.path``
reads only the ``entry_points.txt`` files that exist, takes the distribution's name and version from the
``*.dist-info`` folder name (the wheel spec fixes that format), and keeps the result in memory for the rest of
the process. Nothing is saved on disk: which plugin code a process imports is decided by the installed
distributions alone, never by a file another user could write.

What the fast path cannot see (zip files on ``sys.path``, distributions served by custom meta-path finders) is
read through ``importlib.metadata`` itself, so the result is the same set ``importlib.metadata`` would give.

Why not ``importlib.metadata`` alone: in a process that has imported torch, at 381 distributions, this scan took
2.3 ms where ``entry_points()`` plus the distribution names of the two plugin groups took 6.1 ms; the difference
is most of the 5 ms start-up budget and of the margin on the 2x start-up goal (docs/benchmarks.md).
"""

# No ``from __future__ import annotations`` here: typing.NamedTuple would compile a ForwardRef for every
# string annotation of its fields, a cost paid by every process at start-up.
import importlib
import logging
import os
import re
import sys
import threading
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from ._forking import after_fork_in_child

logger = logging.getLogger(__name__)

# ``module`` or ``module:attr.attr`` with optional ``[extras]`` -- the grammar of the packaging spec.
_ENTRY_POINT_VALUE_PATTERN = r"^(?P<module>[\w.]+)\s*(?::\s*(?P<attr>[\w.]+)\s*)?(?:\[(?P<extras>[^\]]*)\])?\s*$"
_ENTRY_POINT_VALUE: re.Pattern[str] | None = None
_NORMALIZE: re.Pattern[str] | None = None

#: Characters of the common ``pkg.mod:attr`` form. A value made only of these, with a non-empty module and at
#: most one ``:`` followed by a non-empty attribute, matches the grammar above, so the scan checks it with a set
#: operation and leaves the regular expression (compiled on first use) to other spaces and non-ASCII names.
#: A trailing ``[extras]`` (``black``'s ``blackd = blackd:patched_main [d]``) is split off first: one such
#: value in a site-packages would otherwise cost a regex compile on every start-up.
_PLAIN_VALUE_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:")


def _value_pattern() -> re.Pattern[str]:
    global _ENTRY_POINT_VALUE
    if _ENTRY_POINT_VALUE is None:
        _ENTRY_POINT_VALUE = re.compile(_ENTRY_POINT_VALUE_PATTERN)
    return _ENTRY_POINT_VALUE


def _plain_value(value: str) -> tuple[str, str | None] | None:
    """``(module, attr)`` of a value in the plain ``pkg.mod[:attr]`` form, or ``None`` for any other form.

    The plain form may end in ``[extras]``, separated by spaces or not; extras may hold anything but ``]``.
    """
    if value.endswith("]"):
        head, bracket, extras = value.partition("[")
        if not bracket or "]" in extras[:-1]:
            return None
        value = head.rstrip(" ")
    if not value or not _PLAIN_VALUE_CHARS.issuperset(value):
        return None
    module, colon, attr = value.partition(":")
    if not module:
        return None
    if not colon:
        return module, None
    if not attr or ":" in attr:
        return None
    return module, attr


def _split_value(value: str) -> tuple[str, str | None] | None:
    """``(module, attr)`` of an entry-point value, or ``None`` when it does not follow the grammar."""
    plain = _plain_value(value)
    if plain is not None:
        return plain
    match = _value_pattern().match(value)
    if match is None:
        return None
    return match.group("module"), match.group("attr")


def normalize_distribution_name(name: str) -> str:
    """The PEP 503 form of a distribution name: lower case, runs of ``-_.`` collapsed to ``-``."""
    # Replacing each separator by "-" gives the same result as the regular expression unless two separators
    # were adjacent; only then is the expression (compiled on first use) needed to collapse the run.
    dashed = name.replace("_", "-").replace(".", "-")
    if "--" not in dashed:
        return dashed.lower()
    global _NORMALIZE
    if _NORMALIZE is None:
        _NORMALIZE = re.compile(r"[-_.]+")
    return _NORMALIZE.sub("-", name).lower()


class PluginEntryPoint(NamedTuple):
    """An entry point together with the distribution that offers it.

    Unlike ``importlib.metadata.EntryPoint`` the distribution's name and version are plain fields, read once
    during the scan, so asking for them never re-parses metadata.
    """

    group: str
    name: str
    value: str
    dist_name: str
    """PEP 503 normalised distribution name."""
    dist_version: str
    dist_path: str
    """The ``*.dist-info`` / ``*.egg-info`` folder (or a description of where it came from)."""

    @property
    def module(self) -> str:
        parts = _split_value(self.value)
        assert parts is not None  # validated when the scan built it
        return parts[0]

    @property
    def attr(self) -> str | None:
        parts = _split_value(self.value)
        assert parts is not None
        return parts[1]

    @property
    def dist_label(self) -> str:
        """``name version``, as users see it in messages."""
        return f"{self.dist_name} {self.dist_version}"

    def load(self) -> Any:
        """Import the module and walk to the attribute, as ``EntryPoint.load()`` does."""
        obj: Any = importlib.import_module(self.module)
        attr = self.attr
        if attr:
            for part in attr.split("."):
                obj = getattr(obj, part)
        return obj


class MalformedDistribution(NamedTuple):
    """A distribution whose metadata could not be read; it is skipped, the others are not."""

    path: str
    reason: str


class DiscoveryResult:
    """Everything one scan found: entry points by group, and the distributions it had to skip."""

    __slots__ = ("distributions", "entry_points", "malformed")

    def __init__(
        self,
        entry_points: dict[str, tuple[PluginEntryPoint, ...]] | None = None,
        malformed: tuple[MalformedDistribution, ...] = (),
        distributions: frozenset[str] = frozenset(),
    ) -> None:
        #: Every group's entry points, each sorted by (distribution, entry-point name).
        self.entry_points = entry_points if entry_points is not None else {}
        self.malformed = malformed
        #: The PEP 503 names of every distribution found (the first of each name on the path).
        self.distributions = distributions

    @property
    def distribution_count(self) -> int:
        return len(self.distributions)

    @property
    def group_count(self) -> int:
        """How many entry-point groups were found."""
        return len(self.entry_points)

    def group(self, name: str) -> tuple[PluginEntryPoint, ...]:
        """Entry points of one group, sorted by (distribution, entry-point name)."""
        return self.entry_points.get(name, ())

    def duplicates(self, group: str) -> dict[str, tuple[PluginEntryPoint, ...]]:
        """Entry-point names that more than one distribution offers in ``group``."""
        by_name: dict[str, list[PluginEntryPoint]] = {}
        for ep in self.group(group):
            by_name.setdefault(ep.name, []).append(ep)
        return {name: tuple(eps) for name, eps in by_name.items() if len(eps) > 1}


class MalformedEntryPoints(ValueError):
    """Raised while parsing an ``entry_points.txt`` that does not follow the format."""


def parse_entry_points_text(text: str) -> Iterator[tuple[str, str, str]]:
    """Yield ``(group, name, value)`` from the INI-like ``entry_points.txt`` format.

    Stricter than ``importlib.metadata``: a line without ``=`` or a value that is not ``module[:attr]`` is an
    error, so a broken plugin is reported instead of failing later at load time.
    """
    group: str | None = None
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line[0] == "[":
            if not line.endswith("]") or len(line) < 3:
                raise MalformedEntryPoints(f"line {lineno}: bad section header {raw!r}")
            group = line[1:-1].strip()
            continue
        if group is None:
            raise MalformedEntryPoints(f"line {lineno}: entry point {raw!r} outside any [group] section")
        name, sep, value = line.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name:
            raise MalformedEntryPoints(f"line {lineno}: expected 'name = module:attr', got {raw!r}")
        if _plain_value(value) is None and not _value_pattern().match(value):
            raise MalformedEntryPoints(
                f"line {lineno}: entry point {name!r} has value {value!r}, expected 'module' or 'module:attr'"
            )
        yield group, name, value


def _read_metadata_headers(folder: str) -> dict[str, str]:
    """Name and Version from METADATA / PKG-INFO, reading only the header block."""
    for filename in ("METADATA", "PKG-INFO"):
        try:
            with open(os.path.join(folder, filename), encoding="utf-8") as handle:
                headers: dict[str, str] = {}
                for line in handle:
                    if not line.strip():
                        break
                    key, sep, value = line.partition(":")
                    if sep and key in ("Name", "Version"):
                        headers.setdefault(key, value.strip())
                return headers
        except FileNotFoundError:
            continue
    return {}


class _Scan:
    """Mutable state of one scan in progress."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.found: list[PluginEntryPoint] = []
        self.malformed: list[MalformedDistribution] = []

    def claim(self, normalized_name: str) -> bool:
        """First distribution of a name on ``sys.path`` wins, as in ``importlib.metadata``."""
        if normalized_name in self.seen:
            return False
        self.seen.add(normalized_name)
        return True

    def add_text(self, text: str, dist_name: str, version: str, where: str) -> None:
        """Record the entry points of one distribution (or report it malformed)."""
        try:
            parsed = list(parse_entry_points_text(text))
        except MalformedEntryPoints as exc:
            self.malformed.append(MalformedDistribution(where, f"entry_points.txt {exc}"))
            logger.warning("Skipping distribution at %s: malformed entry_points.txt (%s)", where, exc)
            return
        for group, name, value in parsed:
            self.found.append(PluginEntryPoint(group, name, value, dist_name, version, where))


def _read_text(path: str) -> str:
    """The UTF-8 text of a small file, through ``os`` calls.

    About half the cost of ``open(path, encoding="utf-8").read()``, which builds a buffered text
    stream per file; the scan reads one file per distribution. Raises what ``open`` and decoding raise
    (``FileNotFoundError``, other ``OSError``, ``UnicodeDecodeError``). Newlines are left as they are:
    the parser splits with ``str.splitlines``, which treats ``\r\n`` and ``\r`` as ``\n``.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        data = os.read(fd, 65536)
        if data:
            chunk = os.read(fd, 65536)
            while chunk:
                data += chunk
                chunk = os.read(fd, 65536)
    finally:
        os.close(fd)
    return data.decode("utf-8")


def _scan_directory(directory: str, scan: _Scan) -> None:
    try:
        names = os.listdir(directory)
    except OSError:
        return
    # ``os.path.join(directory, entry)``, computed once per folder instead of once per distribution.
    prefix = directory if directory.endswith(os.sep) else directory + os.sep
    # Sorted so that, within one folder, which of two same-named distributions wins is stable.
    for entry in sorted(names):
        lower = entry.lower()
        if lower.endswith(".dist-info"):
            stem = entry[:-10]
            egg = False
        elif lower.endswith(".egg-info"):
            stem = entry[:-9]
            egg = True
        else:
            continue
        raw_name, _, rest = stem.partition("-")
        dist_name = normalize_distribution_name(raw_name)
        if not scan.claim(dist_name):
            continue
        folder = prefix + entry
        entry_points_file = folder + os.sep + "entry_points.txt"
        try:
            text = _read_text(entry_points_file)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except (OSError, UnicodeDecodeError) as exc:
            scan.malformed.append(MalformedDistribution(folder, f"unreadable entry_points.txt: {exc}"))
            logger.warning("Skipping distribution at %s: unreadable entry_points.txt (%s)", folder, exc)
            continue
        version = rest.partition("-")[0] if egg else rest
        if not version:
            version = _read_metadata_headers(folder).get("Version", "")
        if not version:
            scan.malformed.append(MalformedDistribution(folder, "no version in the folder name or METADATA"))
            logger.warning("Skipping distribution at %s: it has no version", folder)
            continue
        scan.add_text(text, dist_name, version, folder)


def _scan_with_importlib(distributions: Iterable[Any], where: str, scan: _Scan) -> None:
    """The slow path, for what a folder scan cannot see."""
    for dist in distributions:
        try:
            name = dist.metadata["Name"]
            version = dist.version
        except Exception as exc:  # a broken custom distribution must not hide the others
            scan.malformed.append(MalformedDistribution(where, f"unreadable metadata: {exc}"))
            continue
        if not name or not scan.claim(normalize_distribution_name(name)):
            continue
        text = dist.read_text("entry_points.txt")
        if text:
            location = getattr(dist, "_path", None)
            scan.add_text(text, normalize_distribution_name(name), version, str(location or where))


def scan_distributions(path: list[str] | None = None) -> DiscoveryResult:
    """Scan ``path`` (default ``sys.path``) once; no caching. Prefer :func:`discover_entry_points`."""
    finders = _custom_distribution_finders() if path is None else []
    return _result(_scan(list(sys.path if path is None else path), finders))


def _scan(search_path: list[str], finders: list[Any]) -> _Scan:
    """Scan the folders and files of ``search_path``, then ask each of ``finders`` for its distributions."""
    scan = _Scan()
    for entry in search_path:
        directory = entry or os.getcwd()
        if os.path.isdir(directory):
            _scan_directory(directory, scan)
        elif os.path.isfile(directory):
            from importlib.metadata import distributions

            _scan_with_importlib(distributions(path=[directory]), directory, scan)
    _scan_custom_finders(finders, search_path, scan)
    return scan


def _result(scan: _Scan) -> DiscoveryResult:
    groups: dict[str, list[PluginEntryPoint]] = {}
    for ep in scan.found:
        groups.setdefault(ep.group, []).append(ep)
    ordered = {group: tuple(sorted(eps, key=lambda ep: (ep.dist_name, ep.name))) for group, eps in groups.items()}
    return DiscoveryResult(ordered, tuple(scan.malformed), frozenset(scan.seen))


def _custom_distribution_finders() -> list[Any]:
    """Meta-path finders other than the standard path finder that can serve distributions."""
    from importlib.machinery import PathFinder

    return [
        finder
        for finder in sys.meta_path
        if finder is not PathFinder and getattr(finder, "find_distributions", None) is not None
    ]


def _scan_custom_finders(finders: list[Any], search_path: list[str], scan: _Scan) -> None:
    """Distributions offered by meta-path finders other than the standard path finder."""
    for finder in finders:
        from importlib.metadata import DistributionFinder

        try:
            found = list(finder.find_distributions(DistributionFinder.Context(path=search_path)))
        except Exception as exc:
            scan.malformed.append(MalformedDistribution(repr(finder), f"finder failed: {exc}"))
            continue
        _scan_with_importlib(found, repr(finder), scan)


class _DiscoveryCache:
    """The per-process scan, in memory: keyed by pid (dropped after ``fork``) and by ``sys.path``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: tuple[int, tuple[str, ...]] | None = None
        self._result: DiscoveryResult | None = None
        #: How many scans this process ran (tests prove the in-memory scan is reused with it).
        self.scans = 0

    def get(self, refresh: bool = False) -> DiscoveryResult:
        key = (os.getpid(), tuple(sys.path))
        result = self._result
        if not refresh and result is not None and self._key == key:
            return result
        with self._lock:
            if refresh or self._result is None or self._key != key:
                self._result = scan_distributions()
                self._key = key
                self.scans += 1
                logger.debug(
                    "Scanned %d distributions: %d entry-point groups, %d malformed",
                    self._result.distribution_count,
                    self._result.group_count,
                    len(self._result.malformed),
                )
            return self._result

    def clear(self) -> None:
        with self._lock:
            self._key = None
            self._result = None

    def after_fork(self) -> None:
        """In a forked child: start empty, with a fresh lock (the parent's may have been held)."""
        self._lock = threading.Lock()
        self._key = None
        self._result = None


_CACHE = _DiscoveryCache()


def discover_entry_points(refresh: bool = False) -> DiscoveryResult:
    """The cached scan for this process; ``refresh=True`` rescans (e.g. after installing a package)."""
    return _CACHE.get(refresh)


def refresh_discovery() -> None:
    """Drop the scan kept in memory; the next :func:`discover_entry_points` rescans."""
    _CACHE.clear()


after_fork_in_child(_CACHE.after_fork)
