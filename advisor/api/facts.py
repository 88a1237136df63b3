"""GET /v1/facts: everything the advisor knows about the host, as typed JSON."""
from __future__ import annotations

from aiohttp import web

from advisor.appkeys import FACTS

routes = web.RouteTableDef()


@routes.get("/v1/facts")
async def get_facts(request: web.Request) -> web.Response:
    collection = await request.app[FACTS].get()
    return web.Response(text=collection.host.model_dump_json(), content_type="application/json")
