"""Block devices behind the pools: /proc/diskstats and /sys/block/<dev>/queue, device.

Prefix `zfs_advisor_disk_`: the counters keep node_exporter's diskstats names,
units and label (zfs_advisor_disk_reads_completed_total <->
node_disk_reads_completed_total, label `device`), so a PromQL expression carries
over by changing the prefix; but this exporter owns neither `node_disk_` nor
the bare `disk_` other exporters use, so no name here means something else there. Only the
disks behind the selected pools' leaf vdevs are exported unless
metrics_all_disks is set; zfs_vdev_info{disk} joins a vdev to its disk.

The 17 diskstats counters are what node_exporter's diskstats collector exports already
(node_disk_*), so they are off unless metrics_diskstats is set: with node_exporter, join its
node_disk_* to zfs_advisor_disk_info on (instance, device). What only this exporter knows
stays: the identity, sizes, rotational flag and queue settings, and which disks are behind
the pools.
"""
from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily, Metric

from advisor.exporters.base import CACHED, Scrape
from advisor.exporters.registry import collector
from advisor.hostmodel.facts import Disk

_STATS = "Source: /proc/diskstats."
_SYS = "/sys/block/<device>"
# (DiskStats field, metric name, kind, description), node_exporter's names, zfs_advisor_disk_ for node_disk_.
STATS = (
    ("reads_completed", "zfs_advisor_disk_reads_completed", "counter", "Reads completed"),
    ("reads_merged", "zfs_advisor_disk_reads_merged", "counter", "Reads merged"),
    ("sectors_read", "zfs_advisor_disk_read_bytes", "counter", "Bytes read (sectors x 512)"),
    ("read_seconds", "zfs_advisor_disk_read_time_seconds", "counter", "Time spent reading"),
    ("writes_completed", "zfs_advisor_disk_writes_completed", "counter", "Writes completed"),
    ("writes_merged", "zfs_advisor_disk_writes_merged", "counter", "Writes merged"),
    ("sectors_written", "zfs_advisor_disk_written_bytes", "counter", "Bytes written (sectors x 512)"),
    ("write_seconds", "zfs_advisor_disk_write_time_seconds", "counter", "Time spent writing"),
    ("ios_in_progress", "zfs_advisor_disk_io_now", "gauge", "I/Os in progress"),
    ("io_seconds", "zfs_advisor_disk_io_time_seconds", "counter", "Time the device had I/O in flight (utilisation)"),
    ("weighted_io_seconds", "zfs_advisor_disk_io_time_weighted_seconds", "counter",
     "I/O time weighted by I/Os in flight"),
    ("discards_completed", "zfs_advisor_disk_discards_completed", "counter", "Discards completed"),
    ("discards_merged", "zfs_advisor_disk_discards_merged", "counter", "Discards merged"),
    ("sectors_discarded", "zfs_advisor_disk_discarded_sectors", "counter", "Sectors discarded"),
    ("discard_seconds", "zfs_advisor_disk_discard_time_seconds", "counter", "Time spent discarding"),
    ("flushes_completed", "zfs_advisor_disk_flush_requests", "counter", "Flush requests completed"),
    ("flush_seconds", "zfs_advisor_disk_flush_requests_time_seconds", "counter", "Time spent flushing"),
)
_BYTES_PER_SECTOR = 512  # diskstats counts 512-byte sectors whatever the device's sector size


def _selected(scrape: Scrape) -> list[Disk]:
    if scrape.options.all_disks:
        return list(scrape.host.disks)
    names = [leaf.disk for pool in scrape.pools for leaf in pool.leaves() if leaf.disk]
    return [d for n in dict.fromkeys(names) if (d := scrape.host.disk(n))]


@collector("disks", after="dataset_io")
def collect(scrape: Scrape) -> Iterable[Metric]:
    disks = _selected(scrape)
    families: list[Metric] = []
    for field, name, kind, doc in STATS if scrape.options.diskstats else ():
        cls = CounterMetricFamily if kind == "counter" else GaugeMetricFamily
        family = cls(name, f"{doc}. {_STATS}", labels=["device"])
        scale = _BYTES_PER_SECTOR if field in ("sectors_read", "sectors_written") else 1
        for disk in disks:
            if disk.stats is not None and (value := getattr(disk.stats, field)) is not None:
                family.add_metric([disk.name], value * scale)
        families.append(family)
    info = InfoMetricFamily(
        "zfs_advisor_disk",
        f"Block device identity and I/O scheduler. Source: {_SYS}/device/{{model,vendor,serial}}, queue/scheduler."
        f"{CACHED}",
        labels=["device"],
    )
    gauges = (
        ("zfs_advisor_disk_size_bytes", "Device size", f"{_SYS}/size x 512", lambda d: d.size_bytes),
        ("zfs_advisor_disk_logical_block_size_bytes", "Logical sector size", f"{_SYS}/queue/logical_block_size",
         lambda d: d.logical_block_size),
        ("zfs_advisor_disk_physical_block_size_bytes", "Physical sector size (what ashift should cover)",
         f"{_SYS}/queue/physical_block_size", lambda d: d.physical_block_size),
        ("zfs_advisor_disk_rotational", "1 for rotating media (HDD), 0 for SSD", f"{_SYS}/queue/rotational",
         lambda d: None if d.rotational is None else float(d.rotational)),
        ("zfs_advisor_disk_queue_nr_requests", "Block layer queue size", f"{_SYS}/queue/nr_requests",
         lambda d: d.nr_requests),
        ("zfs_advisor_disk_queue_depth", "Device (SCSI/SATA) queue depth", f"{_SYS}/device/queue_depth",
         lambda d: d.queue_depth),
    )
    for disk in disks:
        info.add_metric(
            [disk.name],
            {
                "model": disk.model or "",
                "vendor": disk.vendor or "",
                "serial": disk.serial or "",
                "scheduler": disk.scheduler or "",
                "media": disk.media,
            },
        )
    families.append(info)
    for name, doc, source, value in gauges:
        family = GaugeMetricFamily(name, f"{doc}. Source: {source}.{CACHED}", labels=["device"])
        for disk in disks:
            if (v := value(disk)) is not None:
                family.add_metric([disk.name], v)
        families.append(family)
    return families
