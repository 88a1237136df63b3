"""GET /healthz: cheap liveness (never forks zpool), plus what the last collection saw."""
from __future__ import annotations

from aiohttp import web

from advisor import __version__
from advisor.appkeys import FACTS

routes = web.RouteTableDef()


@routes.get("/healthz")
async def healthz(request: web.Request) -> web.Response:
    provider = request.app[FACTS]
    body: dict[str, object] = {"status": "ok", "version": __version__, "root": provider.root}
    if (last := provider.last) is not None:
        host = last.host
        body["zfs"] = {"present": host.zfs.present, "reason": host.zfs.reason, "version": host.zfs.kmod_version}
        body["sources_failed"] = sorted(name for name, s in host.sources.items() if not s.ok)
    return web.json_response(body)
