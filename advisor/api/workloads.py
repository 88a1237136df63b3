"""GET /v1/workloads and /v1/workloads/{name}: the workload profiles the advisor knows."""
from __future__ import annotations

from aiohttp import web

from advisor.api.appkeys import RULEBOOK
from advisor.engine.workload_list import workload_info, workload_list
from advisor.server.errors import json_error

routes = web.RouteTableDef()


@routes.get("/v1/workloads")
async def list_workloads(request: web.Request) -> web.Response:
    body = workload_list(request.app[RULEBOOK])
    return web.Response(text=body.model_dump_json(), content_type="application/json")


@routes.get("/v1/workloads/{name}")
async def get_workload(request: web.Request) -> web.Response:
    book = request.app[RULEBOOK]
    name = request.match_info["name"]
    workload = book.workloads.get(name)
    if workload is None:
        raise json_error(404, f"unknown workload {name[:64]!r}", valid=sorted(book.workloads))
    return web.Response(text=workload_info(workload).model_dump_json(), content_type="application/json")
