"""The statistics of change verification (advisor/changes/stats.py): pure functions on numbers."""
from __future__ import annotations

import pytest

from advisor.changes.stats import MIN_INTERVALS, compare, overall, percentile, rates, t95

STEADY = [100, 106, 95, 103, 97, 104, 96, 102]  # a load that varies by a few per cent per interval


def test_rates_are_per_interval_and_leave_out_a_counter_reset():
    assert rates([(0, 0), (10, 100), (20, 300), (30, 5), (40, 105)]) == [10, 20, 10]


def test_percentile_interpolates_within_the_bucket_and_is_none_when_empty():
    bounds = [0.001, 0.002, 0.004, 0.008]
    assert percentile(bounds, [0, 10, 0, 0], 0.5) == pytest.approx(0.0015)
    assert percentile(bounds, [90, 0, 0, 10], 0.99) == pytest.approx(0.004 + 0.004 * 0.9)
    assert percentile(bounds, [0, 0, 0, 0], 0.99) is None


def test_a_doubling_is_better_with_an_interval_that_leaves_out_one():
    c = compare(STEADY, [2 * v for v in reversed(STEADY)], higher_is_better=True, min_level=1)
    assert c.verdict == "better" and c.ratio == pytest.approx(2.0, rel=0.01)
    assert 1.8 < c.interval[0] < 2.0 < c.interval[1] < 2.2
    assert 0.03 < c.noise_floor < 0.05  # the before window's own spread


def test_lower_is_better_for_latency():
    assert compare(STEADY, [v / 2 for v in STEADY], higher_is_better=False, min_level=0).verdict == "better"
    assert compare(STEADY, [v * 2 for v in STEADY], higher_is_better=False, min_level=0).verdict == "worse"


def test_an_effect_within_the_loads_own_variation_is_not_called_one():
    """+3 % on a load that varies by ~4 % per interval: the interval may leave out 1 with many
    intervals, but the noise floor keeps it 'no measurable effect'."""
    c = compare(STEADY * 4, [v * 1.03 for v in STEADY * 4], higher_is_better=True, min_level=1)
    assert c.interval[0] > 1 and c.verdict == "no measurable effect"


def test_too_little_load_or_too_few_intervals():
    assert compare([0.1] * 8, [0.2] * 8, True, min_level=1).verdict == "not enough load"
    assert compare(STEADY[: MIN_INTERVALS - 1], STEADY, True, min_level=1).verdict == "not enough load"


def test_t_quantiles_widen_for_few_intervals():
    assert t95(1) == 12.71 and t95(11) == 2.23 and t95(1000) == 1.96


@pytest.mark.parametrize(("verdicts", "expected"), [
    (["better", "no measurable effect"], "better"),
    (["worse", "not enough load"], "worse"),
    (["better", "worse"], "mixed"),
    (["not enough load", "not enough load"], "not enough load"),
    (["no measurable effect", "not enough load"], "no measurable effect"),
])
def test_the_overall_verdict_of_the_headline_metrics(verdicts, expected):
    assert overall(verdicts)[0] == expected
