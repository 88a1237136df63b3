"""No family shares a name with node_exporter's or pdf/zfs_exporter's and means something else.

zfs_exporter's families and labels below are copied from its collector/pool.go and
collector/dataset.go at v2.3.11 (https://github.com/pdf/zfs_exporter); node_exporter names
everything node_* (collector/zfs*.go, diskstats_linux.go). A family here with one of those
names must carry the same labels (docs/metrics.md, "Drop-in compatible").
"""
from __future__ import annotations

import re
from pathlib import Path

from advisor.exporters.base import ExportOptions, Scrape
from advisor.exporters.collector import MetricsRenderer
from support.hosts import make_host

REPO = Path(__file__).resolve().parents[2]
_POOL = {"pool"}
_DATASET = {"name", "pool", "type"}
ZFS_EXPORTER = {
    **{f"zfs_pool_{m}": _POOL for m in (
        "allocated_bytes", "deduplication_ratio", "capacity_ratio", "expand_size_bytes", "fragmentation_ratio",
        "free_bytes", "freeing_bytes", "health", "leaked_bytes", "readonly", "size_bytes")},
    **{f"zfs_dataset_{m}": _DATASET for m in (
        "available_bytes", "compression_ratio", "logical_used_bytes", "logical_referenced_bytes", "quota_bytes",
        "referenced_compression_ratio", "referenced_bytes", "referenced_quota_bytes",
        "referenced_reservation_bytes", "reservation_bytes", "snapshot_count_total", "snapshot_limit_total",
        "used_bytes", "used_by_children_bytes", "used_by_dataset_bytes", "used_by_referenced_reservation_bytes",
        "used_by_snapshot_bytes", "volume_size_bytes", "written_bytes", "creation_timestamp")},
    "zfs_scrape_collector_duration_seconds": {"collector"},
    "zfs_scrape_collector_success": {"collector"},
}


def exported() -> dict[str, set[str]]:
    """Family (counters with _total, as Prometheus stores them) -> label names, in every golden and a full scrape."""
    texts = [p.read_text() for p in (REPO / "tests" / "golden" / "metrics").rglob("*.prom")]
    detail = ExportOptions(per_vdev=True, per_dataset=True)
    texts.append(MetricsRenderer().render(Scrape(make_host(), detail)).decode())
    families: dict[str, set[str]] = {}
    for text in texts:
        for name, labels in re.findall(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})? ", text, re.MULTILINE):
            keys = set(re.findall(r'([a-zA-Z_]\w*)="', labels)) - {"le"}
            families.setdefault(re.sub(r"_(bucket|sum|count|info)$", "", name), set()).update(keys)
    return families


def test_a_name_shared_with_zfs_exporter_has_its_labels():
    ours = exported()
    shared = {name: ours[name] for name in ZFS_EXPORTER if name in ours}
    assert len(shared) >= 12, sorted(shared)  # the drop-in families exist
    assert {name: labels for name, labels in shared.items() if labels != ZFS_EXPORTER[name]} == {}


def test_no_name_in_a_namespace_this_exporter_does_not_own():
    foreign = sorted(n for n in exported() if n.startswith(("node_", "disk_")) or not n.startswith("zfs_"))
    assert foreign == []
