"""One feature space for lab rows (the shipped prior CSV) and this host's probe results (the store).

An `Observation` is one fio repeat (or one candidate to predict): the workload's I/O shape,
the candidate dataset's settings and the pool's shape, plus the measured targets when there
are any.  `from_csv_row` and `from_result` both build it, and `vector` turns any of them into
the same numbers, so local probes and lab runs are points of one space.

Pure and numpy-free: the rules and the exporter import it without numpy.
"""
from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypedDict

from advisor.engine.units import parse_size
from advisor.evidence.arc_cap import described_arc_max
from advisor.evidence.pool_shape import pool_shape
from advisor.hostmodel.tunables import DATASET_DEFAULTS
from advisor.layout.raidz_reads import busiest_share, sectors

DEFAULT_RECORDSIZE = parse_size(DATASET_DEFAULTS["recordsize"])
# Settings the model knows: a candidate with any other value is outside its support.
KNOWN_COMPRESSION = ("lz4", "off")
MIN_RECORDSIZE, MAX_RECORDSIZE = 4 << 10, 1 << 20
RANDOMNESS = {"random": 1.0, "mixed": 0.5, "sequential": 0.0}

FEATURES = (
    # workload descriptor
    "log2_block_size", "read_fraction", "randomness", "fsync_rate", "log2_queue", "log2_working_set_vs_arc",
    # dataset settings
    "log2_recordsize", "log2_recordsize_vs_block", "log2_hdd_disks_per_record", "log2_hdd_disks_per_record_vs_default",
    "log2_hdd_busiest_disk_vs_default",
    "log2_ssd_records_per_io", "compression_off", "logbias_throughput",
    "primarycache_not_all", "sync_disabled", "sync_always",
    # pool descriptor
    "ssd", "mirror", "raidz", "log2_vdev_width", "log2_top_vdevs", "ashift",
)
# The settings a pool's own deviation from the lab is modelled over (advisor/model/regress.py).
SETTING_FEATURES = ("log2_recordsize", "compression_off")


@dataclass(frozen=True)
class Observation:
    # workload
    workload: str
    pattern: str
    block_size_bytes: int
    read_fraction: float
    fsync_every: int
    iodepth: int
    numjobs: int
    working_set_bytes: int | None
    arc_max_bytes: int | None
    # pool
    media: str
    vdev_type: str
    top_vdevs: int
    vdev_width: int
    ashift: int | None
    # candidate
    parameter: str
    value: str
    baseline: bool
    settings: Mapping[str, str] = field(default_factory=lambda: dict(DATASET_DEFAULTS))
    # where it comes from: a lab cell ("zfs2.3.2/hdd-raidz1x4/postgres/512M": line, layout, workload,
    # working set) or "local:<pool>"
    cell: str = ""
    run: str = ""  # the probe run: its candidates are compared with the baseline of the same run
    repeat: int = 0
    # measured (None for a candidate to predict)
    perf: float | None = None  # IOPS (random) or bytes/s read + written (sequential, mixed)
    write_p99: float | None = None  # seconds

    @property
    def metric(self) -> str:
        return metric_of(self.pattern)

    @property
    def candidate(self) -> tuple[str, str]:
        return (self.parameter, self.value)

    def with_candidate(self, parameter: str, value: str) -> Observation:
        settings = dict(DATASET_DEFAULTS)
        settings[parameter] = value
        settings = normalized(settings)
        return replace(self, parameter=parameter, value=value, settings=settings,
                       baseline=settings == normalized(DATASET_DEFAULTS), perf=None, write_p99=None,
                       repeat=0)


def normalized(settings: Mapping[str, str]) -> dict[str, str]:
    """Settings with the recordsize in bytes ('128K' and '131072' are one setting)."""
    out = dict(settings)
    with contextlib.suppress(ValueError):  # not a size: compared as written
        out["recordsize"] = str(parse_size(out.get("recordsize", DATASET_DEFAULTS["recordsize"])))
    return out


def settings_key(o: Observation) -> tuple:
    """The candidate's settings as a hashable key: one key per setting the pool could measure."""
    return tuple(sorted(o.settings.items()))


def metric_of(pattern: str) -> str:
    return "iops" if pattern == "random" else "bandwidth"


def supported(obs: Observation) -> bool:
    """Whether the candidate's settings are within what the model has seen."""
    try:
        rs = parse_size(obs.settings.get("recordsize", DATASET_DEFAULTS["recordsize"]))
    except ValueError:
        return False
    return (MIN_RECORDSIZE <= rs <= MAX_RECORDSIZE
            and obs.settings.get("compression", "lz4") in KNOWN_COMPRESSION)


def _raidz_parity(vdev_type: str) -> int | None:
    """raidz1/2/3 -> 1/2/3 ("raidz" alone is raidz1); None for a mirror, a disk or a stripe."""
    if not vdev_type.startswith("raidz"):
        return None
    digits = vdev_type[len("raidz"):]
    return int(digits) if digits.isdigit() else 1


def disks_per_record(vdev_type: str, vdev_width: int, ashift: int | None, recordsize: int) -> int:
    """The disks one record lies on.  A raidz vdev splits a record into sectors of 2^ashift bytes
    over its data disks (OpenZFS docs, Basic Concepts: RAIDZ), so reading a record waits for each
    of them; a mirror or a stripe keeps a record on one disk.  On a raidz1 of 4 disks at ashift 12:
    1 at recordsize 4K, 2 at 8K, 3 from 16K on.  Compression is not counted: what it saves is
    measured, not known before the probe."""
    parity = _raidz_parity(vdev_type)
    if parity is None:
        return 1
    return min(max(1, vdev_width - parity), sectors(recordsize, ashift))


def records_per_io(recordsize: int, block_size: int) -> float:
    """The records one application I/O of `block_size` bytes touches: ZFS reads and writes whole
    records (zfsprops(7), recordsize), so an I/O larger than the record is split, one smaller
    than it is one record."""
    return max(1.0, block_size / recordsize)


def busiest_disk_reads(vdev_type: str, vdev_width: int, top_vdevs: int, ashift: int | None, recordsize: int,
                       block_size: int) -> float:
    """Reads the busiest disk serves per application read of `block_size` bytes (each read
    fetches whole records, `block_size / recordsize` of them, or one), when records lie evenly
    over the top-level vdevs.  A disk that serves more of them bounds the pool's random reads.

    A mirror serves a record from one of its disks, a plain disk from itself.  A raidz vdev's
    record reads fall on the disks advisor/layout/raidz_reads.py names for the data of one
    metaslab, as the lab's pools hold it: on a raidz1 of 4 at ashift 12 an 8K record's data lies
    on disks 0 and 2 three times in four (the lab: 36, 14, 39 and 11 % of the reads; 4K records
    25 % each, docs/model.md); compression is not counted."""
    records = records_per_io(recordsize, block_size)
    vdevs = max(1, top_vdevs)
    parity = _raidz_parity(vdev_type)
    if parity is None:
        per_disk = 1.0 / max(1, vdev_width) if vdev_type == "mirror" else 1.0
        return records * per_disk / vdevs
    return records * busiest_share(vdev_width, parity, ashift, recordsize, one_metaslab=True) / vdevs


def _busiest_disk(obs: Observation, recordsize: int, block_size: int) -> float:
    return busiest_disk_reads(obs.vdev_type, obs.vdev_width, obs.top_vdevs, obs.ashift, recordsize, block_size)


def vector(obs: Observation) -> list[float]:
    s = obs.settings
    rs = parse_size(s.get("recordsize", DATASET_DEFAULTS["recordsize"]))
    bs = max(obs.block_size_bytes, 512)
    ws_vs_arc = (math.log2(obs.working_set_bytes / obs.arc_max_bytes)
                 if obs.working_set_bytes and obs.arc_max_bytes else 0.0)
    vt = obs.vdev_type
    hdd = obs.media not in ("ssd", "nvme")  # the physical features: an SSD does not seek
    seeks = disks_per_record(vt, obs.vdev_width, obs.ashift, rs)
    seeks_default = disks_per_record(vt, obs.vdev_width, obs.ashift, DEFAULT_RECORDSIZE)
    values = {
        "log2_block_size": math.log2(bs) - 13,
        "read_fraction": obs.read_fraction,
        "randomness": RANDOMNESS.get(obs.pattern, 0.5),
        "fsync_rate": 1.0 / obs.fsync_every if obs.fsync_every > 0 else 0.0,
        "log2_queue": math.log2(max(1, obs.iodepth * obs.numjobs)),
        "log2_working_set_vs_arc": ws_vs_arc,
        "log2_recordsize": math.log2(rs) - 17,
        "log2_recordsize_vs_block": math.log2(rs / bs),
        # each disk a record lies on costs a seek; against the default recordsize's on the same pool it
        # is 0 at the default, as the targets are
        "log2_hdd_disks_per_record": math.log2(seeks) if hdd else 0.0,
        "log2_hdd_disks_per_record_vs_default": math.log2(seeks / seeks_default) if hdd else 0.0,
        # the busiest disk's reads against the default recordsize's on the same pool
        "log2_hdd_busiest_disk_vs_default": (math.log2(_busiest_disk(obs, rs, bs) / _busiest_disk(obs, DEFAULT_RECORDSIZE, bs))
                                             if hdd else 0.0),
        # on an SSD, each record an application I/O touches is one more I/O against the disk's IOPS;
        # on an HDD the busiest-disk feature counts them, with the disks they fall on
        "log2_ssd_records_per_io": 0.0 if hdd else math.log2(records_per_io(rs, bs)),
        "compression_off": 1.0 if s.get("compression") == "off" else 0.0,
        "logbias_throughput": 1.0 if s.get("logbias") == "throughput" else 0.0,
        "primarycache_not_all": 0.0 if s.get("primarycache", "all") == "all" else 1.0,
        "sync_disabled": 1.0 if s.get("sync") == "disabled" else 0.0,
        "sync_always": 1.0 if s.get("sync") == "always" else 0.0,
        "ssd": 0.0 if hdd else 1.0,
        "mirror": 1.0 if vt == "mirror" else 0.0,
        "raidz": 1.0 if vt.startswith("raidz") else 0.0,
        "log2_vdev_width": math.log2(max(1, obs.vdev_width)),
        "log2_top_vdevs": math.log2(max(1, obs.top_vdevs)),
        "ashift": float((obs.ashift or 12) - 12),
    }
    return [values[f] for f in FEATURES]


# --- from the prior CSV -----------------------------------------------------------------------
def _int(text: str | None, default: int | None = None) -> int | None:
    return int(float(text)) if text not in (None, "") else default


def _float(text: str | None) -> float | None:
    return float(text) if text not in (None, "") else None


def perf_of(pattern: str, iops: float, read_bw: float, write_bw: float) -> float:
    return iops if metric_of(pattern) == "iops" else read_bw + write_bw


def lab_cell(row: Mapping[str, str]) -> str:
    """One grid measured in the lab.  The working set is part of it: grids of one layout and
    workload at another working set against the same ARC cap measure another mix of memory
    and disk, and their candidates are not compared with each other's baseline."""
    ws = _int(row.get("working_set_bytes"))
    return f"zfs{row['zfs_version']}/{row['layout']}/{row['workload']}" + (f"/{ws >> 20}M" if ws else "")


def from_csv_row(row: Mapping[str, str]) -> Observation:
    """A row of advisor/model/data/prior-*.csv (columns in its provenance file)."""
    settings = {k: row.get(k) or DATASET_DEFAULTS[k] for k in DATASET_DEFAULTS}
    settings["recordsize"] = str(int(row["recordsize_bytes"]))
    pattern = row["pattern"]
    p99 = _float(row.get("write_p99_us"))
    return Observation(
        workload=row["workload"], pattern=pattern, block_size_bytes=int(row["block_size_bytes"]),
        read_fraction=float(row["read_fraction"]), fsync_every=_int(row.get("fsync_every"), 0) or 0,
        iodepth=_int(row.get("iodepth"), 1) or 1, numjobs=_int(row.get("numjobs"), 1) or 1,
        working_set_bytes=_int(row.get("working_set_bytes")), arc_max_bytes=_int(row.get("arc_max_bytes")),
        media=row["media"], vdev_type=row["vdev_type"], top_vdevs=_int(row.get("top_vdevs"), 1) or 1,
        vdev_width=_int(row.get("vdev_width"), 1) or 1, ashift=_int(row.get("ashift")),
        parameter=row["parameter"], value=row["value"], baseline=row.get("baseline") in ("1", "True", "true"),
        settings=settings, cell=lab_cell(row),
        run=row.get("run_id") or "", repeat=_int(row.get("repeat"), 0) or 0,
        perf=perf_of(pattern, float(row["iops"]), float(row.get("read_bw_bytes") or 0), float(row.get("write_bw_bytes") or 0)),
        write_p99=p99 / 1e6 if p99 else None,
    )


# --- from this host: the store's probe results and the pool's facts ----------------------------
class JobShape(TypedDict):
    """The fio job's part of an Observation."""
    fsync_every: int
    iodepth: int
    numjobs: int


def job_shape(job: str) -> JobShape:
    """fsync_every (the smallest fsync/fdatasync interval of any section, 0 if none), iodepth
    (the largest) and numjobs (summed over the sections) of a fio job file's text."""
    sections: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in job.splitlines():
        line = line.strip()
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
        elif "=" in line and current is not None:
            key, value = line.split("=", 1)
            current[key.strip()] = value.strip()
    glob = sections.pop("global", {})
    fsync: list[int] = []
    depth, jobs = 1, 0
    for opts in sections.values() or [{}]:
        merged = {**glob, **opts}
        for key in ("fsync", "fdatasync"):
            every = _int(merged.get(key), 0) or 0
            if every > 0:
                fsync.append(every)
        depth = max(depth, _int(merged.get("iodepth"), 1) or 1)
        jobs += _int(merged.get("numjobs"), 1) or 1
    return {"fsync_every": min(fsync) if fsync else 0, "iodepth": depth, "numjobs": jobs}


@dataclass(frozen=True)
class WorkloadShape:
    """What the model needs of a workload profile (rules/workloads/*.yaml `io:`)."""
    name: str
    pattern: str
    block_size_bytes: int
    read_fraction: float

    @classmethod
    def of(cls, workload: Any) -> WorkloadShape:
        return cls(workload.name, workload.io.pattern, parse_size(workload.io.block_size), workload.io.read_fraction)


def from_result(row: Any, workload: WorkloadShape, pool_name: str) -> Observation:
    """A stored probe result (advisor/store/probes.py ResultRow) of `pool_name`."""
    settings = dict(DATASET_DEFAULTS)
    if row.scope == "dataset":
        settings[row.parameter] = row.value
    settings = normalized(settings)
    return Observation(
        workload=workload.name, pattern=workload.pattern, block_size_bytes=workload.block_size_bytes,
        read_fraction=workload.read_fraction, **job_shape(row.job),
        working_set_bytes=row.working_set_bytes, arc_max_bytes=described_arc_max(row), **pool_shape(row.pool),
        # The model's baseline is the ZFS default, not the run's first value: a run of
        # `--param recordsize=8K,4K` stores 8K as its baseline, and its ratios are to 8K.
        parameter=row.parameter, value=row.value, baseline=settings == normalized(DATASET_DEFAULTS), settings=settings,
        cell=f"local:{pool_name}", run=str(row.run_id), repeat=row.repeat,
        perf=perf_of(workload.pattern, row.iops, row.read_bw, row.write_bw), write_p99=row.write_p99,
    )


def query(workload: WorkloadShape, job_text: str, working_set_bytes: int | None, arc_max_bytes: int | None,
          descriptor: Mapping[str, Any], pool_name: str) -> Observation:
    """The baseline candidate of `workload` on a pool that has not been probed (yet): the probe
    job's shape and the pool's descriptor, the ZFS defaults as settings."""
    return Observation(
        workload=workload.name, pattern=workload.pattern, block_size_bytes=workload.block_size_bytes,
        read_fraction=workload.read_fraction, **job_shape(job_text), working_set_bytes=working_set_bytes,
        arc_max_bytes=arc_max_bytes, **pool_shape(descriptor), parameter="recordsize", value=DATASET_DEFAULTS["recordsize"],
        baseline=True, settings=normalized(DATASET_DEFAULTS),
        cell=f"local:{pool_name}",
    )
