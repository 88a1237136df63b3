"""Per-vdev I/O, latency, queues and histograms: `zpool iostat` (zpool-iostat(8)).

Read once with no interval, zpool iostat reports since the pool was imported:
ops and bandwidth as *averages per second* over that time, latencies as
averages, queue depths as instantaneous values, and histograms (-w, -r) as
*lifetime counts* (cmd/zpool/zpool_main.c, print_vdev_stats: scale = 1 for
histograms without an interval). Scripted output (-H) has no headers: the
columns are known by their count, which differs between OpenZFS releases
(rebuild columns arrived after 2.1).
"""
from __future__ import annotations

import re

from advisor.host.domains import count, non_negative
from advisor.host.parsing import INT_MAX, ParseError, shown, to_float, whole_lines
from advisor.hostmodel.facts import Histogram, Pool, VdevIostat

# -P full paths and -L resolved links: leaf names match `zpool status -pPL`.
IOSTAT_ARGV = ("zpool", "iostat", "-vlq", "-HpPL")
LATENCY_HISTOGRAM_ARGV = ("zpool", "iostat", "-vw", "-HpPL")
SIZE_HISTOGRAM_ARGV = ("zpool", "iostat", "-vr", "-HpPL")

_LATENCY_COLUMNS = (
    "total_wait_read",
    "total_wait_write",
    "disk_wait_read",
    "disk_wait_write",
    "syncq_wait_read",
    "syncq_wait_write",
    "asyncq_wait_read",
    "asyncq_wait_write",
    "scrub_wait",
    "trim_wait",
    "rebuild_wait",
)
_QUEUE_COLUMNS = tuple(
    f"{q}_{s}"
    for q in ("syncq_read", "syncq_write", "asyncq_read", "asyncq_write", "scrubq_read", "trimq_write", "rebuildq_write")
    for s in ("pend", "activ")
)
# (latency columns, queue columns) by total field count after the name.
_LAYOUTS = {
    6 + 10 + 12: (10, 12),  # OpenZFS 2.1: no rebuild columns
    6 + 10 + 14: (10, 14),
    6 + 11 + 14: (11, 14),
}
_LATENCY_HISTOGRAM_SERIES = _LATENCY_COLUMNS  # -w bottom labels, same order
_SIZE_HISTOGRAM_SERIES = tuple(
    f"{kind}_{op}"
    for op in ("sync_read", "sync_write", "async_read", "async_write", "scrub", "trim", "rebuild")
    for kind in ("ind", "agg")
)
_VDEV_NAME = re.compile(r"^(/|(mirror|raidz[123]?|draid[123]?|replacing|spare|indirect)[-:])")


def is_vdev_name(name: str) -> bool:
    """True for vdev names (paths, mirror-0...); False for a pool's own name.

    Pool names may not start with a vdev keyword nor '/' (zpool(8)), which is
    what lets scripted output, which has no indentation, be split per pool.
    """
    return bool(_VDEV_NAME.match(name))


def _number(text: str) -> float | None:
    if text in ("-", ""):
        return None
    value = to_float(text, "zpool iostat")
    if not 0 <= value <= INT_MAX:  # every column is a uint64 in the kernel (vdev_stat_t)
        raise ParseError(f"zpool iostat: {shown(text)} is not from 0 to the 64-bit maximum")
    return value


def parse_vdev_iostat(stdout: str) -> dict[str, list[tuple[str, VdevIostat]]]:
    """-> {pool: [(vdev name, stats)]}; the pool's own row is named after the pool."""
    result: dict[str, list[tuple[str, VdevIostat]]] = {}
    pool = None
    for line in whole_lines(stdout, "zpool iostat").splitlines():
        fields = line.split("\t")
        if len(fields) < 2:
            if not line.strip():
                continue
            raise ParseError(f"not a scripted zpool iostat row: {shown(line)}")
        name, values = fields[0], fields[1:]
        layout = _LAYOUTS.get(len(values))
        if layout is None:
            raise ParseError(f"{len(values)} columns after the name; known layouts have {sorted(_LAYOUTS)}")
        if not is_vdev_name(name):
            pool = name
            result[pool] = []
        if pool is None:
            raise ParseError(f"vdev {shown(name)} before any pool row")
        n_lat, n_queue = layout
        base = [_number(v) for v in values[:6]]
        latencies = values[6 : 6 + n_lat]
        queues = values[6 + n_lat : 6 + n_lat + n_queue]
        stats = VdevIostat(
            allocated_bytes=int(base[0]) if base[0] else None,
            free_bytes=int(base[1]) if base[1] else None,
            read_ops_per_second=base[2] or 0,
            write_ops_per_second=base[3] or 0,
            read_bytes_per_second=base[4] or 0,
            write_bytes_per_second=base[5] or 0,
            # strict=False: the columns name the newest layout; older ones (_LAYOUTS) stop short of it
            latency_seconds={
                col: (v / 1e9 if v is not None else None)
                for col, v in zip(_LATENCY_COLUMNS, (_number(x) for x in latencies), strict=False)
            },
            queues={col: count(v, "zpool iostat queue") for col, v in zip(_QUEUE_COLUMNS, queues, strict=False)
                    if v not in ("-", "")},
        )
        result[pool].append((name, stats))
    return result


def attach_vdev_iostat(pool: Pool, rows: list[tuple[str, VdevIostat]] | None) -> None:
    """Put each row on the vdev of the same name (the pool row on the root)."""
    if pool.root is None:
        return
    by_name = {v.name: v for v in pool.root.walk()}
    for name, stats in rows or ():
        if vdev := by_name.get(name):
            vdev.iostat = stats


def _parse_histograms(stdout: str, unit: str, series: tuple[str, ...]) -> dict[str, dict[str, Histogram]]:
    """Scripted -w/-r output: a line with a vdev name, then `bound<TAB>counts...` rows."""
    result: dict[str, dict[str, Histogram]] = {}
    pool = current = None
    rows: dict[str, list[list[int]]] = {}
    bounds: dict[str, list[float]] = {}
    order: list[tuple[str, str]] = []
    for line in whole_lines(stdout, "zpool iostat").splitlines():
        fields = line.split("\t")
        if not line.strip():
            continue
        if len(fields) == 1:
            current = fields[0].strip()
            if not is_vdev_name(current):
                pool = current
            if pool is None:
                raise ParseError(f"histogram for {shown(current)} before any pool")
            order.append((pool, current))
            rows[f"{pool}\0{current}"] = []
            bounds[f"{pool}\0{current}"] = []
            continue
        if current is None or pool is None:
            raise ParseError("histogram row before any vdev name")
        key = f"{pool}\0{current}"
        bound = non_negative(to_float(fields[0], "histogram bucket"), "histogram bucket")
        # Bucket j holds [2^j, 2^(j+1)-1]. Latency rows are labelled by that
        # upper bound in ns, size rows by the lower bound 2^j in bytes; both
        # are stored as the inclusive upper bound (a Prometheus `le`).
        bounds[key].append(bound / 1e9 if unit == "seconds" else bound * 2 - 1)
        rows[key].append([count(x, "histogram count") for x in fields[1:]])
    for pool_name, vdev in order:
        key = f"{pool_name}\0{vdev}"
        table = rows[key]
        if not table:
            continue
        width = len(table[0])
        if any(len(r) != width for r in table):
            raise ParseError(f"histogram of {shown(vdev)}: rows of different widths")
        if width > len(series):
            raise ParseError(f"{width} histogram columns, expected at most {len(series)}")
        counts = {series[i]: [r[i] for r in table] for i in range(width)}
        result.setdefault(pool_name, {})[vdev] = Histogram(unit=unit, bounds=bounds[key], counts=counts)
    if order and not result:  # names without a single bucket row: not histogram output
        raise ParseError(f"no histogram rows in output starting {shown(stdout.strip())}")
    return result


def parse_latency_histograms(stdout: str) -> dict[str, dict[str, Histogram]]:
    """-> {pool: {vdev name (pool name for the pool): latency histogram}}."""
    return _parse_histograms(stdout, "seconds", _LATENCY_HISTOGRAM_SERIES)


def parse_size_histograms(stdout: str) -> dict[str, dict[str, Histogram]]:
    """-> {pool: {vdev name (pool name for the pool): request-size histogram}}."""
    return _parse_histograms(stdout, "bytes", _SIZE_HISTOGRAM_SERIES)


def attach_latency_histograms(pool: Pool, histograms: dict[str, Histogram] | None) -> None:
    pool.latency_histograms = histograms or {}


def attach_size_histograms(pool: Pool, histograms: dict[str, Histogram] | None) -> None:
    pool.size_histograms = histograms or {}
