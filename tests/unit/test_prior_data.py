"""The shipped prior dataset (advisor/model/data/prior-zfs2.3.csv, measured by tests/lab/prior-grid):
it loads with the csv module, has the agreed columns, one row per (cell, candidate, repeat), at least
two repeats per candidate, the PostgreSQL-on-SSD-mirror cell the recordsize advice is checked on, and
it ships in the package."""
from __future__ import annotations

import csv
import sys
import warnings
from collections import Counter
from pathlib import Path

from setuptools.config.pyprojecttoml import apply_configuration
from setuptools.dist import Distribution

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "advisor" / "model" / "data"
CSV = DATA / "prior-zfs2.3.csv"
sys.path.insert(0, str(REPO / "tests" / "lab"))
import prior_grid  # noqa: E402 - after the sys.path line above

# The columns the regression engine reads, in this order; new ones are only ever appended.
AGREED = (
    "zfs_version,layout,media,vdev_type,top_vdevs,vdev_width,disks,ashift,workload,pattern,block_size_bytes,"
    "read_fraction,fsync_every,iodepth,numjobs,working_set_bytes,arc_max_bytes,parameter,value,baseline,"
    "recordsize_bytes,compression,logbias,primarycache,sync,atime,repeat,runtime_s,iops,read_iops,write_iops,"
    "read_bw_bytes,write_bw_bytes,read_p50_us,read_p99_us,write_p50_us,write_p99_us,compress_ratio,run_id,started_at"
).split(",")
NUMERIC = ("top_vdevs", "vdev_width", "disks", "ashift", "block_size_bytes", "read_fraction", "fsync_every",
           "iodepth", "numjobs", "working_set_bytes", "recordsize_bytes", "repeat", "runtime_s", "iops",
           "read_iops", "write_iops", "read_bw_bytes", "write_bw_bytes")


def _rows() -> tuple[list[str], list[dict[str, str]]]:
    with CSV.open(newline="") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames or []), list(reader)


def _cell(r: dict[str, str]) -> tuple[str, ...]:
    """A cell of the grid: one probe run's conditions (the same grid at another working set is another)."""
    return (r["zfs_version"], r["layout"], r["workload"], r["working_set_bytes"])


def _candidate(r: dict[str, str]) -> tuple[str, ...]:
    return (*_cell(r), r["parameter"], r["value"])


def test_columns_are_the_agreed_ones_then_only_additions():
    header, _ = _rows()
    assert header[:len(AGREED)] == AGREED
    assert header == prior_grid.COLUMNS


def test_values_parse_and_are_in_range():
    _, rows = _rows()
    assert rows
    for r in rows:
        for c in NUMERIC:
            float(r[c])
        assert float(r["iops"]) > 0 and r["baseline"] in ("0", "1") and r["media"] in ("hdd", "ssd", "mixed")
        assert r["pattern"] in ("random", "sequential", "mixed")
        assert 0 <= float(r["read_fraction"]) <= 1
        # a latency is given exactly where there was I/O in that direction
        assert (r["read_p99_us"] != "") == (float(r["read_iops"]) > 0)
        assert (r["write_p99_us"] != "") == (float(r["write_iops"]) > 0)


def test_one_row_per_run_candidate_and_repeat_and_at_least_two_repeats():
    _, rows = _rows()
    keys = Counter((*_candidate(r), r["run_id"], r["repeat"]) for r in rows)
    assert [k for k, n in keys.items() if n > 1] == []
    repeats = Counter((*_candidate(r), r["run_id"]) for r in rows)
    assert min(repeats.values()) >= 2


def test_every_run_measured_the_baseline_beside_its_candidates():
    _, rows = _rows()
    runs: dict[str, set[str]] = {}
    for r in rows:
        runs.setdefault(r["run_id"], set())
        if r["baseline"] == "1":
            runs[r["run_id"]].add(r["value"])
    assert {run: b for run, b in runs.items() if not b} == {}
    assert len({r["run_id"] for r in rows}) >= len({_cell(r) for r in rows})


def test_every_cell_has_exactly_one_baseline_candidate():
    _, rows = _rows()
    baselines: dict[tuple[str, ...], set[str]] = {}
    for r in rows:
        cell = _cell(r)
        baselines.setdefault(cell, set())
        if r["baseline"] == "1":
            baselines[cell].add(f"{r['parameter']}={r['value']}")
    assert {cell: b for cell, b in baselines.items() if len(b) != 1} == {}


def test_postgres_on_the_ssd_mirror_covers_the_recordsizes_the_advice_is_checked_on():
    _, rows = _rows()
    cell = [r for r in rows if r["layout"] == "ssd-mirror2x2" and r["workload"] == "postgres"
            and r["parameter"] == "recordsize"]
    assert {"8K", "16K", "32K", "128K"} <= {r["value"] for r in cell}
    assert {r["media"] for r in cell} == {"ssd"} and {r["vdev_type"] for r in cell} == {"mirror"}


def test_the_data_and_its_provenance_ship_with_the_package():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dist = apply_configuration(Distribution(), REPO / "pyproject.toml")
    patterns = dist.package_data["advisor"]
    assert "model/data/*.csv" in patterns and "model/data/PROVENANCE.md" in patterns
    assert (DATA / "PROVENANCE.md").is_file()
