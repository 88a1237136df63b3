"""Structured logs: one JSON object per line on stderr (journald keeps them)."""
from __future__ import annotations

import json
import logging
import sys
import time
from datetime import UTC, datetime
from typing import Any

# Attributes every LogRecord has; anything else was passed with `extra=`.
_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
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
    access.addFilter(AccessErrors(access))  # at every level: a flood of bad requests is not a flood of lines


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

    def admit(self, reason: str) -> str | None:
        """None when a line for `reason` was written less than `interval` ago (it is counted);
        else the line may be written, with this suffix ("" or how many were held back)."""
        now = time.monotonic()
        last, held = self._last.get(reason, (None, 0))
        if last is not None and now - last < self.interval:
            self._last[reason] = (last, held + 1)
            return None
        if len(self._last) >= self.max_reasons and reason not in self._last:
            self._last.clear()  # bounded: a client inventing reasons cannot grow this
        self._last[reason] = (now, 0)
        if held and last is not None:  # held back lines follow a written one
            return f" ({held} more like this in the last {now - last:.0f} s not logged)"
        return ""

    def log(self, level: int, reason: str, msg: str, *args: object, **kwargs: Any) -> bool:
        """Write `msg % args` unless a line for `reason` was written less than `interval` ago;
        True when written."""
        suffix = self.admit(reason)
        if suffix is None:
            return False
        self.logger.log(level, msg + suffix.replace("%", "%%"), *args, **kwargs)
        return True


# Longest access-log line kept (aiohttp's line holds the request line, Referer and User-Agent,
# each up to 8,190 bytes a client chooses).
MAX_ACCESS_LINE = 512


class AccessErrors(logging.Filter):
    """The access log's error answers (status 400 and above) at most once a minute per status,
    the next one saying how many were held back; every line cut to MAX_ACCESS_LINE characters.
    A client sending malformed requests as fast as they are refused cannot grow the log."""

    def __init__(self, logger: logging.Logger, interval: float = 60.0):
        super().__init__()
        self.limit = RateLimitedLog(logger, interval=interval)

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "response_status", 0)
        if isinstance(status, int) and status >= 400:
            suffix = self.limit.admit(str(status))
            if suffix is None:
                return False
            record.msg = str(record.msg)[:MAX_ACCESS_LINE] + suffix
        else:
            record.msg = str(record.msg)[:MAX_ACCESS_LINE]
        headers = getattr(record, "request_header", None)
        if isinstance(headers, dict):  # the JSON formatter writes these too
            record.request_header = {k: str(v)[:MAX_ACCESS_LINE // 4] for k, v in headers.items()}
        return True
