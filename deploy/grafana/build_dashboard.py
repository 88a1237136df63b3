#!/usr/bin/env python3
"""Writes zfs-advisor.json, the Grafana dashboard, from the panels listed here.

    python3 deploy/grafana/build_dashboard.py > deploy/grafana/zfs-advisor.json

A fleet dashboard: every query selects `job`, `instance` (and `pool` where the family has one)
from the dashboard's variables and keeps the `instance` label, so two hosts whose pools share a
name (every host has a `tank`) stay two series. Tables are instant queries; heatmaps, which add
their buckets up, repeat once per instance. Only the standard library: it runs anywhere.

`Target.empty_when` says when a query returns nothing by design (no log vdev on the pool, no scan
yet) and names a query that shows this is so: tests/golden/test_grafana_dashboard.py checks every
query against two real services, and takes an empty answer only with that witness.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field

DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
RATE = "$__rate_interval"
DAY = 86400


def sel(pool: bool = True, **matchers: str) -> str:
    """The variables' selector, then `matchers` (a value starting with `~` is a regex)."""
    parts = ['job=~"$job"', 'instance=~"$instance"'] + (['pool=~"$pool"'] if pool else [])
    for name, value in matchers.items():
        parts.append(f'{name}=~"{value[1:]}"' if value.startswith("~") else f'{name}="{value}"')
    return "{" + ",".join(parts) + "}"


def any_pool() -> str:
    """The variables' selector for a family whose series may have no pool (a module parameter's
    change): those show whatever pools are selected."""
    return sel(pool=False)[:-1] + ',pool=~"$pool|"}'


@dataclass(frozen=True)
class Witness:
    """Why a query may be empty on a healthy host, and a query that returns a series (per instance) when so."""

    reason: str
    expr: str


@dataclass(frozen=True)
class Target:
    expr: str
    legend: str = ""
    empty_when: Witness | None = None


@dataclass
class Panel:
    title: str
    kind: str  # timeseries, table, heatmap
    targets: list[Target]
    width: int = 8
    height: int = 8
    unit: str = "short"
    description: str = ""
    thresholds: list[tuple[float | None, str]] = field(default_factory=lambda: [(None, "green")])
    columns: list[str] = field(default_factory=list)  # tables: the label columns shown, in order
    # tables: columns whose cells take a colour, from their value mapping or (None) the thresholds
    colored: dict[str, list[dict] | None] = field(default_factory=dict)
    per_instance: bool = False  # repeat the panel for each selected instance
    max: float | None = None  # y axis from 0 to this (ratios: 1)
    # tables of several queries: one row per series of A with the values of B, C... beside it
    # (Grafana's merge on their common labels), value columns renamed
    merge: bool = False
    show_value: bool = False  # tables: the value column shown (uncoloured), not only the labels
    rename: dict[str, str] = field(default_factory=dict)


# -- value mappings and thresholds ----------------------------------------------------------------

def text_map(colors: dict[str, str], texts: dict[str, str] | None = None) -> list[dict]:
    """Value mappings: each value to its colour (and a display text); any other value uncoloured."""
    texts = texts or {}
    return [{"type": "value", "options": {
                value: {"color": color, "index": i, **({"text": texts[value]} if value in texts else {})}
                for i, (value, color) in enumerate(colors.items())}},
            {"type": "regex", "options": {"pattern": ".*", "result": {"color": "transparent", "index": len(colors)}}}]


# zfs_pool_health_state: SUSPENDED is critical (I/O stopped), every other state than ONLINE is a
# failure to act on; UNKNOWN is the exporter not able to read the state (docs/metrics.md).
HEALTH = text_map({"ONLINE": "green", "DEGRADED": "red", "FAULTED": "red", "OFFLINE": "red", "UNAVAIL": "red",
                   "REMOVED": "red", "SUSPENDED": "dark-red", "UNKNOWN": "purple"})
SCAN = text_map({"scanning": "blue", "paused": "orange", "finished": "green", "canceled": "orange", "none": "orange"},
                {"none": "never scanned"})
VDEV_STATE = text_map({"ONLINE": "green", "DEGRADED": "red", "FAULTED": "red", "OFFLINE": "red", "UNAVAIL": "red",
                       "REMOVED": "red"})
SCAN_AGE = [{"type": "value", "options": {"-1": {"text": "never", "color": "orange", "index": 0},
                                          "0": {"text": "scanning", "color": "blue", "index": 1}}}]
FILL = [(None, "green"), (0.8, "orange"), (0.9, "red")]  # ZfsPoolAlmostFull and ZfsPoolFull

# Dataset properties worth a second look: sync=disabled acknowledges writes before they are on disk
# (zfsprops(7)), compression=off stores every block as written.
SYNC = text_map({"disabled": "orange"})
COMPRESSION = text_map({"off": "orange"})

NEVER_SCANNED = Witness("the pool was never scrubbed or resilvered",
                        f'zfs_pool_scan_state{sel(function="none", state="none")} == 1')
NO_AUX_VDEVS = Witness(
    "the pool has no log, special, dedup or cache vdev",
    f'count by (job, instance, pool) (zfs_vdev_info{sel()}) unless '
    f'count by (job, instance, pool) (zfs_vdev_info{sel(group="~log|special|dedup|cache")})')
NO_EFFECT = Witness(
    "no open recommendation has an expected effect (a probe of the pool or the model's prediction)",
    f'count by (job, instance) (zfs_advisor_recommendation_info{sel(pool=False)}) unless '
    f'count by (job, instance) (zfs_advisor_recommendation_expected_effect_ratio{sel(pool=False)})')

NOT_MEASURED = Witness(
    "no `zfs-advisor probe --pool P --efficiency` report of the pool is stored",
    f'count by (job, instance, pool) (zfs_pool_health_state{sel()}) unless '
    f'count by (job, instance, pool) (zfs_advisor_pool_efficiency_timestamp_seconds{sel()})')
NO_TX_ASSIGN = Witness(
    "the module does not export /proc/spl/kstat/zfs/<pool>/dmu_tx_assign for the pools",
    f'count by (job, instance) (zfs_pool_health_state{sel()}) unless '
    f'count by (job, instance) (zfs_pool_tx_assign_seconds_count{sel()})')
NOT_PROBED = Witness(
    "no completed probe of the pool is stored (zfs-advisor probe, the profiler or POST /v1/probes run one)",
    f'count by (job, instance, pool) (zfs_pool_health_state{sel()}) unless '
    f'count by (job, instance, pool) (zfs_advisor_probe_iops{sel()})')
NO_BUDGET = Witness(
    "the pool is neither in [profiler] pools nor was it ever probed",
    f'count by (job, instance, pool) (zfs_pool_health_state{sel()}) unless '
    f'count by (job, instance, pool) (zfs_advisor_profiler_budget_limit_seconds{sel()})')
NO_CHANGE = Witness(
    "the service has seen no change of a tracked setting since its records began",
    f'count by (job, instance) (zfs_advisor_build_info{sel(pool=False)}) unless '
    f'count by (job, instance) (zfs_advisor_change_timestamp_seconds{any_pool()})')
NOT_COMPARED = Witness(
    "no change has been compared yet (none seen, each still measuring for a window after it, or a window "
    "had no load)",
    f'count by (job, instance) (zfs_advisor_build_info{sel(pool=False)}) unless '
    f'count by (job, instance) (zfs_advisor_change_effect_ratio{sel()})')
# histogram_quantile of buckets that did not move is NaN: a pool no write was assigned to in the window
NO_WRITES = Witness(
    "no write waited for a txg on the pool in the window (an idle pool), or the module does not export "
    "dmu_tx_assign",
    f'count by (job, instance, pool) (zfs_pool_health_state{sel()}) unless '
    f'count by (job, instance, pool) (rate(zfs_pool_tx_assign_seconds_count{sel()}[$__rate_interval]) > 0)')
# zfs_advisor_change_timestamp_seconds' verdict (docs/changes.md)
VERDICT = text_map({"better": "green", "worse": "red", "mixed": "orange", "no measurable effect": "blue",
                    "not enough load": "purple", "measuring": "transparent"})
# The first bucket of zfs_pool_tx_assign_seconds above 1 ms (2^20 ns), as the exporter writes its `le`
TX_ASSIGN_1MS = "0.001048576"

# zfs_advisor_pool_efficiency_ratio: at 85 % of its layout a pool lost nothing to explain
# (advisor/probe/pool_efficiency.py NEAR_LAYOUT); below half, most of the disks' rate is lost
EFFICIENCY = [(None, "red"), (0.5, "orange"), (0.85, "green")]


DISKS = ("The disks behind the pools (zfs_advisor_disk_info), with node_exporter's diskstats counters "
         "(node_disk_*, joined on instance and device: scrape both with the same instance label), or "
         "zfs-advisor's own with metrics_diskstats = true.")
NO_DISK_COUNTERS = Witness(
    "neither node_exporter's node_disk_* (under the same instance label) nor metrics_diskstats give the "
    "counters of the disks behind the pools",
    f'count by (job, instance) (zfs_advisor_disk_info{sel(pool=False)}) '
    f'unless on (instance) count by (instance) (node_disk_io_time_seconds_total{{instance=~"$instance"}}) '
    f'unless on (instance) count by (instance) (zfs_advisor_disk_io_time_seconds_total{sel(pool=False)})')


def rate(name: str, **matchers: str) -> str:
    return f"rate({name}{sel(**matchers)}[{RATE}])"


def host_rate(name: str) -> str:
    """rate() of a host-wide family (no pool label)."""
    return f"rate({name}{sel(pool=False)}[{RATE}])"


def pool_bytes(pool_counter: str, dataset_counter: str) -> str:
    """Bytes per second of each pool: its own counter (zfs_pool_*, OpenZFS >= 2.3, every dataset and
    volume, ARC and Direct I/O added up), or else the sum of its exported datasets' counters."""
    return (f"sum by (job, instance, pool) ({rate(f'zfs_pool_{pool_counter}')}) or "
            f"sum by (job, instance, pool) ({rate(f'zfs_dataset_{dataset_counter}')})")


def disk_rate(counter: str) -> str:
    """rate() of a diskstats counter for each disk behind the pools: node_exporter's node_disk_<counter>,
    joined to zfs_advisor_disk_info on (instance, device) (both jobs must label a host with the same
    instance), or else this exporter's zfs_advisor_disk_<counter> (with metrics_diskstats on)."""
    node = (f'rate(node_disk_{counter}{{instance=~"$instance"}}[{RATE}]) '
            f"* on (instance, device) group_left () zfs_advisor_disk_info{sel(pool=False)}")
    own = host_rate(f"zfs_advisor_disk_{counter}")
    return f"sum by (instance, device) ({node}) or sum by (instance, device) ({own})"


def scan_state_is(state: str, value: int) -> str:
    """`value` for each pool whose scan is in `state`, without the state set's labels."""
    return f"{value} * max without (function, state) (zfs_pool_scan_state{sel(state=state)} == 1)"


def heatmap(title: str, bucket: str, unit: str, empty_when: Witness | None = None, description: str = "",
            **matchers: str) -> Panel:
    """A heatmap of one instance's histogram: buckets add up across the selected pools, never
    across hosts (the panel repeats per instance)."""
    expr = f"sum by (job, instance, le) ({rate(bucket, **matchers)})"
    # full width: Grafana lays the repeats side by side in its place
    return Panel(title, "heatmap", [Target(expr, "{{le}}", empty_when=empty_when)], unit=unit, per_instance=True,
                 width=24, description=description)


# -- the panels, row by row -----------------------------------------------------------------------

def rows() -> list[tuple[str, list[Panel]]]:
    return [
        ("Pools", [
            Panel("Health", "table", [Target(f"zfs_pool_health_state{sel()} == 1")],
                  columns=["instance", "pool", "state"], colored={"state": HEALTH},
                  description="zfs_pool_health_state: SUSPENDED is critical, any state but ONLINE is red, "
                              "UNKNOWN when neither the state kstat nor current zpool output says."),
            Panel("Capacity", "timeseries", [
                Target(f"zfs_pool_capacity_ratio{sel()}", "{{instance}} {{pool}} allocated"),
                Target(f"zfs_pool_fragmentation_ratio{sel()}", "{{instance}} {{pool}} fragmentation"),
            ], unit="percentunit", thresholds=FILL, max=1),
            Panel("Time to full (at the last 6 h's growth)", "table", [Target(
                # growth under 1 B/s counts as 1 B/s (free bytes as seconds: decades for any real
                # pool), so the series exist and the filter keeps the pools full within 30 days
                f"zfs_pool_free_bytes{sel()} / clamp_min(deriv(zfs_pool_allocated_bytes{sel()}[6h]), 1) "
                f"< {30 * DAY}")],
                unit="s", columns=["instance", "pool"], colored={"Value": None},
                thresholds=[(None, "red"), (4 * DAY, "orange"), (14 * DAY, "green")],
                description="Free bytes / growth of allocated bytes over 6 hours; only pools that fill "
                            "within 30 days (ZfsPoolFillingUp warns at 4 days)."),
            Panel("Scan (scrub / resilver)", "table", [Target(f"zfs_pool_scan_state{sel()} == 1")],
                  columns=["instance", "pool", "function", "state"], colored={"state": SCAN}),
            Panel("Time since the last scan", "table", [Target(
                # zpool status gives no end while a scan runs: 0 then, -1 for a pool never scanned
                f"time() - zfs_pool_scan_end_timestamp_seconds{sel()} "
                f"or on (job, instance, pool) {scan_state_is('~scanning|paused', 0)} "
                f"or on (job, instance, pool) {scan_state_is('none', -1)}")],
                unit="s", columns=["instance", "pool"], colored={"Value": SCAN_AGE},
                thresholds=[(None, "green"), (35 * DAY, "orange"), (40 * DAY, "red")],
                description="ZfsScrubOverdue fires at 40 days; \"scanning\" while a scan runs, \"never\" for a "
                            "pool never scanned."),
            Panel("Scan progress", "timeseries", [
                Target(f"zfs_pool_scan_progress_ratio{sel()}", "{{instance}} {{pool}}", NEVER_SCANNED),
            ], unit="percentunit", max=1),
        ]),
        ("Pool I/O", [
            Panel("IOPS (completed I/Os)", "timeseries", [Target(
                f"sum by (job, instance, pool, op) ({rate('zfs_pool_latency_seconds_count', queue='total')})",
                "{{instance}} {{pool}} {{op}}")], unit="iops"),
            Panel("Pool bandwidth (logical)", "timeseries", [
                Target(pool_bytes("read_bytes_total", "logical_read_bytes_total"), "{{instance}} {{pool}} read"),
                Target(pool_bytes("written_bytes_total", "logical_written_bytes_total"),
                       "{{instance}} {{pool}} write"),
            ], unit="Bps", description="Bytes applications read and wrote, before compression and redundancy: "
                                       "the pool's iostats kstat (OpenZFS >= 2.3), else the sum of its datasets' "
                                       "objset kstats."),
            Panel("p99 latency", "timeseries", [
                Target(f"histogram_quantile(0.99, sum by (job, instance, pool, op, le) "
                       f"({rate('zfs_pool_latency_seconds_bucket', queue=queue)}))", f"{{{{instance}}}} {{{{pool}}}} {{{{op}}}} {queue}")
                for queue in ("total", "disk")], unit="s"),
            Panel("Mean wait by queue", "timeseries", [Target(
                f"{rate('zfs_pool_latency_seconds_sum')} / {rate('zfs_pool_latency_seconds_count')}",
                "{{instance}} {{pool}} {{queue}} {{op}}")], unit="s", width=12),
            Panel("Queue depth (active)", "timeseries", [Target(
                f"zfs_pool_queue_active_ios{sel()}", "{{instance}} {{pool}} {{queue}} {{op}}")], width=12),
        ]),
        ("Heatmaps (one per instance)", [
            heatmap("Read latency: $instance", "zfs_pool_latency_seconds_bucket", "s", queue="total", op="read"),
            heatmap("Write latency: $instance", "zfs_pool_latency_seconds_bucket", "s", queue="total", op="write"),
            heatmap("Request sizes (individual): $instance", "zfs_pool_request_size_bytes_bucket", "bytes",
                    io="individual"),
        ]),
        ("Transaction groups and write throttle", [
            Panel("txgs per second", "timeseries", [Target(rate("zfs_pool_txgs_total"), "{{instance}} {{pool}}")],
                  width=12),
            Panel("txg phases (window mean)", "timeseries", [Target(
                f"zfs_pool_txg_window_mean_phase_seconds{sel()}", "{{instance}} {{pool}} {{phase}}")], unit="s",
                width=12),
            Panel("Dirty data vs zfs_dirty_data_max", "timeseries", [
                Target(f"zfs_pool_txg_window_max_dirty_bytes{sel()}", "{{instance}} {{pool}} max dirty per txg"),
                Target(f"zfs_param_dirty_data_max_bytes{sel(pool=False)}", "{{instance}} zfs_dirty_data_max"),
            ], unit="bytes", width=12),
            Panel("Write throttle", "timeseries", [
                Target(host_rate("zfs_dmu_tx_dirty_delay_total"), "{{instance}} delayed"),
                Target(host_rate("zfs_dmu_tx_dirty_over_max_total"), "{{instance}} over max"),
            ], unit="ops", width=12),
            heatmap("Waiting for a txg (writes, the throttle's delay included): $instance",
                    "zfs_pool_tx_assign_seconds_bucket", "s", empty_when=NO_TX_ASSIGN,
                    description="How long writes waited to be assigned to a transaction group "
                                "(dmu_tx_assign): waits of milliseconds and more are the write throttle "
                                "delaying writers (zfs(4), \"ZFS Transaction Delay\")."),
            Panel("Waiting for a txg: median and p99 per pool", "timeseries", [
                Target(f"histogram_quantile({q}, sum by (job, instance, pool, le) "
                       f"({rate('zfs_pool_tx_assign_seconds_bucket')}))", f"{{{{instance}}}} {{{{pool}}}} {name}",
                       NO_WRITES)
                for q, name in ((0.5, "median"), (0.99, "p99"))], unit="s", width=12,
                description="zfs_pool_tx_assign_seconds: how long writes waited to be assigned to a transaction "
                            "group, the write throttle's delay included."),
            Panel("Writes that waited over 1 ms for a txg", "timeseries", [Target(
                f"sum by (job, instance, pool) ({rate('zfs_pool_tx_assign_seconds_count')}) - "
                f"sum by (job, instance, pool) ({rate('zfs_pool_tx_assign_seconds_bucket', le=TX_ASSIGN_1MS)})",
                "{{instance}} {{pool}}", NO_WRITES)], unit="ops", width=12,
                description="Assignments per second slower than 1.05 ms (the histogram's 2^20 ns bucket): the "
                            "throttle delaying writers, per pool, where zfs_dmu_tx_dirty_delay_total counts for "
                            "the whole host."),
        ]),
        ("ARC", [
            Panel("ARC size", "timeseries", [
                Target(f"zfs_arc_size_bytes{sel(pool=False)}", "{{instance}} size"),
                Target(f"zfs_arc_target_size_bytes{sel(pool=False)}", "{{instance}} target (c)"),
                Target(f"zfs_arc_c_max_bytes{sel(pool=False)}", "{{instance}} c_max"),
            ], unit="bytes"),
            Panel("ARC hit ratio", "timeseries", [Target(
                f"{host_rate('zfs_arc_hits_total')} / ({host_rate('zfs_arc_hits_total')} + "
                f"{host_rate('zfs_arc_misses_total')})", "{{instance}} hit ratio")], unit="percentunit"),
            Panel("Ghost hits (ARC too small?)", "timeseries", [
                Target(host_rate("zfs_arc_mru_ghost_hits_total"), "{{instance}} MRU ghost"),
                Target(host_rate("zfs_arc_mfu_ghost_hits_total"), "{{instance}} MFU ghost"),
            ], unit="ops"),
        ]),
        ("L2ARC, SLOG and special vdevs", [
            Panel("Log, special, dedup and cache vdevs", "table", [Target(
                f"zfs_vdev_info{sel(group='~log|special|dedup|cache')}", empty_when=NO_AUX_VDEVS)],
                columns=["instance", "pool", "group", "vdev", "type", "parent", "disk", "state"],
                colored={"state": VDEV_STATE}),
            Panel("Special, dedup and log vdevs: allocated", "timeseries", [Target(
                f"zfs_vdev_allocated_bytes{sel()} / (zfs_vdev_allocated_bytes{sel()} + zfs_vdev_free_bytes{sel()}) "
                f"* on (job, instance, pool, vdev) group_left (group) zfs_vdev_info{sel(group='~special|dedup|log')}",
                "{{instance}} {{pool}} {{group}} {{vdev}}", NO_AUX_VDEVS)],
                unit="percentunit", thresholds=FILL, max=1,
                description="A full special or dedup vdev spills to the data vdevs."),
            Panel("ZIL writes: SLOG vs main pool", "timeseries", [
                Target(host_rate("zfs_zil_itx_metaslab_slog_bytes_total"), "{{instance}} SLOG"),
                Target(host_rate("zfs_zil_itx_metaslab_normal_bytes_total"), "{{instance}} main pool"),
            ], unit="Bps", description="Bytes of ZIL blocks written to a log vdev vs the pool's own vdevs "
                                       "(the zil kstat)."),
            Panel("L2ARC size", "timeseries", [
                Target(f"zfs_arc_l2_size_bytes{sel(pool=False)}", "{{instance}} size"),
                Target(f"zfs_arc_l2_asize_bytes{sel(pool=False)}", "{{instance}} allocated"),
                Target(f"zfs_arc_l2_hdr_size_bytes{sel(pool=False)}", "{{instance}} headers in ARC"),
            ], unit="bytes"),
            Panel("L2ARC hits and misses", "timeseries", [
                Target(host_rate("zfs_arc_l2_hits_total"), "{{instance}} hits"),
                Target(host_rate("zfs_arc_l2_misses_total"), "{{instance}} misses"),
            ], unit="ops"),
            Panel("L2ARC traffic", "timeseries", [
                Target(host_rate("zfs_arc_l2_read_bytes_total"), "{{instance}} read"),
                Target(host_rate("zfs_arc_l2_write_bytes_total"), "{{instance}} written"),
            ], unit="Bps"),
        ]),
        ("Datasets", [
            Panel("Top written datasets", "timeseries", [Target(
                f"topk by (instance) (10, {rate('zfs_dataset_logical_written_bytes_total')})",
                "{{instance}} {{name}}")], unit="Bps", width=12),
            Panel("Top read datasets", "timeseries", [Target(
                f"topk by (instance) (10, {rate('zfs_dataset_logical_read_bytes_total')})",
                "{{instance}} {{name}}")], unit="Bps", width=12),
            Panel("Dataset properties", "table", [Target(f"zfs_dataset_properties_info{sel()}")],
                  columns=["instance", "name", "type", "recordsize", "volblocksize", "compression", "atime",
                           "sync", "logbias", "primarycache", "secondarycache", "special_small_blocks", "dedup",
                           "redundant_metadata", "xattr", "dnodesize", "copies", "checksum", "mountpoint"],
                  colored={"sync": SYNC, "compression": COMPRESSION},
                  width=24),
        ]),
        ("Disks behind the pools", [
            Panel("Utilisation", "timeseries", [Target(
                disk_rate("io_time_seconds_total"), "{{instance}} {{device}}", NO_DISK_COUNTERS)],
                unit="percentunit", thresholds=FILL, description=DISKS),
            Panel("Disk throughput", "timeseries", [
                Target(disk_rate("read_bytes_total"), "{{instance}} {{device}} read", NO_DISK_COUNTERS),
                Target(disk_rate("written_bytes_total"), "{{instance}} {{device}} write", NO_DISK_COUNTERS),
            ], unit="Bps", description=DISKS),
            Panel("vdev errors", "timeseries", [Target(
                f"increase(zfs_vdev_errors_total{sel()}[1h]) > 0", "{{instance}} {{pool}} {{vdev}} {{error}}")],
                thresholds=[(None, "red")]),
        ]),
        ("Advice", [
            Panel("Open recommendations and their expected effect", "table", [
                Target(f"zfs_advisor_recommendation_info{sel(pool=False)}"),
                *(Target(f"max without (bound) (zfs_advisor_recommendation_expected_effect_ratio"
                         f"{sel(pool=False, bound=bound)})", empty_when=NO_EFFECT)
                  for bound in ("expected", "low", "high")),
            ], width=24, unit="percentunit",
                columns=["instance", "workload", "pool", "dataset", "scope", "parameter", "current", "recommended",
                         "rule", "confidence", "metric", "source"],
                colored={"Value #B": None},
                thresholds=[(None, "red"), (1.0, "green")],
                description="Each open change (GET /recommend explains it) and, where a probe of the pool or the "
                            "model predicts one, its effect as a multiple of the metric's value now: expected, "
                            "and the 90% interval (low, high).",
                merge=True, rename={"Value #B": "expected effect", "Value #C": "low (90%)",
                                    "Value #D": "high (90%)"}),
            Panel("Pool efficiency: measured / what the layout should give", "table", [Target(
                f"zfs_advisor_pool_efficiency_ratio{sel()}", empty_when=NOT_MEASURED)],
                unit="percentunit", columns=["instance", "pool", "test"], colored={"Value": None},
                thresholds=EFFICIENCY, width=16,
                description="The latest `zfs-advisor probe --pool P --efficiency` run of each pool, per test "
                            "(seq-read, seq-write, and the random tests it carries): the pool's rate over what its "
                            "layout should give from its disks' own rate. GET /v1/efficiency and /recommend give "
                            "the diagnosis."),
            Panel("Time since the efficiency run", "table", [Target(
                f"time() - zfs_advisor_pool_efficiency_timestamp_seconds{sel()}", empty_when=NOT_MEASURED)],
                unit="s", columns=["instance", "pool"], colored={"Value": None},
                thresholds=[(None, "green"), (90 * DAY, "orange")], width=8,
                description="A pool changed since (vdevs added, disks replaced) is measured again with "
                            "`zfs-advisor probe --pool P --efficiency`."),
        ]),
        ("What the advisor learnt", [
            Panel("Probe IOPS: best and baseline (latest completed run)", "table", [Target(
                f"zfs_advisor_probe_iops{sel()}", empty_when=NOT_PROBED)],
                unit="iops", columns=["instance", "pool", "workload", "parameter", "candidate", "value"],
                show_value=True, rename={"Value": "IOPS"}, width=12,
                description="zfs_advisor_probe_iops: the latest completed probe of each parameter on each pool, "
                            "per workload: the value that measured most IOPS (best) and the ZFS default it was "
                            "compared with (baseline). GET /v1/probes has every run."),
            Panel("Probe write p99: best and baseline (latest completed run)", "table", [Target(
                f"zfs_advisor_probe_write_latency_p99_seconds{sel()}", empty_when=NOT_PROBED)],
                unit="s", columns=["instance", "pool", "workload", "parameter", "candidate", "value"],
                show_value=True, rename={"Value": "write p99"}, width=12,
                description="zfs_advisor_probe_write_latency_p99_seconds: the worst repeat's write p99 of the same "
                            "candidates; read-modify-write shows here before it shows in IOPS."),
            Panel("Setting changes and their verdicts", "table", [Target(
                f"time() - zfs_advisor_change_timestamp_seconds{any_pool()}", empty_when=NO_CHANGE)],
                unit="s", columns=["instance", "pool", "dataset", "parameter", "old", "new", "verdict"],
                colored={"verdict": VERDICT}, show_value=True, rename={"Value": "since"}, width=12,
                description="The latest change of each tracked setting the service saw (values as zfs get -p "
                            "gives them), how long ago, and its verdict once a window after it has passed: "
                            "GET /v1/changes explains each."),
            Panel("Measured effect of each change (after / before)", "timeseries", [Target(
                f"zfs_advisor_change_effect_ratio{sel()} * on (job, instance, dataset, parameter) "
                f"group_left (verdict) (zfs_advisor_change_timestamp_seconds{any_pool()} > bool 0)",
                "{{instance}} {{pool}} {{dataset}} {{parameter}} {{metric}}: {{verdict}}", NOT_COMPARED)],
                unit="none", thresholds=[(None, "transparent"), (1.0, "blue")], width=12,
                description="zfs_advisor_change_effect_ratio with the change's verdict: the mean of each metric in "
                            "the window after the change over the window before it (1 = no change; higher is "
                            "better for iops and bandwidth, lower for the latencies)."),
            Panel("Probe time used in 24 h vs [profiler] daily_seconds", "timeseries", [
                Target(f"zfs_advisor_profiler_budget_used_seconds{sel()}", "{{instance}} {{pool}} used", NO_BUDGET),
                Target(f"zfs_advisor_profiler_budget_limit_seconds{sel()}", "{{instance}} {{pool}} allowed",
                       NO_BUDGET),
            ], unit="s", width=12,
                description="A probe that would exceed the pool's budget is skipped."),
            Panel("Bytes probes wrote in 24 h vs [profiler] daily_bytes", "timeseries", [
                Target(f"zfs_advisor_profiler_budget_used_bytes{sel()}", "{{instance}} {{pool}} used", NO_BUDGET),
                Target(f"zfs_advisor_profiler_budget_limit_bytes{sel()}", "{{instance}} {{pool}} allowed",
                       NO_BUDGET),
            ], unit="bytes", width=12,
                description="Bytes written to the pool's scratch datasets, file layouts included."),
        ]),
        ("Exporter", [
            Panel("Collector duration", "timeseries", [Target(
                f"zfs_advisor_scrape_collector_duration_seconds{sel(pool=False)}", "{{instance}} {{collector}}")],
                unit="s"),
            Panel("Stale facts / failing collectors", "timeseries", [
                Target(f"zfs_advisor_facts_stale{sel(pool=False)}", "{{instance}} stale"),
                Target(f"zfs_advisor_scrape_collector_success{sel(pool=False)} == 0", "{{instance}} {{collector}} failing"),
            ], thresholds=[(None, "green"), (1, "red")]),
            Panel("Source durations", "timeseries", [Target(
                f"zfs_advisor_source_duration_seconds{sel(pool=False)}", "{{instance}} {{source}}")], unit="s"),
        ]),
    ]


# -- JSON -----------------------------------------------------------------------------------------

def thresholds(steps: list[tuple[float | None, str]]) -> dict:
    return {"mode": "absolute", "steps": [{"value": v, "color": c} for v, c in steps]}


def panel_json(panel: Panel, panel_id: int, pos: dict) -> dict:
    table = panel.kind == "table"
    out: dict = {"id": panel_id, "type": panel.kind, "title": panel.title, "datasource": DATASOURCE, "gridPos": pos}
    if panel.description:
        out["description"] = panel.description
    targets = []
    if len(panel.targets) > 8:
        raise ValueError(f"panel {panel.title!r}: {len(panel.targets)} queries, refIds A..H name 8")
    for ref, target in zip("ABCDEFGH", panel.targets, strict=False):  # a refId for each query, A first
        t = {"refId": ref, "datasource": DATASOURCE, "expr": target.expr}
        if table:
            t |= {"format": "table", "instant": True, "range": False}
        elif panel.kind == "heatmap":
            t |= {"format": "heatmap", "legendFormat": target.legend}
        else:
            t["legendFormat"] = target.legend
        targets.append(t)
    out["targets"] = targets
    defaults: dict = {"unit": panel.unit, "thresholds": thresholds(panel.thresholds)}
    if panel.max is not None:
        defaults |= {"min": 0, "max": panel.max}
    overrides = [{"matcher": {"id": "byName", "options": name},
                  "properties": [{"id": "custom.cellOptions", "value": {"type": "color-background"}}]
                  + ([{"id": "mappings", "value": mappings}] if mappings else [])}
                 for name, mappings in panel.colored.items()]
    if table:
        defaults["custom"] = {"align": "auto", "cellOptions": {"type": "auto"}}
        # Time, job and __name__ are hidden, and the value of an info or state-set series (always 1)
        names = {c: i for i, c in enumerate(panel.columns)}
        hidden = ["Time", "job", "__name__", "bound"] + (["Value #A"] if panel.merge else [])
        hidden += [] if "Value" in panel.colored or panel.show_value else ["Value"]
        out["transformations"] = ([{"id": "merge", "options": {}}] if panel.merge else []) + [
            {"id": "organize", "options": {
                "excludeByName": {name: True for name in hidden},
                "indexByName": names, "renameByName": panel.rename}}]
        out["options"] = {"showHeader": True, "cellHeight": "sm"}
    elif panel.kind == "timeseries":
        defaults["custom"] = {"drawStyle": "line", "lineWidth": 1, "fillOpacity": 0, "showPoints": "never",
                              "spanNulls": False,
                              "thresholdsStyle": {"mode": "line" if len(panel.thresholds) > 1 else "off"}}
        out["options"] = {"legend": {"displayMode": "table", "placement": "bottom", "calcs": ["lastNotNull", "max"]},
                          "tooltip": {"mode": "multi", "sort": "desc"}}
    else:  # heatmap of a Prometheus histogram: the buckets as they are
        out["options"] = {"calculate": False, "yAxis": {"unit": panel.unit},
                          "cellGap": 1, "color": {"mode": "scheme", "scheme": "Oranges", "steps": 64},
                          "tooltip": {"show": True, "yHistogram": True}}
    if panel.per_instance:
        out |= {"repeat": "instance", "repeatDirection": "h", "maxPerRow": 3}
    out["fieldConfig"] = {"defaults": defaults, "overrides": overrides}
    return out


def panels() -> list[dict]:
    """Rows and their panels, laid out left to right in a 24-column grid."""
    out, y, next_id = [], 0, 1
    for row_title, row_panels in rows():
        out.append({"id": next_id, "type": "row", "title": row_title, "collapsed": False, "panels": [],
                    "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}})
        next_id, y, x, line_height = next_id + 1, y + 1, 0, 0
        for panel in row_panels:
            if x + panel.width > 24:
                x, y, line_height = 0, y + line_height, 0
            out.append(panel_json(panel, next_id, {"h": panel.height, "w": panel.width, "x": x, "y": y}))
            next_id, x, line_height = next_id + 1, x + panel.width, max(line_height, panel.height)
        y += line_height
    return out


def variable(name: str, label: str, query: str) -> dict:
    return {"name": name, "label": label, "type": "query", "datasource": DATASOURCE,
            "query": {"query": query, "refId": name}, "definition": query,
            "includeAll": True, "multi": True, "allValue": ".*", "refresh": 2, "sort": 1,
            "current": {"selected": True, "text": ["All"], "value": ["$__all"]}}


def annotations() -> list[dict]:
    """Probe runs and setting changes on every time axis: a run that ended, or a change seen, in the
    last 2 minutes of each step. A module parameter's change has no pool: it shows for any."""
    expr = f"zfs_advisor_probe_last_run_timestamp_seconds{sel()} > time() - 120"
    changed = f"zfs_advisor_change_timestamp_seconds{any_pool()} > time() - 120"
    return [
        {"name": "Annotations & Alerts", "builtIn": 1, "type": "dashboard", "enable": True, "hide": True,
         "iconColor": "rgba(0, 211, 255, 1)", "datasource": {"type": "grafana", "uid": "-- Grafana --"}},
        {"name": "Probe runs", "datasource": DATASOURCE, "enable": True, "iconColor": "purple", "step": "60s",
         "expr": expr, "titleFormat": "probe ended: {{workload}} on {{pool}}", "textFormat": "{{instance}}",
         "tagKeys": "instance,pool,workload"},
        {"name": "Setting changes", "datasource": DATASOURCE, "enable": True, "iconColor": "orange", "step": "60s",
         "expr": changed, "titleFormat": "{{parameter}} {{old}} -> {{new}} {{dataset}}",
         "textFormat": "{{instance}}: its effect in GET /v1/changes and zfs_advisor_change_effect_ratio",
         "tagKeys": "instance,pool,dataset,parameter"},
    ]


def dashboard() -> dict:
    return {
        "title": "ZFS (zfs-advisor)",
        "uid": "zfs-advisor",
        "schemaVersion": 38,
        "version": 2,
        "editable": True,
        "tags": ["zfs", "storage"],
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "1m",
        "timezone": "",
        "description": "Pools, I/O latency histograms, txgs and the write throttle, ARC and L2ARC, log and "
                       "special vdevs, datasets, disks, advice and what the advisor learnt (probe results, "
                       "setting changes and their measured effect, the profiler's budget) from zfs-advisor's /metrics "
                       "(docs/metrics.md), for one host or a fleet.",
        "annotations": {"list": annotations()},
        "templating": {"list": [
            {"name": "datasource", "label": "Prometheus", "type": "datasource", "query": "prometheus"},
            variable("job", "Job", "label_values(zfs_advisor_build_info, job)"),
            variable("instance", "Instance", 'label_values(zfs_advisor_build_info{job=~"$job"}, instance)'),
            variable("pool", "Pool", 'label_values(zfs_pool_health_state{job=~"$job",instance=~"$instance"}, pool)'),
        ]},
        "panels": panels(),
    }


def by_design() -> dict[str, Witness]:
    """expr -> why it may be empty, for the queries that may be."""
    return {t.expr: t.empty_when for _, row in rows() for p in row for t in p.targets if t.empty_when}


def render() -> str:
    return json.dumps(dashboard(), indent=2) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
