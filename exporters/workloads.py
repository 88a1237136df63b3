"""The workload each busy dataset's I/O looks like (advisor/recognise/, docs/recognition.md).

Source: the service's recogniser, which keeps each dataset's objset counters over a window of
collections and matches what they show against the workload profiles' traits. One series per
dataset busy enough in the window to say anything; `unknown` when no profile fits clearly.
"""
from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import InfoMetricFamily, Metric

from advisor.exporters.base import Scrape, append
from advisor.exporters.registry import collector


@collector("workloads", after="changes")
def collect(scrape: Scrape) -> Iterable[Metric]:
    info = InfoMetricFamily(
        "zfs_advisor_dataset_workload",
        "The workload profile a dataset's I/O in the last window looks like (workload, its role, or unknown), "
        "with the confidence rounded to 0.1: from the dataset's objset counters (mean read and write size, "
        "read/write mix, ZIL commits per write) against each profile's traits. Only datasets with enough I/O "
        "in the window have a series. Source: the recogniser (docs/recognition.md).",
        labels=["dataset", "workload", "role", "confidence"],
    )
    for dataset, workload, role, confidence in scrape.recognised:
        if scrape.options.wants_dataset(dataset):
            append(info, {"dataset": dataset, "workload": workload, "role": role or "",
                          "confidence": f"{confidence:.1f}"}, 1.0)
    yield info
