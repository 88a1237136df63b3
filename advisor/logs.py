"""Structured logs: one JSON object per line on stderr (journald keeps them)."""
from __future__ import annotations

import json
import logging
import sys
from datetime import datetime, timezone

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
