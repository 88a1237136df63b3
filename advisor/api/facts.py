"""GET /v1/facts: everything the advisor knows about the host, as typed JSON.

At 10,000 datasets the document is about 20 MB: it is serialised once per collection, in a
worker thread, and every request for that collection gets the same bytes (gzipped once too,
for clients that accept it); advisor/api/shared.py.
"""
from __future__ import annotations

import asyncio

from aiohttp import web
from pydantic import TypeAdapter

from advisor.api.shared import body_response
from advisor.appkeys import BODIES, FACTS
from advisor.exporters.negotiation import accepts_gzip, gzipped
from advisor.facts import Dataset, Host

routes = web.RouteTableDef()
_DATASETS = TypeAdapter(list[Dataset])
CHUNK = 100


def facts_json(host: Host) -> bytes:
    """`host` as JSON (datasets last), serialised 100 datasets at a time: one model_dump_json()
    of 10,000 datasets is one C call that holds the GIL for half a second, and the event loop
    (answering /healthz) cannot run meanwhile."""
    head = host.model_dump_json(exclude={"datasets"}).encode()
    parts = [head[:-1], b',"datasets":[']
    for start in range(0, len(host.datasets), CHUNK):
        parts += [b"," if start else b"", _DATASETS.dump_json(host.datasets[start:start + CHUNK])[1:-1]]
    return b"".join([*parts, b"]}"])


@routes.get("/v1/facts")
async def get_facts(request: web.Request) -> web.Response:
    collection = await request.app[FACTS].get()
    bodies = request.app[BODIES].facts
    gzip_it = accepts_gzip(request.headers.get("Accept-Encoding"))

    async def json_bytes() -> bytes:
        return await asyncio.to_thread(lambda: facts_json(collection.host))

    async def gzip_bytes() -> bytes:  # only the variant asked for is kept
        return await asyncio.to_thread(lambda: gzipped(facts_json(collection.host)))

    body = await bodies.get(collection, gzip_it, gzip_bytes if gzip_it else json_bytes)
    headers = {"Content-Type": "application/json; charset=utf-8", "Vary": "Accept-Encoding"}
    return body_response(body, headers | ({"Content-Encoding": "gzip"} if gzip_it else {}))
