"""What the application lab found about the prior's evidence: per medium, workload and parameter,
how a real application ranked the values where the disks, not the emulated CPU, set the pace
(docs/apps.md; advisor/model/data/app-findings.json, checked against the committed grids by
tests/unit/test_app_findings.py).

Why an answer needs it: the prior behind the model's predictions was measured in the lab VM with
the disks at their full throttle, where the emulated CPU and each I/O's latency through it set the
pace (a probe there is judged `unclear`, its CPUs 86-90 % busy: docs/lab.md).  In that regime the
postgres probe's job ran 2.35 times the IOPS at recordsize 8K as at 128K (with lz4: the emulated CPU
recompressing 128K records); with the disks throttled until they set the pace, pgbench measured 8K
at 1.04x 128K (0.94-1.15) and the probe's own job 1.16x within a noise of 0.56-2.42.  A gain the
model predicts from that prior is therefore no evidence of a gain on a pool whose disks set the
pace, which is what a storage change is for.  Where a finding covers a proposal and the current
value and the application did not confirm the gain, the answer keeps the current value and says
how to measure it (advisor/engine/decide.py); a probe of the pool itself that measures the gain
beyond its noise, at the pool's own pace, decides.

Pure: `read_findings` takes the file's text (the loader reads it once, at start-up).
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

Same = Callable[[str, str], bool]  # whether two values are one ("8K", "8192"): the engine's same_value


@dataclass(frozen=True)
class PairFinding:
    value: str
    against: str
    ratio: float  # the application's metric at `value` over `against` (> 1: better, whichever way it points)
    interval: tuple[float, float]  # 90 %
    grid: str = ""  # the committed grid it comes from (tests/lab/apps-data/<grid>.csv)


@dataclass(frozen=True)
class AppFinding:
    medium: str
    workload: str
    parameter: str
    application: str  # what ran, in words
    where: str  # the layout and throttle, in words
    metric: str
    pairs: tuple[PairFinding, ...]
    probe_job: str  # what the probe's own fio job measured at the same pace, in words ("" if not run)

    def pairs_for(self, value: str, against: str, same: Same) -> list[PairFinding]:
        """The application's ratios of `value` over `against`, one per grid that measured both
        (inverted where measured the other way)."""
        out = []
        for p in self.pairs:
            if same(p.value, value) and same(p.against, against):
                out.append(p)
            elif same(p.value, against) and same(p.against, value):
                out.append(PairFinding(value, against, 1 / p.ratio, (1 / p.interval[1], 1 / p.interval[0]), p.grid))
        return out

    def unconfirmed(self, proposal: str, current: str, same: Same) -> PairFinding | None:
        """Where the application measured both and a grid did not confirm `proposal` beating
        `current` beyond its noise (its 90 % interval does not lie above 1), the least favourable
        such pair; else None.  One grid that saw no gain is enough to hold a change: first, do no harm."""
        found = [p for p in self.pairs_for(proposal, current, same) if p.interval[0] <= 1.0]
        return min(found, key=lambda p: p.ratio, default=None)


def read_findings(text: str) -> dict[tuple[str, str, str], AppFinding]:
    out = {}
    for f in json.loads(text)["findings"]:
        pairs = tuple(PairFinding(p["value"], p["against"], float(p["ratio"]),
                                  (float(p["interval"][0]), float(p["interval"][1])), p["grid"]) for p in f["pairs"])
        finding = AppFinding(f["medium"], f["workload"], f["parameter"], f["application"], f["where"],
                             f["metric"], pairs, f.get("probe_job", ""))
        out[(finding.medium, finding.workload, finding.parameter)] = finding
    return out
