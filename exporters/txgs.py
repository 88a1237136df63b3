"""Transaction groups: /proc/spl/kstat/zfs/<pool>/txgs (spa_stats.c).

The kstat keeps the last zfs_txg_history txgs (none when it is 0). From it:

- `zfs_pool_txgs_total`: the number of the last committed txg. It grows by
  one per txg, so rate() of it is the txg rate (a txg every zfs_txg_timeout
  seconds when idle, faster when dirty data fills up).
- the last committed txg: dirty/read/written bytes, reads, writes and how
  long each phase took (open, quiesce, wait for sync, sync);
- over the recorded window: mean and max of each phase and of dirty bytes,
  the time it spans and the bytes written in that time (their ratio is the
  window's write rate, `zfs_pool_txg_window_written_bytes /
  zfs_pool_txg_window_span_seconds`; a rate is not exported as a gauge).
- `zfs_pool_txg_dirty_bytes`: dirty bytes of the txgs not yet committed
  (open, quiescing, waiting, syncing), to compare with zfs_dirty_data_max.

Window statistics are gauges: the window slides, they are not counters.
"""
from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from advisor.exporters.base import Scrape
from advisor.exporters.registry import collector
from advisor.hostmodel.facts import Txg

_SRC = "Source: /proc/spl/kstat/zfs/<pool>/txgs."
PHASES = ("open", "quiesce", "wait", "sync")


def _phase(txg: Txg, phase: str) -> float:
    return getattr(txg, f"{phase}_seconds")


@collector("txgs", after="histograms")
def collect(scrape: Scrape) -> Iterable[Metric]:
    total = CounterMetricFamily(
        "zfs_pool_txgs",
        f"Number of the last committed transaction group: rate() of it is the txg rate. {_SRC}",
        labels=["pool"],
    )
    last = {
        key: GaugeMetricFamily(f"zfs_pool_txg_last_{key}", f"{doc} of the last committed txg. {_SRC}", labels=["pool"])
        for key, doc in (
            ("dirty_bytes", "Dirty bytes"),
            ("read_bytes", "Bytes read"),
            ("written_bytes", "Bytes written"),
            ("reads", "Read operations"),
            ("writes", "Write operations"),
        )
    }
    last_phase = GaugeMetricFamily(
        "zfs_pool_txg_last_phase_seconds",
        f"Time the last committed txg spent in each phase: open (accepting writes), quiesce, wait (for the "
        f"previous sync), sync (writing to disk). {_SRC}",
        labels=["pool", "phase"],
    )
    mean_phase = GaugeMetricFamily(
        "zfs_pool_txg_window_mean_phase_seconds",
        f"Mean time per phase over the committed txgs in the kstat's window (zfs_txg_history rows). {_SRC}",
        labels=["pool", "phase"],
    )
    max_phase = GaugeMetricFamily(
        "zfs_pool_txg_window_max_phase_seconds",
        f"Longest time per phase over the committed txgs in the kstat's window. {_SRC}",
        labels=["pool", "phase"],
    )
    mean_dirty = GaugeMetricFamily(
        "zfs_pool_txg_window_mean_dirty_bytes",
        f"Mean dirty bytes per committed txg in the window. {_SRC}",
        labels=["pool"],
    )
    max_dirty = GaugeMetricFamily(
        "zfs_pool_txg_window_max_dirty_bytes",
        f"Most dirty bytes of a committed txg in the window. {_SRC}",
        labels=["pool"],
    )
    span = GaugeMetricFamily(
        "zfs_pool_txg_window_span_seconds",
        f"Time from the birth of the oldest committed txg in the window to that of the newest: "
        f"(zfs_pool_txg_window_txgs - 1) / this is the window's txg rate. {_SRC}",
        labels=["pool"],
    )
    written = GaugeMetricFamily(
        "zfs_pool_txg_window_written_bytes",
        f"Bytes written by the syncs of the committed txgs in the window born within "
        f"zfs_pool_txg_window_span_seconds (all but the oldest): / that span is the window's write rate. {_SRC}",
        labels=["pool"],
    )
    window = GaugeMetricFamily(
        "zfs_pool_txg_window_txgs", f"Committed txgs in the window (at most zfs_txg_history). {_SRC}", labels=["pool"]
    )
    pending = GaugeMetricFamily(
        "zfs_pool_txg_dirty_bytes",
        f"Dirty bytes in txgs not yet committed (open, quiescing, waiting, syncing). {_SRC}",
        labels=["pool"],
    )
    for pool in scrape.pools:
        committed = [t for t in pool.txgs if t.state == "committed"]
        if not pool.txgs:
            continue
        name = pool.name
        pending.add_metric([name], sum(t.dirty_bytes for t in pool.txgs if t.state != "committed"))
        window.add_metric([name], len(committed))
        if not committed:
            continue
        newest = max(committed, key=lambda t: t.txg)
        total.add_metric([name], newest.txg)
        for key, family in last.items():
            family.add_metric([name], getattr(newest, key))
        for phase in PHASES:
            times = [_phase(t, phase) for t in committed]
            last_phase.add_metric([name, phase], _phase(newest, phase))
            mean_phase.add_metric([name, phase], sum(times) / len(times))
            max_phase.add_metric([name, phase], max(times))
        dirty = [t.dirty_bytes for t in committed]
        mean_dirty.add_metric([name], sum(dirty) / len(dirty))
        max_dirty.add_metric([name], max(dirty))
        oldest = min(committed, key=lambda t: t.txg)
        span.add_metric([name], newest.birth_seconds - oldest.birth_seconds)
        # the oldest txg's writes happened before the span started
        written.add_metric([name], sum(t.written_bytes for t in committed if t is not oldest))
    return (total, *last.values(), last_phase, mean_phase, max_phase, mean_dirty, max_dirty, span, written,
            window, pending)
