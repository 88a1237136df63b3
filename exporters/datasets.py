"""Datasets and zvols: tuning properties, space, and logical I/O from objset kstats.

Sources: `zfs get -Hp -t filesystem,volume <tuning properties>` and
/proc/spl/kstat/zfs/<pool>/objset-0x<id> (reads/writes as the applications
issued them, before compression and the ARC).

Names and labels (`name`, `pool`, `type`) of the space gauges are
pdf/zfs_exporter's, with the same meaning (zfs get -p values), so its dataset
dashboards and alerts keep working (docs/metrics.md lists the families).

Cardinality: at default detail a filesystem costs 14 series (1 properties
info, 1 block size, 1 compression ratio, 5 space gauges: used, available,
referenced, logicalused, quota (0: none, as zfs_exporter has it); 6 I/O
counters), a volume 14 (volsize instead of quota), each refquota or
reservation that is set one more: well under the ~26 series
node_exporter's zfs collector spends per dataset. `metrics_per_dataset` adds every other objset counter (per-dataset ZIL
counters on OpenZFS >= 2.2); `metrics_dataset_include/_exclude` select
datasets by name.
"""
from __future__ import annotations

import operator
from collections.abc import Iterable
from typing import Any

from prometheus_client.core import Metric

from advisor.exporters.base import CACHED, Scrape
from advisor.exporters.exposition import RowsFamily
from advisor.exporters.kstats import ZIL_BYTES, zil_names
from advisor.exporters.named import KStatFamilies, KStatSpec, Written
from advisor.exporters.registry import collector
from advisor.hostmodel.facts import Dataset, KStat
from advisor.hostmodel.tunables import TUNING_PROPERTIES

# (property, metric, description): numeric space properties. Limits that are
# not set (0) get no series: most datasets have none, and each costs a series.
OPTIONAL = frozenset({"refquota", "reservation", "refreservation"})
SPACE = (
    ("used", "zfs_dataset_used_bytes", "Space used by the dataset and its descendants (used)"),
    ("available", "zfs_dataset_available_bytes", "Space available to the dataset (available)"),
    ("referenced", "zfs_dataset_referenced_bytes", "Space referenced by the dataset itself (referenced)"),
    ("logicalused", "zfs_dataset_logical_used_bytes", "Logical space used, before compression (logicalused)"),
    ("quota", "zfs_dataset_quota_bytes", "Quota of a filesystem (quota), 0 when none"),
    ("refquota", "zfs_dataset_referenced_quota_bytes", "Quota on referenced space (refquota); no series when none"),
    ("reservation", "zfs_dataset_reservation_bytes", "Reservation (reservation); no series when none"),
    ("refreservation", "zfs_dataset_referenced_reservation_bytes", "Reservation of referenced space (refreservation); "
     "no series when none"),
    ("volsize", "zfs_dataset_volume_size_bytes", "Volume size of a zvol (volsize)"),
)
# Labels of zfs_dataset_properties_info: every tuning property collected that is not a number above.
INFO_PROPERTIES = tuple(
    p for p in TUNING_PROPERTIES if p not in {prop for prop, _, _ in SPACE} | {"type", "compressratio"}
)
OBJSET = KStatSpec(
    prefix="zfs_dataset",
    path="/proc/spl/kstat/zfs/<pool>/objset-0x<id>",
    # logical_*: zfs_exporter's zfs_dataset_written_bytes is the `written` property (space since the last snapshot)
    names={"nread": "logical_read_bytes", "nwritten": "logical_written_bytes", "nunlinks": "unlinks",
           "nunlinked": "unlinked", **zil_names("zil_")},
    bytes=f"zil{ZIL_BYTES}",
    help={
        "reads": "Read calls on the dataset (logical, as applications issue them)",
        "nread": "Bytes read from the dataset (logical)",
        "writes": "Write calls on the dataset (logical)",
        "nwritten": "Bytes written to the dataset (logical)",
        "nunlinks": "Files queued for deletion",
        "nunlinked": "Files deleted",
    },
)
CORE_IO = tuple(OBJSET.help)  # in this order


def _block_size(ds: Dataset) -> int | None:
    return ds.bytes_value("volblocksize" if ds.type == "volume" else "recordsize")


def _compress_ratio(ds: Dataset) -> float | None:
    value = ds.value("compressratio")
    try:
        return float(value.rstrip("x")) if value else None
    except ValueError:
        return None


@collector("datasets", after="tx_assign", command_output_only=True)
def collect(scrape: Scrape) -> Iterable[Metric]:
    """Properties and space, from `zfs get` alone."""
    src = f"Source: zfs get -Hp.{CACHED}"
    labels = ["name", "pool", "type"]
    # rows of label values, not a Sample with a dict of 23 labels per dataset (15 MB at 10,000)
    info = RowsFamily(
        "zfs_dataset_properties",
        f"Tuning properties of a filesystem or volume as labels (values as zfs get -p prints them). {src}",
        "info", [*labels, *INFO_PROPERTIES], keep_label_text=False,
    )
    block = RowsFamily(
        "zfs_dataset_block_size_bytes",
        f"recordsize of a filesystem or volblocksize of a volume: the largest block written. {src}",
        "gauge", labels,
    )
    ratio = RowsFamily(
        "zfs_dataset_compression_ratio", f"Compression ratio achieved (compressratio), >= 1. {src}", "gauge", labels
    )
    space = {prop: RowsFamily(name, f"{doc}. {src}", "gauge", labels) for prop, name, doc in SPACE}
    for ds in scrape.datasets:
        key = (ds.name, ds.pool, ds.type)
        props = ds.properties
        info.add((*key, *(props[p].value if p in props else "" for p in INFO_PROPERTIES)), 1.0)
        if (size := _block_size(ds)) is not None:
            block.add(key, size)
        if (r := _compress_ratio(ds)) is not None:
            ratio.add(key, r)
        for prop, family in space.items():
            if (v := ds.bytes_value(prop)) is not None and (v or prop not in OPTIONAL):
                family.add(key, v)
    yield from (info, block, ratio, *space.values())


# name -> (the dataset's objset kstat, the fields asked for, its labels, what was written) as the
# last scrape wrote it: a kstat read from an unchanged file is the very object read before
# (advisor/host/pool_kstats.py), and at 10,000 datasets most are idle between two scrapes.
_IoWritten = tuple[KStat, "tuple[str, ...] | None", tuple[str, str, str], Written]
_IO_WRITTEN: dict[str, _IoWritten] = {}


class SameObjects:
    """Equal to another only when both hold the very same objects in order (`is`, not ==)."""

    __slots__ = ("objects",)

    def __init__(self, objects: Iterable[Any]) -> None:
        self.objects = list(objects)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, SameObjects) and len(self.objects) == len(other.objects)
                and all(map(operator.is_, self.objects, other.objects)))

    __hash__ = None  # type: ignore[assignment]  # unhashable: __eq__ compares mutable lists


def io_source(scrape: Scrape) -> tuple:
    """What collect_io's text depends on: equal for two scrapes while no objset kstat changed
    (the kstats held here keep their ids from being reused)."""
    chosen = scrape.datasets
    return (scrape.options.per_dataset, [ds.name for ds in chosen], [ds.type for ds in chosen],
            SameObjects([ds.io for ds in chosen]))


@collector("dataset_io", after="datasets", source=io_source)
def collect_io(scrape: Scrape) -> Iterable[Metric]:
    """Logical I/O counters, from the objset kstats read for this scrape; a dataset's rows are
    written again only when its kstat changed (and an idle one costs no new object: the
    collector runs on every scrape)."""
    global _IO_WRITTEN
    io = KStatFamilies(OBJSET, ["name", "pool", "type"])
    only = None if scrape.options.per_dataset else CORE_IO
    last = _IO_WRITTEN
    kept: dict[str, _IoWritten] = {}
    for ds in scrape.datasets:
        if (kstat := ds.io) is None:
            continue
        known = last.get(ds.name)
        if known is None or known[0] is not kstat or known[1] != only or known[2][2] != ds.type:
            labels: tuple[str, str, str] = (ds.name, ds.pool, ds.type)
            known = (kstat, only, labels, io.written(kstat, labels, only))
        kept[ds.name] = known
    io.add_written([k[3] for k in kept.values()])
    _IO_WRITTEN = kept  # one assignment: a scrape rendering in another thread sees the old or the new
    yield from io
