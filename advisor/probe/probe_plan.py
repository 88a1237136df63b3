"""A probe plan: which candidates, how long each fio run, how many repeats, within a budget."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from advisor.probe.candidates import Candidate

MIN_RUNTIME_SECONDS = 5
MAX_RUNTIME_SECONDS = 60
# Create + destroy of a child dataset, fio start-up, result bookkeeping (measured in the
# lab under emulation: 3-8 s); layout time comes on top (see `layout_seconds`).
OVERHEAD_SECONDS = 8.0
ASSUMED_LAYOUT_BYTES_PER_SECOND = 50e6


class Budget(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    seconds: float = Field(300.0, gt=0, description="wall time of one probe run")
    bytes: int = Field(16 << 30, gt=0, description="bytes one probe run may write")
    space_bytes: int = Field(4 << 30, gt=0, description="quota of each candidate's scratch dataset")
    daily_seconds: float = Field(3600.0, gt=0, description="probe time per pool in any 24 hours")
    daily_bytes: int = Field(128 << 30, gt=0, description="bytes written by probes per pool in any 24 hours")


class Plan(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pool: str
    workload: str
    role: str | None = None
    params: dict[str, str] = Field(default_factory=dict, description="workload parameters, e.g. page_size")
    candidates: list[Candidate]
    repeats: int = Field(ge=2)
    runtime_seconds: int
    ramp_seconds: int
    max_file_bytes: int
    working_set_bytes: int
    quota_bytes: int
    arc_max_bytes: int | None = Field(None, description="ARC cap while the probe runs (None: left alone)")
    arc_min_bytes: int | None = Field(None, description="ARC floor (zfs_arc_min) lowered to this while the probe "
                                      "runs, so that the cap can go below it (None: left alone)")
    layout_primarycache: str | None = Field(None, description="primarycache of the scratch dataset while its files "
                                            "are laid out (None: the candidate's, 'all' by default)")
    measure_primarycache: str | None = Field(None, description="primarycache of the scratch dataset while fio "
                                             "measures (None: the candidate's)")
    layout_per_repeat: bool = Field(True, description="each repeat lays out its files in a fresh scratch child "
                                    "(False: a candidate's repeats share one layout, as the lab prior was measured)")
    budget: Budget
    estimated_seconds: float
    dropped: list[Candidate] = Field(default_factory=list, description="candidates the budget had no room for")
    notes: list[str] = Field(default_factory=list, description="what may make the numbers less telling")


    @property
    def changes_host(self) -> bool:
        """True when the plan changes a host-wide setting (the ARC cap, a module parameter):
        then foreground I/O on any pool of the host stops it, not only on its own."""
        return bool(self.arc_max_bytes or self.arc_min_bytes) or any(c.scope == "module" for c in self.candidates)


def layout_seconds(working_set_bytes: int, rate: float = ASSUMED_LAYOUT_BYTES_PER_SECOND) -> float:
    return working_set_bytes / rate


def fit_runtime(budget_seconds: float, candidates: int, repeats: int, ramp: int, working_set_bytes: int,
                longest: int, layout_rate: float = ASSUMED_LAYOUT_BYTES_PER_SECOND,
                layout_per_repeat: bool = True) -> int | None:
    """The longest fio runtime (<= `longest`) that lets every candidate run `repeats` times
    within the budget; None when even the shortest does not fit."""
    layouts = repeats if layout_per_repeat else 1
    per_candidate = budget_seconds / candidates - layouts * (OVERHEAD_SECONDS + layout_seconds(working_set_bytes, layout_rate))
    runtime = int(per_candidate / repeats) - ramp
    if runtime < MIN_RUNTIME_SECONDS:
        return None
    return min(runtime, longest, MAX_RUNTIME_SECONDS)


def estimate_seconds(candidates: int, repeats: int, runtime: int, ramp: int, working_set_bytes: int,
                     layout_rate: float = ASSUMED_LAYOUT_BYTES_PER_SECOND, layout_per_repeat: bool = True) -> float:
    layouts = repeats if layout_per_repeat else 1
    return candidates * (layouts * (OVERHEAD_SECONDS + layout_seconds(working_set_bytes, layout_rate))
                         + repeats * (runtime + ramp))
