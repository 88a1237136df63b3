"""How far a probe's numbers can be trusted: Student-t intervals from the repeats of one run.

Two repeats of a candidate say little on their own (one degree of freedom: a 90 % interval of
+-6.3 standard deviations). The candidates of one run share the pool, the job and the noise of
the host, so their repeats are pooled: the variance of log IOPS within each candidate, summed
over the run's candidates, with one degree of freedom per repeat beyond a candidate's first
(one-way analysis of variance; NIST/SEMATECH e-Handbook of Statistical Methods, 7.4.3). Logs,
because the noise of a throughput is a share of it rather than a number of IOPS.

What no interval here can see is what changes between runs and not between repeats: a host
that runs the emulation slower one evening, a pool that fills up (docs/probes.md).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

# Student's t, 0.95 quantile (two-sided 90 %), for 1..30 degrees of freedom
# (scipy.stats.t.ppf(0.95, dof); tests/unit/test_probe_interval.py checks them against it).
_T95 = (6.3138, 2.9200, 2.3534, 2.1318, 2.0150, 1.9432, 1.8946, 1.8595, 1.8331, 1.8125,
        1.7959, 1.7823, 1.7709, 1.7613, 1.7531, 1.7459, 1.7396, 1.7341, 1.7291, 1.7247,
        1.7207, 1.7171, 1.7139, 1.7109, 1.7081, 1.7056, 1.7033, 1.7011, 1.6991, 1.6973)
# the normal's 0.95 quantile: a two-sided 90 % interval is mean ± Z90 sd (the engine and the model use it too)
Z90 = 1.6448536269514722


def t90(dof: int) -> float:
    """The multiplier of a two-sided 90 % Student-t interval with `dof` degrees of freedom."""
    if dof < 1:
        raise ValueError("a t interval needs at least one degree of freedom")
    if dof <= len(_T95):
        return _T95[dof - 1]
    z = Z90  # Cornish-Fisher expansion in 1/dof: within 1e-4 of the exact quantile from 31 on
    return z + (z ** 3 + z) / (4 * dof) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * dof ** 2)


def pooled_log_sd(groups: Iterable[Sequence[float]]) -> tuple[float, int] | None:
    """(standard deviation of log value within a group, pooled over the groups; its degrees of
    freedom), or None when no group has two positive values."""
    squares, dof = 0.0, 0
    for values in groups:
        logs = [math.log(v) for v in values if v > 0]
        if len(logs) < 2:
            continue
        mean = sum(logs) / len(logs)
        squares += sum((x - mean) ** 2 for x in logs)
        dof += len(logs) - 1
    return (math.sqrt(squares / dof), dof) if dof else None


def ratio_interval(ratio: float, sd: float, dof: int, n_a: int, n_b: int) -> tuple[float, float]:
    """90 % interval of mean(a) / mean(b) from `n_a` and `n_b` repeats with pooled log sd `sd`."""
    half = t90(dof) * sd * math.sqrt(1 / n_a + 1 / n_b)
    return ratio * math.exp(-half), ratio * math.exp(half)


def run_interval(mean: float, sd: float, dof: int, repeats: int, runs: int = 1) -> tuple[float, float]:
    """90 % prediction interval for the mean of `runs` more runs of a job whose `repeats` runs
    averaged `mean`: where an independent run of it should land."""
    half = t90(dof) * sd * math.sqrt(1 / runs + 1 / repeats)
    return mean * math.exp(-half), mean * math.exp(half)
