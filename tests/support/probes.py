"""A probe database as the prober leaves it, for tests that need probe evidence without fio."""
from __future__ import annotations

import json
from pathlib import Path

from advisor.store.db import connect
from advisor.store.probes import ProbeStore, ResultRow
from support import FIXTURES

# The ssd-mirror2x2 postgres cell of the shipped prior, repeat by repeat (IOPS, write p99 s):
# 8K beat the 128K default.
RECORDSIZE_POSTGRES = {"128K": [(2001.1, 0.0114688), (1657.8, 0.0161874)],
                       "8K": [(3355.2, 0.0015155), (3540.5, 0.0016302)]}


def seed_recordsize_probe(state_dir: Path | str, pool: str = "tank", workload: str = "postgres") -> None:
    """One completed recordsize probe run of `workload` on `pool`, ended now."""
    store = ProbeStore(connect(state_dir))
    run = store.start_run(pool, workload, "data", {}, [], None)
    for value, repeats in RECORDSIZE_POSTGRES.items():
        for i, (iops, p99) in enumerate(repeats):
            store.add_result(ResultRow(
                run_id=run, parameter="recordsize", value=value, scope="dataset", baseline=value == "128K", repeat=i,
                started_at=0.0, iops=iops, read_iops=0.7 * iops, write_iops=0.3 * iops, read_bw=0.0, write_bw=0.0,
                write_p99=p99, runtime_seconds=8.0, written_bytes=0, pool={"media": "ssd"}, job="[global]\n[data]\n"))
    store.end_run(run, "completed")
    store.conn.close()


# What `zfs-advisor probe --pool tank --efficiency --json` printed in the lab, and when it was
# measured (tests/fixtures/efficiency/PROVENANCE.md).
EFFICIENCY_REPORT = FIXTURES / "efficiency" / "lab-zfs2.3.2-ssd-mirror2x2.json"
EFFICIENCY_MEASURED_AT = 1795844361.946142  # 2026-11-28 05:39:21 UTC


def recorded_efficiency() -> dict:
    return json.loads(EFFICIENCY_REPORT.read_text())


def seed_efficiency_report(state_dir: Path | str, pool: str = "tank", report: dict | None = None,
                           measured_at: float = EFFICIENCY_MEASURED_AT) -> None:
    """The recorded efficiency report (or `report`) stored for `pool` as the probe stores it."""
    store = ProbeStore(connect(state_dir))
    store.add_efficiency(pool, recorded_efficiency() if report is None else report, measured_at)
    store.conn.close()
