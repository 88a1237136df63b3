"""GET /healthz: cheap liveness (never forks zpool), plus what the last collection saw and whether
the probe store can be read.

Always 200 while the service answers: supervisors and install scripts restart or fail on anything
else, and a service whose store is damaged still serves the exporter and the rules' advice. A store
that cannot be read makes `status` "degraded" and `checks.store` says why (docs/reliability.md).
"""
from __future__ import annotations

import asyncio
import sqlite3
from typing import Any

from aiohttp import web

from advisor import __version__
from advisor.api.appkeys import FACTS, SETTINGS
from advisor.store.db import StoreError, store_stamp
from advisor.store.probes import read_existing
from advisor.store.reader_health import rows_skipped, unreadable

routes = web.RouteTableDef()
# state directory -> (the store's stamp when its pages were last checked, the damage found)
_checked: dict[Any, tuple[tuple, str | None]] = {}


@routes.get("/healthz")
async def healthz(request: web.Request) -> web.Response:
    provider = request.app[FACTS]
    store = await asyncio.to_thread(store_check, request.app[SETTINGS].state_dir)
    body: dict[str, object] = {"status": "ok" if store["ok"] else "degraded", "version": __version__,
                               "root": provider.root, "checks": {"store": store}}
    if (last := provider.newest) is not None:  # a /recommend before any scrape reads the sources too
        host = last.host
        body["zfs"] = {"present": host.zfs.present, "reason": host.zfs.reason, "version": host.zfs.kmod_version}
        body["sources_failed"] = sorted(name for name, s in host.sources.items() if not s.ok)
    return web.json_response(body)


def store_check(state_dir: Any) -> dict[str, Any]:
    """Whether the probe store reads, and the rows its readers skipped since start. Its pages are
    checked again only when the files changed (a quick check of 9 MB, 20,000 results, took 80 ms)."""
    stamp = store_stamp(state_dir)
    checked = _checked.get(state_dir)
    if checked is None or checked[0] != stamp:
        try:
            read_existing(state_dir, lambda store: store.check() if store else None)
            checked = (stamp, None)
        except (StoreError, sqlite3.Error):
            checked = (stamp, unreadable(state_dir))  # as read_existing noted it
        _checked[state_dir] = checked
    # damage the check found stands while the files are the same, though a read of good pages works
    reason = checked[1] or unreadable(state_dir)
    return {"ok": reason is None, "reason": reason, "rows_skipped": rows_skipped()}

