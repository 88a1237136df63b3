"""GET /recommend[?workload=NAME][&pool=P][&dataset=P/D][&<param>=V][&format=text]

Without a workload (or with workload=general), the general answer: pool-level and module advice
that holds for any workload. With workload=auto, or a dataset and no workload, the workload the
dataset's I/O was recognised as (advisor/recognise/auto_answer.py, docs/recognition.md).

JSON by default (the contract in docs/architecture.md); readable text for
`format=text` or `Accept: text/plain`. Bad input is a 400/404 JSON error
listing what is valid, never a 500. The rule book is loaded once, by the app
factory.
"""
from __future__ import annotations

import asyncio

from aiohttp import web

from advisor.answering.answerer import Query
from advisor.api.appkeys import ANSWERER, ANSWERS, BODIES, FACTS, MODEL, RECOGNISER, SETTINGS
from advisor.engine.service import TargetError
from advisor.engine.text import recommend_text
from advisor.recognise.auto_answer import recommend_auto, wants_auto, with_auto
from advisor.server.bodies import body_response
from advisor.server.errors import json_error
from advisor.store.db import store_stamp
from advisor.store.reader_health import with_store_state

routes = web.RouteTableDef()
RESERVED = ("workload", "pool", "dataset", "format")
MAX_VALUE_LENGTH = 256


def query_args(request: web.Request) -> dict[str, str]:
    """The query as a plain dict; a repeated or oversized parameter is a 400."""
    args: dict[str, str] = {}
    for key, value in request.query.items():
        if key in args:
            raise json_error(400, f"parameter {key[:64]!r} given more than once")
        if len(key) > 64 or len(value) > MAX_VALUE_LENGTH:
            raise json_error(400, f"parameter {key[:64]!r} is too long (at most {MAX_VALUE_LENGTH} characters)")
        args[key] = value
    return args


def wants_text(request: web.Request, fmt: str | None) -> bool:
    if fmt is not None:
        if fmt not in ("json", "text"):
            raise json_error(400, f"format {fmt[:32]!r} is not supported", valid=["json", "text"])
        return fmt == "text"
    accept = request.headers.get("Accept", "")
    return "text/plain" in accept and "application/json" not in accept


@routes.get("/recommend")
async def get_recommend(request: web.Request) -> web.Response:
    args = query_args(request)
    text = wants_text(request, args.get("format"))
    params = {k: v for k, v in args.items() if k not in RESERVED}
    # the facts answers read: not the datasets' objset kstats (at 10,000 datasets, most of a collection)
    collection = await request.app[FACTS].for_answers()
    state_dir = request.app[SETTINGS].state_dir
    model = request.app[MODEL]

    auto = wants_auto(args.get("workload"), args.get("dataset"))
    recognised = request.app[RECOGNISER].recognised() if auto else {}

    def answer():
        # kept from an earlier collection when what it read is unchanged (advisor/engine/answer_cache.py)
        return with_store_state(request.app[ANSWERS].get(query, collection.host, model.status(), answer_alone),
                                state_dir)

    def answer_alone():
        asked = Query(args.get("workload"), params, args.get("pool"), args.get("dataset"))
        if auto:
            return recommend_auto(request.app[ANSWERER], collection.host, recognised, asked)
        return request.app[ANSWERER].answer(collection.host, asked)

    async def build() -> bytes:
        # the engine (and the model's lookup of this host's probes, which waits for a fit under way)
        # runs in a worker thread: the event loop stays free for scrapes (docs/architecture.md)
        response = await asyncio.to_thread(answer)
        return (recommend_text(response) if text else response.model_dump_json()).encode()

    # one body per collection, query and state of the probe store (which is also what refits the
    # model's local part), however many ask at once; the answer in it is rebuilt only when what it
    # read changed (ANSWERS), or a new fleet view came (docs/fleet.md), or the pools' disks' window
    # that bounds each expected effect changed (advisor/answering/qualified_effects.py)
    query = (tuple(sorted(args.items())), store_stamp(state_dir), request.app[RECOGNISER].generation if auto else None,
             request.app[RECOGNISER].pools_generation, model.fleet_generation())
    variant = (query, text)
    try:
        body = await request.app[BODIES].recommend.get(collection, variant, build)
    except TargetError as exc:  # shared by concurrent requests: each answers with its own error response
        raise json_error(exc.status, exc.reason, valid=with_auto(exc.valid)) from None
    return body_response(body, {"Content-Type": f"{'text/plain' if text else 'application/json'}; charset=utf-8"})

