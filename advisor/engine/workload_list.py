"""The workload profiles as the advisor describes them: GET /v1/workloads and `zfs-advisor list`."""
from __future__ import annotations

from advisor.engine.loader import RuleBook
from advisor.engine.models import WorkloadInfo, WorkloadList, WorkloadParameter
from advisor.engine.schema import Workload


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


def workload_list(book: RuleBook) -> WorkloadList:
    return WorkloadList(workloads=[workload_info(w) for _, w in sorted(book.workloads.items())])
