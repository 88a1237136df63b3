"""GET /, /pool/{name} and /probes/{id}: the HTML pages (advisor/page/).

Behind the same auth as the API (the app's middleware). Each page takes a work slot, is built in
a worker thread (the rule book's answers and the store's reads are the heavy part) and is shared
like /recommend's answers: once per collection, state of the probe store and reload. Bad input
is an HTML 400/404 naming what is valid, never a 500.
"""
from __future__ import annotations

import asyncio
from typing import Callable

from aiohttp import web

from advisor.api.pools import pool_list
from advisor.api.shared import body_response
from advisor.appkeys import BODIES, FACTS, LIMITER, MODEL, RULEBOOK, RUNTIME, SETTINGS
from advisor.engine.advice import dataset_states
from advisor.facts import Host
from advisor.names import InvalidName, check_pool_name
from advisor.page import gather, views
from advisor.page.markup import pool_href
from advisor.store.db import store_stamp

routes = web.RouteTableDef()
HTML = "text/html; charset=utf-8"


class PageError(Exception):
    """A page that cannot be shown: its status, reason and the pages that do exist."""

    def __init__(self, status: int, reason: str, valid: list[tuple[str, str]] | None = None):
        super().__init__(reason)
        self.status, self.reason, self.valid = status, reason, valid or []


def html_error(status: int, reason: str, valid: list[tuple[str, str]] | None = None) -> web.Response:
    # returned, not raised: the error middleware turns raised errors into JSON
    return web.Response(text=views.error_page(status, reason, valid or []), status=status, content_type="text/html",
                        charset="utf-8")


def _inputs(app: web.Application, host: Host, with_model: bool) -> gather.Inputs:
    model = app[MODEL]
    return gather.Inputs(host=host, book=app[RULEBOOK], workloads=app[RUNTIME].advice.workloads,
                         state_dir=app[SETTINGS].state_dir,
                         predicted=model.lookup(host, {}) if with_model else None,  # waits for a fit under way
                         model_status=model.status() if with_model else None)


async def _serve(request: web.Request, variant: tuple, render: Callable[[gather.Inputs], str],
                 with_model: bool = True) -> web.Response:
    app = request.app
    async with app[LIMITER].slot():
        collection = await app[FACTS].get()

        async def build() -> bytes:
            return (await asyncio.to_thread(lambda: render(_inputs(app, collection.host, with_model)))).encode()

        runtime = app[RUNTIME]
        key = (variant, store_stamp(app[SETTINGS].state_dir), runtime.generation, id(runtime.advice))
        try:
            body = await app[BODIES].page.get(collection, key, build)
        except PageError as exc:  # shared by concurrent requests: each answers with its own response
            return html_error(exc.status, exc.reason, exc.valid)
    return body_response(body, {"Content-Type": HTML})


def _overview(inputs: gather.Inputs) -> str:
    host = inputs.host
    pools = pool_list(host).pools
    states = dataset_states(host, inputs.workloads)
    return views.overview(host, pools, {p.name: gather.general_answer(inputs, p.name) for p in pools},
                          gather.dataset_answers(inputs), [(d, w) for d, w, here in states if not here],
                          gather.stored(inputs.state_dir, [p.name for p in pools]))


@routes.get("/")
async def overview(request: web.Request) -> web.Response:
    return await _serve(request, ("overview",), _overview)


def _pool_links(host: Host) -> list[tuple[str, str]]:
    return [(pool_href(p.name), p.name) for p in host.pools]


@routes.get("/pool/{name}")
async def pool(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    try:
        check_pool_name(name)
    except InvalidName as exc:
        return html_error(400, f"invalid pool name: {exc}")

    def render(inputs: gather.Inputs) -> str:
        host = inputs.host
        facts = host.pool(name)
        if facts is None:
            raise PageError(404, f"no pool {name!r} on this host", _pool_links(host))
        info = next(p for p in pool_list(host).pools if p.name == name)
        return views.pool_page(host, facts, info, gather.general_answer(inputs, name),
                               gather.dataset_answers(inputs, name), inputs.workloads,
                               gather.stored(inputs.state_dir, [name], name))

    return await _serve(request, ("pool", name), render)


@routes.get("/probes/{id}")
async def probe_run(request: web.Request) -> web.Response:
    text = request.match_info["id"]
    if not (text.isascii() and text.isdigit()) or len(text) > 18:  # as GET /v1/probes/{id}
        return html_error(400, f"a probe run's id is a whole number, not {text[:32]!r}", [("/", "the overview")])
    run_id = int(text)

    def render(inputs: gather.Inputs) -> str:
        found = gather.probe_run(inputs.state_dir, run_id)
        if found is None:
            raise PageError(404, f"no probe run {run_id}", [("/", "the overview, which lists the runs")])
        if isinstance(found, str):
            raise PageError(503, found)
        return views.probe_page(inputs.host, found)

    return await _serve(request, ("probe", run_id), render, with_model=False)
