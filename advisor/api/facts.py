"""GET /v1/facts: everything the advisor knows about the host, as typed JSON.

At 10,000 datasets the document is about 20 MB. It is built once per collection, in a worker
thread, as deflate segments that are never joined into one copy (advisor/server/deflated.py: a
client that accepts gzip gets them as they are, any other client gets them inflated one segment
at a time in a worker thread, advisor/server/bodies.py), and every request for that collection
gets the same segments. The datasets are serialised 50 at a time, and a chunk whose 50 datasets
are the very objects of the last build is reused, not serialised again: a `zfs get` parse
reuses the datasets whose rows did not change (advisor/host/zfs_props.py), and the collector
keeps an idle dataset's object from one collection to the next (advisor/host/collect.py), so
only the chunks holding datasets with new properties or I/O counters are built again.
"""
from __future__ import annotations

import asyncio

from aiohttp import web

from advisor.api.appkeys import BODIES, FACTS
from advisor.exporters.negotiation import accepts_gzip
from advisor.server.bodies import body_response
from advisor.server.deflated import Deflated

routes = web.RouteTableDef()


@routes.get("/v1/facts")
async def get_facts(request: web.Request) -> web.Response:
    collection = await request.app[FACTS].get()
    bodies = request.app[BODIES]
    gzip_it = accepts_gzip(request.headers.get("Accept-Encoding"))

    async def deflated() -> Deflated:
        return await asyncio.to_thread(bodies.facts_json.body, collection.host)

    async def gzipped() -> tuple[bytes, ...]:  # the same segments: both variants cost one body
        plain = await bodies.facts.get(collection, False, deflated)
        assert isinstance(plain, Deflated)  # for the type checker: variant False is built by deflated()
        return await asyncio.to_thread(plain.gzip_parts)  # its CRC-32 inflates the whole body once

    body = await bodies.facts.get(collection, gzip_it, gzipped if gzip_it else deflated)
    headers = {"Content-Type": "application/json; charset=utf-8", "Vary": "Accept-Encoding"}
    return body_response(body, headers | ({"Content-Encoding": "gzip"} if gzip_it else {}))
