"""zpool iostat column names -> the labels the exporter uses for them.

zpool-iostat(8) names its -l, -q, -w and -r columns after the vdev queue an
I/O waited in and the I/O type ("syncq_wait_read", "asyncq_write_pend",
"ind_sync_read"). Metrics split them into two labels so PromQL can sum over
either: `queue` (syncq, asyncq, scrubq, trimq, rebuildq; for latencies also
`total` = queue + disk and `disk` = the device alone) and `op` (read, write,
trim). Scrub I/O are reads, rebuild I/O are writes (vdev_queue.c).
"""
from __future__ import annotations

import re

_QUEUE_OP = {
    "sync_read": ("syncq", "read"),
    "sync_write": ("syncq", "write"),
    "async_read": ("asyncq", "read"),
    "async_write": ("asyncq", "write"),
    "scrub": ("scrubq", "read"),
    "trim": ("trimq", "trim"),
    "rebuild": ("rebuildq", "write"),
}


def latency_labels(column: str) -> tuple[str, str]:
    """'total_wait_read' -> ('total', 'read'); 'trim_wait' -> ('trimq', 'trim')."""
    stage, _, op = column.partition("_wait")
    op = op.lstrip("_")
    if not op:
        return _QUEUE_OP[stage]
    return stage, op


def queue_labels(column: str) -> tuple[str, str, str]:
    """'syncq_read_pend' -> ('syncq', 'read', 'pend'); 'trimq_write_activ' -> ('trimq', 'trim', 'activ')."""
    match = re.fullmatch(r"([a-z]+q)_(read|write)_(pend|activ)", column)
    if not match:
        raise ValueError(f"not a zpool iostat -q column: {column}")
    queue, op, kind = match.groups()
    return queue, "trim" if queue == "trimq" else "write" if queue == "rebuildq" else op, kind


def size_labels(column: str) -> tuple[str, str, str]:
    """'ind_sync_read' -> ('individual', 'syncq', 'read'); 'agg_scrub' -> ('aggregated', 'scrubq', 'read')."""
    kind, _, rest = column.partition("_")
    queue, op = _QUEUE_OP[rest]
    return {"ind": "individual", "agg": "aggregated"}[kind], queue, op
