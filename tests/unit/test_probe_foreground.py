"""The foreground watch (advisor/probe/foreground.py) on recorded objset kstats.

The kstat files are lab recordings (tests/fixtures/hosts/*/ssd-mirror2x2/idle, OpenZFS 2.1.11
and 2.3.2) copied into a temporary root; a test moves a dataset's counters by rewriting its
`writes`/`nwritten` rows the way the kernel would (the file format is untouched). The real
kernel side, fio killed within a second of a foreground writer, is tests/lab/test_probe.py.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.host.files import HostFiles
from advisor.host.kstat import parse_named_kstat
from advisor.probe.foreground import ForegroundWatch, HostForegroundWatch, parse_objset_head
from support import HOSTS

KSTATS = "proc/spl/kstat/zfs/tank"
SCRATCH = "tank/zfs-advisor-probe"


def _objset_files(version: str) -> list[Path]:
    return sorted((HOSTS / version / "ssd-mirror2x2" / "idle" / KSTATS).glob("objset-*"))


@pytest.mark.parametrize("version", ["2.1.11", "2.3.2"])
def test_the_head_reader_agrees_with_the_kstat_parser_on_every_recorded_objset(version):
    recorded = [p for p in HOSTS.glob(f"{version}/*/*/{KSTATS}/objset-*")]
    assert len(recorded) >= 20
    for path in recorded:
        full = parse_named_kstat(path.read_text()).values
        head = parse_objset_head(path.read_bytes())
        assert head is not None, path
        assert head.name == full["dataset_name"]
        assert head.ops == int(full["reads"]) + int(full["writes"])
        assert head.bytes == int(full["nread"]) + int(full["nwritten"])
        assert head.written == int(full["nwritten"])


@pytest.mark.parametrize("name_length", range(200, 256))
def test_a_long_dataset_name_does_not_cut_a_counter_short(name_length):
    text = _objset_files("2.3.2")[1].read_text()
    name = "tank/" + "n" * (name_length - 5)
    text = re.sub(r"(?m)^(dataset_name\s+7\s+)\S+$", rf"\g<1>{name}", text)
    text = re.sub(r"(?m)^(n(?:read|written)\s+4\s+)\d+$", r"\g<1>123456789012", text)
    head = parse_objset_head(text.encode())
    assert head is not None and head.name == name
    assert head.bytes == 2 * 123456789012 and head.written == 123456789012


@pytest.mark.parametrize("text", [b"", b"garbage\n", b"dataset_name 7 tank\nwrites 4 1\n",
                                  b"dataset_name 7 tank\nwrites 4 x\nnwritten 4 1\nreads 4 1\nnread 4 1\n"])
def test_a_file_without_all_counters_is_not_a_reading(text):
    assert parse_objset_head(text) is None


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=600))
def test_arbitrary_bytes_give_a_reading_or_none(data):
    head = parse_objset_head(data)
    assert head is None or (head.ops >= 0 and head.bytes >= 0)


class Pool:
    """A copy of a recorded pool's objset kstats whose counters a test can move; under another
    `name`, the same files with every dataset name's pool replaced."""

    def __init__(self, root: Path, version: str = "2.3.2", name: str = "tank"):
        self.dir = root / KSTATS.replace("/tank", f"/{name}")
        self.dir.mkdir(parents=True)
        self.template = _objset_files(version)[0].read_text()
        self.ids = iter(range(0x1000, 0x100000))
        self.by_name: dict[str, Path] = {}
        for path in _objset_files(version):
            text = re.sub(r"(?m)^(dataset_name\s+7\s+)tank", rf"\g<1>{name}", path.read_text())
            (self.dir / path.name).write_text(text)
            self.by_name[parse_named_kstat(text).values["dataset_name"]] = self.dir / path.name

    def create(self, name: str) -> None:
        path = self.dir / f"objset-0x{next(self.ids):x}"
        path.write_text(re.sub(r"(?m)^(dataset_name\s+7\s+)\S+$", rf"\g<1>{name}", self.template))
        self.by_name[name] = path

    def destroy(self, name: str) -> None:
        self.by_name.pop(name).unlink()

    def write(self, name: str, ops: int, nbytes: int) -> None:
        path = self.by_name[name]
        text = path.read_text()
        for row, add in (("writes", ops), ("nwritten", nbytes)):
            text = re.sub(rf"(?m)^({row}\s+4\s+)(\d+)$", lambda m, add=add: f"{m[1]}{int(m[2]) + add}", text)
        path.write_text(text)


@pytest.fixture
def pool(tmp_path):
    return Pool(tmp_path)


def _watch(tmp_path, budget: float = 0.05) -> ForegroundWatch:
    return ForegroundWatch(HostFiles(tmp_path), "tank", SCRATCH, poll_budget_seconds=budget)


def test_an_idle_pool_shows_no_foreground(tmp_path, pool):
    watch = _watch(tmp_path)
    watch.refresh()
    seen = watch.poll()
    assert (seen.ops_per_second, seen.bytes_per_second, seen.busiest) == (0, 0, [])
    assert seen.datasets == len(pool.by_name) == 6


def test_a_users_writes_show_with_the_dataset_named_and_the_probes_do_not(tmp_path, pool):
    pool.create(SCRATCH)
    pool.create(f"{SCRATCH}/recordsize-8K")
    watch = _watch(tmp_path)
    watch.refresh()
    pool.write(f"{SCRATCH}/recordsize-8K", 5000, 5000 << 13)
    assert watch.poll().bytes_per_second == 0
    pool.write("tank/home", 100, 100 << 16)
    seen = watch.poll()
    assert seen.ops_per_second > 0 and seen.bytes_per_second > 0
    assert seen.busiest == ["tank/home"]


def test_scratch_written_finds_a_child_created_after_the_watch_started(tmp_path, pool):
    pool.create(SCRATCH)
    watch = _watch(tmp_path)
    watch.refresh()
    before = watch.scratch_written()
    pool.create(f"{SCRATCH}/recordsize-16K")  # the next candidate's dataset
    pool.write(f"{SCRATCH}/recordsize-16K", 10, 10 << 14)
    pool.write("tank/home", 10, 1 << 20)  # not the probe's
    assert watch.scratch_written() - before == 10 << 14


def test_a_dataset_created_during_the_probe_is_watched_from_the_next_round(tmp_path, pool):
    watch = _watch(tmp_path)
    watch.refresh()
    pool.create("tank/new")
    watch.poll()  # the round ends: the listing finds tank/new and reads it once
    pool.write("tank/new", 50, 50 << 16)
    assert watch.poll().busiest == ["tank/new"]


def test_a_destroyed_dataset_is_forgotten(tmp_path, pool):
    watch = _watch(tmp_path)
    watch.refresh()
    pool.write("tank/home", 50, 50 << 16)
    assert watch.poll().busiest == ["tank/home"]
    pool.destroy("tank/home")
    watch.poll()
    seen = watch.poll()
    assert seen.busiest == [] and seen.datasets == 5


def test_with_no_time_to_spare_a_poll_reads_one_dataset_and_a_round_covers_them_all(tmp_path, pool):
    for i in range(20):
        pool.create(f"tank/many/ds{i:02d}")
    watch = _watch(tmp_path, budget=0.0)
    watch.refresh()
    pool.write("tank/many/ds19", 40, 40 << 16)
    polls = 0
    while not watch.poll().busiest:
        polls += 1
        assert polls <= 26, "a round reads every dataset"
    # One dataset a poll: the writer is found once its turn comes, not at the first poll.
    assert polls >= 1
    seen = watch.poll()
    assert seen.busiest == ["tank/many/ds19"]  # its rate stands until its next reading
    assert seen.sweep_seconds > 0


def test_rates_are_per_second_of_the_time_since_the_datasets_last_reading(tmp_path, pool, monkeypatch):
    clock = iter(float(t) for t in range(100, 10_000))
    monkeypatch.setattr("advisor.probe.foreground.time.monotonic", lambda: next(clock))
    watch = _watch(tmp_path, budget=1000.0)
    watch.refresh()
    pool.write("tank/home", 30, 3 << 20)
    seen = watch.poll()
    # tank/home was read at some tick of the fake clock after the refresh: the rate divides
    # its counters' change by exactly the ticks between its two readings.
    assert seen.busiest == ["tank/home"]
    ticks = 30 / seen.ops_per_second
    assert ticks == int(ticks) and 1 <= ticks <= 20
    assert seen.bytes_per_second == pytest.approx((3 << 20) / ticks)


def test_a_refresh_is_a_baseline_not_a_rate(tmp_path, pool):
    """Two readings milliseconds apart (scratch_written, then the refresh at fio's start) must not
    leave a rate behind for datasets the next polls do not read again yet."""
    for i in range(20):
        pool.create(f"tank/many/ds{i:02d}")
    watch = _watch(tmp_path, budget=0.0)
    watch.scratch_written()  # reads every dataset once (the first call finds them)
    pool.write("tank/many/ds19", 1, 4096)  # a trickle between the two readings
    watch.refresh()
    assert watch.poll().bytes_per_second == 0


def test_counters_split_foreground_and_scratch_totals(tmp_path, pool):
    pool.create(SCRATCH)
    watch = _watch(tmp_path)
    fg0, sc0 = watch.counters()
    pool.write(SCRATCH, 7, 7 << 10)
    pool.write("tank/pg", 3, 3 << 10)
    fg1, sc1 = watch.counters()
    assert (fg1.ops - fg0.ops, fg1.bytes - fg0.bytes) == (3, 3 << 10)
    assert (sc1.ops - sc0.ops, sc1.bytes - sc0.bytes) == (7, 7 << 10)


def test_a_pool_without_kstats_is_quiet_not_an_error(tmp_path):
    watch = _watch(tmp_path)
    watch.refresh()
    seen = watch.poll()
    assert (seen.ops_per_second, seen.datasets) == (0, 0)
    assert watch.scratch_written() == 0


def test_a_zvols_writes_count_as_foreground(tmp_path, pool):
    """A zvol has an objset kstat like a filesystem (tank/vm in the recordings), and its
    writes count there."""
    watch = _watch(tmp_path)
    watch.refresh()
    pool.write("tank/vm", 64, 64 << 16)
    seen = watch.poll()
    assert seen.busiest == ["tank/vm"] and seen.bytes_per_second > 0


def test_the_host_watch_sees_another_pools_writes_which_the_pool_watch_does_not(tmp_path, pool):
    other = Pool(tmp_path, name="backup")
    pool.create(SCRATCH)
    alone, host = _watch(tmp_path), HostForegroundWatch(HostFiles(tmp_path), "tank", SCRATCH)
    alone.refresh()
    host.refresh()
    pool.write(SCRATCH, 5000, 5000 << 13)  # the probe's own writes count nowhere
    other.write("backup/vm", 100, 100 << 16)
    seen = host.poll()
    assert alone.poll().bytes_per_second == 0
    assert seen.busiest == ["backup/vm"] and seen.bytes_per_second > 0
    assert seen.datasets == len(pool.by_name) + len(other.by_name)
    assert host.scratch_written() > 0


def test_the_host_watch_finds_a_pool_imported_later_and_forgets_an_exported_one(tmp_path, pool):
    host = HostForegroundWatch(HostFiles(tmp_path), "tank", SCRATCH)
    host.refresh()
    assert list(host.others) == []
    other = Pool(tmp_path, name="backup")
    host.refresh()
    other.write("backup/home", 10, 10 << 16)
    assert host.poll().busiest == ["backup/home"]
    shutil.rmtree(other.dir)
    host.refresh()
    assert list(host.others) == [] and host.poll().bytes_per_second == 0


def test_host_counters_add_up_every_pools_foreground(tmp_path, pool):
    other = Pool(tmp_path, name="backup")
    host = HostForegroundWatch(HostFiles(tmp_path), "tank", SCRATCH)
    before, _ = host.counters()
    other.write("backup/home", 7, 7 << 10)
    pool.write("tank/home", 3, 3 << 10)
    after, _ = host.counters()
    assert (after.ops - before.ops, after.bytes - before.bytes) == (10, 10 << 10)
