"""GET /v1/pools: the imported pools, their media and layout, and their datasets."""
from __future__ import annotations

from aiohttp import web

from advisor.api.appkeys import FACTS
from advisor.engine.pool_list import pool_list

routes = web.RouteTableDef()


@routes.get("/v1/pools")
async def list_pools(request: web.Request) -> web.Response:
    host = (await request.app[FACTS].get()).host
    return web.Response(text=pool_list(host).model_dump_json(), content_type="application/json")
