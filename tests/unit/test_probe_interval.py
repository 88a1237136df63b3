"""Student-t intervals of the probe's repeats (advisor/evidence/interval.py)."""
from __future__ import annotations

import math
import random

import pytest

from advisor.evidence.interval import pooled_log_sd, ratio_interval, run_interval, t90

scipy_stats = pytest.importorskip("scipy.stats")  # comes with scikit-learn, the model extra


@pytest.mark.parametrize("dof", [*range(1, 40), 50, 100, 1000])
def test_t90_is_students_quantile(dof):
    assert t90(dof) == pytest.approx(scipy_stats.t.ppf(0.95, dof), abs=1e-4)


def test_no_degrees_of_freedom_no_interval():
    with pytest.raises(ValueError):
        t90(0)
    assert pooled_log_sd([[100.0], [200.0]]) is None
    assert pooled_log_sd([[100.0, 0.0]]) is None  # a run with no IOPS says nothing of the noise


def test_pooled_sd_weighs_each_repeat_beyond_a_candidates_first():
    groups = [[100.0, 110.0, 90.0], [1000.0, 1050.0]]
    logs = [[math.log(v) for v in g] for g in groups]
    squares = sum(sum((x - sum(g) / len(g)) ** 2 for x in g) for g in logs)
    assert pooled_log_sd(groups) == pytest.approx((math.sqrt(squares / 3), 3))


def test_intervals_are_symmetric_in_log_and_narrow_with_repeats():
    low, high = ratio_interval(1.3, 0.05, 6, 2, 2)
    assert math.log(1.3 / low) == pytest.approx(math.log(high / 1.3))
    assert math.log(high / 1.3) == pytest.approx(t90(6) * 0.05)
    wide, narrow = run_interval(1000, 0.05, 6, 2), run_interval(1000, 0.05, 6, 8)
    assert narrow[0] > wide[0] and narrow[1] < wide[1]
    two_runs = run_interval(1000, 0.05, 6, 2, runs=2)
    assert two_runs[0] > wide[0]


def test_a_run_lands_in_its_interval_nine_times_in_ten():
    """Log-normal repeats with a 5 % sd: the prediction interval from 4 candidates x 2 repeats
    covers one more run of a candidate about 90 % of the time (fixed seed, 4000 trials)."""
    rng = random.Random(7)
    covered, trials = 0, 4000
    for _ in range(trials):
        means = [1000.0, 1500.0, 800.0, 2000.0]
        groups = [[m * math.exp(rng.gauss(0, 0.05)) for _ in range(2)] for m in means]
        sd, dof = pooled_log_sd(groups)
        mean = sum(groups[0]) / 2
        low, high = run_interval(mean, sd, dof, 2)
        covered += low <= means[0] * math.exp(rng.gauss(0, 0.05)) <= high
    assert 0.87 <= covered / trials <= 0.93
