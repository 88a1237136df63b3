"""The fleet reader's self-metrics (advisor/fleet/reader.py FleetStatus): how old the view
answers use is, readings that failed and series refused.  Only when [fleet] prometheus_url is set."""
from __future__ import annotations

from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric


def families(status: Any) -> list[Metric]:
    age = GaugeMetricFamily(
        "zfs_advisor_fleet_view_age_seconds",
        "Age of the fleet view answers use: the last good reading of the fleet's Prometheus ([fleet] "
        "prometheus_url). Absent: no reading has succeeded yet, or the last is older than max_age_seconds.")
    if status.age_seconds is not None:
        age.add_metric([], status.age_seconds)
    failures = CounterMetricFamily(
        "zfs_advisor_fleet_query_failures",
        "Readings of the fleet's Prometheus that failed since start (refused, slower than timeout_seconds, not "
        "the query API's JSON): the view before is kept (see the service log).")
    failures.add_metric([], float(status.failures))
    refused = CounterMetricFamily(
        "zfs_advisor_fleet_series_refused",
        "Series of the fleet refused since start, by reason: not_finite (NaN, Inf), out_of_range (negative or "
        "beyond any pool), labels (missing, malformed or of a pool without its info series).", labels=["reason"])
    for reason, count in status.refused:
        refused.add_metric([reason], float(count))
    runs = GaugeMetricFamily("zfs_advisor_fleet_sibling_runs",
                             "Probe runs of other pools in the fleet view (of any descriptor; an answer reads those "
                             "of its pool's siblings).")
    runs.add_metric([], float(status.sibling_runs))
    return [age, failures, refused, runs]
