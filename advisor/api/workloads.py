"""GET /v1/workloads and /v1/workloads/{name}: the workload profiles the advisor knows."""
from __future__ import annotations

from aiohttp import web

from advisor.server.errors import json_error
from advisor.appkeys import RULEBOOK
from advisor.engine.models import WorkloadInfo, WorkloadList, WorkloadParameter
from advisor.engine.schema import Workload

routes = web.RouteTableDef()


def workload_info(workload: Workload) -> WorkloadInfo:
    defaults = {name: p.default for name, p in workload.parameters.items()}
    return WorkloadInfo(
        name=workload.name,
        title=workload.title,
        description=workload.description,
        io=workload.io.model_dump(),
        roles=[r.model_dump() for r in workload.roles],
        parameters={
            name: WorkloadParameter(description=p.description, default=p.default, values=list(p.values))
            for name, p in workload.all_parameters().items()
        },
        fio_job=workload.fio_job(defaults),
        references=[str(r) for r in workload.references],
    )


@routes.get("/v1/workloads")
async def list_workloads(request: web.Request) -> web.Response:
    book = request.app[RULEBOOK]
    body = WorkloadList(workloads=[workload_info(w) for _, w in sorted(book.workloads.items())])
    return web.Response(text=body.model_dump_json(), content_type="application/json")


@routes.get("/v1/workloads/{name}")
async def get_workload(request: web.Request) -> web.Response:
    book = request.app[RULEBOOK]
    name = request.match_info["name"]
    workload = book.workloads.get(name)
    if workload is None:
        raise json_error(404, f"unknown workload {name[:64]!r}", valid=sorted(book.workloads))
    return web.Response(text=workload_info(workload).model_dump_json(), content_type="application/json")
