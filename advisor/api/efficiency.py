"""GET /v1/efficiency[?pool=P]: the latest `probe --efficiency` report of each pool (of P alone),
with when it was measured and how old it is, and the command that measures it again.

Reads only, in a worker thread: no database under `state_dir` means nothing was measured, and
the database is not created.  A pool with no stored report is a 404 naming the pools that have
one; a report the service cannot read is left out (the log says why, advisor/evidence/efficiency.py).
"""
from __future__ import annotations

import shlex
import time
from datetime import UTC, datetime
from typing import Any

from aiohttp import web
from pydantic import BaseModel, Field

from advisor.api.appkeys import FACTS
from advisor.api.probes import Unreadable, read_store
from advisor.evidence.efficiency import PoolEfficiency, ResultView, measure_argv
from advisor.hostmodel.names import InvalidName, check_pool_name
from advisor.server.errors import json_error
from advisor.store.efficiency_reports import efficiency_of

routes = web.RouteTableDef()


class EfficiencyEntry(BaseModel):
    pool: str
    measured_at: datetime
    age_seconds: float = Field(description="seconds since it was measured")
    results: list[ResultView] = Field(description="each test's ratio, rates and diagnosis, read from `report`")
    measure: str = Field(description="the command that measures it again")
    measure_argv: list[str]
    report: dict[str, Any] = Field(description="the report as `zfs-advisor probe --efficiency --json` printed it, "
                                   "each result's `test` filled in where it had none")


class EfficiencyList(BaseModel):
    reports: list[EfficiencyEntry]
    not_measured: list[str] = Field(description="pools of this host with no stored report")
    store_error: str | None = Field(None, description="why the probe database, where reports are kept, "
                                    "cannot be read; absent when it was read")


def _entry(found: PoolEfficiency, now: float) -> EfficiencyEntry:
    argv = measure_argv(found.pool)
    return EfficiencyEntry(pool=found.pool, measured_at=datetime.fromtimestamp(found.measured_at, UTC),
                            age_seconds=round(max(0.0, now - found.measured_at), 3), results=found.results,
                            measure=shlex.join(argv), measure_argv=argv, report=found.report)


@routes.get("/v1/efficiency")
async def get_efficiency(request: web.Request) -> web.Response:
    unknown = sorted(set(request.query) - {"pool"})
    if unknown:
        raise json_error(400, f"unknown query parameter {unknown[0][:32]!r}", valid=["pool"])
    if len(request.query.getall("pool", [])) > 1:
        raise json_error(400, "parameter 'pool' given more than once")
    pool = request.query.get("pool")
    if pool is not None:
        try:
            check_pool_name(pool)
        except InvalidName as exc:
            raise json_error(400, f"invalid pool name: {exc}") from None
    reports = await read_store(request, lambda store: efficiency_of(store, pool))
    unreadable = reports.reason if isinstance(reports, Unreadable) else None
    if unreadable is not None:
        if pool is not None:
            raise json_error(404, f"the efficiency report of pool {pool!r} cannot be read: {unreadable}")
        reports = []
    now = time.time()
    if pool is not None:
        if not reports:
            raise await _not_stored(request, pool)
        return web.Response(text=_entry(reports[0], now).model_dump_json(), content_type="application/json")
    host = (await request.app[FACTS].get()).host
    measured = {r.pool for r in reports}
    body = EfficiencyList(reports=[_entry(r, now) for r in reports],
                          not_measured=[p.name for p in host.pools if p.name not in measured], store_error=unreadable)
    return web.Response(text=body.model_dump_json(exclude_none=True), content_type="application/json")


async def _not_stored(request: web.Request, pool: str) -> web.HTTPException:
    """404: the pool is not on this host, or has no report yet; `valid` lists the pools that have one."""
    found = await read_store(request, efficiency_of)
    stored = [] if isinstance(found, Unreadable) else [r.pool for r in found]
    host = (await request.app[FACTS].get()).host
    if host.pool(pool) is None:
        return json_error(404, f"no pool {pool!r} on this host, and no efficiency report of it is stored", valid=stored)
    return json_error(404, f"no efficiency report of pool {pool!r} is stored: `{shlex.join(measure_argv(pool))}` "
                      "measures it", valid=stored)
