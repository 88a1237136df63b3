"""A client beyond loopback, for tests of who may ask.

Every test client connects from 127.0.0.1, so a middleware put in front rewrites the peer
address (`request.clone(remote=...)`) -- a stand-in, because this workplace may send traffic
only to loopback addresses."""
from __future__ import annotations

from aiohttp import web

REMOTE = "192.0.2.7"  # TEST-NET-1 (RFC 5737): never a real peer


@web.middleware
async def from_remote(request, handler):
    return await handler(request.clone(remote=REMOTE))


def seen_from_remote(app: web.Application) -> web.Application:
    """`app` with every request coming from REMOTE."""
    app.middlewares.insert(0, from_remote)
    return app
