"""Pool and vdev I/O: queue depths, space, errors, state.

Sources: `zpool iostat -vlq -Hp` (one row per vdev, the pool's own row for
the pool) and `zpool status` (tree, state, error counters). Read without an
interval, zpool iostat reports ops, bandwidth and latencies as *averages since
the pool was imported*: not exported (a gauge averaged over months says nothing
about now; rate() of a counter is PromQL's to take). The counters to take them
from are the histograms (zfs_pool_latency_seconds: `_count` is I/Os completed,
`_sum / _count` zpool iostat -l's average), the pool's iostats kstat
(zfs_pool_read_bytes_total, OpenZFS >= 2.3), the datasets' objset kstats and
node_exporter's diskstats.

Per pool (the pool's row) by default; every vdev gets its state, errors and
space; queue depths per vdev only with `metrics_per_vdev`.
"""
from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily, Metric

from advisor.exporters.base import CACHED, Scrape
from advisor.exporters.ioclass import queue_labels
from advisor.exporters.registry import collector
from advisor.hostmodel.facts import Pool, Vdev, VdevIostat

_IOSTAT = f"Source: zpool iostat -vlq -Hp.{CACHED}"
_STATUS = f"Source: zpool status.{CACHED}"


def _below_root(pool: Pool) -> list[tuple[Vdev, str]]:
    """(vdev, parent name) for every vdev under the pool's root, depth first."""
    out: list[tuple[Vdev, str]] = []

    def walk(vdev: Vdev) -> None:
        for child in vdev.children:
            out.append((child, vdev.name))
            walk(child)

    if pool.root is not None:
        walk(pool.root)
    return out


class _IoFamilies:
    """Queue depths for one level (zfs_pool_* or zfs_vdev_*)."""

    def __init__(self, level: str, labels: list[str]):
        what = "the pool" if level == "pool" else "the vdev"
        self.pending = GaugeMetricFamily(
            f"zfs_{level}_queue_pending_ios",
            f"I/Os waiting in {what}'s vdev queue (zpool iostat -q pend), now. {_IOSTAT}",
            labels=[*labels, "queue", "op"],
        )
        self.active = GaugeMetricFamily(
            f"zfs_{level}_queue_active_ios",
            f"I/Os issued to the device from {what}'s vdev queue (zpool iostat -q activ), now. {_IOSTAT}",
            labels=[*labels, "queue", "op"],
        )

    def add_queues(self, labels: list[str], io: VdevIostat) -> None:
        for column, value in io.queues.items():
            queue, op, kind = queue_labels(column)
            (self.pending if kind == "pend" else self.active).add_metric([*labels, queue, op], value)

    def __iter__(self):
        return iter((self.pending, self.active))


@collector("vdevs", after="import_age", command_output_only=True)
def collect(scrape: Scrape) -> Iterable[Metric]:
    per_vdev = scrape.options.per_vdev
    pool_io = _IoFamilies("pool", ["pool"])
    vdev_io = _IoFamilies("vdev", ["pool", "vdev"])
    info = InfoMetricFamily(
        "zfs_vdev",
        f"The vdev tree: type, group (data, log, cache, special, dedup, spare), parent, state (ONLINE, DEGRADED, "
        f"FAULTED, ...) and, for leaves, the block device (see disk_* metrics). {_STATUS}",
        labels=["pool", "vdev"],
    )
    errors = CounterMetricFamily(
        "zfs_vdev_errors",
        f"I/O errors ZFS counted on the vdev (zpool status READ/WRITE/CKSUM; reset by zpool clear). {_STATUS}",
        labels=["pool", "vdev", "error"],
    )
    allocated = GaugeMetricFamily(
        "zfs_vdev_allocated_bytes", f"Bytes allocated on a top-level vdev. {_IOSTAT}", labels=["pool", "vdev"]
    )
    free = GaugeMetricFamily(
        "zfs_vdev_free_bytes", f"Free bytes on a top-level vdev. {_IOSTAT}", labels=["pool", "vdev"]
    )
    for pool in scrape.pools:
        if pool.root is not None and pool.root.iostat is not None:
            pool_io.add_queues([pool.name], pool.root.iostat)
        for vdev, parent in _below_root(pool):
            labels = [pool.name, vdev.name]
            info.add_metric(
                labels,
                {
                    "type": vdev.type,
                    "group": vdev.group,
                    "parent": parent,
                    "state": vdev.state or "",
                    "disk": vdev.disk or "",
                },
            )
            errors.add_metric([*labels, "read"], vdev.read_errors)
            errors.add_metric([*labels, "write"], vdev.write_errors)
            errors.add_metric([*labels, "checksum"], vdev.checksum_errors)
            if vdev.iostat is None:
                continue
            if vdev.iostat.allocated_bytes is not None:
                allocated.add_metric(labels, vdev.iostat.allocated_bytes)
            if vdev.iostat.free_bytes is not None:
                free.add_metric(labels, vdev.iostat.free_bytes)
            if per_vdev:
                vdev_io.add_queues(labels, vdev.iostat)
    yield from pool_io
    yield from (info, errors, allocated, free)
    yield from vdev_io
