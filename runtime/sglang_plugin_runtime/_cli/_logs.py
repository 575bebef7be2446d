"""Log capture while a report runs: plugins' warnings, and what a platform plugin says while it is activated."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager


class LogCapture(logging.Handler):
    """Keeps WARNING and worse records emitted while a report is built (plugins' own loggers included), and every
    record a platform plugin's own code logs while it is imported and activated (its reasons for returning
    ``None`` are usually DEBUG lines)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[dict[str, str]] = []
        #: plugin name -> what its code logged while it was being activated.
        self.activation_lines: dict[str, list[str]] = {}

    def emit(self, record: logging.LogRecord) -> None:
        from ..platforms._selection import activating

        try:
            message = record.getMessage()
        except Exception:  # a plugin's bad format string must not break the report
            message = str(record.msg)
        ep = activating()
        if ep is not None and not record.name.startswith("sglang_plugin_runtime"):
            self.activation_lines.setdefault(ep.name, []).append(f"{record.levelname} {record.name}: {message}")
        if record.levelno >= logging.WARNING:
            self.records.append({"level": record.levelname, "logger": record.name, "message": message})


@contextmanager
def captured_logs() -> Iterator[LogCapture]:
    """Capture as above. The root logger is lowered to DEBUG for the capture only: every other handler on it is
    raised to the level the root had, so nothing extra reaches the terminal."""
    handler = LogCapture()
    root = logging.getLogger()
    previous_level = root.level
    effective = root.getEffectiveLevel()
    raised = [h for h in root.handlers if h.level == logging.NOTSET]
    for other in raised:
        other.setLevel(effective)
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.setLevel(previous_level)
        root.removeHandler(handler)
        for other in raised:
            other.setLevel(logging.NOTSET)
