"""Small random I/O: the pool's IOPS against what its layout should give from its disks' own.

The disks' IOPS are measured read-only (efficiency.raw_read_argv, pattern "randread", a queue
deep enough to keep a disk busy); a disk's random write IOPS are taken to be its read IOPS.
The layout's rule (efficiency.disks_per_vdev, pattern "random", the planner's): a mirror reads
with every side, writes with one disk's worth; a raidz vdev reads a 4K record from its one data
column, so small random reads keep every member its blocks start on busy (n disks' worth where
they start on every disk; a raidz3 of six: three, advisor/layout/raidz_reads.py) and a write
costs the column and the parity (n / (1 + p)); a record spanning the data columns costs about
one disk's IOPS; top-level vdevs add.  OpenZFS docs, "Workload Tuning", "RAIDZ"; zpoolconcepts(7).

The pool is measured at rising concurrency (fio jobs, one I/O each in flight) in a scratch
dataset whose recordsize is the block size and whose primarycache is metadata, so reads reach
the disks.  `diagnose_random` names the bottleneck from what was measured alongside: the disks'
busy time and queue depth (/proc/diskstats), each ZFS kernel thread's CPU (host/threads.py),
the pool's log vdevs, ashift against the disks' physical sector, the vdev queue limits
(zfs_vdev_*_max_active, zfs(4)) and the txgs' sync time.
"""
from __future__ import annotations

from math import gcd
from typing import Any, Literal

from pydantic import BaseModel

from advisor.host.threads import ThreadCpu
from advisor.layout.raidz_reads import read_shares
from advisor.probe.pool_efficiency import (
    IDLE_DISKS,
    NEAR_LAYOUT,
    RANDOM_BLOCK,
    Direction,
    TxgsDuring,
    cpu_bound_on,
    pool_ashift,
)

LEVELS = (1, 4, 16)  # fio jobs at once: the concurrency the pool is measured at
RAW_QUEUE_DEPTH = 32  # per disk in the raw baseline: enough to keep a disk busy
BLOCK = RANDOM_BLOCK
HOST_CPU_BUSY = 0.85
# The raw baseline kept fewer requests per disk in flight than this share of what it asked for:
# the disks did not set its rate (a throttled or saturated disk queues what it is given).
RAW_DEPTH_REACHED = 0.25
DISKS_BUSY = 0.9
# The disks did this share of their raw random read IOPS or more: at their limit.
DISK_IOPS_REACHED = 0.85
# The pool gave this many times its layout's IOPS or more: the disks did fewer, larger I/Os.
ABOVE_LAYOUT = 1.25
# A disk that read less than this share of what its vdev's busiest disk read served (almost)
# none of the reads: the data lies on the others.
SERVED_NONE = 0.1
Kind = Literal["read", "sync", "async"]
# The vdev queue class each test's I/O lands in (zfs(4), "ZFS I/O scheduler"): a read a caller
# waits for is a sync read; a sync write reaches the disks as the ZIL's sync writes; an async
# write as the txg's async writes.
QUEUE_LIMIT = {"read": "zfs_vdev_sync_read_max_active", "sync": "zfs_vdev_sync_write_max_active",
               "async": "zfs_vdev_async_write_max_active"}


def random_test_name(kind: Kind, block: int = BLOCK) -> str:
    """rand-read-4k, rand-write-4k-sync, rand-write-4k-async"""
    size = f"{block // 1024}k" if block % 1024 == 0 else str(block)
    return f"rand-read-{size}" if kind == "read" else f"rand-write-{size}-{kind}"


def direction_of(kind: Kind) -> Direction:
    return "read" if kind == "read" else "write"


class RandomLevel(BaseModel):
    """One concurrency: fio's IOPS, and the disks, the CPU and the ZFS threads meanwhile."""
    jobs: int
    iops: float
    seconds: float  # fio's runtime, over which the disks' and threads' busy ratios are taken
    disks: dict[str, dict[str, float]]  # efficiency.disk_busy
    cpu_busy_ratio: float | None = None  # whole host
    threads: ThreadCpu | None = None  # the busiest ZFS kernel threads
    txgs: TxgsDuring | None = None  # writes: the txgs committed meanwhile


class RandomEfficiency(BaseModel):
    """`measured` is the most IOPS any concurrency gave (at `jobs`), `ratio` it over `expected`."""
    test: str
    direction: Direction
    sync: bool | None = None  # writes: O_SYNC (each waits for the ZIL) or buffered
    block_bytes: int
    unit: str = "IOPS"
    measured: float
    expected: float
    ratio: float
    expectation: str
    jobs: int
    levels: list[RandomLevel]
    diagnosis: list[str]


def random_job(directory: str, kind: Kind | Literal["layout"], file_bytes: int, jobs: int, seconds: int,
               block: int = BLOCK, write_bytes: int | None = None) -> str:
    """A fio job of `jobs` threads doing `block`-sized random I/O over ONE shared file (laid out
    once, by kind "layout").  Reads and sync writes run for `seconds`; async writes write
    `write_bytes` in all and fsync at the end, so that their rate includes getting the data to
    the disks (buffered writes alone would measure memory)."""
    lines = ["[global]", f"directory={directory}", "filename=random.0", "ioengine=psync", f"bs={block}",
             f"size={file_bytes}", f"numjobs={jobs}", "thread=1", "group_reporting=1", "fallocate=none",
             "refill_buffers=1", "buffer_compress_percentage=0", "randrepeat=0", "norandommap=1"]
    if kind == "layout":
        return "\n".join([*lines, "create_only=1", "", "[layout]", "rw=randread", ""])
    if kind == "async":
        per_job = max(block, (write_bytes or file_bytes) // jobs // block * block)
        lines += [f"io_size={per_job}", "end_fsync=1"]
    else:
        lines += ["time_based=1", f"runtime={seconds}"] + (["sync=1"] if kind == "sync" else [])
    rw = "randread" if kind == "read" else "randwrite"
    return "\n".join([*lines, "", f"[{random_test_name(kind, block)}]", f"rw={rw}", ""])


def best_level(levels: list[RandomLevel]) -> RandomLevel:
    """The concurrency that gave the most IOPS (the higher one on a tie)."""
    return max(levels, key=lambda level: (level.iops, level.jobs))


def _mean(disks: dict[str, dict[str, float]], key: str) -> float:
    return sum(d.get(key, 0.0) for d in disks.values()) / len(disks) if disks else 0.0


def raw_queue_depth(disks: dict[str, dict[str, float]]) -> float:
    """The requests each disk had in flight on average during the raw baseline."""
    return _mean(disks, "queue_depth")


def disk_iops_share(level: RandomLevel, raw_iops: dict[str, float] | None) -> tuple[float, float] | None:
    """(I/Os per second each disk did, on average, and that over its raw random read IOPS)."""
    shares = [(d["ops"] / level.seconds, d["ops"] / level.seconds / raw_iops[name])
              for name, d in level.disks.items() if raw_iops and raw_iops.get(name) and "ops" in d and level.seconds > 0]
    if not shares:
        return None
    return sum(s[0] for s in shares) / len(shares), sum(s[1] for s in shares) / len(shares)


def diagnose_random(kind: Kind, ratio: float, level: RandomLevel, descriptor: dict[str, Any],
                    params: dict[str, str], raw_depth: float | None, block: int = BLOCK,
                    raw_iops: dict[str, float] | None = None) -> list[str]:
    """One short sentence per finding, with its numbers; the first says how the pool did."""
    reached = _disks_reached(kind, level, descriptor, block)
    if reached:
        # judged on the disks that hold the data: the others had nothing to read
        level = level.model_copy(update={"disks": {d: level.disks[d] for d in reached[1]}})
    busy, depth = _mean(level.disks, "busy_ratio"), _mean(level.disks, "queue_depth")
    io_kib = _mean(level.disks, "avg_io_bytes") / 1024
    notes = [_how_it_did(kind, ratio, level, io_kib, block)]
    if raw_depth is not None and raw_depth < RAW_DEPTH_REACHED * RAW_QUEUE_DEPTH:
        # every ratio here is to the raw rate: it is the disks' own only if they set it
        notes.append(f"the raw baseline kept {raw_depth:.1f} requests in flight per disk of the {RAW_QUEUE_DEPTH} it "
                     "asked for: something before the disks (the CPU, the host's I/O path) set its rate, so the disks "
                     "can do more than it says and the layout's figure made of it is a floor")
    saturated = cpu_bound_on(level.threads)
    if saturated:
        notes.append(saturated)
    elif level.cpu_busy_ratio is not None and level.cpu_busy_ratio >= HOST_CPU_BUSY:
        notes.append(f"CPU busy {level.cpu_busy_ratio:.0%} host-wide (no single ZFS thread saturated)")
    if reached:
        notes.append(reached[0])
    share = disk_iops_share(level, raw_iops)
    # A disk throttled to its IOPS (as the lab's are) reads at its limit while busy half the time:
    # the I/Os it did against its raw random IOPS are the evidence, its busy time beside them.
    if busy >= DISKS_BUSY or (share and share[1] >= DISK_IOPS_REACHED):
        did = f"did {share[0]:,.0f} I/Os a second each, {share[1]:.0%} of their raw random reads, " if share else ""
        notes.append(f"disk bound: the disks {did}were busy {busy:.0%} of the time with {depth:.1f} requests "
                     f"in flight on average ({io_kib:.0f} KiB I/Os)")
    elif ratio < NEAR_LAYOUT and busy < IDLE_DISKS:
        notes.append(f"the disks were busy only {busy:.0%} of the time with {depth:.1f} requests in flight "
                     f"at {level.jobs} job{'s' if level.jobs != 1 else ''}: the time went elsewhere")
    if kind == "sync" and not descriptor.get("logs"):
        written = sum(d.get("written_bytes", 0.0) for d in level.disks.values())
        asked = level.iops * level.seconds * block
        per_byte = f" (the disks wrote {written / asked:.1f} bytes per byte)" if asked > 0 and written else ""
        notes.append("sync writes with no SLOG: each waits for the ZIL's write to the pool's own disks, and "
                     f"the txg writes the data again{per_byte} (zpoolconcepts(7), \"Intent Log\")")
    notes += _ashift(descriptor)
    limit = _queue_limit(kind, ratio, depth, params, raw_depth)
    if limit:
        notes.append(limit)
    if kind == "async" and level.txgs and level.seconds > 0:
        t = level.txgs
        notes.append(f"{t.count} txg{'s' if t.count != 1 else ''} synced {t.sync_seconds:.1f} s of the "
                     f"{level.seconds:.1f} s, {t.dirty_bytes_mean / 2**20:.0f} MiB each")
    return notes


def _disks_reached(kind: Kind, level: RandomLevel, descriptor: dict[str, Any],
                   block: int) -> tuple[str, list[str]] | None:
    """Reads that came from only some disks of a vdev: a sentence, and the disks that served them."""
    if kind != "read":
        return None
    sentences, serving = [], []
    for vdev in descriptor.get("vdevs", []):
        read = {d: level.disks[d].get("read_bytes", 0.0) for d in vdev.get("disks", []) if d in level.disks}
        if len(read) < 2 or max(read.values()) <= 0:
            serving += list(read)
            continue
        served = [d for d, b in read.items() if b >= SERVED_NONE * max(read.values())]
        serving += served
        if len(served) == len(read):
            continue
        text = f"the reads came from {len(served)} of the {len(read)} disks of a {vdev['type']} of {len(read)} ({', '.join(served)})"
        parity = vdev.get("nparity") or 0
        if vdev["type"].startswith("raidz") and parity:
            step = gcd(len(read), parity + 1)
            holding = sum(1 for x in read_shares(len(read), parity, pool_ashift(descriptor), block, one_metaslab=True) if x)
            if step > 1 and holding < len(read):
                text += (f": its allocations are multiples of {parity + 1} sectors, so within a metaslab every block "
                         f"starts on one disk in {step}, and a {block // 1024}K record's data lies on {holding} of the "
                         f"{len(read)}; data spread over more metaslabs reads from more of them (docs/planner.md, "
                         "\"Which disks a raidz read reaches\")")
        sentences.append(text)
    return ("; ".join(sentences), serving) if sentences else None


def _how_it_did(kind: Kind, ratio: float, level: RandomLevel, io_kib: float, block: int) -> str:
    if ratio >= ABOVE_LAYOUT and io_kib >= 2 * block / 1024:
        how = ("the ZIL puts concurrent sync writes in one log block" if kind == "sync"
               else "a txg allocates its writes together, copy-on-write")
        return (f"{ratio:.1f}x the layout's IOPS at {level.jobs} jobs: the disks did {io_kib:.0f} KiB I/Os, "
                f"ZFS gathered the small writes into larger ones ({how}), so a disk's small-I/O rate "
                "does not set the pool's")
    if ratio >= NEAR_LAYOUT:
        return f"{ratio:.0%} of what the layout should give at {level.jobs} jobs: nothing is lost"
    return f"{ratio:.0%} of what the layout should give, at best ({level.jobs} jobs, {level.iops:,.0f} IOPS)"


def _ashift(descriptor: dict[str, Any]) -> list[str]:
    ashift = descriptor.get("ashift")
    physical = max((d.get("physical_block_size") or 0 for d in descriptor.get("disks", [])), default=0)
    if ashift is None or not physical or 1 << ashift >= physical:
        return []
    return [f"ashift {ashift} ({1 << ashift} B) is below the disks' {physical} B physical sector: a smaller "
            "write is a read-modify-write inside the disk (zpoolprops(7), ashift)"]


def _queue_limit(kind: Kind, ratio: float, depth: float, params: dict[str, str], raw_depth: float | None) -> str:
    """A vdev queue limit the pool's disks sat at while the raw baseline kept more in flight."""
    name = QUEUE_LIMIT[kind]
    try:
        limit = int(params[name])
    except (KeyError, ValueError):
        return ""
    if ratio >= NEAR_LAYOUT or raw_depth is None or limit >= raw_depth or depth < 0.8 * limit:
        return ""
    return (f"{name} is {limit}, below the {raw_depth:.0f} requests a disk had in flight in the raw baseline: "
            f"the pool's disks stayed at {depth:.1f} (zfs(4))")
