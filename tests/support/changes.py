"""A setting change and its measured effect as the service's change tracker records them, for tests
that need a change record on a replayed host (which never changes).

DERIVED, NOT RECORDED: the lab recorded no host before and after a `zfs set`. The "after" host is
the recording's collection with one dataset property edited as `zfs set` would leave it (a local
value); the I/O is synthetic: counters that start at the recording's own objset and latency-histogram
values and grow per STEP-second collection at a rate near the recording's, with a few per cent of
variation, faster after the change. What is real: the recorded facts, the tracker
(advisor/changes/tracker.py), its comparison, and the store's rows it writes under the state directory.
"""
from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from advisor.changes.detect import tracked
from advisor.changes.tracker import ChangeTracker
from advisor.engine.loader import load_rulebook
from advisor.host.snapshot import collect_from_root
from advisor.hostmodel.facts import Histogram, Host, KStat, Property

STEP = 15  # seconds between collections, the default commands_interval_seconds
WIGGLE = (1.0, 1.06, 0.95, 1.03, 0.97, 1.04, 0.96, 1.02)  # the load's own variation per interval


class Progression:
    """Collections of one host at STEP seconds, the counters of `dataset` and of its pool's latency
    histogram growing from the recording's values: `rate` ops/s of 16 KiB, latencies in the
    recording's own proportions, shifted one bucket faster with `faster`."""

    def __init__(self, start: float, dataset: str = "tank/pg"):
        self.t = start
        self.i = 0
        self.ops = 0.0
        self.lat: dict[str, list[float]] = {}
        self.dataset = dataset
        self.pool = dataset.split("/")[0]

    def next(self, host: Host, rate: float, faster: bool = False) -> Host:
        h = host.model_copy(deep=True)
        self.t += STEP
        self.ops += rate * STEP * WIGGLE[self.i % len(WIGGLE)]
        self.i += 1
        h.collected_at = datetime.fromtimestamp(self.t, UTC)
        ds = h.dataset(self.dataset)
        base = ds.io.values
        ops = int(self.ops)
        ds.io = KStat(values={**base, "writes": base["writes"] + ops, "nwritten": base["nwritten"] + ops * 16384})
        pool = h.pool(self.pool)
        recorded = pool.latency_histograms[self.pool]
        counts = dict(recorded.counts)
        for series in ("total_wait_read", "total_wait_write"):
            shape = recorded.counts[series]
            total = sum(shape) or 1
            acc = self.lat.setdefault(series, [0.0] * len(shape))
            for b, c in enumerate(shape):  # this interval's ops spread like the recording's
                target = max(0, b - 1) if faster else b
                acc[target] += rate * STEP * c / total
            counts[series] = [s + int(a) for s, a in zip(shape, acc, strict=True)]
        pool.latency_histograms = {**pool.latency_histograms,
                                   self.pool: Histogram(unit=recorded.unit, bounds=recorded.bounds, counts=counts)}
        return h


def seed_change(state_dir: Path | str, root: Path, dataset: str = "tank/pg", parameter: str = "recordsize",
                new: str = "16384", window: int = 120, ago: float = 3600.0) -> dict[str, Any]:
    """One change of `dataset`'s `parameter` to `new` on the recording at `root`, seen `ago` seconds
    before now and compared a `window` later (twice the IOPS after it: verdict "better"), stored under
    `state_dir` by the real tracker; the service started on that state directory loads it."""
    host = asyncio.run(collect_from_root(root)).host
    after = host.model_copy(deep=True)
    properties = after.dataset(dataset).properties
    assert properties[parameter].value != new, (dataset, parameter, new)
    properties[parameter] = Property(value=new, source="local")
    tracker = ChangeTracker(tracked(load_rulebook()), state_dir, window)
    run = Progression(time.time() - ago - (window // STEP + 1) * STEP, dataset)
    for _ in range(window // STEP + 1):
        tracker.observe(run.next(host, 100.0))
    for _ in range(window // STEP + 1):
        tracker.observe(run.next(after, 200.0, faster=True))
    [record] = tracker.records(dataset=dataset)
    assert record["status"] == "done" and record["id"], record
    return record
