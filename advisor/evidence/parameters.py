"""What the probes of a pool and workload say, per parameter: candidates ranked by IOPS, with
write p99, the spread of their repeats, 90 % intervals, and the effect against the baseline
(ZFS default) value.

The intervals pool the repeats of all of a run's candidates (advisor/evidence/interval.py): the
effect's is a 90 % interval of the ratio of two candidates' mean IOPS, a candidate's `run_interval`
where one more run of its job should land (90 %).

Pure over result rows (the store's, advisor/store/probes.py ResultRow, read by
advisor/store/probe_evidence.py); the recommendation engine turns this into `source: probe` and
`expected_effect`.  Candidates are compared only within one run (same pool state, same job).
"""
from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel

from advisor.evidence.bound import SetAside
from advisor.evidence.interval import pooled_log_sd, ratio_interval, run_interval


class MeasuredRow(Protocol):
    """One repeat of one candidate, as the store keeps it (advisor/store/probes.py ResultRow)."""

    @property
    def run_id(self) -> int: ...
    @property
    def value(self) -> str: ...
    @property
    def baseline(self) -> bool: ...
    @property
    def iops(self) -> float: ...
    @property
    def read_p99(self) -> float | None: ...
    @property
    def write_p99(self) -> float | None: ...
    @property
    def sync_p99(self) -> float | None: ...
    @property
    def compress_ratio(self) -> float | None: ...
    @property
    def arc_hit_ratio(self) -> float | None: ...
    @property
    def pool(self) -> dict: ...


class CandidateEvidence(BaseModel):
    value: str
    baseline: bool
    rank: int
    repeats: int
    iops: float  # mean over repeats
    iops_min: float
    iops_max: float
    iops_dispersion: float  # (max - min) / mean over the repeats
    run_interval: tuple[float, float] | None  # 90 %: IOPS of one more run (None: no repeats to tell)
    write_p99_seconds: float | None  # worst repeat
    read_p99_seconds: float | None
    sync_p99_seconds: float | None
    compress_ratio: float | None
    arc_hit_ratio: float | None
    effect_ratio: float | None  # mean IOPS / the baseline's mean IOPS
    effect_interval: tuple[float, float] | None  # 90 % interval of effect_ratio
    write_p99_ratio: float | None  # this write p99 / the baseline's
    distinguishable: bool  # the effect's interval excludes 1

    def expected_effect(self) -> dict | None:
        """In the shape of /recommend's `expected_effect` (advisor/engine/models.py ExpectedEffect)."""
        if self.effect_ratio is None or self.effect_interval is None:
            return None
        return {"metric": "iops", "change_ratio": round(self.effect_ratio, 3),
                "interval": [round(self.effect_interval[0], 3), round(self.effect_interval[1], 3)],
                "measured_on": "the probe's fio job, run on this pool"}


class ParameterEvidence(BaseModel):
    """The latest run that measured a parameter as evidence about the storage; `set_aside`: later
    runs that were not (advisor/evidence/bound.py).  With no such run at all, `candidates` is
    empty and `best` is "": only `set_aside` says anything (see `set_aside_only`)."""
    parameter: str
    run_id: int
    baseline: str | None
    best: str
    pool: dict
    candidates: list[CandidateEvidence]
    repeat_log_sd: float | None = None  # sd of log IOPS between repeats, pooled over the candidates
    degrees_of_freedom: int = 0  # of repeat_log_sd: repeats beyond each candidate's first
    set_aside: list[SetAside] = []  # newer runs of it the host's CPU bound, oldest first

    def candidate(self, value: str) -> CandidateEvidence | None:
        return next((c for c in self.candidates if c.value == value), None)

    def ratio(self, new: CandidateEvidence, old: CandidateEvidence) -> tuple[float, tuple[float, float] | None] | None:
        """Mean IOPS of `new` over `old`'s, with its 90 % interval (None without repeats to pool),
        or None when `old` measured nothing."""
        if old.iops <= 0:
            return None
        if new.value == old.value:
            return 1.0, (1.0, 1.0)
        ratio = new.iops / old.iops
        if self.repeat_log_sd is None:
            return ratio, None
        return ratio, ratio_interval(ratio, self.repeat_log_sd, self.degrees_of_freedom, new.repeats, old.repeats)

    def separated(self, a: CandidateEvidence, b: CandidateEvidence) -> bool:
        """Whether the 90 % interval of their ratio excludes 1: the probe tells them apart."""
        found = self.ratio(a, b)
        return bool(found and found[1] and (found[1][0] > 1 or found[1][1] < 1))


def _worst(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return max(present) if present else None


def _mean(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def summarize(parameter: str, rows: Sequence[MeasuredRow]) -> ParameterEvidence:
    by_value: dict[str, list[MeasuredRow]] = defaultdict(list)
    for row in rows:
        by_value[row.value].append(row)
    base_value = next((r.value for r in rows if r.baseline), None)
    pooled = pooled_log_sd([r.iops for r in rs] for rs in by_value.values())
    sd, dof = pooled if pooled else (None, 0)
    base_p99 = _worst([r.write_p99 for r in by_value.get(base_value, [])] if base_value else [])
    ranked = sorted(by_value.items(), key=lambda kv: -statistics.fmean(r.iops for r in kv[1]))
    candidates = []
    for rank, (value, rs) in enumerate(ranked, 1):
        iops = [r.iops for r in rs]
        mean = statistics.fmean(iops)
        p99 = _worst([r.write_p99 for r in rs])
        candidates.append(CandidateEvidence(
            value=value, baseline=value == base_value, rank=rank, repeats=len(rs), iops=mean,
            iops_min=min(iops), iops_max=max(iops), iops_dispersion=(max(iops) - min(iops)) / mean if mean else 0.0,
            run_interval=run_interval(mean, sd, dof, len(rs)) if sd is not None and mean > 0 else None,
            write_p99_seconds=p99, read_p99_seconds=_worst([r.read_p99 for r in rs]),
            sync_p99_seconds=_worst([r.sync_p99 for r in rs]), compress_ratio=_mean([r.compress_ratio for r in rs]),
            arc_hit_ratio=_mean([r.arc_hit_ratio for r in rs]), effect_ratio=None, effect_interval=None,
            write_p99_ratio=p99 / base_p99 if p99 is not None and base_p99 else None, distinguishable=False,
        ))
    ev = ParameterEvidence(parameter=parameter, run_id=rows[-1].run_id, baseline=base_value,
                           best=candidates[0].value, pool=rows[-1].pool, candidates=candidates,
                           repeat_log_sd=sd, degrees_of_freedom=dof)
    base = next((c for c in candidates if c.baseline), None)
    if base is not None:
        for c in candidates:
            found = ev.ratio(c, base)
            if found is not None:
                c.effect_ratio, c.effect_interval = found
                c.distinguishable = ev.separated(c, base)
    return ev


def set_aside_only(parameter: str, runs: list[SetAside]) -> ParameterEvidence:
    """A parameter every run of which was set aside: no candidate to go by, only why."""
    return ParameterEvidence(parameter=parameter, run_id=runs[-1].run_id, baseline=None, best="", pool={},
                             candidates=[], set_aside=runs)
