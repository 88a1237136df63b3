"""Foreground I/O on a pool while a probe runs: everything but the probe's own.

The source is the per-dataset objset kstats (/proc/spl/kstat/zfs/<pool>/objset-*,
OpenZFS >= 0.8): logical reads and writes of each dataset and zvol (zvols count their
reads and writes there too: dataset_kstats_update_*_kstats() in zvol_os.c), so reads
served by the ARC count too (they are a user's activity all the same).

A probe that changes a host-wide setting (a module parameter, the ARC cap) watches every
pool of the host (`HostForegroundWatch`): what it changed reaches them all.

A host can have thousands of datasets, and reading all their kstats every poll
does not scale (10,000 files took 420 ms a poll through the general kstat parser:
longer than the poll itself). So each poll reads the scratch datasets' files and
then as many of the others as fit in a time budget, going round; every dataset
keeps the rate it showed at its last reading, and the foreground rate is the sum
of those rates. While the whole pool fits in one poll's budget this is the same as
reading everything every poll; past that, a dataset's rate is averaged over the
time since it was last read, and `Foreground.sweep_seconds` says how long that is.
"""
from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field

from advisor.host.files import HostFiles
from advisor.host.kstat import KSTAT_DIR

# The counters the watch needs are the first rows of the kstat (2.1 and 2.3 alike): the
# search looks at the head first, the whole file only when the head did not hold them all.
_ROW = re.compile(rb"^(dataset_name|reads|nread|writes|nwritten)[ \t]+\d+[ \t]+(\S+)[ \t]*$", re.M)
_HEAD = 640
_READ_BYTES = 4096


@dataclass(frozen=True)
class IoSample:
    at: float
    ops: int
    bytes: int


@dataclass(frozen=True)
class ObjsetReading:
    name: str
    ops: int  # reads + writes
    bytes: int  # nread + nwritten
    written: int


def parse_objset_head(data: bytes) -> ObjsetReading | None:
    """The dataset's name and I/O counters from an objset kstat; None if they are not all there."""
    rows = dict(_ROW.findall(data, 0, data.rfind(b"\n", 0, _HEAD) + 1))  # whole lines only
    if len(rows) < 5:
        rows = dict(_ROW.findall(data))
    try:
        name = rows[b"dataset_name"].decode("utf-8", errors="replace")
        reads, nread = int(rows[b"reads"]), int(rows[b"nread"])
        writes, nwritten = int(rows[b"writes"]), int(rows[b"nwritten"])
    except (KeyError, ValueError):
        return None
    return ObjsetReading(name, reads + writes, nread + nwritten, nwritten)


@dataclass
class _Seen:
    reading: ObjsetReading
    at: float
    ops_rate: float = 0.0
    bytes_rate: float = 0.0


@dataclass(frozen=True)
class Foreground:
    """Foreground I/O as of one poll."""
    ops_per_second: float
    bytes_per_second: float
    busiest: list[str] = field(default_factory=list)  # datasets with foreground I/O, busiest first
    sweep_seconds: float = 0.0  # how long the last full round over the pool's datasets took
    datasets: int = 0


class ForegroundWatch:
    """I/O counters of the pool's datasets other than the scratch ones."""

    def __init__(self, files: HostFiles, pool: str, scratch_root: str, poll_budget_seconds: float = 0.05):
        self.files, self.pool, self.scratch_root = files, pool, scratch_root
        self.poll_budget_seconds = poll_budget_seconds
        self._directory = f"{KSTAT_DIR}/{pool}"
        self._fs_directory = files.os_path(self._directory) + "/"  # entries come from its listing
        self._seen: dict[str, _Seen] = {}  # objset file -> its last reading
        self._scratch: set[str] = set()  # the scratch datasets' files
        self._round: list[str] = []  # the other datasets' files, in the order a round reads them
        self._next = 0
        self._round_started = time.monotonic()
        self._sweep_seconds = 0.0

    def _is_scratch(self, name: str) -> bool:
        return name == self.scratch_root or name.startswith(self.scratch_root + "/")

    def _read(self, entry: str) -> ObjsetReading | None:
        try:
            fd = os.open(self._fs_directory + entry, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            return parse_objset_head(os.read(fd, _READ_BYTES))
        except OSError:
            return None
        finally:
            os.close(fd)

    def _entries(self) -> list[str]:
        try:
            return [e for e in self.files.listdir(self._directory) if e.startswith("objset-")]
        except OSError:
            return []

    def _update(self, entry: str, now: float) -> _Seen | None:
        reading = self._read(entry)
        if reading is None:  # destroyed, or not an objset kstat we understand
            self._seen.pop(entry, None)
            self._scratch.discard(entry)
            return None
        seen = self._seen.get(entry)
        if seen is None or seen.reading.name != reading.name:  # new: its rate is known from the next reading
            seen = self._seen[entry] = _Seen(reading, now)
            if self._is_scratch(reading.name):
                self._scratch.add(entry)
            else:
                self._scratch.discard(entry)
            return seen
        seconds = max(now - seen.at, 1e-6)
        seen.ops_rate = max(0, reading.ops - seen.reading.ops) / seconds
        seen.bytes_rate = max(0, reading.bytes - seen.reading.bytes) / seconds
        seen.reading, seen.at = reading, now
        return seen

    def _relist(self, now: float, entries: list[str] | None = None) -> None:
        """Datasets created since the last listing are read, destroyed ones forgotten, and
        the round starts again over the datasets that are not scratch."""
        entries = self._entries() if entries is None else entries
        for gone in set(self._seen) - set(entries):
            del self._seen[gone]
            self._scratch.discard(gone)
        for entry in entries:
            if entry not in self._seen:
                self._update(entry, now)
        self._round = [e for e in entries if e in self._seen and e not in self._scratch]
        self._next = 0
        self._sweep_seconds = now - self._round_started
        self._round_started = now

    def refresh(self) -> None:
        """Read every objset now (a new scratch child is found), and start a round."""
        now = time.monotonic()
        entries = self._entries()
        for entry in entries:
            self._update(entry, now)
        for seen in self._seen.values():  # a baseline, not a measurement: the last reading may be
            seen.ops_rate = seen.bytes_rate = 0.0  # milliseconds old, and a rate over that is noise
        self._relist(now, entries)

    def counters(self) -> tuple[IoSample, IoSample]:
        """(foreground, scratch) cumulative reads+writes and bytes read+written, read now."""
        self.refresh()
        fg_ops = fg_bytes = sc_ops = sc_bytes = 0
        for entry, seen in self._seen.items():
            if entry in self._scratch:
                sc_ops, sc_bytes = sc_ops + seen.reading.ops, sc_bytes + seen.reading.bytes
            else:
                fg_ops, fg_bytes = fg_ops + seen.reading.ops, fg_bytes + seen.reading.bytes
        now = time.monotonic()
        return IoSample(now, fg_ops, fg_bytes), IoSample(now, sc_ops, sc_bytes)

    def scratch_written(self) -> int:
        """Bytes written so far to the scratch datasets (a new child is found by listing)."""
        now = time.monotonic()
        for entry in self._entries():
            if entry not in self._seen:
                self._update(entry, now)
        for entry in list(self._scratch):
            self._update(entry, now)
        return sum(self._seen[e].reading.written for e in self._scratch)

    def poll(self) -> Foreground:
        """Read the scratch datasets, then the next datasets of the round while the time
        budget lasts (at least one, and each at most once a poll)."""
        started = time.monotonic()
        for entry in list(self._scratch):
            self._update(entry, started)
        budget_end = started + self.poll_budget_seconds
        if not self._round:
            self._relist(started)  # a pool of scratch datasets alone: look for new ones
        limit, read = len(self._round), 0
        while read < limit and self._round:
            now = time.monotonic()
            if read and now >= budget_end:
                break
            entry = self._round[self._next]
            self._next += 1
            read += 1
            if self._update(entry, now) is not None and entry in self._scratch:
                self._round.remove(entry)  # a dataset renamed into the scratch tree
                self._next -= 1
            if self._next >= len(self._round):
                self._relist(time.monotonic())  # the round is over: the next starts with a fresh listing
        return self._foreground()

    def _foreground(self) -> Foreground:
        ops = nbytes = 0.0
        busy: list[tuple[float, str]] = []
        for entry, seen in self._seen.items():
            if (seen.ops_rate or seen.bytes_rate) and entry not in self._scratch:
                ops, nbytes = ops + seen.ops_rate, nbytes + seen.bytes_rate
                busy.append((seen.bytes_rate + seen.ops_rate, seen.reading.name))
        busy.sort(reverse=True)
        return Foreground(ops, nbytes, [name for _, name in busy[:3]], self._sweep_seconds, len(self._seen))


class HostForegroundWatch:
    """Foreground I/O on every pool of the host: the probed pool's watch (which knows the
    scratch datasets) and one per other pool, found again at each refresh; polls share the
    time budget. The same calls as ForegroundWatch."""

    def __init__(self, files: HostFiles, pool: str, scratch_root: str, poll_budget_seconds: float = 0.05):
        self.files, self.pool, self.scratch_root = files, pool, scratch_root
        self.poll_budget_seconds = poll_budget_seconds
        self.probed = ForegroundWatch(files, pool, scratch_root, poll_budget_seconds)
        self.others: dict[str, ForegroundWatch] = {}
        self._find_pools()

    def _find_pools(self) -> None:
        """Pools with objset kstats now; a pool imported since is watched, an exported one dropped."""
        try:
            names = [e for e in self.files.listdir(KSTAT_DIR) if e != self.pool
                     and any(f.startswith("objset-") for f in self._listing(e))]
        except OSError:
            names = []
        budget = self.poll_budget_seconds / (1 + len(names))
        self.probed.poll_budget_seconds = budget
        # No dataset of another pool is scratch: "/" begins no dataset name.
        self.others = {n: self.others.get(n) or ForegroundWatch(self.files, n, "/", budget) for n in sorted(names)}
        for watch in self.others.values():
            watch.poll_budget_seconds = budget

    def _listing(self, entry: str) -> list[str]:
        try:
            return self.files.listdir(f"{KSTAT_DIR}/{entry}")
        except OSError:  # a kstat file, not a pool's directory
            return []

    def _all(self) -> list[ForegroundWatch]:
        return [self.probed, *self.others.values()]

    def refresh(self) -> None:
        self._find_pools()
        for watch in self._all():
            watch.refresh()

    def counters(self) -> tuple[IoSample, IoSample]:
        self._find_pools()
        foreground, scratch = self.probed.counters()
        for watch in self.others.values():
            other, _ = watch.counters()
            foreground = IoSample(other.at, foreground.ops + other.ops, foreground.bytes + other.bytes)
        return foreground, scratch

    def scratch_written(self) -> int:
        return self.probed.scratch_written()

    def poll(self) -> Foreground:
        seen = [watch.poll() for watch in self._all()]
        busiest = sorted(((f.ops_per_second + f.bytes_per_second, i, name) for f in seen
                          for i, name in enumerate(f.busiest)), key=lambda b: (-b[0], b[1]))
        return Foreground(sum(f.ops_per_second for f in seen), sum(f.bytes_per_second for f in seen),
                          [name for *_, name in busiest[:3]], max(f.sweep_seconds for f in seen),
                          sum(f.datasets for f in seen))


def foreground_watch(files: HostFiles, pool: str, scratch_root: str,
                     host_wide: bool) -> ForegroundWatch | HostForegroundWatch:
    """The pool's watch, or the whole host's when the probe changes a host-wide setting."""
    return HostForegroundWatch(files, pool, scratch_root) if host_wide else ForegroundWatch(files, pool, scratch_root)


def foreground_rate(before: IoSample, after: IoSample) -> tuple[float, float]:
    seconds = max(after.at - before.at, 1e-6)
    return (after.ops - before.ops) / seconds, (after.bytes - before.bytes) / seconds
