"""What a probe of a workload would run, described without running it (the model's
ProbeDescription, advisor/model/inputs.py): the fio job it would build, the ARC cap a probe
reading from the disks sets (advisor/evidence/arc_cap.py), the pool's descriptor, the recordsize grid
and its candidates.  Pure: nothing here runs a command or reads the host."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from advisor.evidence.arc_cap import disk_read_equivalent
from advisor.hostmodel.facts import Disk, Pool
from advisor.probe.candidates import Candidate, make_candidate, recordsize_grid
from advisor.probe.fio_job import Hygiene, JobError, build_job
from advisor.probe.pooldesc import describe_pool

PROBE_FILE_BYTES = 256 << 20  # advisor/probe/probe_service.py ProbeConfig.max_file_bytes


@dataclass(frozen=True)
class ProbeJob:
    text: str
    working_set_bytes: int
    arc_max_bytes: int


class ProbeDescription:
    def job(self, workload: Any, params: dict[str, str]) -> ProbeJob | None:
        params = dict(params)
        role = params.pop("role", None)
        try:
            job = build_job(workload, "/probe", Hygiene(max_file_bytes=PROBE_FILE_BYTES), role, params)
        except JobError:
            return None
        # As a probe of this pool would measure it: the ARC capped below the working set, where
        # the lab's 512 MiB cells were measured too.
        ws = job.working_set_bytes
        return ProbeJob(job.text, ws, disk_read_equivalent(ws, job.compress_percentage))

    def pool(self, facts: Pool, disks: list[Disk]) -> dict[str, Any]:
        return describe_pool(facts, disks)

    def recordsize_grid(self, block_size: str) -> list[str]:
        return recordsize_grid(block_size)

    def candidate(self, parameter: str, value: str, baseline: bool) -> Candidate:
        return make_candidate(parameter, value, baseline=baseline)
