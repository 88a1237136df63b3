"""GET /, /pool/{name} and /probes/{id}: the HTML pages (advisor/page/).

Behind the same auth as the API (the app's middleware). Each page takes a work slot, is built in
a worker thread (the rule book's answers and the store's reads are the heavy part) and is shared
like /recommend's answers: once per collection, state of the probe store and reload. Bad input
is an HTML 400/404 naming what is valid, never a 500.
"""
from __future__ import annotations

import asyncio
from collections.abc import Callable

from aiohttp import web

from advisor.api.appkeys import ANSWERER, BODIES, CHANGES, FACTS, LIMITER, RECOGNISER, RULEBOOK, RUNTIME, SETTINGS
from advisor.hostmodel.facts import Host
from advisor.hostmodel.names import InvalidName, check_pool_name
from advisor.page import build, gather, views
from advisor.server.bodies import body_response
from advisor.store.db import store_stamp

routes = web.RouteTableDef()
HTML = "text/html; charset=utf-8"


def html_error(status: int, reason: str, valid: list[tuple[str, str]] | None = None) -> web.Response:
    # returned, not raised: the error middleware turns raised errors into JSON
    return web.Response(text=views.error_page(status, reason, valid or []), status=status, content_type="text/html",
                        charset="utf-8")


def _inputs(app: web.Application, host: Host) -> gather.Inputs:
    return gather.Inputs(host=host, book=app[RULEBOOK], workloads=app[RUNTIME].advice.workloads,
                         state_dir=app[SETTINGS].state_dir, answerer=app[ANSWERER],
                         changes=tuple(app[CHANGES].records()), recognised=app[RECOGNISER].recognised())


async def _serve(request: web.Request, variant: tuple, render: Callable[[gather.Inputs], str]) -> web.Response:
    app = request.app
    async with app[LIMITER].slot():
        collection = await app[FACTS].get()

        async def build_body() -> bytes:
            # an answer's lookup of the model waits for a fit under way: in the worker thread
            return (await asyncio.to_thread(lambda: render(_inputs(app, collection.host)))).encode()

        runtime = app[RUNTIME]
        key = (variant, store_stamp(app[SETTINGS].state_dir), runtime.generation, id(runtime.advice),
               app[CHANGES].generation, app[RECOGNISER].generation)
        try:
            body = await app[BODIES].page.get(collection, key, build_body)
        except build.PageError as exc:  # shared by concurrent requests: each answers with its own response
            return html_error(exc.status, exc.reason, exc.valid)
    return body_response(body, {"Content-Type": HTML})


@routes.get("/")
async def overview(request: web.Request) -> web.Response:
    return await _serve(request, ("overview",), build.overview)


@routes.get("/pool/{name}")
async def pool(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    try:
        check_pool_name(name)
    except InvalidName as exc:
        return html_error(400, f"invalid pool name: {exc}")
    return await _serve(request, ("pool", name), lambda inputs: build.pool(inputs, name))


@routes.get("/probes/{id}")
async def probe_run(request: web.Request) -> web.Response:
    text = request.match_info["id"]
    if not (text.isascii() and text.isdigit()) or len(text) > 18:  # as GET /v1/probes/{id}
        return html_error(400, f"a probe run's id is a whole number, not {text[:32]!r}", [("/", "the overview")])
    run_id = int(text)
    return await _serve(request, ("probe", run_id), lambda inputs: build.probe_run(inputs, run_id))
