"""GET /v1/plan: candidate pool layouts for a set of disks, with predicted capacity, bandwidth,
IOPS and fault tolerance (docs/planner.md). Pure arithmetic: it reads nothing from the host."""
from __future__ import annotations

import asyncio

from aiohttp import web

from advisor.layout.planned_disks import PARAMETERS, PlanInputError, given_disks, parse_block
from advisor.layout.predict import plan
from advisor.server.errors import json_error

routes = web.RouteTableDef()


@routes.get("/v1/plan")
async def get_plan(request: web.Request) -> web.Response:
    query = request.query
    unknown = sorted(set(query) - set(PARAMETERS))
    if unknown:
        raise json_error(400, f"unknown query parameter {unknown[0][:32]!r}", valid=list(PARAMETERS))
    if any(len(query.getall(name)) > 1 for name in query):
        raise json_error(400, "a query parameter is given more than once", valid=list(PARAMETERS))
    try:
        disks = given_disks(query.get("disks"), query.get("size", ""), query.get("seq", ""), query.get("iops"),
                            query.get("write_seq"), query.get("write_iops"), query.get("media"), query.get("ashift"))
        recordsize = parse_block(query.get("recordsize", "128K"), "recordsize")
        block = parse_block(query.get("block", "4K"), "block")
    except PlanInputError as exc:
        raise json_error(400, exc.reason, valid=exc.valid or None) from None
    # Bounded (at most 256 disks, about 50 candidate layouts) but 10-20 ms of arithmetic at 200 and
    # more disks: in a worker thread, under the work limiter (HEAVY_PATHS), not on the event loop.
    body = await asyncio.to_thread(lambda: plan(disks, recordsize, block).model_dump_json())
    return web.Response(text=body, content_type="application/json")
