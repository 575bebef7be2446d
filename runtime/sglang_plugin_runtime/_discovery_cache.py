"""The discovery scan saved on disk, so the processes of one deployment scan once between installs.

An SGLang deployment starts many processes (a scheduler per rank, the tokenizer, the detokenizer, each
restart), and every one of them would read every ``entry_points.txt`` on ``sys.path``. The first scan
is saved here; a later process reuses it only after checking that nothing it depends on changed:

- the same ``sys.path`` (``''`` taken as the current directory), interpreter and cache format;
- every ``sys.path`` entry's ``stat`` (modification time in ns, inode, size): installing, upgrading or
  removing a distribution adds or removes a ``*.dist-info`` folder, which changes its parent folder's
  modification time -- the rule ``importlib.metadata`` itself uses for its in-process cache;
- every ``*.egg-info`` folder and its ``entry_points.txt`` (``setup.py egg_info`` rewrites them in place),
  and the ``entry_points.txt`` of every distribution that offers a plugin (a plugin author's hand edit).
  Other ``*.dist-info`` folders are not stamped one by one: installers replace a ``*.dist-info`` folder
  whole, which the first rule sees, and a stat per distribution would cost as much as a third of the scan.

A scan is saved only when it found no malformed distribution (their warnings must repeat), no custom
meta-path finder serves distributions (their answers cannot be checked this way), and every stamp is
older than two seconds: a file system's clock ticks coarsely, so a change made in the same tick as the
stamp could otherwise go unseen (git's "racy" rule). The file is written to a temporary name and
renamed, so concurrent processes never read half a file. Any problem reading or writing the cache is
logged at DEBUG and costs only a scan; it is never an error.

``SGLANG_PLUGIN_NO_CACHE=1`` turns it off; ``SGLANG_PLUGIN_CACHE_DIR`` moves it (default
``$XDG_CACHE_HOME/sglang-plugin-runtime``, else ``~/.cache/sglang-plugin-runtime``).
"""

from __future__ import annotations

import logging
import marshal
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

logger = logging.getLogger(__name__)

NO_CACHE_ENV = "SGLANG_PLUGIN_NO_CACHE"
CACHE_DIR_ENV = "SGLANG_PLUGIN_CACHE_DIR"

#: Bumped whenever the scan's rules or the file layout change, so older files are never trusted.
_FORMAT = 1
#: Stamps younger than this at scan time are not trusted (coarse file-system clocks; see above).
_RACY_SECONDS = 2.0
#: Files kept in the cache folder; the oldest go first (each distinct ``sys.path`` has one file).
_MAX_FILES = 64
_SUFFIX = ".discovery"

_TRUE = ("1", "true", "yes", "on")

# The file holds flat tuples of strings and integers rather than a tuple per entry: loading then creates
# a handful of objects instead of thousands, which is most of its cost and keeps the garbage collector
# quiet during start-up.
#: Fields saved per entry point, after its group: name, value, dist_name, dist_version, dist_path.
_ENTRY_FIELDS = 5
#: Fields saved per stamp: path, mtime_ns, inode, size (-1, -1, -1 for a path that does not exist).
_STAMP_FIELDS = 4


def cache_enabled() -> bool:
    """False when ``SGLANG_PLUGIN_NO_CACHE`` is set to a true value."""
    return os.environ.get(NO_CACHE_ENV, "").strip().lower() not in _TRUE


def cache_directory() -> str:
    """Where cache files live (the folder need not exist yet)."""
    configured = os.environ.get(CACHE_DIR_ENV, "").strip()
    if configured:
        return os.path.abspath(os.path.expanduser(configured))
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "sglang-plugin-runtime")


def cache_key(path_entries: Sequence[str]) -> tuple[object, ...]:
    """Everything besides the stamps that a saved scan is only valid for."""
    return (_FORMAT, sys.implementation.cache_tag, sys.version_info[:2], tuple(path_entries))


def cache_file(path_entries: Sequence[str]) -> str:
    """The file that holds the scan of ``path_entries``."""
    # The hash of an int is its value modulo 2**61 - 1: the same in every process (unlike a str's, which
    # PYTHONHASHSEED varies), and without importing binascii or hashlib, shared libraries that cost a
    # process without torch a third of a millisecond to load. Two paths sharing a file only cost misses:
    # the key inside is compared in full.
    text = repr(cache_key(path_entries)).encode("utf-8", "surrogateescape")
    digest = hash(int.from_bytes(text, "little"))
    return os.path.join(cache_directory(), f"{digest:016x}{_SUFFIX}")


def stamp(path: str) -> tuple[int, int, int]:
    """What must stay equal for a saved scan of ``path`` to stay valid; ``(-1, -1, -1)`` if it is missing."""
    try:
        st = os.stat(path)
    except OSError:
        return (-1, -1, -1)
    return (st.st_mtime_ns, st.st_ino, st.st_size)


def load(path_entries: Sequence[str]) -> tuple[dict[str, tuple[str, ...]], int, str] | None:
    """``(groups, distribution_count, file)`` of a saved, still valid scan of ``path_entries``; else ``None``.

    ``groups`` maps each group to its entry points as flat rows (see :func:`entry_points_from_flat`).
    """
    filename = cache_file(path_entries)
    try:
        with open(filename, "rb") as handle:
            # One read, then parse: marshal.load() on a file object reads object by object, which costs
            # ten times more than the parse itself.
            data = marshal.loads(handle.read())
        key, stamps, groups, count = data
    except FileNotFoundError:
        return None
    except Exception as exc:  # noqa: BLE001 - a damaged file is a cache miss, never an error
        logger.debug("Ignoring the discovery cache %s: %s", filename, exc)
        return None
    if key != cache_key(path_entries) or not _well_formed(stamps, groups, count):
        return None
    for index in range(0, len(stamps), _STAMP_FIELDS):
        path = stamps[index]
        if stamp(path) != stamps[index + 1 : index + _STAMP_FIELDS]:
            logger.debug("Discovery cache %s is out of date: %s changed", filename, path)
            return None
    return groups, count, filename


def _well_formed(stamps: object, groups: object, count: object) -> bool:
    """Whether a file whose key matched also has the layout this version writes (a damaged file may not)."""
    return (
        isinstance(stamps, tuple)
        and len(stamps) % _STAMP_FIELDS == 0
        and isinstance(count, int)
        and isinstance(groups, dict)
        and all(isinstance(flat, tuple) and len(flat) % _ENTRY_FIELDS == 0 for flat in groups.values())
    )


def entry_points_from_flat(group: str, flat: tuple[str, ...], make: Callable[..., Any]) -> tuple[Any, ...]:
    """Build one group's entry points, ``make(group, name, value, dist_name, dist_version, dist_path)`` each."""
    fields = iter(flat)
    return tuple(make(group, *entry) for entry in zip(*[fields] * _ENTRY_FIELDS))


def store(
    path_entries: Sequence[str],
    entry_points: Mapping[str, Iterable[Sequence[str]]],
    count: int,
    watched: Iterable[str],
    started: float,
) -> str | None:
    """Save a scan that began at ``started`` (``time.time()``); return the file, or ``None`` if not saved.

    ``entry_points`` maps each group to its entry points in order, each a sequence of ``group`` followed by the
    saved fields (a ``PluginEntryPoint``). ``watched`` are the files and folders besides the ``sys.path`` entries
    whose changes must invalidate the saved scan.
    """
    newest_allowed = (started - _RACY_SECONDS) * 1e9
    stamps: list[object] = []
    for path in (*path_entries, *watched):
        value = stamp(path)
        if value[0] >= newest_allowed:
            logger.debug("Not saving the discovery scan: %s changed less than %.0f s ago", path, _RACY_SECONDS)
            return None
        stamps += (path, *value)
    groups = {
        group: tuple(field for entry in entries for field in entry[1 : 1 + _ENTRY_FIELDS])
        for group, entries in entry_points.items()
    }
    filename = cache_file(path_entries)
    data = (cache_key(path_entries), tuple(stamps), groups, count)
    temporary = f"{filename}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(filename), mode=0o700, exist_ok=True)
        with open(temporary, "wb") as handle:
            marshal.dump(data, handle)
        os.replace(temporary, filename)
    except (OSError, ValueError) as exc:
        logger.debug("Could not save the discovery scan to %s: %s", filename, exc)
        try:
            os.unlink(temporary)
        except OSError:
            pass
        return None
    _prune(os.path.dirname(filename))
    return filename


def _cache_files(directory: str) -> list[str]:
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return [os.path.join(directory, name) for name in names if name.endswith(_SUFFIX)]


def _prune(directory: str) -> None:
    """Keep the folder bounded: temporary ``sys.path`` layouts (tests, tools) each leave a file."""
    files = _cache_files(directory)
    if len(files) <= _MAX_FILES:
        return
    by_age = sorted(files, key=stamp)
    for path in by_age[: len(files) - _MAX_FILES]:
        try:
            os.unlink(path)
        except OSError:
            pass
