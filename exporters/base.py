"""What every collector shares: one scrape's facts, the detail options, small helpers.

A collector is a function `collect(scrape) -> Iterable[Metric]` that builds
fresh metric families from `scrape.host` (one `Host` collection) and keeps no
state between scrapes. It reads only the pools and datasets the options
select (`Scrape.pools`, `Scrape.datasets`), so the cardinality controls hold
for every collector alike.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from prometheus_client.core import Metric
from prometheus_client.samples import Sample

from advisor.hostmodel.facts import Dataset, Host, Pool

Collect = Callable[["Scrape"], Iterable[Metric]]

# Appended to the HELP of families built from zpool/zfs command output: the
# commands run in the background (commands_interval_seconds) and scrapes serve
# their latest output, which may lag the kstat-based families by that much.
CACHED = " Refreshed in the background: see zfs_advisor_facts_age_seconds and zfs_advisor_facts_stale."


class SourceUnreadable(Exception):
    """A collector's source could not be read on this scrape: its success is 0 and the log says
    why in one line, not with a traceback (the source, not the code, is at fault)."""


def _compile(pattern: re.Pattern[str] | str | None) -> re.Pattern[str] | None:
    return re.compile(pattern) if pattern else None


@dataclass(frozen=True)
class ExportOptions:
    """Cardinality controls (from Settings.metrics_*); regexes match whole names."""

    pool_include: re.Pattern[str] | str | None = None
    pool_exclude: re.Pattern[str] | str | None = None
    dataset_include: re.Pattern[str] | str | None = None
    dataset_exclude: re.Pattern[str] | str | None = None
    per_vdev: bool = False  # queues, latencies and histograms for every vdev, not only per pool
    per_dataset: bool = False  # every objset kstat (per-dataset ZIL counters) besides the core I/O
    all_disks: bool = False  # every block device, not only those behind the selected pools
    diskstats: bool = False  # the disks' /proc/diskstats counters, which node_exporter exports already

    @classmethod
    def from_settings(cls, settings: object) -> ExportOptions:
        names = [f for f in cls.__dataclass_fields__ if hasattr(settings, f"metrics_{f}")]
        return cls(**{f: getattr(settings, f"metrics_{f}") for f in names})

    @cached_property
    def _patterns(self) -> tuple[re.Pattern[str] | None, ...]:
        return tuple(
            _compile(p) for p in (self.pool_include, self.pool_exclude, self.dataset_include, self.dataset_exclude)
        )

    def wants_pool(self, name: str) -> bool:
        return _selected(name, self._patterns[0], self._patterns[1])

    def wants_dataset(self, name: str) -> bool:
        return _selected(name, self._patterns[2], self._patterns[3])


def _selected(name: str, include: re.Pattern[str] | None, exclude: re.Pattern[str] | None) -> bool:
    if include is not None and not include.fullmatch(name):
        return False
    return exclude is None or not exclude.fullmatch(name)


@dataclass(frozen=True)
class Scrape:
    """One scrape: the facts it serves and how fresh they are."""

    host: Host
    options: ExportOptions = field(default_factory=ExportOptions)
    stale: bool = False  # the collection missed the deadline: these are the last good facts
    age_seconds: float | None = None  # None: not known (a replayed or first collection)
    collections: int = 0  # collections the provider served since start
    command_runs: int = 0  # sets of zpool/zfs commands the provider ran since start
    # Identifies the zpool/zfs output in `host` (Collection.commands_finished_at): while it is the
    # same, collectors built from that output alone render the same text. None: do not reuse.
    commands_generation: float | None = None
    # (workload, Recommendation) for the datasets in the `workloads` setting (exporters/recommendations.py).
    recommendations: tuple[tuple[str, Any], ...] = ()
    # (dataset, workload, exists) for each entry of the `workloads` setting; () while unknown.
    workload_datasets: tuple[tuple[str, str, bool], ...] = ()
    source_durations: dict[str, float] = field(default_factory=dict)
    # What the probe store says (advisor/store/probe_stats.py ProbeStats), None when there is no store.
    probes: Any = None
    # The latest recorded change of each pool/dataset/parameter (advisor/changes/tracker.py exported()).
    changes: tuple[dict[str, Any], ...] = ()
    # (dataset, workload or unknown, role, confidence) per busy dataset (advisor/recognise/window.py).
    recognised: tuple[tuple[str, str, str | None, float], ...] = ()
    # (table, rows skipped since start) of the probe store's reader (advisor/store/reader_health.py).
    store_rows_skipped: tuple[tuple[str, int], ...] = ()
    # The fleet reader's status (advisor/fleet/reader.py FleetStatus); None when [fleet] is off.
    fleet: Any = None

    @cached_property
    def pools(self) -> list[Pool]:
        return [p for p in self.host.pools if self.options.wants_pool(p.name)]

    @cached_property
    def datasets(self) -> list[Dataset]:
        pools = {p.name for p in self.pools}
        return [d for d in self.host.datasets if d.pool in pools and self.options.wants_dataset(d.name)]


# What a family's type adds to its name in a sample (and in the text format's HELP and TYPE lines).
SAMPLE_SUFFIX = {"counter": "_total", "info": "_info"}


def append(family: Metric, labels: dict[str, str], value: float) -> None:
    """Add a sample with a ready label dict, which samples of one series set may share.

    The same as `family.add_metric(...)` for gauges, counters and info (value
    1), without building a label dict per sample: what makes thousands of
    datasets cheap.
    """
    family.samples.append(Sample(family.name + SAMPLE_SUFFIX.get(family.type, ""), labels, value))


def go_float(value: float) -> str:
    """A sample value or `le` bound as the Go client writes it (strconv 'g'): Python's repr, but
    from 1e6 up with an exponent of at least two digits (1.00663296e+10, 1e+06). Written here
    rather than taken from prometheus_client, whose floatToGoString wrote "e+010" before 0.26."""
    value = float(value)  # counters may be ints: 7 is written 7.0
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    text = repr(value)
    whole, dot, fraction = text.partition(".")
    if value > 0 and dot and len(whole) > 6:  # repr stays positional below 1e16
        digits = (whole + fraction).rstrip("0")
        mantissa = digits[0] + (f".{digits[1:]}" if len(digits) > 1 else "")
        return f"{mantissa}e+{len(whole) - 1:02d}"
    return text


def le(bound: float) -> str:
    """A histogram bucket's `le` label value, formatted like the Go client."""
    return go_float(bound)
