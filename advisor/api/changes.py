"""GET /v1/changes[?pool=P][&dataset=P/D][&limit=N]: the tracked settings the service saw change,
newest first, each with the I/O before and after it and a verdict (docs/changes.md).

Served from the tracker's memory (loaded from the database at start), so a request reads nothing
from disk. A pool or dataset that neither the host nor any record knows is a 404 naming those that
are known; a module parameter's change belongs to every pool, so `pool=` keeps it.
"""
from __future__ import annotations

from aiohttp import web

from advisor.api.appkeys import CHANGES, FACTS
from advisor.hostmodel.names import InvalidName, check_dataset_name, check_pool_name
from advisor.server.errors import json_error
from advisor.server.numbers import whole_number

routes = web.RouteTableDef()
PARAMETERS = ("pool", "dataset", "limit")
MAX_LIMIT = 1000


def _known(request: web.Request, field: str) -> set[str]:
    """Names the host has (the last collection) or a record carries."""
    records = request.app[CHANGES].records()
    names = {r[field] for r in records if r[field]}
    if (last := request.app[FACTS].last) is not None:
        names |= {p.name for p in last.host.pools} if field == "pool" else {d.name for d in last.host.datasets}
    return names


def _name(request: web.Request, field: str, check) -> str | None:
    value = request.query.get(field)
    if value is None:
        return None
    try:
        check(value)
    except InvalidName as exc:
        raise json_error(400, f"invalid {field} name: {exc}") from None
    known = _known(request, field)
    if value not in known:
        raise json_error(404, f"no {field} {value!r} on this host or in the recorded changes", valid=sorted(known)[:200])
    return value


@routes.get("/v1/changes")
async def list_changes(request: web.Request) -> web.Response:
    if unknown := sorted(set(request.query) - set(PARAMETERS)):
        raise json_error(400, f"unknown parameter {unknown[0][:64]!r}", valid=list(PARAMETERS))
    pool = _name(request, "pool", check_pool_name)
    dataset = _name(request, "dataset", check_dataset_name)
    limit = whole_number(request.query.get("limit", "100"), "limit", 1, MAX_LIMIT)
    tracker = request.app[CHANGES]
    records = tracker.records(pool, dataset)[:limit]
    return web.json_response({"window_seconds": tracker.window_seconds,
                              "samples": len(tracker.samples.times), "changes": records})
