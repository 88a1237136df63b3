"""The statistics of a before/after comparison: pure functions on per-interval values.

A window is the list of per-interval values (a rate, or a latency percentile) of the collections
it spans. The load's own variation within the window before the change (the relative spread of
its per-interval values) is the noise floor: an effect smaller than that is not called one, however
narrow the interval of the mean ratio.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from itertools import pairwise
from typing import Literal

Verdict = Literal["better", "worse", "no measurable effect", "not enough load"]
MIN_INTERVALS = 3  # per window: fewer give no spread worth the name

# Two-sided 95 % quantiles of Student's t by degrees of freedom (any statistics table); beyond
# the last entry the normal's 1.96.
_T95 = ((1, 12.71), (2, 4.30), (3, 3.18), (4, 2.78), (5, 2.57), (6, 2.45), (7, 2.36), (8, 2.31), (9, 2.26),
        (10, 2.23), (12, 2.18), (15, 2.13), (20, 2.09), (30, 2.04), (60, 2.00))


def t95(df: int) -> float:
    """The t quantile for `df` degrees of freedom, from the table (rounded down to an entry: wider)."""
    value = _T95[0][1]
    for d, t in _T95:
        if df >= d:
            value = t
    return value if df <= 60 else 1.96


def rates(points: Sequence[tuple[float, float]]) -> list[float]:
    """Per-interval rates of a cumulative counter sampled at (time, value) points; an interval where
    the counter went back (a reset: the pool re-imported, the module reloaded) is left out."""
    out = []
    for (t0, v0), (t1, v1) in pairwise(points):
        if t1 > t0 and v1 >= v0:
            out.append((v1 - v0) / (t1 - t0))
    return out


def percentile(bounds: Sequence[float], counts: Sequence[float], q: float) -> float | None:
    """The q-quantile (0..1) of a histogram of per-bucket counts with inclusive upper `bounds`,
    linear within the bucket it falls in (from the previous bound); None when it is empty."""
    total = sum(counts)
    if total <= 0:
        return None
    rank, seen, lower = q * total, 0.0, 0.0
    for bound, count in zip(bounds, counts, strict=True):
        if count > 0 and seen + count >= rank:
            return lower + (bound - lower) * max(0.0, rank - seen) / count
        seen += count
        lower = bound
    return float(bounds[-1]) if bounds else None


@dataclass(frozen=True)
class Summary:
    mean: float
    spread: float  # the sample standard deviation of the per-interval values
    intervals: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Summary:
        return cls(statistics.fmean(values) if values else 0.0,
                   statistics.stdev(values) if len(values) > 1 else 0.0, len(values))


@dataclass(frozen=True)
class Comparison:
    before: Summary
    after: Summary
    ratio: float | None  # after / before mean
    interval: tuple[float, float] | None  # 95 % interval of the ratio
    noise_floor: float  # the before window's relative spread (coefficient of variation)
    verdict: Verdict

    def as_dict(self) -> dict:
        d = asdict(self)
        d["interval"] = list(self.interval) if self.interval else None
        return d


def compare(before: Sequence[float], after: Sequence[float], higher_is_better: bool, min_level: float) -> Comparison:
    """`after` against `before`: the ratio of the means and its 95 % interval (delta method on the log
    of the ratio, t with the smaller window's degrees of freedom), and a verdict.

    "not enough load" when a window has fewer than MIN_INTERVALS values or a mean below `min_level`
    (a load too light to measure a setting by); "better"/"worse" only when the interval leaves out 1
    AND the ratio is further from 1 than the noise floor; otherwise "no measurable effect"."""
    b, a = Summary.of(before), Summary.of(after)
    floor = b.spread / b.mean if b.mean > 0 else 0.0
    if b.intervals < MIN_INTERVALS or a.intervals < MIN_INTERVALS or b.mean < min_level or a.mean < min_level:
        ratio = a.mean / b.mean if b.mean > 0 and a.intervals else None
        return Comparison(b, a, ratio, None, floor, "not enough load")
    ratio = a.mean / b.mean
    se = math.sqrt((a.spread / a.mean) ** 2 / a.intervals + (b.spread / b.mean) ** 2 / b.intervals)
    half = t95(min(a.intervals, b.intervals) - 1) * se
    low, high = ratio * math.exp(-half), ratio * math.exp(half)
    verdict: Verdict = "no measurable effect"
    if (low > 1 or high < 1) and abs(math.log(ratio)) > math.log1p(floor):
        up = ratio > 1
        verdict = "better" if up == higher_is_better else "worse"
    return Comparison(b, a, ratio, (low, high), floor, verdict)


def overall(verdicts: Sequence[Verdict]) -> tuple[str, str]:
    """One verdict for a change from its headline metrics' (IOPS, bandwidth), with why."""
    measured = [v for v in verdicts if v != "not enough load"]
    if not measured:
        return "not enough load", "no headline metric had enough load before and after"
    better, worse = "better" in measured, "worse" in measured
    if better and worse:
        return "mixed", "some headline metrics measurably better, others measurably worse"
    if better:
        return "better", "a headline metric measurably better beyond the load's own variation, none worse"
    if worse:
        return "worse", "a headline metric measurably worse beyond the load's own variation, none better"
    return "no measurable effect", "no headline metric moved beyond the load's own variation"
