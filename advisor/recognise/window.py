"""The daemon's windows of per-dataset I/O: each collection's objset counters are kept for
WINDOW_SECONDS, and a dataset's recognition is computed from the oldest and newest reading in it.
A dataset is recognised only once it has been seen at the window's first collection.  The pools'
disks' busy time is kept over the same window (advisor/recognise/disk_window.py).

Plain synchronous code, fed after each command refresh (as the change tracker is); readers get
whole dicts, replaced, never modified.
"""
from __future__ import annotations

import threading
from collections import deque

from advisor.evidence.application_bound import PoolBusy
from advisor.hostmodel.facts import Host, KStat
from advisor.recognise.classify import MIN_OPERATIONS, UNKNOWN, Recognition, classify
from advisor.recognise.disk_window import DiskWindow
from advisor.recognise.readings import add_reading
from advisor.recognise.signature import Signature
from advisor.recognise.traits import Counters, counters, window_traits

WINDOW_SECONDS = 300.0
IDLE = Recognition(UNKNOWN, None, 0.0, None, reason="no reads or writes in the window")


class Recogniser:
    def __init__(self, sigs: list[Signature], window_seconds: float = WINDOW_SECONDS) -> None:
        self.sigs = sigs
        self.window_seconds = window_seconds
        # dataset -> (time, counters) readings that moved, and the one in force at the window's start;
        # a short list each (a deque is 600 bytes empty: thousands of datasets)
        self._readings: dict[str, list[tuple[float, Counters]]] = {}
        self._times: deque[float] = deque()
        self._lock = threading.Lock()
        self._recognised: dict[str, Recognition] = {}
        self._parsed: dict[str, tuple[KStat, Counters]] = {}  # dataset -> its last KStat and its counters
        self.disks = DiskWindow()  # each pool's disks' busy share over the same window
        self.generation = 0
        self.pools_generation = 0

    def recognised(self) -> dict[str, Recognition]:
        """dataset name -> its recognition in the latest window (busy or not)."""
        return self._recognised

    def pools_busy(self) -> dict[str, PoolBusy]:
        """pool -> its disks' busy share over the latest window (advisor/evidence/application_bound.py)."""
        return self.disks.pools()

    def exported(self) -> tuple[tuple[str, str, str | None, float], ...]:
        """(dataset, workload or unknown, role, confidence) of each dataset busy in the window."""
        return tuple((name, r.workload, r.role, r.confidence) for name, r in self._recognised.items()
                     if r.traits is not None and r.traits.operations >= MIN_OPERATIONS)

    def observe(self, host: Host, at: float) -> None:
        """One collection's counters, read at `at` (seconds, monotonic)."""
        with self._lock:
            if self._times and at <= self._times[-1]:
                return
            self._times.append(at)
            cutoff = at - self.window_seconds
            while self._times[0] < cutoff:  # at most the window: a gap in collections is not averaged over
                self._times.popleft()
            start = self._times[0]
            seen = set()
            parsed: dict[str, tuple[KStat, Counters]] = {}
            found: dict[str, Recognition] = {}
            for ds in host.datasets:
                if ds.io is None:
                    continue
                seen.add(ds.name)
                known = self._parsed.get(ds.name)
                # an objset file unchanged since the last read gives the same KStat (advisor/host/collect.py)
                now = known[1] if known is not None and known[0] is ds.io else counters(ds.io.values)
                parsed[ds.name] = (ds.io, now)
                first = add_reading(self._readings.setdefault(ds.name, []), at, now, start)
                if first is not None and first == now and at > start:
                    found[ds.name] = IDLE  # most datasets, most of the time: nothing to compute
                    continue
                traits = window_traits(first, now, at - start) if first is not None and at > start else None
                found[ds.name] = classify(traits, self.sigs)
            for gone in [n for n in self._readings if n not in seen]:
                del self._readings[gone]
            if self.disks.observe(host, at, start):  # every answer's stated effect changed
                self.pools_generation += 1
                self.generation += 1
            elif found != self._recognised:  # what the answers with workload=auto and the page show changed
                self.generation += 1
            self._recognised = found
            self._parsed = parsed
