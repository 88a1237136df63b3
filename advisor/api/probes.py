"""GET /v1/probes[?pool=P][&workload=W][&limit=N] and GET /v1/probes/{id}: the probe runs in the
store under `state_dir`, newest first, and one run with its results and evidence.
POST /v1/probes: queue a run (bearer token always, also on loopback).

GET reads only: no database under `state_dir` means no probe ever ran, an empty list, and the
database is not created. POST never runs fio here: this service has no privilege to create
datasets or set module parameters. It writes a run with status `queued` and the prober
(`zfs-advisor profile`, zfs-advisor-probe.service, root) starts it when the pool is idle;
GET /v1/probes/{id} then shows it queued, running, completed, aborted or failed
(docs/architecture.md, "Who probes").
"""
from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from pydantic import ValidationError

from advisor.api.appkeys import FACTS, RULEBOOK, SETTINGS
from advisor.api.auth import starts_work
from advisor.engine.service import TargetError, resolve_params
from advisor.evidence.bound import run_bound
from advisor.hostmodel.names import InvalidName, check_pool_name
from advisor.probe.candidates import PROBED, CandidateError, parse_candidate_spec
from advisor.probe.request import MIN_REQUEST_SECONDS, ProbeQueued, ProbeRequest
from advisor.server.body import RAW_BODY
from advisor.server.errors import json_error
from advisor.server.numbers import whole_number
from advisor.store.db import StoreError, connect
from advisor.store.probe_evidence import evidence
from advisor.store.probes import ProbeStore, read_existing, signal_queue

routes = web.RouteTableDef()
MAX_LIMIT = 1000
MAX_ID = 10**18 - 1  # 18 digits: within SQLite's 64-bit integers
MAX_VALUES = 8  # candidate values per parameter
IDS_LISTED = 100  # a 404 for a run lists the ids of this many of the newest runs


@dataclass(frozen=True)
class Unreadable:
    """The probe database cannot be read, and why: the answer says so (a list is empty and names
    the reason; one run is not found, with the reason); /healthz and the probes collector too."""

    reason: str


async def read_store(request: web.Request, read: Callable[[ProbeStore | None], Any]) -> Any:
    """`read(store)` in a worker thread (None: no database, which is not created), or Unreadable."""
    try:
        return await asyncio.to_thread(read_existing, request.app[SETTINGS].state_dir, read)
    except (StoreError, sqlite3.Error) as exc:
        return Unreadable(f"the probe database cannot be read: {exc}")


def _query(request: web.Request) -> tuple[str | None, str | None, int]:
    pool, workload, limit = request.query.get("pool"), request.query.get("workload"), request.query.get("limit", "100")
    if pool is not None:
        try:
            check_pool_name(pool)
        except InvalidName as exc:
            raise json_error(400, f"invalid pool name: {exc}") from None
    book = request.app[RULEBOOK]
    if workload is not None and workload not in book.workloads:
        raise json_error(404, f"unknown workload {workload[:64]!r}", valid=sorted(book.workloads))
    return pool, workload, whole_number(limit, "limit", 1, MAX_LIMIT)


@routes.get("/v1/probes")
async def list_probes(request: web.Request) -> web.Response:
    pool, workload, limit = _query(request)
    runs = await read_store(request, lambda store: store.runs(pool, workload, limit) if store else [])
    if isinstance(runs, Unreadable):
        return web.json_response({"runs": [], "store_error": runs.reason})
    return web.json_response({"runs": [r.model_dump(mode="json") for r in runs]})


@routes.get("/v1/probes/{id}")
async def get_probe(request: web.Request) -> web.Response:
    run_id = whole_number(request.match_info["id"], "probe id", 0, MAX_ID)

    def one(store: ProbeStore | None) -> dict[str, Any] | list[str]:
        """The run, or when there is none the ids of the newest runs there are."""
        run = store.run(run_id) if store is not None else None
        if store is None or run is None:
            return [str(r.id) for r in store.runs(limit=IDS_LISTED)] if store is not None else []
        ev = [e.model_dump(mode="json") for e in evidence(store, run.pool, run.workload)
              if e.run_id == run_id] if run.status == "completed" else []
        results = store.results(run_id)
        return {"run": run.model_dump(mode="json"), "results": [r.model_dump(mode="json") for r in results],
                "bound": run_bound(results).model_dump(mode="json"), "evidence": ev}

    found = await read_store(request, one)
    if isinstance(found, Unreadable):
        raise json_error(404, f"probe run {run_id} cannot be read: {found.reason}")
    if isinstance(found, list):
        raise json_error(404, f"no probe run {run_id}; GET /v1/probes lists the runs", valid=found)
    return web.json_response(found)


@routes.post("/v1/probes")
@starts_work("POST /v1/probes starts work on the host")
async def post_probe(request: web.Request) -> web.Response:
    body = await _body(request)
    app, settings = request.app, request.app[SETTINGS]
    try:
        req = ProbeRequest.model_validate(body)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in exc.errors()[:10])
        raise json_error(422, f"invalid probe request: {problems}", valid=sorted(ProbeRequest.model_fields)) from None
    try:
        check_pool_name(req.pool)
    except InvalidName as exc:
        raise json_error(400, f"invalid pool name: {exc}") from None
    host = (await app[FACTS].get()).host
    if host.pool(req.pool) is None:
        raise json_error(404, f"no pool {req.pool[:64]!r} on this host", valid=[p.name for p in host.pools])
    book = app[RULEBOOK]
    workload = book.workloads.get(req.workload)
    if workload is None:
        raise json_error(404, f"unknown workload {req.workload[:64]!r}", valid=sorted(book.workloads))
    try:
        resolve_params(workload, {**req.set, **({"role": req.role} if req.role else {})})
    except TargetError as exc:
        raise json_error(400, exc.reason, valid=exc.valid) from None
    _check_params(req.params)
    longest = settings.profiler.max_request_seconds
    if req.budget.seconds > longest:
        raise json_error(400, f"budget.seconds {req.budget.seconds:g} is more than the {longest:g} s "
                         "[profiler] max_request_seconds allows", valid=[f"{MIN_REQUEST_SECONDS}-{longest:g}"])
    request_doc = req.model_dump(mode="json")

    def queue() -> int | None:
        conn = connect(settings.state_dir)
        try:
            store = ProbeStore(conn)
            conn.execute("BEGIN IMMEDIATE")  # count and insert as one: two POSTs cannot both take the last place
            if store.queue_length() >= settings.profiler.max_queued:
                conn.execute("ROLLBACK")
                return None
            run_id = store.queue_run(req.pool, req.workload, req.role, req.budget.model_dump(), request_doc)
            conn.execute("COMMIT")
        finally:
            conn.close()
        signal_queue(settings.state_dir, run_id)
        return run_id

    try:
        run_id = await asyncio.to_thread(queue)
    except (StoreError, sqlite3.Error, OSError) as exc:
        raise json_error(503, f"the probe database cannot be written: {exc}") from None
    if run_id is None:
        raise json_error(409, f"{settings.profiler.max_queued} probe runs are queued already ([profiler] max_queued); "
                         "GET /v1/probes lists them")
    location = f"/v1/probes/{run_id}"
    return web.json_response(ProbeQueued(id=run_id, status="queued", location=location).model_dump(), status=202,
                             headers={"Location": location})


def _check_params(params: dict[str, list[str]]) -> None:
    """Each parameter to compare is probed and has 2 to MAX_VALUES values of its form (400 if not)."""
    for parameter, values in params.items():
        if parameter not in PROBED:
            raise json_error(400, f"{parameter[:64]!r} is not probed", valid=PROBED)
        if not 2 <= len(set(values)) <= MAX_VALUES:
            raise json_error(400, f"{parameter}: give 2 to {MAX_VALUES} different values (one is the baseline)")
        try:
            parse_candidate_spec(f"{parameter}={','.join(values)}")
        except CandidateError as exc:
            raise json_error(400, str(exc)) from None


async def _body(request: web.Request) -> Any:
    """The JSON document of the body (read before the work slot was taken, advisor/server/body.py)."""
    if request.content_type != "application/json":
        raise json_error(415, f"send the request as application/json, not {request.content_type[:64]!r}",
                         valid=["application/json"])
    try:
        return json.loads(request[RAW_BODY])
    except (ValueError, UnicodeDecodeError) as exc:
        raise json_error(400, f"request body is not JSON: {str(exc)[:120]}") from None
    except RecursionError:  # json's C scanner recurses per level: [[[[... 5,000 deep
        raise json_error(400, "request body is not JSON this service reads: nested too deeply") from None
