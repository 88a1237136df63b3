"""GET /v1/probes[?pool=P][&workload=W][&limit=N] and GET /v1/probes/{id}: the probe runs in the
store under `state_dir`, newest first, and one run with its results and evidence.

Read-only: probes are started by `zfs-advisor probe` (docs/probes.md). No database under
`state_dir` means no probe ever ran: an empty list, and the database is not created.
"""
from __future__ import annotations

import asyncio
import sqlite3
from typing import Any, Callable

from aiohttp import web

from advisor.api.errors import json_error
from advisor.appkeys import RULEBOOK, SETTINGS
from advisor.names import InvalidName, check_pool_name
from advisor.probe.evidence import evidence
from advisor.store.db import StoreError
from advisor.store.probes import ProbeStore, read_existing

routes = web.RouteTableDef()
MAX_LIMIT = 1000


async def _read(request: web.Request, read: Callable[[ProbeStore | None], Any]) -> Any:
    try:
        return await asyncio.to_thread(read_existing, request.app[SETTINGS].state_dir, read)
    except (StoreError, sqlite3.Error) as exc:
        raise json_error(503, f"the probe database cannot be read: {exc}") from None


def _query(request: web.Request) -> tuple[str | None, str | None, int]:
    pool, workload, limit = request.query.get("pool"), request.query.get("workload"), request.query.get("limit", "100")
    if pool is not None:
        try:
            check_pool_name(pool)
        except InvalidName as exc:
            raise json_error(400, f"invalid pool name: {exc}") from None
    book = request.app[RULEBOOK]
    if workload is not None and workload not in book.workloads:
        raise json_error(404, f"unknown workload {workload[:64]!r}", valid=sorted(book.workloads))
    if not limit.isdigit() or not 1 <= int(limit) <= MAX_LIMIT:
        raise json_error(400, f"limit must be a whole number from 1 to {MAX_LIMIT}")
    return pool, workload, int(limit)


@routes.get("/v1/probes")
async def list_probes(request: web.Request) -> web.Response:
    pool, workload, limit = _query(request)
    runs = await _read(request, lambda store: store.runs(pool, workload, limit) if store else [])
    return web.json_response({"runs": [r.model_dump(mode="json") for r in runs]})


@routes.get("/v1/probes/{id}")
async def get_probe(request: web.Request) -> web.Response:
    text = request.match_info["id"]
    if not text.isdigit() or len(text) > 18:
        raise json_error(400, f"probe id must be a whole number, not {text[:32]!r}")
    run_id = int(text)

    def one(store: ProbeStore | None) -> dict[str, Any] | None:
        run = store.run(run_id) if store else None
        if run is None:
            return None
        ev = [e.model_dump(mode="json") for e in evidence(store, run.pool, run.workload)
              if e.run_id == run_id] if run.status == "completed" else []
        return {"run": run.model_dump(mode="json"),
                "results": [r.model_dump(mode="json") for r in store.results(run_id)], "evidence": ev}

    found = await _read(request, one)
    if found is None:
        raise json_error(404, f"no probe run {run_id}")
    return web.json_response(found)
