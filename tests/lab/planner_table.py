"""The layout planner's predictions against what the lab measured (the tables of docs/planner.md).

    python3 tests/lab/planner_table.py [--grid tests/lab/experiments/data/planner-grid-DATE.csv]

Capacity: every recorded lab pool (tests/fixtures/hosts/*/*/idle). Sequential: the pool-efficiency
runs of docs/probes.md ("Pool efficiency") and the planner grid (tests/lab/planner-grid). Random:
the planner grid; the prior (advisor/model/data/prior-zfs2.3.csv) only as a ceiling check, since
its jobs keep 4 I/Os in flight and read partly from the ARC. The emulated disks' throttles
(tests/lab/layouts.toml) stand for the disks' datasheet numbers; a disk's write rate is its read
rate (qemu's throttles count reads and writes together).
"""
from __future__ import annotations

import argparse
import csv
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests")]
from advisor.layout.layouts import Candidate  # noqa: E402 - after the sys.path line above
from advisor.layout.predict import LayoutPrediction, predict  # noqa: E402 - after the sys.path line above
from advisor.layout.space import pool_space  # noqa: E402 - after the sys.path line above
from support.labplan import LabLayout, disks_of, lab_layouts, recorded_space  # noqa: E402 - after the sys.path line above

# docs/probes.md, "Pool efficiency": probe --efficiency on disks throttled to 10 MB/s, 2026-11-26
# (pool rate, MB/s: the writers' for writes, the disks' for reads)
EFFICIENCY = {("slow-stripe4", "seq-write"): 30.2, ("slow-stripe4", "seq-read"): 42.3,
              ("slow-raidz1x4", "seq-write"): 22.8, ("slow-raidz1x4", "seq-read"): 41.6,
              ("slow-mirror2", "seq-write"): 8.9, ("slow-mirror2", "seq-read"): 21.1}
# the same runs, the pool's rate while its txgs synced (docs/probes.md, "Where the writes' rest goes")
EFFICIENCY_SYNCING = {"slow-stripe4": 0.92, "slow-raidz1x4": 0.90, "slow-mirror2": 0.95}


def predicted(lay: LabLayout, recordsize: int, block: int) -> LayoutPrediction | None:
    disks = disks_of(lay)
    return None if disks is None else predict(Candidate(tuple(lay.vdevs)), disks, recordsize, block)


def _err(pred: float, meas: float) -> str:
    return f"{(pred - meas) / meas:+.0%}"


def capacity_rows(layouts: dict[str, LabLayout]) -> list[str]:
    rows = ["| OpenZFS | layout | zpool SIZE predicted / recorded | zfs USED+AVAIL predicted / recorded | error |",
            "| --- | --- | --- | --- | --- |"]
    for snap in sorted((REPO / "tests/fixtures/hosts").glob("*/*/idle")):
        lay = layouts.get(snap.parent.name)
        if lay is None:
            continue
        size, usable = recorded_space(snap)
        space = pool_space(lay.vdevs, lay.disk_bytes, lay.ashift, lay.logical_block_size)
        rows.append(f"| {snap.parent.parent.name} | {lay.name} | {space.raw_bytes:,} / {size:,} | "
                    f"{space.usable_bytes:,} / {usable:,} | {_err(space.usable_bytes, usable)} |")
    return rows


TESTS = {"seq-write": ("seq_write_bytes_per_second", 1e6, "MB/s"), "seq-read": ("seq_read_bytes_per_second", 1e6, "MB/s"),
         "rand-read": ("random_read_iops", 1, "IOPS"), "rand-write": ("random_write_iops", 1, "IOPS"),
         "rand-write-sync": ("random_write_iops", 1, "IOPS")}


def efficiency_rows(layouts: dict[str, LabLayout]) -> list[str]:
    rows = ["| layout | direction | predicted | measured | error |", "| --- | --- | --- | --- | --- |"]
    for (name, test), measured in EFFICIENCY.items():
        pred = predicted(layouts[name], 1 << 20, 4096)
        field, unit, label = TESTS[test]
        value = getattr(pred, field) / unit
        extra = (f" (while txgs synced: {EFFICIENCY_SYNCING[name]:.0%} of 4/3/1 disks' worth)"
                 if test == "seq-write" else "")
        rows.append(f"| {name} | {test} | {value:.1f} {label} | {measured} {label}{extra} | {_err(value, measured)} |")
    return rows


def grid_rows(layouts: dict[str, LabLayout], grid: Path) -> list[str]:
    rows = ["| layout | test | predicted | measured (fio) | error | at the disks |", "| --- | --- | --- | --- | --- | --- |"]
    for r in csv.DictReader(grid.open()):
        lay = layouts[r["layout"].split("+")[0]]  # "+...": the same layout, another condition
        block = 4096
        pred = predicted(lay, 1 << 20 if r["test"].startswith("seq") else 4096, block)
        field, unit, label = TESTS[r["test"]]
        measured = float(r["fio_bytes_per_s" if label == "MB/s" else "fio_iops"]) / unit
        seconds = float(r["runtime_s"]) or 1
        busy = float(r["disk_busy_s"]) / (len(lay.disks) * seconds)
        disks = (f"{int(r['disk_read_bytes']) / seconds / 1e6:.0f} MB/s read, "
                 f"{int(r['disk_write_bytes']) / seconds / 1e6:.0f} MB/s written, busy {busy:.0%}")
        if r.get("disk_read_bytes_each") and int(r["disk_read_bytes"]):
            each = [int(b) for b in r["disk_read_bytes_each"].split(";")]
            disks += "; reads by disk " + " / ".join(f"{b / sum(each):.0%}" for b in each)
        if pred is None:
            rows.append(f"| {r['layout']} | {r['test']} | (disks not alike) | {measured:,.0f} {label} | | {disks} |")
            continue
        value = getattr(pred, field) / unit
        shown, error = f"{value:,.0f} {label}", _err(value, measured)
        one = pred.random_read_iops_one_metaslab
        if r["test"] == "rand-read" and one is not None and one < 0.99 * value:
            shown += f" ({one:,.0f} in one metaslab)"
            error += f" ({_err(one, measured)})"
        rows.append(f"| {r['layout']} | {r['test']} | {shown} | {measured:,.0f} {label} | {error} | {disks} |")
    return rows


def prior_rows(layouts: dict[str, LabLayout]) -> list[str]:
    """postgres (8K random, 70 % reads, 4 jobs of 1 I/O each) at recordsize=8K: its reads against the
    planner's random read IOPS at 8K, a ceiling that 4 I/Os in flight beside writes need not reach."""
    by_layout: dict[str, list[dict]] = {}
    for r in csv.DictReader((REPO / "advisor/model/data/prior-zfs2.3.csv").open()):
        if r["workload"] == "postgres" and r["parameter"] == "recordsize" and r["value"] == "8K":
            by_layout.setdefault(r["layout"], []).append(r)
    rows = ["| layout | planner: 8K read IOPS | prior: median read IOPS (of read + write) | ARC hit ratio | "
            "measured / planner |", "| --- | --- | --- | --- | --- |"]
    for name, rs in sorted(by_layout.items()):
        pred = predicted(layouts[name], 8192, 8192)
        reads = statistics.median(float(r["read_iops"]) for r in rs)
        both = statistics.median(float(r["iops"]) for r in rs)
        hit = statistics.median(float(r["arc_hit_ratio"]) for r in rs if r["arc_hit_ratio"])
        rows.append(f"| {name} | {pred.random_read_iops:,.0f} | {reads:,.0f} (of {both:,.0f}; {len(rs)} repeats) | "
                    f"{hit:.2f} | {reads / pred.random_read_iops:.0%} |")
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--grid", type=Path, help="a CSV of tests/lab/planner-grid")
    args = ap.parse_args()
    layouts = lab_layouts()
    out = ["### Capacity", "", *capacity_rows(layouts), "", "### Sequential, pool-efficiency runs", "",
           *efficiency_rows(layouts), "", "### Random reads, the prior (a ceiling check)", "", *prior_rows(layouts)]
    if args.grid:
        out += ["", f"### Saturation fio ({args.grid.name})", "", *grid_rows(layouts, args.grid)]
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
