"""Pools: capacity, health, scrub/resilver and the pool I/O counters.

Sources: `zpool get -Hp all` (size, allocated, free, freeing, leaked, expandsize, fragmentation,
capacity, dedupratio, readonly and tuning-relevant properties), `zpool status`
(scan, the errors: line) and /proc/spl/kstat/zfs/<pool>/: `state` (health, read at
each scrape) and `iostats` (OpenZFS >= 2.1: TRIM counters; from 2.3, with Direct
I/O, the pool's logical reads and writes and their bytes, through the ARC or direct:
the per-pool byte counters).
"""
from __future__ import annotations

import re
from collections.abc import Iterable

from prometheus_client.core import GaugeMetricFamily, InfoMetricFamily, Metric

from advisor.exporters.base import CACHED, Scrape
from advisor.exporters.named import KStatFamilies, KStatSpec
from advisor.exporters.registry import collector
from advisor.hostmodel.facts import Pool

# zpool_state_to_name() / vdev_state_t: every health a pool can report, in the order of
# pdf/zfs_exporter's zfs_pool_health codes (0 ONLINE .. 6 SUSPENDED), which this family keeps.
HEALTH_STATES = ("ONLINE", "DEGRADED", "FAULTED", "OFFLINE", "UNAVAIL", "REMOVED", "SUSPENDED")
HEALTH_CODES = ", ".join(f"{code}: {state}" for code, state in enumerate(HEALTH_STATES))
# Neither source is current: the state kstat is missing and the zpool output is overdue.
UNKNOWN_HEALTH = "UNKNOWN"
HEALTH_SOURCE = (
    "Source: /proc/spl/kstat/zfs/<pool>/state, read at each scrape without the pool's config lock "
    "(spa_state_to_name(), openzfs/zfs#7563), so it says SUSPENDED while zpool commands hang; "
    "zpool get health where that kstat is missing, UNKNOWN when that output is overdue too "
    "(zfs_advisor_facts_stale 1)."
)
SCAN_STATES = ("scanning", "paused", "finished", "canceled", "none")
# Pool properties that matter for tuning, exported as labels of zfs_pool_properties_info.
INFO_PROPERTIES = ("ashift", "autotrim", "autoexpand", "autoreplace", "failmode", "guid")

_TRIM = r"(?P<kind>trim|autotrim|simple_trim)"
_RESULT = r"(?P<result>written|skipped|failed)"
_PATH = r"(?P<path>arc|direct)"
IOSTATS = KStatSpec(
    prefix="zfs_pool",
    path="/proc/spl/kstat/zfs/<pool>/iostats",
    # the kind of TRIM, its outcome and the I/O path are labels: sum without (path) is the pool's total
    split=(
        (f"{_TRIM}_bytes_{_RESULT}", "trim_bytes"),
        (f"{_TRIM}_extents_{_RESULT}", "trim_extents"),
        (f"{_PATH}_read_bytes", "read_bytes"),
        (f"{_PATH}_write_bytes", "written_bytes"),
        (f"{_PATH}_read_count", "reads"),
        (f"{_PATH}_write_count", "writes"),
    ),
    help={
        "trim_bytes": "Bytes TRIM handled, by kind (trim: zpool trim, autotrim, simple_trim: "
                      "vdev_trim_simple()) and result (written, skipped, failed)",
        "trim_extents": "Extents TRIM handled, by kind (trim: zpool trim, autotrim, simple_trim: "
                        "vdev_trim_simple()) and result (written, skipped, failed)",
        "read_bytes": "Bytes read from the pool's datasets and volumes (logical, before compression and "
                      "redundancy), by path: arc (through the ARC) or direct (Direct I/O); OpenZFS >= 2.3",
        "written_bytes": "Bytes written to the pool's datasets and volumes (logical), by path: arc or "
                         "direct (Direct I/O); OpenZFS >= 2.3",
        "reads": "Reads from the pool's datasets and volumes, by path: arc or direct (Direct I/O); OpenZFS >= 2.3",
        "writes": "Writes to the pool's datasets and volumes, by path: arc or direct (Direct I/O); OpenZFS >= 2.3",
    },
)


def current_health(pool: Pool, stale: bool) -> str:
    """The pool's health now: the state kstat when there is one; zpool's last output while it is current."""
    if pool.kstat_state:
        return pool.kstat_state
    return UNKNOWN_HEALTH if stale else pool.health


def _data_errors(errors: str | None) -> int | None:
    """'No known data errors' -> 0; '3 data errors, use -v ...' -> 3."""
    if errors is None:
        return None
    if errors.strip().lower().startswith("no known data errors"):
        return 0
    match = re.match(r"\s*(\d+)\s+data error", errors)
    return int(match.group(1)) if match else None


def _scan(scrape: Scrape, pools: list[Pool]) -> Iterable[Metric]:
    src = f"Source: zpool status.{CACHED}"
    state = GaugeMetricFamily(
        "zfs_pool_scan_state",
        f"State of the last or current scrub/resilver, one series per state (1 = current); "
        f"`function` is scrub, resilver or none. {src}",
        labels=["pool", "function", "state"],
    )
    docs = {
        "progress": ("zfs_pool_scan_progress_ratio", "Issued / to-examine bytes of the current scan (0..1); 1 once the last scan finished"),
        "examined": ("zfs_pool_scan_examined_bytes", "Bytes scanned (examined)"),
        "issued": ("zfs_pool_scan_issued_bytes", "Bytes issued for scan I/O"),
        "to_examine": ("zfs_pool_scan_to_examine_bytes", "Bytes the scan has to examine in total"),
        "errors": ("zfs_pool_scan_errors", "Errors found (repaired or not) by the last or current scan"),
        "start": ("zfs_pool_scan_start_timestamp_seconds", "When the last or current scan started (Unix time)"),
        "end": ("zfs_pool_scan_end_timestamp_seconds", "When the last scan ended (Unix time)"),
    }
    gauges = {key: GaugeMetricFamily(name, f"{doc}. {src}", labels=["pool"]) for key, (name, doc) in docs.items()}
    for pool in pools:
        scan = pool.scan
        for s in SCAN_STATES:
            state.add_metric([pool.name, scan.function, s], 1.0 if scan.state == s else 0.0)
        if scan.function == "none":
            continue
        gauges["errors"].add_metric([pool.name], scan.errors)
        values = {
            "progress": scan.progress_ratio,
            "examined": scan.examined_bytes,
            "issued": scan.issued_bytes,
            "to_examine": scan.to_examine_bytes,
            "start": scan.started.timestamp() if scan.started else None,
            "end": scan.ended.timestamp() if scan.ended and not scan.active else None,
        }
        for key, value in values.items():
            if value is not None:
                gauges[key].add_metric([pool.name], value)
    yield state
    yield from gauges.values()


def _bytes(pool: Pool, prop: str) -> int | None:
    """A byte count among the pool's properties (checked digits: advisor/host/property_domains.py)."""
    value = pool.properties.get(prop)
    return int(value) if value is not None and value.isdigit() else None


@collector("pools", after="kstats")
def collect(scrape: Scrape) -> Iterable[Metric]:
    pools = scrape.pools
    src = f"Source: zpool get -Hp all.{CACHED}"
    numeric = (
        ("zfs_pool_size_bytes", "Pool size (zpool get size)", lambda p: p.size_bytes),
        ("zfs_pool_allocated_bytes", "Bytes allocated in the pool (zpool get allocated)", lambda p: p.allocated_bytes),
        ("zfs_pool_free_bytes", "Free bytes in the pool (zpool get free)", lambda p: p.free_bytes),
        (
            "zfs_pool_fragmentation_ratio",
            "Free-space fragmentation (zpool get fragmentation), 0..1",
            lambda p: p.fragmentation_ratio,
        ),
        ("zfs_pool_capacity_ratio", "Allocated / size (zpool get capacity), 0..1", lambda p: p.capacity_ratio),
        ("zfs_pool_deduplication_ratio", "Deduplication ratio (zpool get dedupratio), >= 1", lambda p: p.dedup_ratio),
        ("zfs_pool_readonly", "1 if the pool is imported read-only", lambda p: float(p.readonly)),
        # zfs_exporter's names; no series where zpool prints `-` (expandsize of a pool that cannot grow)
        ("zfs_pool_freeing_bytes",
         "Bytes still to be reclaimed after a dataset or snapshot was destroyed (zpool get freeing)",
         lambda p: _bytes(p, "freeing")),
        ("zfs_pool_leaked_bytes", "Bytes not released while freeing but still allocated (zpool get leaked)",
         lambda p: _bytes(p, "leaked")),
        ("zfs_pool_expand_size_bytes", "Unused space by which the pool can grow (zpool get expandsize)",
         lambda p: _bytes(p, "expandsize")),
    )
    for name, doc, value in numeric:
        family = GaugeMetricFamily(name, f"{doc}. {src}", labels=["pool"])
        for pool in pools:
            if (v := value(pool)) is not None:
                family.add_metric([pool.name], v)
        yield family

    health = GaugeMetricFamily(
        "zfs_pool_health",
        f"Pool health code [{HEALTH_CODES}], as zfs_exporter exports it; "
        f"no series for a state not in this list. {HEALTH_SOURCE}",
        labels=["pool"],
    )
    health_state = GaugeMetricFamily(
        "zfs_pool_health_state",
        f"Pool health as a state set: one series per state, 1 for the current one. {HEALTH_SOURCE}",
        labels=["pool", "state"],
    )
    info = InfoMetricFamily(
        "zfs_pool_properties", f"Tuning-relevant pool properties as labels. {src}", labels=["pool"]
    )
    errors = GaugeMetricFamily(
        "zfs_pool_data_errors",
        f"Permanent data errors (zpool status 'errors:' line). Source: zpool status.{CACHED}",
        labels=["pool"],
    )
    for pool in pools:
        now = current_health(pool, scrape.stale)
        states = HEALTH_STATES if now in HEALTH_STATES else (*HEALTH_STATES, now)
        for state in states:
            health_state.add_metric([pool.name, state], 1.0 if now == state else 0.0)
        if now in HEALTH_STATES:
            health.add_metric([pool.name], HEALTH_STATES.index(now))
        info.add_metric([pool.name], {k: pool.properties.get(k, "") for k in INFO_PROPERTIES})
        if (n := _data_errors(pool.errors)) is not None:
            errors.add_metric([pool.name], n)
    yield from (health, health_state, info, errors)
    yield from _scan(scrape, pools)

    iostats = KStatFamilies(IOSTATS, ["pool"])
    for pool in pools:
        if pool.iostats is not None:
            iostats.add(pool.iostats, [pool.name])
    yield from iostats
