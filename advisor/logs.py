"""Structured logs: one JSON object per line on stderr (journald keeps them)."""
from __future__ import annotations

import json
import logging
import sys
import time
from datetime import datetime, timezone
from typing import Any

# Attributes every LogRecord has; anything else was passed with `extra=`.
_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        entry.update({k: v for k, v in vars(record).items() if k not in _STANDARD})
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def setup_logging(level: str = "info", fmt: str = "json") -> None:
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # aiohttp's access log is one line per request: kept at info, except for successful
    # scrapes and health checks (one every few seconds), which only log_level=debug shows.
    access = logging.getLogger("aiohttp.access")
    access.setLevel(max(root.level, logging.INFO))
    access.filters[:] = [] if root.level <= logging.DEBUG else [quiet_polls]


POLLED = frozenset({"/metrics", "/healthz"})


def quiet_polls(record: logging.LogRecord) -> bool:
    """False (drop) for an access-log record of a successful scrape or health check."""
    method, _, rest = str(getattr(record, "first_request_line", "")).partition(" ")
    path = rest.split(" ", 1)[0].split("?", 1)[0]
    status = getattr(record, "response_status", 500)
    return not (method == "GET" and path in POLLED and isinstance(status, int) and status < 400)


class RateLimitedLog:
    """At most one line per reason every `interval` seconds; the lines held back are counted and
    the next line for that reason says how many (a flood of bad clients or a source failing on
    every collection must not fill the journal: one such client once wrote 9 MB of the same error)."""

    def __init__(self, logger: logging.Logger, interval: float = 60.0, max_reasons: int = 1024):
        self.logger, self.interval, self.max_reasons = logger, interval, max_reasons
        self._last: dict[str, tuple[float, int]] = {}  # reason -> (when last written, held back since)

    def log(self, level: int, reason: str, msg: str, *args: object, **kwargs: Any) -> bool:
        """Write `msg % args` unless a line for `reason` was written less than `interval` ago;
        True when written."""
        now = time.monotonic()
        last, held = self._last.get(reason, (None, 0))
        if last is not None and now - last < self.interval:
            self._last[reason] = (last, held + 1)
            return False
        if len(self._last) >= self.max_reasons and reason not in self._last:
            self._last.clear()  # bounded: a client inventing reasons cannot grow this
        self._last[reason] = (now, 0)
        if held and last is not None:  # held back lines follow a written one
            msg += " (%d more like this in the last %.0f s not logged)"
            args = (*args, held, now - last)
        self.logger.log(level, msg, *args, **kwargs)
        return True
