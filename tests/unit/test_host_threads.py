"""Per-thread CPU from /proc/<pid>/task/<tid>/stat (advisor/host/threads.py), on a recording
of the lab VM while fio wrote (tests/fixtures/threads/*/PROVENANCE)."""
from __future__ import annotations

from pathlib import Path

import pytest

from advisor.host.files import HostFiles
from advisor.host.parsing import ParseError
from advisor.host.threads import group_name, is_zfs_thread, parse_thread_stat, read_thread_ticks, thread_cpu


def test_a_name_with_spaces_and_parentheses_is_read_up_to_the_last_one():
    # proc(5): comm is in parentheses and may hold both; the fields after it count from the last ')'
    line = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 37 12 0 0 20 0 3 0 500 0 0"
    t = parse_thread_stat(line)
    assert (t.tid, t.comm, t.ppid, t.ticks, t.kernel) == (4242, "a (b) c", 1, 49, False)
    for bad in ("", "12 no-parens S 1", "12 (x) S"):
        with pytest.raises(ParseError):
            parse_thread_stat(bad)


def test_names_group_with_their_digits_stripped():
    assert [group_name(n) for n in ("z_wr_int_3", "z_wr_iss", "kworker/u4:2", "txg_sync")] == [
        "z_wr_int", "z_wr_iss", "kworker/u:", "txg_sync"]


RECORDING = Path(__file__).parents[1] / "fixtures" / "threads" / "2.3.2-slow-mirror2-randwrite"
WALL_SECONDS = 7.075  # PROVENANCE: the two readings' midpoints apart


def test_every_thread_of_the_recorded_vm_is_read_with_its_parent_and_ticks():
    before = read_thread_ticks(HostFiles(RECORDING / "before"))
    after = read_thread_ticks(HostFiles(RECORDING / "after"))
    assert (len(before), len(after)) == (144, 127)  # fio's 16 threads and itself ended in between
    txg_sync = next(t for t in before.values() if t.comm == "txg_sync")
    assert txg_sync.kernel and txg_sync.ppid == 2 and is_zfs_thread(txg_sync)
    fio = before[708]
    assert (fio.comm, fio.ppid, fio.ticks, fio.kernel, is_zfs_thread(fio)) == ("fio", 1, 141, False, False)
    assert sorted({t.comm for t in before.values() if t.comm == "fio"}) == ["fio"] and \
        sum(t.comm == "fio" for t in before.values()) == 18  # the process and its 17 threads


def test_the_busiest_zfs_threads_of_a_4k_random_write():
    before = read_thread_ticks(HostFiles(RECORDING / "before"))
    after = read_thread_ticks(HostFiles(RECORDING / "after"))
    cpu = thread_cpu(before, after, WALL_SECONDS, 100)
    assert [(t.name, t.tid, round(t.busy_ratio, 3)) for t in cpu.busiest[:3]] == [
        ("z_wr_int", 477, 0.454), ("z_wr_iss", 476, 0.379), ("txg_sync", 500, 0.023)]
    assert cpu.groups[0].name == "z_wr_int" and cpu.groups[0].threads == 1
    # all threads: the recorder itself shows among them; fio's threads, gone by the second
    # reading, have no end to count to
    everyone = thread_cpu(before, after, WALL_SECONDS, 100, zfs_only=False)
    assert [t.name for t in everyone.busiest[:3]] == ["z_wr_int", "z_wr_iss", "python3"]
    assert not any(710 <= t.tid <= 726 for t in thread_cpu(before, after, WALL_SECONDS, 100, False, top=500).busiest)
