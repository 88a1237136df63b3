"""Hand-made application grids (tests/lab/app-grid's CSV columns, a few rows) for the tests of
`evaluate --apps` (advisor/model/app_grids.py), whose answers can be worked out on paper."""
from __future__ import annotations

import csv
from pathlib import Path

COLUMNS = ["zfs_version", "layout", "disk_iops", "disk_bps", "app", "metric", "higher_is_better", "recordsize",
           "compression", "repeat", "position", "value", "clients", "synchronous_commit", "disk_ops_max"]


def write_grid(path: Path, rows: list[tuple[str, str, float, int, float]], metric: str = "tps", higher: int = 1,
               layout: str = "ssd-mirror2x2", fio_metric: str = "IOPS") -> Path:
    """rows: (app, recordsize, value, disk IOPS throttle, the busiest disk's ops/s), in run order; the
    repeats count per app, recordsize and throttle.  The probe's fio jobs (fio-*) measure `fio_metric`
    (IOPS; MB/s for a workload the probe compares in bandwidth), as app-grid records them, without a
    synchronous_commit."""
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for i, (app, rs, value, iops, ops) in enumerate(rows, 1):
            fio = app.startswith("fio-")
            repeat = 1 + sum(r[:2] == (app, rs) and r[3] == iops for r in rows[:i - 1])
            w.writerow(["2.3.2", layout, iops, iops * 140_000, app, fio_metric if fio else metric, 1 if fio else higher,
                        rs, "off", repeat, i, value, 8, "" if fio else "off", ops])
    return path
