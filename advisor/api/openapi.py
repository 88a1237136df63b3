"""GET /openapi.json: the OpenAPI 3.1 document, generated from the pydantic models.

The response schemas are the models' own JSON schemas, so the document cannot
drift from what the handlers serialise; a test checks that every route of the
app is documented and every documented path is routed.
"""
from __future__ import annotations

import json
from typing import Any

from aiohttp import web
from pydantic.json_schema import models_json_schema

from advisor import __version__
from advisor.api.appkeys import OPENAPI_JSON
from advisor.api.efficiency import EfficiencyEntry, EfficiencyList
from advisor.api.openapi_responses import REF, error, html, json_answer, metrics_text, model_ref, with_common_errors
from advisor.api.response_models import ChangeList, Health, ProbeRunDetail, ProbeRunList
from advisor.engine.loader import RuleBook
from advisor.engine.models import GENERAL, ErrorResponse, PoolList, RecommendResponse, WorkloadInfo, WorkloadList
from advisor.hostmodel.facts import Host
from advisor.hostmodel.names import MAX_NAME_LEN, MAX_POOL_NAME_LEN
from advisor.layout.planned_disks import ASHIFTS, MEDIA
from advisor.layout.predict import PlanResponse
from advisor.probe.request import ProbeQueued, ProbeRequest
from advisor.server.body import MAX_BODY_BYTES

routes = web.RouteTableDef()
_MODELS = (RecommendResponse, WorkloadList, WorkloadInfo, PoolList, ErrorResponse, PlanResponse, EfficiencyList,
           EfficiencyEntry, Host, Health, ProbeRunList, ProbeRunDetail, ChangeList)


def _query(name: str, description: str, required: bool = False, enum: list[str] | None = None,
           max_length: int = 256) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "maxLength": max_length}
    if enum:
        schema["enum"] = enum
    return {"name": name, "in": "query", "required": required, "description": description, "schema": schema}


def workload_parameters(book: RuleBook) -> list[dict[str, Any]]:
    """One query parameter per workload parameter (role, page_size, ...), saying which workloads
    take it and its values: a workload that does not declare a parameter answers 400 to it."""
    takers: dict[str, dict[str, list[str]]] = {}
    for name in sorted(book.workloads):
        for param, declared in book.workloads[name].all_parameters().items():
            takers.setdefault(param, {})[name] = list(declared.values)
    params = []
    for param, by_workload in sorted(takers.items()):
        values = sorted({v for vs in by_workload.values() for v in vs})
        per = "; ".join(f"{w}: {', '.join(vs)}" for w, vs in by_workload.items())
        others = sorted(set(book.workloads) - set(by_workload))
        note = f" Not accepted by {', '.join(others)} (400)." if others else ""
        params.append(_query(param, f"workload parameter, values by workload: {per}.{note}", enum=values))
    return params


def build_openapi(book: RuleBook | None = None) -> dict[str, Any]:
    _, schemas = models_json_schema([*((m, "serialization") for m in _MODELS), (ProbeRequest, "validation"),
                                     (ProbeQueued, "serialization")], ref_template=REF)
    recommend_params = [
        _query("workload", f"workload profile (GET /v1/workloads lists them); without it, or `{GENERAL}`, the "
               "general answer for any workload: pool layout, ashift, health, free space and module parameters "
               "(no dataset, no workload parameters); `auto`, or a dataset without a workload: the workload the "
               "dataset's I/O was recognised as, or the general answer when it was not (docs/recognition.md)", False,
               [*sorted(book.workloads), GENERAL, "auto"] if book else None),
        _query("pool", "pool to advise on (default: every pool)", max_length=MAX_POOL_NAME_LEN),
        _query("dataset", "dataset to advise on, pool/name (default: a new <pool>/<workload> dataset); without a "
               "workload, the recognised one", max_length=MAX_NAME_LEN),
        _query("format", "json (default) or text; Accept: text/plain also selects text", enum=["json", "text"]),
        *(workload_parameters(book) if book else []),
    ]
    paths: dict[str, Any] = {
        "/recommend": {
            "get": {
                "summary": "Tunables for a workload (or for any, without one), each explained, sourced and with the "
                "command that applies it",
                "parameters": recommend_params,
                "responses": {
                    "200": {
                        **json_answer(RecommendResponse, "recommendations (JSON), or the same as text"),
                        "content": {
                            "application/json": {"schema": model_ref("RecommendResponse")},
                            "text/plain": {"schema": {"type": "string"}},
                        },
                    },
                    "400": error("malformed request; `valid` lists accepted values"),
                    "404": error("unknown workload, pool or dataset; `valid` lists the known ones"),
                },
            }
        },
        "/v1/workloads": {
            "get": {"summary": "Workload profiles with descriptions, parameters and fio jobs", "responses": {"200": json_answer(WorkloadList, "workloads")}}
        },
        "/v1/workloads/{name}": {
            "get": {
                "summary": "One workload profile",
                "parameters": [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}],
                "responses": {"200": json_answer(WorkloadInfo, "the workload"), "404": error("unknown workload")},
            }
        },
        "/v1/pools": {"get": {"summary": "Imported pools with media, layout and datasets", "responses": {"200": json_answer(PoolList, "pools")}}},
        "/v1/probes": {
            "get": {
                "summary": "Probe runs in the store, newest first (queued ones too)",
                "parameters": [
                    _query("pool", "only runs on this pool", max_length=MAX_POOL_NAME_LEN),
                    _query("workload", "only runs for this workload", enum=sorted(book.workloads) if book else None),
                    {"name": "limit", "in": "query", "required": False, "description": "at most this many runs",
                     "schema": {"type": "string", "pattern": "^[0-9]{1,4}$"}},
                ],
                "responses": {"200": json_answer(ProbeRunList, "the runs"),
                              "400": error("malformed pool name or limit; `valid` gives the limit's range"),
                              "404": error("unknown workload"), "503": error("the probe database cannot be read")},
            },
            "post": {
                "summary": "Queue a probe run; the privileged prober (zfs-advisor profile) starts it when the pool is idle",
                "description": "Needs `Authorization: Bearer <api_token>` from every client, loopback included. "
                               "Never runs fio in the API process: answers 202 with the queued run's id and "
                               "`Location`; GET /v1/probes/{id} then shows it queued, running, completed, aborted "
                               f"or failed. Body at most {MAX_BODY_BYTES} bytes.",
                "security": [{"bearer": []}],
                "requestBody": {"required": True, "content": {"application/json": {
                    "schema": model_ref("ProbeRequest")}}},
                "responses": {
                    "202": {**json_answer(ProbeQueued, "queued"), "headers": {"Location": {
                        "description": "/v1/probes/{id} of the queued run", "schema": {"type": "string"}}}},
                    "400": error("invalid pool name, parameter, candidate value or budget; `valid` lists choices"),
                    "401": error("no or wrong bearer token"),
                    "403": error("no api_token is configured: the reason says how to set one"),
                    "404": error("unknown pool or workload; `valid` lists the known ones"),
                    "408": error("the body did not arrive within the read timeout"),
                    "409": error("the queue is full ([profiler] max_queued)"),
                    "413": error("body too large"),
                    "415": error("body is not application/json"),
                    "422": error("body does not match ProbeRequest; `valid` lists its fields"),
                    "503": error("the probe database cannot be written"),
                },
            },
        },
        "/v1/probes/{id}": {
            "get": {
                "summary": "One probe run with its per-repeat results and its evidence",
                "parameters": [{"name": "id", "in": "path", "required": True,
                                "schema": {"type": "string", "pattern": "^[0-9]{1,18}$"}}],
                "responses": {"200": json_answer(ProbeRunDetail, "the run"),
                              "400": error("malformed id; `valid` gives the range of ids"),
                              "404": error("no such run; `valid` lists the newest runs' ids (GET /v1/probes lists "
                                           "them all)"), "503": error("the probe database cannot be read")},
            }
        },
        "/v1/plan": {
            "get": {
                "summary": "Candidate pool layouts for a set of alike disks, each with its predicted usable capacity, "
                           "sequential bandwidth, random IOPS and fault tolerance (pure arithmetic, reads nothing)",
                "description": "Amounts take datasheet units: K, M, G, T are powers of 1000 (4T = 4 TB, 200M = "
                               "200 MB/s), KiB .. TiB powers of 1024. Method and how far off it was in the lab: "
                               "docs/planner.md.",
                "parameters": [
                    _query("disks", "how many disks (1-256)", True, max_length=3),
                    _query("size", "each disk's size, e.g. 4T", True, max_length=32),
                    _query("seq", "each disk's sequential read rate in bytes/s, e.g. 200M", True, max_length=32),
                    _query("iops", "each disk's random read IOPS at small blocks (without it: no IOPS predicted)",
                           max_length=32),
                    _query("write_seq", "sequential write rate (default: as seq)", max_length=32),
                    _query("write_iops", "random write IOPS (default: as iops)", max_length=32),
                    _query("media", "shown with the disks, not used in the arithmetic", enum=list(MEDIA)),
                    _query("ashift", "the pool's ashift (default 12)", enum=[str(a) for a in ASHIFTS]),
                    _query("recordsize", "block size of the data, for capacity and sequential writes (default 128K)",
                           max_length=16),
                    _query("block", "random I/O size, with a recordsize to match (default 4K)", max_length=16),
                ],
                "responses": {"200": json_answer(PlanResponse, "the candidate layouts, most fault-tolerant first"),
                              "400": error("missing, malformed or unknown parameter; `valid` lists the choices")},
            }
        },
        "/v1/efficiency": {
            "get": {
                "summary": "The latest `zfs-advisor probe --pool P --efficiency` report of each pool (of `pool` "
                           "alone): each test's measured rate over what the pool's layout should give, with the "
                           "diagnosis, when it was measured and its age",
                "description": "Without `pool`: {reports: [EfficiencyEntry], not_measured: [pools of this host "
                               "without a report]}; with it, that pool's EfficiencyEntry. Method: docs/probes.md, "
                               "\"Pool efficiency\".",
                "parameters": [_query("pool", "only this pool's report", max_length=MAX_POOL_NAME_LEN)],
                "responses": {
                    "200": {"description": "EfficiencyList without `pool`, EfficiencyEntry with it",
                            "content": {"application/json": {"schema": {"oneOf": [
                                model_ref("EfficiencyList"),
                                model_ref("EfficiencyEntry")]}}}},
                    "400": error("malformed pool name, or an unknown query parameter"),
                    "404": error("no report of that pool is stored (or no such pool); `valid` lists the pools "
                                  "that have one"),
                    "503": error("the probe database cannot be read"),
                },
            }
        },
        "/v1/changes": {
            "get": {
                "summary": "Tracked settings the service saw change, newest first, each with the I/O before and "
                           "after it and a verdict (docs/changes.md)",
                "parameters": [
                    _query("pool", "only changes on this pool (a module parameter's change is every pool's)",
                           max_length=MAX_POOL_NAME_LEN),
                    _query("dataset", "only changes of this dataset, pool/name", max_length=MAX_NAME_LEN),
                    {"name": "limit", "in": "query", "required": False, "description": "at most this many changes",
                     "schema": {"type": "string", "pattern": "^[0-9]{1,4}$"}},
                ],
                "responses": {"200": json_answer(ChangeList, "the changes"),
                              "400": error("unknown parameter, malformed name or limit; `valid` lists the parameters"),
                              "404": error("a pool or dataset neither the host nor a record knows; `valid` lists "
                                            "the known ones")},
            }
        },
        "/": {"get": {"summary": "The page for people: pools, open advice, probe runs (HTML, no script)",
                      "responses": {"200": html("the overview")}}},
        "/pool/{name}": {"get": {
            "summary": "One pool's page: its facts, open advice, datasets, efficiency report and probe runs (HTML)",
            "parameters": [{"name": "name", "in": "path", "required": True,
                            "schema": {"type": "string", "maxLength": MAX_POOL_NAME_LEN}}],
            "responses": {"200": html("the pool's page"), "400": html("invalid pool name"),
                          "404": html("no such pool; the page links the pools there are")}}},
        "/probes/{id}": {"get": {
            "summary": "One probe run's page: a chart and a table of each candidate's IOPS and write p99 (HTML)",
            "parameters": [{"name": "id", "in": "path", "required": True,
                            "schema": {"type": "string", "pattern": "^[0-9]{1,18}$"}}],
            "responses": {"200": html("the run's page"), "400": html("malformed id"), "404": html("no such run"),
                          "503": html("the probe database cannot be read")}}},
        "/openapi.json": {"get": {"summary": "This document", "responses": {"200": {
            "description": "this OpenAPI 3.1 document (https://spec.openapis.org/oas/v3.1.0)",
            "content": {"application/json": {"schema": {"type": "object",
                                                        "required": ["openapi", "info", "paths"]}}}}}}},
        "/healthz": {"get": {"summary": "Liveness and what the last collection saw", "responses": {
            "200": json_answer(Health, "always 200 while the service answers; `status` is degraded when the probe "
                               "store cannot be read")}}},
        "/v1/facts": {"get": {"summary": "Everything the advisor knows about the host (typed facts)",
                              "responses": {"200": json_answer(Host, "the facts")}}},
        "/metrics": {"get": {"summary": "Prometheus metrics: the text format 0.0.4, or OpenMetrics 1.0 when Accept "
                                        "asks for application/openmetrics-text",
                             "responses": {"200": metrics_text("the metrics (gzip-encoded when Accept-Encoding "
                                                               "asks for it)")}}},
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "zfs-advisor", "version": __version__},
        "paths": with_common_errors(paths),
        "components": {"schemas": schemas["$defs"],
                       "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                                      "description": "api_token from the settings"}}},
    }


def openapi_json(book: RuleBook) -> bytes:
    """The document as served. It depends on the rules alone, which only a restart changes, so
    the app builds it once (about 15 ms of the event loop's time that every request took)."""
    return json.dumps(build_openapi(book)).encode()


@routes.get("/openapi.json")
async def get_openapi(request: web.Request) -> web.Response:
    return web.Response(body=request.app[OPENAPI_JSON], content_type="application/json")
