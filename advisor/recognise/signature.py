"""A workload profile's expected I/O traits, per role of a file system, from the profile itself.

The sizes, the read/write mix and the syncs come from the sections of the profile's probe fio job
for that role (advisor/probe/fio_job.py `probe_sections`): what the profile says the workload
does, in a form that can be compared with counters. Sections running side by side (a read stream
and a write stream) share the work in proportions that depend on the hardware, so a role's mix is
the range its sections span, with each direction present.

fio(1) `rw`, `rwmixread`, `bs`, `fsync`, `fdatasync`, `sync`: https://fio.readthedocs.io/en/latest/fio_doc.html
"""
from __future__ import annotations

from dataclasses import dataclass

from advisor.engine.schema import Workload
from advisor.engine.units import parse_size
from advisor.probe.fio_job import JobError, probe_sections

READS = {"read": 1.0, "randread": 1.0, "write": 0.0, "randwrite": 0.0, "trim": 0.0, "randtrim": 0.0}
MIXED = ("rw", "readwrite", "randrw")
BOTH_WAYS = 0.02  # sections side by side: each direction is at least this share of the operations


@dataclass(frozen=True)
class Section:
    read_fraction: float  # of operations
    size: int  # bytes per request
    syncs_per_write: float
    random: bool


@dataclass(frozen=True)
class Signature:
    workload: str
    role: str
    read_sizes: tuple[int, int] | None  # smallest and largest read request; None: it does not read
    write_sizes: tuple[int, int] | None
    read_fraction: tuple[float, float]  # of operations, a range
    syncs_per_write: tuple[float, float]  # fsync/fdatasync calls per write, a range
    random: bool | None  # every section random (True), none (False), some (None)
    shared: tuple[str, ...] = ()  # other roles whose files share the dataset: their sections are in the mix

    @property
    def label(self) -> str:
        return f"{self.workload}/{self.role}" + "".join(f"+{r}" for r in self.shared)

    @property
    def answer(self) -> tuple[str, str]:
        """The workload and role an answer is for: a role sharing its dataset is still that role."""
        return self.workload, self.role


def section(options: dict[str, str]) -> Section:
    rw = options.get("rw", options.get("readwrite", "read"))
    if rw in MIXED:
        fraction = int(options.get("rwmixread", 100 - int(options.get("rwmixwrite", 50)))) / 100
    else:
        fraction = READS.get(rw, 1.0)
    syncs = 0.0
    if options.get("sync") in ("1", "sync", "dsync"):
        syncs = 1.0
    for key in ("fsync", "fdatasync"):
        if int(options.get(key, 0)) > 0 and fraction < 1:
            # fio checks the count of writes before each request it issues, so after every Nth write
            # it syncs before each read too until the next write: 1 / (1 - read fraction) syncs per
            # Nth write (fio 3.33 in the lab: sqlite's fsync=32 at 80 % reads gave 0.14-0.16 a write)
            syncs = max(syncs, 1 / (int(options[key]) * (1 - fraction)))
    return Section(fraction, parse_size(options.get("bs", "4K")), syncs, rw.startswith("rand"))


def role_signature(workload: Workload, role: str, shared: tuple[str, ...] = ()) -> Signature:
    """The role's signature; with `shared`, of the role's dataset holding those roles' files too: their
    sections side by side, as a probe of each would run them, widened by what the role's `shared_io`
    says the application does there (a profile's claim, with its source)."""
    values = {name: p.default for name, p in workload.parameters.items()}
    glob = {k: str(v).format(**values) for k, v in workload.fio.get("global", {}).items()}
    names = list(dict.fromkeys(n for r in (role, *shared) for n in probe_sections(workload, r)))
    parts = [section({**glob, **{k: str(v).format(**values) for k, v in workload.fio[name].items()}})
             for name in names]
    reads = _mean_sizes([p.size for p in parts if p.read_fraction > 0])
    writes = _mean_sizes([p.size for p in parts if p.read_fraction < 1])
    fractions = [p.read_fraction for p in parts]
    low, high = min(fractions), max(fractions)
    if len(parts) > 1:  # side by side: both directions show, in proportions the hardware sets
        low, high = max(low, BOTH_WAYS if reads else 0.0), min(high, 1 - BOTH_WAYS if writes else 1.0)
    syncs = [p.syncs_per_write for p in parts if p.read_fraction < 1] or [0.0]
    randoms = {p.random for p in parts}
    io = workload.role(role).shared_io if shared else None
    if io is not None and io.read_fraction is not None:
        low, high = min(low, io.read_fraction[0]), max(high, io.read_fraction[1])
    if io is not None and io.write_sizes is not None and writes is not None:
        writes = (min(writes[0], parse_size(io.write_sizes[0])), max(writes[1], parse_size(io.write_sizes[1])))
    sync_range = (min(syncs), max(syncs))
    if io is not None and io.syncs_per_write is not None:
        sync_range = (min(sync_range[0], io.syncs_per_write[0]), max(sync_range[1], io.syncs_per_write[1]))
    return Signature(workload.name, role, reads, writes, (low, high), sync_range,
                     randoms.pop() if len(randoms) == 1 else None, shared)


def _mean_sizes(sizes: list[int]) -> tuple[int, int] | None:
    """The range of the mean request size of sections side by side: each does at least BOTH_WAYS
    of the requests, so 4 KiB and 1 MiB reads mean more than 4 KiB and less than 1 MiB."""
    if not sizes:
        return None
    small, large = min(sizes), max(sizes)
    if small == large:
        return small, large
    return (round((1 - BOTH_WAYS) * small + BOTH_WAYS * large), round(BOTH_WAYS * small + (1 - BOTH_WAYS) * large))


def signatures(workloads: dict[str, Workload]) -> list[Signature]:
    """One per workload and role stored on a file system (a volume's I/O is not in objset kstats
    the same way: zvols are recognised from nothing here)."""
    found = []
    for _, workload in sorted(workloads.items()):
        for role in workload.roles:
            if role.dataset_type != "filesystem":
                continue
            for shared in ((), tuple(role.shares_with)) if role.shares_with else ((),):
                try:
                    found.append(role_signature(workload, role.name, shared))
                except (JobError, KeyError, ValueError):
                    continue  # a role without a job of its own says nothing to compare with
    return found
