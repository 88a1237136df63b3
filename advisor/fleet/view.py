"""A fleet view: the sibling runs read at one time, and what they say to one pool's model.

A sibling pool is one whose SIBLING_LABELS (advisor/hostmodel/pool_labels.py) all equal this
pool's, on another instance; its runs of the same workload become the model's sibling
observations (advisor/model/siblings.py), each a ratio to its own run's baseline.  A sibling
whose measured effect of a candidate lies outside the band two hosts differ by (90 %, from the
between-host variance) from the other siblings' is named in the answer; the model still reads
it, through the between-host variance, as it reads every sibling."""
from __future__ import annotations

import math
import socket
import statistics
import time
from collections import defaultdict
from dataclasses import dataclass, field, replace

from advisor.evidence.interval import Z90
from advisor.fleet.series import SiblingRun
from advisor.model.dataset import Sample, samples
from advisor.model.features import Observation, supported
from advisor.model.siblings import HOST_CONTRAST_VARIANCE, SiblingSample


def own_instances(configured: str | None) -> set[str]:
    """This daemon's own `instance` label values (its series are its own pool's, not a sibling's):
    the configured one, else any on this host's names."""
    if configured:
        return {configured}
    return {socket.gethostname(), socket.getfqdn()}


def is_own(instance: str, own: set[str]) -> bool:
    return instance in own or instance.rsplit(":", 1)[0] in own


@dataclass(frozen=True)
class FleetView:
    runs: list[SiblingRun]
    fetched_at: float  # Unix time of the reading

    def age(self, now: float) -> float:
        return max(0.0, now - self.fetched_at)


@dataclass(frozen=True)
class Siblings:
    samples: list[SiblingSample]
    pools: list[str]  # "instance pool" of each sibling pool read
    probes: int  # candidates measured, summed over the sibling pools
    disagreeing: list[str] = field(default_factory=list)  # what each disagreeing sibling measured
    age_seconds: float = 0.0  # of the view they were read from


def _observations(run: SiblingRun, base: Observation) -> list[Observation]:
    host = f"{run.instance} {run.pool}"
    out = []
    for r in run.repeats:
        perf = r.iops if base.metric == "iops" else r.bandwidth
        if not perf:
            continue
        obs = replace(base.with_candidate(run.parameter, r.value), working_set_bytes=run.working_set_bytes,
                      arc_max_bytes=run.arc_max_bytes, cell=f"fleet:{host}/{run.parameter}", run=host,
                      repeat=r.repeat, perf=perf, write_p99=r.write_p99)
        if supported(obs):
            out.append(obs)
    return out


def _disagreeing(by_pool: dict[str, list[Sample]]) -> list[str]:
    """Siblings whose mean effect of a candidate lies outside the 90 % band of two hosts'
    difference around the median of every sibling's (three at least: of two, neither is the odd one)."""
    effect: dict[str, dict[str, float]] = defaultdict(dict)
    for pool, rows in by_pool.items():
        by_candidate: dict[str, list[float]] = defaultdict(list)
        for s in rows:
            if not s.obs.baseline:
                by_candidate[f"{s.obs.parameter}={s.obs.value}"].append(s.y_perf)
        effect[pool] = {c: statistics.fmean(ys) for c, ys in by_candidate.items()}
    band = Z90 * math.sqrt(2 * HOST_CONTRAST_VARIANCE)
    found = []
    for pool, mine in sorted(effect.items()):
        for candidate, y in sorted(mine.items()):
            every = [e[candidate] for e in effect.values() if candidate in e]
            middle = statistics.median(every)
            if len(every) >= 3 and abs(y - middle) > band:
                found.append(f"{pool}: {candidate} measured {math.exp(y):.2f}x the default, the siblings' median "
                             f"{math.exp(middle):.2f}x")
                break
    return found


def siblings_for(view: FleetView, labels: dict[str, str], workload: str, base: Observation,
                 own_instances: set[str]) -> Siblings:
    """The sibling runs of `workload` on pools described by `labels` (this pool's SIBLING_LABELS),
    not of `own_instances` (this daemon's series), as sibling samples of `base`'s pool."""
    by_pool: dict[str, list[Sample]] = defaultdict(list)
    for run in view.runs:
        if run.workload != workload or is_own(run.instance, own_instances) or run.labels != labels:
            continue
        by_pool[f"{run.instance} {run.pool}"] += samples(_observations(run, base))
    kept = {p: rows for p, rows in by_pool.items() if rows}
    return Siblings(samples=[SiblingSample(s, p) for p, rows in sorted(kept.items()) for s in rows],
                    pools=sorted(kept),
                    probes=sum(len({(s.obs.parameter, s.obs.value) for s in rows}) for rows in kept.values()),
                    disagreeing=_disagreeing(kept), age_seconds=view.age(time.time()))
