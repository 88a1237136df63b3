"""Workload recognition (advisor/recognise/) on the lab recordings in tests/fixtures/recognition/:
each workload profile's probe fio job, a pgbench-like mix and a file copy, run one at a time on
tank/rec of OpenZFS 2.3.2 in the lab VM, the pool's objset kstats sampled every 5 s
(tests/fixtures/recognition/PROVENANCE.md)."""
from __future__ import annotations

import json
import time
from collections import Counter

import pytest

from advisor.engine.loader import load_rulebook
from advisor.host.snapshot import collect_from_root
from advisor.hostmodel.facts import Host, KStat
from advisor.recognise.classify import MIN_OPERATIONS, UNKNOWN, classify
from advisor.recognise.recorded import read_job, windows
from advisor.recognise.signature import signatures
from advisor.recognise.traits import COUNTER_NAMES, window_traits
from advisor.recognise.window import Recogniser
from support import FIXTURES, HOSTS

RECORDED = FIXTURES / "recognition"
RUN = json.loads((RECORDED / "RUN.json").read_text())
SIGS = signatures(load_rulebook().workloads)
DATASET = "tank/rec"


def label(found) -> str:
    return f"{found.workload}/{found.role}" if found.known else UNKNOWN


def recognised(job: str, seconds: float = 10.0) -> Counter:
    return Counter(label(classify(t, SIGS)) for t in windows(read_job(RECORDED / job), DATASET, seconds))


def test_signatures_are_the_profiles_own_jobs():
    by = {s.label: s for s in SIGS}
    assert by["postgres/wal"].write_sizes == (8192, 8192) and by["postgres/wal"].syncs_per_write == (1.0, 1.0)
    assert by["postgres/wal"].read_sizes is None and by["postgres/wal"].read_fraction == (0.0, 0.0)
    assert by["mysql/data"].read_sizes == (16384, 16384) and by["mysql/data"].read_fraction == (0.7, 0.7)
    # fsync=32 at 80 % reads: fio syncs before every request after each 32nd write until the next write
    assert by["sqlite/data"].syncs_per_write == pytest.approx((1 / 6.4, 1 / 6.4))
    # two streams side by side: each direction present, in proportions the hardware sets
    assert by["media/data"].read_fraction == (0.02, 0.98)
    assert "vm/images" in by and "vm/zvol" not in by  # a zvol's I/O is not a file system's


PROFILE_JOBS = [j["job"] for j in RUN["jobs"] if j.get("profile")]


@pytest.mark.parametrize("job", PROFILE_JOBS)
def test_each_profiles_own_job_is_recognised_as_that_profile(job):
    got = recognised(job)
    expected = job.replace(".", "/")
    assert sum(got.values()) >= 2, got
    assert got[expected] >= 0.9 * sum(got.values()), got


def test_at_least_nine_windows_in_ten_are_right_on_the_profiles_jobs():
    right = total = 0
    for job in PROFILE_JOBS:
        got = recognised(job)
        right, total = right + got[job.replace(".", "/")], total + sum(got.values())
    assert total >= 20 and right / total >= 0.9, (right, total)


def test_a_copy_no_profile_was_written_for_is_unknown_not_a_wrong_profile():
    got = recognised("file-copy")
    assert sum(got.values()) >= 2 and set(got) == {UNKNOWN}, got


def test_data_and_wal_on_one_dataset_is_postgres_data_and_each_alone_is_still_its_own_role():
    """The pgbench-like job: 8 KiB random reads and writes beside 8 KiB appends with fdatasync, as
    PostgreSQL's data directory with pg_wal inside it (initdb's default) does. Its role is `data`
    (whose rules fit the data directory), seen through postgres/data+wal; the profile's data and wal
    jobs alone stay postgres/data and postgres/wal (above)."""
    got = recognised("pgbench-like")
    assert sum(got.values()) >= 2 and set(got) == {"postgres/data"}, got
    found = [classify(t, SIGS) for t in windows(read_job(RECORDED / "pgbench-like"), DATASET, 10.0)]
    assert all("postgres/data+wal" in f.reason for f in found), [f.reason for f in found]


def test_a_role_and_the_same_role_sharing_its_dataset_are_one_answer_not_two_alike():
    """postgres.data's own job fits postgres/data and postgres/data+wal alike: the confidence is
    against the best other answer, so it is still recognised, and confidently."""
    for traits in windows(read_job(RECORDED / "postgres.data"), DATASET, 10.0):
        found = classify(traits, SIGS)
        assert (found.workload, found.role) == ("postgres", "data") and found.confidence > 0.5, found.reason


def test_an_idle_dataset_is_unknown_for_too_little_io():
    samples = read_job(RECORDED / PROFILE_JOBS[0])
    [traits, *_] = windows(samples, "tank/home", 10.0)
    found = classify(traits, SIGS)
    assert traits.operations < MIN_OPERATIONS and found.workload == UNKNOWN and "too few" in found.reason
    assert classify(None, SIGS).reason == "no window of I/O observed yet"


def test_counters_that_went_back_make_no_window():
    assert window_traits((10, 10, 100, 100, 1), (5, 10, 100, 100, 1), 10.0) is None
    # before OpenZFS 2.2 there is no ZIL counter: syncs are not judged, the rest is
    traits = window_traits((0, 0, 0, 0, -1), (0, 100, 0, 100 << 20, -1), 10.0)
    assert traits.syncs_per_write is None and traits.mean_write_bytes == 1 << 20


def test_reads_that_return_no_bytes_are_unknown_not_an_error():
    """Reads at end of file count as reads of 0 bytes: a window of only those is as small as can be."""
    traits = window_traits((0, 0, 0, 0, 0), (1000, 0, 0, 0, 0), 10.0)
    assert traits.mean_read_bytes == 0 and classify(traits, SIGS).workload == UNKNOWN


async def test_the_daemons_window_recognises_a_dataset_from_its_collections():
    """The recogniser fed collections of the recorded host whose tank/pg counters are the ones the
    postgres data job's recording shows for tank/rec, 5 s apart."""
    host = (await collect_from_root(HOSTS / "2.3.2" / "ssd-mirror2x2" / "load")).host
    recogniser = Recogniser(SIGS, window_seconds=30)
    start = time.monotonic()
    for i, sample in enumerate(read_job(RECORDED / "postgres.data")):
        recogniser.observe(with_counters(host, "tank/pg", sample.datasets[DATASET]), start + 5 * i)
    found = recogniser.recognised()["tank/pg"]
    assert (found.workload, found.role) == ("postgres", "data") and found.confidence >= 0.5
    assert found.traits.seconds == pytest.approx(30) and found.traits.mean_read_bytes == pytest.approx(8192)
    assert ("tank/pg", "postgres", "data", found.confidence) in recogniser.exported()
    assert recogniser.recognised()["tank/home"].workload == UNKNOWN  # idle: not exported
    assert not [e for e in recogniser.exported() if e[0] == "tank/home"]


def with_counters(host: Host, dataset: str, counters: tuple[int, ...]) -> Host:
    h = host.model_copy(deep=True)
    ds = h.dataset(dataset)
    ds.io = KStat(values={**ds.io.values, **dict(zip(COUNTER_NAMES, counters, strict=True))})
    return h
