"""Each pool's member disks over the recognition's window (advisor/recognise/window.py feeds it at
every collection, with the window's start): the share of the window each disk had I/O in flight,
from the io_ticks of /proc/diskstats the collection already reads (advisor/evidence/application_bound.py
says what an answer makes of it)."""
from __future__ import annotations

from advisor.evidence.application_bound import PoolBusy, pool_busy
from advisor.hostmodel.facts import Host
from advisor.recognise.readings import add_reading


class DiskWindow:
    def __init__(self) -> None:
        self._readings: dict[str, list[tuple[float, float]]] = {}  # disk -> (time, io_seconds)
        self._pools: dict[str, PoolBusy] = {}

    def pools(self) -> dict[str, PoolBusy]:
        """pool -> its disks over the window; a pool whose disks the window does not cover yet is
        left out (whole dicts, replaced, never modified)."""
        return self._pools

    def observe(self, host: Host, at: float, start: float) -> bool:
        """One collection read at `at`, the window starting at `start`; True when what `pools`
        says changed."""
        readings: dict[str, list[tuple[float, float]]] = {}
        pools: dict[str, PoolBusy] = {}
        for pool in host.pools:
            shares: dict[str, float] = {}
            for disk in host.pool_disks(pool):
                if disk.stats is None:
                    continue
                series = readings[disk.name] = self._readings.get(disk.name, [])
                first = add_reading(series, at, disk.stats.io_seconds, start)
                if first is not None and at > start and disk.stats.io_seconds >= first:  # not a reset
                    shares[disk.name] = (disk.stats.io_seconds - first) / (at - start)
            if shares:
                pools[pool.name] = pool_busy(pool.name, shares, at - start)
        self._readings = readings
        changed = pools != self._pools
        self._pools = pools
        return changed
