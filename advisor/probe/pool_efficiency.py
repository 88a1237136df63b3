"""Pool efficiency: measured pool throughput against what its layout should give from its disks.

The disks' own rate is measured READ-ONLY (fio --readonly, rw=read, O_DIRECT on every member
disk at once: never a write to a device).  A disk's streaming write rate is taken to be its read
rate (it cannot be measured without writing); the report says so.  What the layout should
give for large sequential I/O, per top-level vdev (sum over vdevs):

* a single disk: 1 disk, read and write;
* mirror of n: reads up to n disks (ZFS spreads reads over the sides), writes 1 disk
  (every side writes everything);
* raidz-p of n: n - p disks, read and write (parity costs p disks' worth).  For reads this
  is a floor, not a ceiling: reads skip parity, and parity does not sit on one disk (raidz1
  moves it between the first two columns every 1 MiB of offset, vdev_raidz_map_alloc()), so
  with several records in flight every disk carries data (the lab measured 3.9 disks' worth
  on a raidz1 of 4);

For small random I/O the disks' own IOPS are measured the same way (fio --readonly,
rw=randread, a queue of 32 on every member disk at once), and a top-level vdev should give:

* a single disk: 1 disk's IOPS;
* mirror of n: reads n disks' IOPS (each read goes to one side), writes 1 disk's;
* raidz of any width: about 1 disk's IOPS, read and write: a small block is one column plus
  its parity, and a read or write of it waits for the disks that hold it;
* top-level vdevs add (ZFS stripes over them).

OpenZFS docs, "Workload Tuning" ("Pool Geometry") / "ZFS RAIDZ stripe width"; zpoolconcepts(7)
("Virtual Devices": mirror, raidz).
`diagnose` then names where the rest went from what was measured alongside: CPU busy,
disk busy time and I/O size at the disks (/proc/diskstats), mirror read balance.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, model_validator

from advisor.host.threads import ThreadCpu, group_name
from advisor.hostmodel.facts import DiskStats, Txg
from advisor.layout.predict import random_read_disks, random_write_disks
from advisor.layout.space import Vdev

Direction = Literal["read", "write"]
Pattern = Literal["sequential", "random"]
RawPattern = Literal["read", "randread"]
RANDOM_BLOCK = 4096  # the random tests' block, and their scratch dataset's recordsize
# Disks busy less than this while the pool fell short: the idle time is a cause, named.
IDLE_DISKS = 0.75
# at or above this share of its layout's rate, a pool (or its txgs' syncs) lost nothing to explain
NEAR_LAYOUT = 0.85
# The disks read this many times the bytes the reader got, or more: prefetched data was
# dropped before it was used, and read again.
WASTED_READS = 1.25
# The disks read less than this per byte the reader got: the ARC served the rest, and the
# reader's rate overstates the disks.  (The ARC's demand hit ratio cannot tell: a read that
# finds its record prefetched from the disk counts as a hit.)
FROM_DISKS = 0.9
# A run that moved less than this (16 of its 1 MiB records) measured its own start, not the pool:
# in the lab a 5-second read once got one record in 7.4 s while the prefetcher read 128 MiB
# (zfetch_max_idistance), and four more runs of the same command read 47-51 MB/s.
MIN_MEASURED_BYTES = 16 << 20
# One thread at or above this share of a core: the pool waits for that thread (CPU bound on it).
THREAD_SATURATED = 0.9


def too_little_moved(moved_bytes: float, seconds: float) -> str | None:
    """The diagnosis of a run that moved less than MIN_MEASURED_BYTES, else None."""
    if moved_bytes >= MIN_MEASURED_BYTES:
        return None
    return (f"not a measurement of the pool: fio moved only {moved_bytes / (1 << 20):.1f} MiB in {seconds:.1f} s "
            f"(under {MIN_MEASURED_BYTES >> 20} MiB, a run's start rather than its pace); run it again, "
            "with a longer --budget")


def raw_read_argv(devices: list[str], seconds: int, block: str = "1M", pattern: RawPattern = "read",
                  iodepth: int = 1) -> list[str]:
    """One fio reading every device at once, a job per device named disk0, disk1, ...
    (--readonly, before the first job, makes fio itself refuse any write or trim).  All at
    once, because that is how the pool uses them: a controller, bus or expander shared by
    the disks shows here as each disk's rate falling below what it reads alone.  `pattern`
    "randread" with a deep queue (`iodepth`, asynchronous I/O) gives a disk's random IOPS."""
    for device in devices:
        if not device.startswith("/dev/") or any(c in device for c in "\n\0"):
            raise ValueError(f"not a device path: {device!r}")
    if pattern not in ("read", "randread") or not 1 <= iodepth <= 1024:
        raise ValueError(f"not a read-only pattern and queue depth: {pattern!r}, {iodepth!r}")
    engine = "psync" if iodepth == 1 else "libaio"
    argv = ["fio", "--readonly", f"--rw={pattern}", f"--bs={block}", "--direct=1", f"--ioengine={engine}",
            f"--iodepth={iodepth}", "--time_based", f"--runtime={seconds}", "--output-format=json"]
    if pattern == "randread":
        argv.append("--norandommap")  # no map of blocks read: a device of any size, no warm-up
    for index, device in enumerate(devices):
        argv += [f"--name=disk{index}", f"--filename={device}"]
    return argv


def raw_read_rates(fio_json: dict[str, Any], devices: list[str], key: str = "bw_bytes") -> dict[str, float]:
    """Bytes/s (`key` "iops": reads/s) each device read in `raw_read_argv`'s run, by its
    position in `devices`."""
    rates = {}
    for job in fio_json.get("jobs") or []:
        name = str(job.get("jobname", ""))
        if job.get("error"):
            raise ValueError(f"fio job {name} failed with error {job['error']}")
        if name.startswith("disk") and name[4:].isdigit() and int(name[4:]) < len(devices):
            rates[devices[int(name[4:])]] = float((job.get("read") or {}).get(key, 0))
    missing = [d for d in devices if d not in rates]
    if missing:
        raise ValueError(f"fio reported no read of {', '.join(missing)}")
    return rates


def disks_per_vdev(vdev: dict[str, Any], direction: Direction, pattern: Pattern = "sequential",
                   block: int = RANDOM_BLOCK, ashift: int = 12) -> float:
    """Disks' worth a vdev gives: bytes/s for large sequential I/O, IOPS for random `block`-sized
    records. A raidz record of one sector lies on one data column (different records on different
    disks), so small random reads keep busy every member the vdev's blocks start on
    (advisor/layout/raidz_reads.py) and a write costs its column and the parity; a record that spans the data columns costs them all (about one disk's IOPS): the
    planner's rules (advisor/layout/predict.py, docs/planner.md)."""
    kind, width = vdev["type"], vdev["width"]
    if kind == "mirror":
        return float(width) if direction == "read" else 1.0
    if kind.startswith("raidz"):
        parity = vdev.get("nparity") or (int(kind[-1]) if kind[-1].isdigit() else 1)
        if pattern == "random":
            shape = Vdev("raidz", width, parity)
            return (random_read_disks if direction == "read" else random_write_disks)(shape, block, ashift)
        return float(width - parity)
    if kind in ("disk", "file"):
        return 1.0
    raise ValueError(f"no expectation for a {kind} vdev")


def expected_bandwidth(descriptor: dict[str, Any], disk_rate: dict[str, float], direction: Direction,
                       pattern: Pattern = "sequential") -> float:
    """What the data vdevs should give: per vdev, its data disks x its slowest member's rate
    (bytes/s for sequential I/O, IOPS for small random I/O)."""
    total = 0.0
    for vdev in descriptor["vdevs"]:
        rates = [disk_rate[d] for d in vdev["disks"] if d in disk_rate]
        if not rates:
            raise ValueError(f"no raw measurement for the disks of a {vdev['type']} vdev")
        total += disks_per_vdev(vdev, direction, pattern, ashift=pool_ashift(descriptor)) * min(rates)
    return total


def pool_ashift(descriptor: dict[str, Any]) -> int:
    return descriptor.get("ashift") or 12  # OpenZFS' choice for 4K-sector disks, and the lab's


def layout_rule(descriptor: dict[str, Any], direction: Direction, pattern: Pattern = "sequential") -> str:
    """E.g. '2 x mirror of 2: 1 disk each = 2 disks' (how the expectation was formed)."""
    groups: dict[tuple[str, int], list[float]] = {}
    for vdev in descriptor["vdevs"]:
        groups.setdefault((vdev["type"], vdev["width"]), []).append(
            disks_per_vdev(vdev, direction, pattern, ashift=pool_ashift(descriptor)))
    parts = [f"{len(n)} x {kind} of {width}: {n[0]:.3g} disk{'s' if n[0] != 1 else ''} each"
             for (kind, width), n in groups.items()]
    total = sum(sum(n) for n in groups.values())
    return f"{'; '.join(parts)} = {total:.3g} disk{'s' if total != 1 else ''}"


class TxgsDuring(BaseModel):
    """The pool's transaction groups committed during a run (the txgs kstat; none are listed
    when zfs_txg_history is 0)."""
    count: int
    dirty_bytes_mean: float  # what each gathered before its sync
    sync_seconds: float  # their sync times, added up
    # their dirty data over their sync time: what the pool writes while a txg syncs, as it does
    # back to back in a long write (None when they took no time)
    sync_bytes_per_second: float | None = None


def txgs_during(before: list[Txg], after: list[Txg]) -> TxgsDuring | None:
    """The txgs committed between two reads of the txgs kstat; None when it lists none."""
    last = max((t.txg for t in before if t.state == "committed"), default=-1)
    done = [t for t in after if t.state == "committed" and t.txg > last]
    if not done:
        return None
    dirty, sync = sum(t.dirty_bytes for t in done), sum(t.sync_seconds for t in done)
    return TxgsDuring(count=len(done), dirty_bytes_mean=dirty / len(done), sync_seconds=sync,
                      sync_bytes_per_second=dirty / sync if sync > 0 else None)


class Efficiency(BaseModel):
    """`ratio` is the pool's rate over the layout's.  The pool's rate is the writer's for writes
    (the disks' bytes include parity and copies), the bytes the member disks read for reads:
    the ARC can then not inflate it, and a read path that wastes what the disks give (prefetch
    dropped before use) shows beside it, as `measured_bytes_per_second` (the reader's) and
    `disk_bytes_per_byte`, instead of hiding the disks' rate."""
    direction: Direction
    measured_bytes_per_second: float  # fio's, the writer's or reader's
    pool_bytes_per_second: float
    expected_bytes_per_second: float
    ratio: float
    expectation: str  # how the expectation was formed
    diagnosis: list[str]
    cpu_busy_ratio: float | None = None  # whole host, from /proc/stat, over the run
    disk_bytes_per_byte: float | None = None  # bytes the member disks moved per byte fio moved
    txgs: TxgsDuring | None = None  # writes: the txgs that carried them
    # writes: the pool's rate while those txgs synced (txgs.sync_bytes_per_second) over the
    # layout's; the writer's rate also counts the time no txg was syncing, such as the first one's
    # gathering of dirty data before anything reaches the disks
    sync_ratio: float | None = None
    threads: ThreadCpu | None = None  # the busiest ZFS kernel threads over the run
    # the figures every result has, sequential or random (random.RandomEfficiency), for a
    # consumer that goes over them all: what was measured against what, in which unit
    test: str = ""  # "seq-read", "seq-write"
    unit: str = "bytes/s"
    measured: float = 0.0  # = pool_bytes_per_second, the rate `ratio` is of
    expected: float = 0.0  # = expected_bytes_per_second

    @model_validator(mode="before")
    @classmethod
    def _common_figures(cls, data: Any) -> Any:
        """Reports stored before these fields had them: derived from the sequential ones."""
        if isinstance(data, dict):
            data = {"test": f"seq-{data.get('direction')}", "measured": data.get("pool_bytes_per_second", 0.0),
                    "expected": data.get("expected_bytes_per_second", 0.0), **data}
        return data


def disk_busy(before: dict[str, DiskStats], after: dict[str, DiskStats], disks: list[str],
              seconds: float) -> dict[str, dict[str, float]]:
    """Per disk: busy ratio (io_ticks), bytes read/written, average I/O size, average queue depth
    (weighted I/O time over the interval: the requests in flight on average), over the interval."""
    out = {}
    for name in disks:
        b, a = before.get(name), after.get(name)
        if not b or not a:
            continue
        ops = (a.reads_completed - b.reads_completed) + (a.writes_completed - b.writes_completed)
        nbytes = 512 * ((a.sectors_read - b.sectors_read) + (a.sectors_written - b.sectors_written))
        out[name] = {"busy_ratio": min(1.0, (a.io_seconds - b.io_seconds) / seconds) if seconds > 0 else 0.0,
                     "read_bytes": 512.0 * (a.sectors_read - b.sectors_read),
                     "written_bytes": 512.0 * (a.sectors_written - b.sectors_written),
                     "avg_io_bytes": nbytes / ops if ops else 0.0,
                     "ops": float(ops),
                     "queue_depth": (a.weighted_io_seconds - b.weighted_io_seconds) / seconds if seconds > 0 else 0.0}
    return out


def diagnose(direction: Direction, ratio: float, descriptor: dict[str, Any], busy: dict[str, dict[str, float]],
             cpu_busy_ratio: float | None, disk_bytes_per_byte: float | None = None,
             reader_ratio: float | None = None, txgs: TxgsDuring | None = None,
             seconds: float | None = None, sync_ratio: float | None = None,
             threads: ThreadCpu | None = None) -> list[str]:
    """Plain-language reasons for the gap between measured and expected; for reads, also
    where the reader's rate parted from the disks' (`reader_ratio`: the reader's rate over
    the layout's); for writes, the rate while the txgs synced (`sync_ratio`) and, with idle
    disks, the txgs that carried them over `seconds`."""
    notes = _read_path(disk_bytes_per_byte, reader_ratio) if direction == "read" else []
    if ratio >= NEAR_LAYOUT:
        where = " at the disks: nothing is lost there" if direction == "read" else ": nothing is lost"
        return [f"the pool gives {ratio:.0%} of what its layout should{where}", *notes]
    # Writes whose txgs synced at the layout's rate lost their time outside the syncs (the first
    # reason below): the disks' busy time is then no cause. In the lab it read 50-60 % while the
    # syncs ran at 90-95 % of the layout (docs/probes.md, "Where the writes' rest goes").
    synced_at_layout = direction == "write" and sync_ratio is not None and sync_ratio >= NEAR_LAYOUT
    reasons = []
    if direction == "write" and txgs and sync_ratio is not None and seconds:
        idle = max(0.0, seconds - txgs.sync_seconds)
        reasons.append(f"while its {txgs.count} transaction groups synced ({txgs.sync_seconds:.1f} s of the "
                       f"{seconds:.1f} s) the pool wrote {sync_ratio:.0%} of what its layout should; for the other "
                       f"{idle:.1f} s no txg was syncing: dirty data gathers until it reaches "
                       "zfs_dirty_data_sync_percent of zfs_dirty_data_max, or zfs_txg_timeout passes (zfs(4)), "
                       "before a txg starts writing, so a short write loses its start and a long one less of it")
    saturated = cpu_bound_on(threads)
    if saturated:
        reasons.append(saturated)
    elif cpu_busy_ratio is not None and cpu_busy_ratio >= 0.85:
        reasons.append(f"CPU busy {cpu_busy_ratio:.0%} during the run: checksums, compression or parity "
                       "computation bound the pool, not the disks")
    if busy and not synced_at_layout:
        mean_busy = sum(d["busy_ratio"] for d in busy.values()) / len(busy)
        avg_io = sum(d["avg_io_bytes"] for d in busy.values()) / len(busy)
        if mean_busy < IDLE_DISKS:
            cpu = f", the CPU {cpu_busy_ratio:.0%}" if cpu_busy_ratio is not None else ""
            reasons.append(f"the disks were busy only {mean_busy:.0%} of the time{cpu}: too few I/Os in flight "
                           "(one stream, zfs_vdev_*_max_active limits) or time spent elsewhere")
            if direction == "write" and txgs and txgs.count >= 2 and seconds:
                reasons.append(_small_txgs(txgs, seconds))
        elif avg_io and avg_io < 64 << 10:
            reasons.append(f"the disks were busy {mean_busy:.0%} of the time with {avg_io / 1024:.0f} KiB I/Os: "
                           "small records or small I/Os cost per-operation time (raise recordsize)")
        if direction == "read":
            reasons += _unbalanced_mirrors(descriptor, busy)
    if not reasons:
        reasons.append("no single cause measured: compare with the raw-disk rates and the pool's latency histograms")
    return reasons + notes


def _unbalanced_mirrors(descriptor: dict[str, Any], busy: dict[str, dict[str, float]]) -> list[str]:
    """A reason for each mirror one of whose disks read less than half of what another did."""
    reasons = []
    for vdev in descriptor["vdevs"]:
        if vdev["type"] != "mirror":
            continue
        reads = [busy[d]["read_bytes"] for d in vdev["disks"] if d in busy]
        if len(reads) >= 2 and max(reads) > 0 and min(reads) / max(reads) < 0.5:
            reasons.append(f"mirror reads unbalanced: its disks read {', '.join(f'{r / 2**20:.0f}' for r in reads)} MiB")
    return reasons


def cpu_bound_on(threads: ThreadCpu | None) -> str | None:
    """'CPU bound on <thread>' when the busiest ZFS thread ran 90 % of the time or more: on a
    host of many cores the host-wide CPU figure hides it."""
    if threads is None or not threads.busiest or threads.busiest[0].busy_ratio < THREAD_SATURATED:
        return None
    top = threads.busiest[0]
    group = next((g for g in threads.groups if g.name == group_name(top.name)), None)
    also = f" ({group.threads} {group.name} threads, {group.busy_ratio:.2f} cores in all)" if group and group.threads > 1 else ""
    return f"CPU bound on {top.name}: that thread was {top.busy_ratio:.0%} busy{also}, so the pool waits for it"


def _read_path(disk_bytes_per_byte: float | None, reader_ratio: float | None) -> list[str]:
    if disk_bytes_per_byte is None:
        return []
    if disk_bytes_per_byte < FROM_DISKS:
        return [f"the disks read only {disk_bytes_per_byte:.0%} of the bytes the reader got: the ARC served "
                "the rest (the pool's rate is taken at the disks)"]
    if disk_bytes_per_byte >= WASTED_READS:
        got = f"the reader got {reader_ratio:.0%} of the layout's rate: " if reader_ratio is not None else ""
        return [f"{got}the disks read {disk_bytes_per_byte:.1f}x the bytes it got, prefetched data dropped before "
                "use and read again (an ARC too small for the prefetch distance, zfetch_max_distance in zfs(4), "
                "or primarycache=metadata)"]
    return []


def _small_txgs(txgs: TxgsDuring, seconds: float) -> str:
    # Measured on the lab's stripe of four (docs/probes.md, "Pool efficiency"): 4 x 64 MiB went
    # out in 9 txgs of 32 MiB under a 64 MiB ARC cap, in 3 of 79 MiB without it, the disks idle
    # 20-35 % of the time either way: the txgs' size is reported, not blamed.
    return (f"the writes went out in {txgs.count} transaction groups of {txgs.dirty_bytes_mean / 2**20:.0f} MiB, "
            f"one every {seconds / txgs.count:.1f} s. A txg starts syncing once its dirty data reaches "
            "zfs_dirty_data_sync_percent of zfs_dirty_data_max, or after zfs_txg_timeout (zfs(4)); the ARC also "
            "holds dirty data to half its target size (arc_tempreserve_space() in module/zfs/arc.c), so a small "
            "ARC makes small txgs, each with its own metadata and uberblock to write")
