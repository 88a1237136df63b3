"""Each pool's member disks over the recognition's window (advisor/recognise/window.py feeds it at
every collection, with the window's start): the share of the window each disk had I/O in flight,
between two ends from the /proc/diskstats the collection already reads, io_ticks and the summed
I/O time (advisor/evidence/application_bound.py says why two, and what an answer makes of them)."""
from __future__ import annotations

from advisor.evidence.application_bound import PoolBusy, pool_busy
from advisor.hostmodel.facts import DiskStats, Host
from advisor.recognise.readings import add_reading

Counters = tuple[float, float]  # (io_seconds, weighted_io_seconds): the busy time's two ends


def _counters(stats: DiskStats) -> Counters:
    return stats.io_seconds, stats.weighted_io_seconds


class DiskWindow:
    def __init__(self) -> None:
        self._readings: dict[str, list[tuple[float, Counters]]] = {}  # disk -> (time, counters)
        self._pools: dict[str, PoolBusy] = {}

    def pools(self) -> dict[str, PoolBusy]:
        """pool -> its disks over the window; a pool whose disks the window does not cover yet is
        left out (whole dicts, replaced, never modified)."""
        return self._pools

    def observe(self, host: Host, at: float, start: float) -> bool:
        """One collection read at `at`, the window starting at `start`; True when what `pools`
        says changed."""
        readings: dict[str, list[tuple[float, Counters]]] = {}
        pools: dict[str, PoolBusy] = {}
        for pool in host.pools:
            busy: dict[str, float] = {}
            in_flight: dict[str, float] = {}
            for disk in host.pool_disks(pool):
                if disk.stats is None:
                    continue
                now = _counters(disk.stats)
                series = readings[disk.name] = self._readings.get(disk.name, [])
                first = add_reading(series, at, now, start)
                if first is not None and at > start and now[0] >= first[0] and now[1] >= first[1]:  # not a reset
                    busy[disk.name] = (now[0] - first[0]) / (at - start)
                    in_flight[disk.name] = (now[1] - first[1]) / (at - start)
            if busy:
                pools[pool.name] = pool_busy(pool.name, busy, in_flight, at - start)
        self._readings = readings
        changed = pools != self._pools
        self._pools = pools
        return changed
