"""The probe's own fio job in an application's cell, as the probe's results (`evaluate --apps`).

A probe runs on the user's pool at that pool's pace.  The application lab runs the probe's fio job
of the app's workload (`fio-postgres`, tests/lab/labapps.py) as a cell of the same grid: the same
VM, disks, throttle, ARC cap and recordsizes as the application beside it.  For an application cell
with such a twin, its 1- and 2-probe answers take their probes from the twin's rows, each repeat a
probe repeat (answers.ProbeSource, read by `evaluate --answers`' own machinery), instead of from the
layout's fio grid, measured at the layout's full throttle where the lab's emulated CPU, not its
disks, set the probe's pace (docs/lab.md, "A probe beside a CPU hog").

What a twin's row stands for: the probe plan's recordsize candidate of that size, run at the
twin's compression (the cell's; `off` in every grid so far) where a probe would run it at the
dataset's (lz4 for a new one).  The plan's compression candidate is never in a twin.  The ratios
are to the twin's default recordsize (128K, the probe's baseline): a twin without it stands for
nothing.
"""
from __future__ import annotations

from dataclasses import replace

from advisor.engine.units import parse_size
from advisor.model.answers import Measured, ProbeSource, row_key
from advisor.model.app_grids import AppCell, pace
from advisor.model.dataset import Sample, samples
from advisor.model.features import Observation, metric_of, settings_key

FIO_APP = "fio-{workload}"  # the probe's job as an app of the grids (tests/lab/labapps.py APPS)
# what the grids record of it, by what the probe compares (features.metric_of): reads and writes a
# second for a random workload, MB/s read and written for the others (tests/lab/labapps.py)
FIO_METRICS = {"iops": "IOPS", "bandwidth": "MB/s"}


def twin(cell: AppCell, cells: list[AppCell], workload: str) -> AppCell | None:
    """The cell of the workload's fio job beside `cell`: its grid (one boot of the VM), OpenZFS,
    layout, disk throttle, clients and compression."""
    same = (cell.grid, cell.zfs_version, cell.layout, cell.disk_iops, cell.disk_bps, cell.clients, cell.compression)
    return next((c for c in cells if c.app == FIO_APP.format(workload=workload) and
                 (c.grid, c.zfs_version, c.layout, c.disk_iops, c.disk_bps, c.clients, c.compression) == same), None)


def pace_twins(cell: AppCell, cells: list[AppCell], workload: str) -> list[AppCell]:
    """The fio jobs to take `cell`'s probes from, in order: its `twin` where its grid ran one, then
    the job at the same pace in other grids (another boot of the same layout, disk throttle, clients
    and compression: a probe run on another day of the same pool), the ones with the most runs first;
    only those the disks paced (app_grids.pace)."""
    same = twin(cell, cells, workload)
    key = (cell.zfs_version, cell.layout, cell.disk_iops, cell.disk_bps, cell.clients, cell.compression)
    others = sorted((c for c in cells if c.app == FIO_APP.format(workload=workload) and c is not same and
                     (c.zfs_version, c.layout, c.disk_iops, c.disk_bps, c.clients, c.compression) == key),
                    key=lambda c: (-len(c.runs), c.grid))
    # a job the disks did not pace (its files served from the ARC, its CPU the limit) measured
    # something else than the application beside it: no probe at the cell's pace
    return [c for c in ([same] if same is not None else []) + others
            if pace(c, [x for x in cells if x.grid == c.grid])[0]]


def probe_source(fio: AppCell, held: list[Sample]) -> tuple[ProbeSource | None, str]:
    """(the fio cell's rows as a probe of the prior's cell `held`, or None with why)."""
    templates: dict[int, Observation] = {}
    for s in held:
        if s.obs.parameter == "recordsize":
            templates.setdefault(parse_size(s.obs.settings["recordsize"]), s.obs)
    compared = metric_of(next(iter(templates.values())).pattern) if templates else ""
    if not templates or fio.metric != FIO_METRICS.get(compared):
        return None, f"its fio job's metric ({fio.metric}) is not what the probe compares for this workload"
    scale = 1.0 if compared == "iops" else 1e6  # the prior's bandwidths are in bytes a second
    run = f"{fio.grid}, {fio.disk_iops} IOPS, {fio.clients} clients"  # one boot, its runs interleaved: one probe run
    observed = [replace(templates[parse_size(r.recordsize)], perf=r.value * scale, write_p99=None, run=run,
                        repeat=r.repeat) for r in fio.runs if parse_size(r.recordsize) in templates]
    measured = samples(observed)  # each as a ratio to the twin's own 128K: none without it
    if not measured:
        return None, f"its fio job did not measure the default recordsize ({', '.join(fio.values())})"
    by_key: dict[tuple, list[Sample]] = {}
    for s in measured:
        by_key.setdefault(settings_key(s.obs), []).append(s)
    # the grids record the job's IOPS or its bytes alone: a random job's perf is its IOPS, another's its
    # bandwidth (features.perf_of), and nothing the answer reads uses the read/write split; the write
    # tail was not recorded
    rows: Measured = {row_key(s.obs): {"iops": s.obs.perf if compared == "iops" else 0.0, "read_iops": 0.0,
                                       "write_iops": 0.0, "read_bw": 0.0 if compared == "iops" else s.obs.perf,
                                       "write_bw": 0.0, "write_p99": None} for s in measured}
    return ProbeSource(name=fio.name, samples=by_key, rows=rows), ""
