"""Sibling pools' probes in the model (advisor/model/siblings.py) and what they add at 0 local
probes on the lab prior (advisor/model/fleet_evaluation.py, `evaluate --fleet`).

The model is the shipped fit, conditioned without each held-out cell (`ShippedFit`, the quick
check; docs/fleet.md has the figure with a refit per cell)."""
from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import replace
from functools import partial

import numpy as np
import pytest

pytest.importorskip("numpy")

from advisor.cli import main  # noqa: E402 - after the importorskip above
from advisor.model import fitted  # noqa: E402 - after the importorskip above
from advisor.model.dataset import cells, load_csv, prior_path, samples  # noqa: E402 - after the importorskip above
from advisor.model.evaluation import ShippedFit  # noqa: E402 - after the importorskip above
from advisor.model.features import settings_key  # noqa: E402 - after the importorskip above
from advisor.model.fleet_evaluation import evaluate_fleet, sibling_passes  # noqa: E402 - after the importorskip above
from advisor.model.gp import condition  # noqa: E402 - after the importorskip above
from advisor.model.siblings import (  # noqa: E402 - after the importorskip above
    BETWEEN_HOST_VARIANCE,
    HOST_CONTRAST_VARIANCE,
    SiblingSample,
    WithSiblings,
    condition_with_siblings,
    host_contrast,
)

CELL = "zfs2.3.2/hdd-raidz1x4/postgres/512M"


@pytest.fixture(scope="module")
def prior():
    return samples(load_csv())


@pytest.fixture(scope="module")
def held_out(prior):
    """The shipped fit without CELL, the cell's candidates to predict and its sibling passes."""
    predictor, _ = fitted.load(prior_path())
    model = ShippedFit(predictor, prior).fit([s for s in prior if s.obs.cell != CELL])
    cell = cells(prior)[CELL]
    queries = sorted({settings_key(s.obs): replace(s.obs, perf=None, write_p99=None) for s in cell}.values(),
                     key=lambda o: not o.baseline)
    return model, queries, sibling_passes(cell)


def test_the_between_host_variances_are_the_labs_between_run_covariance_of_contrasts(prior):
    """The one cell measured in several runs (hdd-raidz2x6/postgres, three runs, six candidates):
    a contrast varies between runs by 0.019, half of it shared by the run's candidates (what its
    baseline adds), and the kernel whose covariance fits that matrix has a variance of 0.010;
    the baseline's absolute speed varies by 0.014 between runs, which a contrast cancels."""
    found = host_contrast(prior)
    assert found is not None
    assert (found.cells, found.runs, found.candidates) == (1, 3, 6)
    assert round(found.contrast_variance, 3) == HOST_CONTRAST_VARIANCE
    assert round(found.between, 3) == BETWEEN_HOST_VARIANCE
    assert 0 < found.shared_covariance < found.contrast_variance
    assert round(found.offset_variance, 3) == 0.014


def test_without_siblings_the_prediction_is_todays(held_out):
    model, queries, _ = held_out
    perf_gp, _ = model.fitted.fits_for(queries)
    today = condition(perf_gp, [], [], queries, model.fitted.deviation)
    fleet = condition_with_siblings(perf_gp, [], [], [], queries, model.fitted.deviation)
    assert np.allclose(today.mean, fleet.mean) and np.allclose(today.cov, fleet.cov)


def test_a_siblings_probe_moves_the_answer_less_than_the_pools_own(held_out):
    model, queries, passes = held_out
    perf_gp, _ = model.fitted.fits_for(queries)
    measured = [s for s in passes[0] if s.obs.value == "4K"]
    deviation = model.fitted.deviation
    four_k = next(i for i, q in enumerate(queries) if q.value == "4K")
    alone = condition(perf_gp, [], [], queries, deviation)
    own = condition(perf_gp, [s.obs for s in measured], [s.y_perf for s in measured], queries, deviation)
    sibling = condition_with_siblings(perf_gp, [], [], [(s.obs, s.y_perf, "b") for s in measured], queries, deviation)
    moved_own, moved_sibling = own.mean[four_k] - alone.mean[four_k], sibling.mean[four_k] - alone.mean[four_k]
    assert abs(moved_sibling) < abs(moved_own) and moved_sibling * moved_own > 0
    assert own.sd[four_k] < sibling.sd[four_k] < alone.sd[four_k]
    # a between-host variance as large as the pool's whole deviation: a sibling says no more of this
    # pool than one more lab row would (through the lab's own uncertainty alone)
    nothing = condition_with_siblings(perf_gp, [], [], [(s.obs, s.y_perf, "b") for s in measured], queries, deviation,
                                      between=deviation)
    assert abs(nothing.mean[four_k] - alone.mean[four_k]) < abs(moved_sibling) / 10


def test_siblings_are_used_by_the_models_predict(held_out):
    model, queries, passes = held_out
    siblings = [SiblingSample(s, "b") for s in passes[0]]
    assert not np.allclose(WithSiblings(model, siblings).predict([], queries).perf.mean,
                           model.predict([], queries).perf.mean)
    assert np.allclose(WithSiblings(model, []).predict([], queries).perf.mean, model.predict([], queries).perf.mean)


def test_two_siblings_probes_answer_a_pool_that_probed_nothing(prior):
    predictor, _ = fitted.load(prior_path())
    [result] = evaluate_fleet(partial(ShippedFit, predictor, prior), prior, CELL)
    assert [p[0] for p in result.sibling_probes] == ["recordsize=128K", "recordsize=128K"]  # each baseline first
    assert result.pick == result.oracle == "recordsize=4K" and not result.harm


def test_the_cli_ends_with_the_fleet_line_and_refuses_bad_variances(capsys):
    assert main(["evaluate", "--fleet", "--shipped-fit", "--cells", "hdd-raidz1x4/"]) == 0
    last = capsys.readouterr().out.rstrip().splitlines()[-1]
    assert re.fullmatch(r"fleet: 5 cells, 0 local probes median \d+\.\d %, worst \d+\.\d %; harm \d+", last), last
    assert main(["evaluate", "--fleet", "--between", "-1"]) == 2
    assert main(["evaluate", "--fleet", "--between", "nan"]) == 2
    assert main(["evaluate", "--fleet", "--cells", "no-such-cell"]) == 2


@pytest.mark.parametrize("between", ["-1", "nan", "inf", "0.01,abc", ""])
def test_the_command_refuses_a_between_host_variance_that_is_not_one(between):
    """The installed command in a process of its own: exit 2, one line naming the value, no traceback."""
    done = subprocess.run([sys.executable, "-m", "advisor", "evaluate", "--fleet", "--shipped-fit",
                           f"--between={between}"], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == ("zfs-advisor evaluate: --between takes finite variances >= 0, e.g. 0.01,0.019; "
                           f"not {between!r}\n")
