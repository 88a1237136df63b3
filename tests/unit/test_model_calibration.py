"""The calibration of P(gain) (advisor/model/calibration.py): the scale on a predicted difference's
standard deviation that makes the held-out pairs' measured outcomes most likely, and where the
answer reads it.

The pairs in the first tests are typed in (synthetic, marked so): they test the estimator, not the
model.  The last test reads the shipped fit.
"""
from __future__ import annotations

import math
from statistics import NormalDist

import pytest

pytest.importorskip("numpy")

from advisor.model import calibration, fitted  # noqa: E402 - after the importorskip above
from advisor.model.calibration import PairResult, held_out_calibration, scale_for  # noqa: E402 - after the importorskip above
from advisor.model.dataset import load_csv, prior_path, samples  # noqa: E402 - after the importorskip above

N = NormalDist()


def pairs_drawn_at(scale: float, cell: str = "c", zs=(0.25, 0.5, 1.0, 1.5, 2.0), per_z: int = 40) -> list[PairResult]:
    """Pairs whose share of gains at each z is exactly Phi(z / scale): a model off by `scale`."""
    out = []
    for z in zs:
        gains = round(per_z * N.cdf(z / scale))
        for k in range(per_z):
            out.append(PairResult(cell=cell, budget=0, winner="a", other="b", probability=N.cdf(z),
                                  predicted_ratio=1.1, measured_ratio=1.2 if k < gains else 0.9, z=z))
    return out


def test_the_scale_recovers_how_far_off_the_predicted_spread_is():
    assert scale_for(pairs_drawn_at(1.0)) == pytest.approx(1.0, abs=0.03)
    assert scale_for(pairs_drawn_at(0.7)) == pytest.approx(0.7, abs=0.05)  # too modest: P under the gains
    assert scale_for(pairs_drawn_at(1.5)) == pytest.approx(1.5, abs=0.1)  # too sure


def test_too_few_pairs_say_nothing():
    few = pairs_drawn_at(0.5, per_z=2)
    assert len(few) < calibration.MIN_PAIRS and scale_for(few) == 1.0


def test_the_held_out_check_calibrates_each_cell_by_the_other_cells_pairs():
    """A cell whose own pairs disagree with the rest is calibrated by the rest."""
    rest = pairs_drawn_at(0.6, cell="rest")
    odd = pairs_drawn_at(2.0, cell="odd", per_z=4)
    checked = held_out_calibration(rest + odd)
    scale = scale_for(rest)
    for r in checked:
        if r.cell == "odd":
            assert r.calibrated == pytest.approx(N.cdf(r.z / scale))
    assert all(r.calibrated is not None and r.calibrated >= r.probability for r in checked if r.z > 0)


def test_the_shipped_fit_carries_its_calibration_and_the_answer_reads_it():
    """The shipped document's scales are the ones its GPs give on the prior's held-out pairs (also
    `python -m advisor.model.fitted --check`), and a prediction with fewer probed candidates than
    the scales cover takes its own, more the last."""
    predictor, doc = fitted.load(prior_path())
    assert len(predictor.calibration) == len(calibration.SCALED_BUDGETS)
    assert list(predictor.calibration) == doc["calibration"]
    assert all(0.25 <= s <= 3.0 for s in predictor.calibration)
    prior = samples(load_csv())
    pool = sorted({s.obs.cell for s in prior})[0]
    rows = [s for s in prior if s.obs.cell == pool]
    by_setting: dict = {}
    for s in rows:
        by_setting.setdefault(tuple(sorted(s.obs.settings.items())), s)
    distinct = list(by_setting.values())
    queries = [s.obs for s in distinct]
    for probed in range(len(calibration.SCALED_BUDGETS) + 2):
        scale = predictor.predict(distinct[:probed], queries).perf_scale
        assert math.isclose(scale, predictor.calibration[min(probed, len(predictor.calibration) - 1)])
