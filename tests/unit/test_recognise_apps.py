"""Recognition of real applications (docs/recognition.md, "Real applications"): the pool's objset
kstats sampled every 5 s beside each run of the application lab (tests/lab/app-grid --objsets,
recordings in tests/lab/apps-data/objsets/<grid>/<run>/, each with the run's own dataset), cut
into 10 s windows and classified as the daemon does."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from advisor.engine.loader import load_rulebook
from advisor.recognise.classify import UNKNOWN, classify
from advisor.recognise.recorded import read_job, windows
from advisor.recognise.signature import signatures
from support import REPO

RECORDINGS = REPO / "tests" / "lab" / "apps-data" / "objsets"
SIGS = signatures(load_rulebook().workloads)
DATABASES = {"postgres", "mysql", "sqlite"}


def recognised(run: Path, seconds: float = 10.0) -> Counter:
    dataset = (run / "dataset").read_text().strip()
    found = [classify(t, SIGS) for t in windows(read_job(run / "objsets"), dataset, seconds)]
    return Counter(f"{f.workload}/{f.role}" if f.known else UNKNOWN for f in found)


def runs(app: str) -> list[Path]:
    return sorted(r for grid in RECORDINGS.iterdir() for r in grid.iterdir() if r.name.startswith(f"{app}-"))


@pytest.mark.parametrize(("app", "expected"), [("pgbench-tpcb", "postgres/data"), ("fio-postgres", "postgres/data"),
                                               ("mariadb-oltp", "mysql/data"), ("fio-mysql", "mysql/data")])
def test_a_real_database_and_its_probe_job_are_their_profiles_data_in_four_windows_of_five(app, expected):
    """PostgreSQL 15 under pgbench (data and WAL in one data directory, initdb's default) and MariaDB
    10.11 under sysbench oltp_read_write (the redo log in the data directory, as Debian ships it):
    their windows are the profile's data role (through its role sharing the dataset with the log)
    in at least 4 of 5, and never another profile. The ranges of the two roles' shared_io were set
    on these recordings (docs/recognition.md): a check that they hold, not a held-out test."""
    got = sum((recognised(r) for r in runs(app)), Counter())
    total = sum(got.values())
    assert total >= 8, got
    assert got[expected] >= 0.8 * total, got
    assert set(got) <= {expected, UNKNOWN}, got


@pytest.mark.parametrize("app", ["copy", "borg"])
def test_file_work_is_never_named_a_database(app):
    """`cp -a` of a tree of small and large files, and borg writing a backup of it: no window of
    theirs is a database's, whatever else it is called (unknown, mostly)."""
    got = sum((recognised(r) for r in runs(app)), Counter())
    assert sum(got.values()) >= 10, got
    assert not [k for k in got if k.split("/")[0] in DATABASES], got


@pytest.mark.parametrize(("app", "expected"), [("pgbench-tpcb", "postgres/data"), ("mariadb-oltp", "mysql/data")])
def test_the_hdd_grids_recorded_after_the_ranges_were_set_are_recognised_in_four_windows_of_five(app, expected):
    """The held-out check: the HDD grids (tests/lab/apps-data/objsets/*-hdd-*) were recorded after
    the shared_io ranges were set on the SSD grids' windows, and nothing was tuned on them."""
    held_out = sorted(r for grid in RECORDINGS.iterdir() if "-hdd-" in grid.name
                      for r in grid.iterdir() if r.name.startswith(f"{app}-"))
    got = sum((recognised(r) for r in held_out), Counter())
    total = sum(got.values())
    assert len(held_out) >= 8 and total >= 16, got
    assert got[expected] >= 0.8 * total, got
    assert set(got) <= {expected, UNKNOWN}, got
