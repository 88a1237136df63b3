"""The daemon's windows of per-dataset I/O: each collection's objset counters are kept for
WINDOW_SECONDS, and a dataset's recognition is computed from the oldest and newest reading in it.
A dataset is recognised only once it has been seen at the window's first collection.

Plain synchronous code, fed after each command refresh (as the change tracker is); readers get
whole dicts, replaced, never modified.
"""
from __future__ import annotations

import threading
from collections import deque

from advisor.facts import Host
from advisor.recognise.classify import MIN_OPERATIONS, Recognition, classify
from advisor.recognise.signature import Signature
from advisor.recognise.traits import Counters, counters, window_traits

WINDOW_SECONDS = 300.0


class Recogniser:
    def __init__(self, sigs: list[Signature], window_seconds: float = WINDOW_SECONDS) -> None:
        self.sigs = sigs
        self.window_seconds = window_seconds
        # dataset -> (time, counters) readings that moved, and the one in force at the window's start
        self._readings: dict[str, deque[tuple[float, Counters]]] = {}
        self._times: deque[float] = deque()
        self._lock = threading.Lock()
        self._recognised: dict[str, Recognition] = {}
        self.generation = 0

    def recognised(self) -> dict[str, Recognition]:
        """dataset name -> its recognition in the latest window (busy or not)."""
        return self._recognised

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
            found: dict[str, Recognition] = {}
            for ds in host.datasets:
                if ds.io is None:
                    continue
                seen.add(ds.name)
                now = counters(ds.io.values)
                series = self._readings.setdefault(ds.name, deque())
                if not series or series[-1][1] != now:
                    series.append((at, now))
                while len(series) > 1 and series[1][0] <= start:
                    series.popleft()
                first = series[0][1] if series[0][0] <= start else None
                traits = window_traits(first, now, at - start) if first is not None and at > start else None
                found[ds.name] = classify(traits, self.sigs)
            for gone in [n for n in self._readings if n not in seen]:
                del self._readings[gone]
            self._recognised = found
            self.generation += 1
