"""The answer itself, scored against the lab's grids (advisor/model/answers.py, `evaluate --answers`).

The cells are the shipped prior's whose layout has a recording under tests/fixtures/hosts/2.3.2;
the model is the shipped fit conditioned without each held-out cell (`ShippedFit`: its
hyperparameters saw every cell, so this is the quick check CI runs; docs/model.md has the
evaluation with a refit per cell).  The host is each layout's idle recording, the probes are the
cell's own lab rows read back from a probe database by the service's readers.
"""
from __future__ import annotations

import json
from functools import partial

import pytest

from support import HOSTS, REPO

pytest.importorskip("numpy")

from advisor.cli import main  # noqa: E402 - after the importorskip above
from advisor.engine.loader import load_rulebook  # noqa: E402 - after the importorskip above
from advisor.model import answers, fitted  # noqa: E402 - after the importorskip above
from advisor.model.dataset import load_csv, prior_path, samples  # noqa: E402 - after the importorskip above
from advisor.model.evaluation import ShippedFit  # noqa: E402 - after the importorskip above

BUDGETS = (0, 1, 2)


@pytest.fixture(scope="module")
def results():
    prior = samples(load_csv())
    predictor, _ = fitted.load(prior_path())
    hosts = answers.load_hosts(HOSTS / "2.3.2")
    return answers.evaluate_answers(partial(ShippedFit, predictor, prior), prior, answers.measured_rows(), load_rulebook(),
                                    hosts, list(BUDGETS))


def test_every_recorded_layouts_cells_are_answered_at_every_budget(results):
    recorded = {p.name for p in (HOSTS / "2.3.2").iterdir() if (p / "idle").is_dir()}
    layouts = {r.cell.split("/")[1] for r in results}
    assert layouts and layouts <= recorded
    cells = {r.cell for r in results}
    assert len(results) == len(cells) * len(BUDGETS) * 2  # a new dataset and one at the common value
    assert all(r.vs_best is not None for r in results), [r for r in results if r.vs_best is None]


@pytest.mark.parametrize("budget", BUDGETS)
def test_no_answer_changes_a_setting_to_one_its_cell_measured_worse_beyond_its_noise(budget, results):
    """No harm.  One loss within the noise is known (model version 11, docs/model.md): the raidz1 of
    five's PostgreSQL dataset at 8K changed to 4K, which its cell measured at 0.95x (90 % interval
    0.88..1.02); no other answer may lose at all, and none by more than that."""
    at = [r for r in results if r.budget == budget]
    assert not [r for r in at if r.harm], [(r.cell, r.start, r.current, r.final, r.vs_current) for r in at if r.harm]
    losses = [r for r in at if r.loss]
    assert len(losses) <= 1 and all(r.vs_current >= 0.94 for r in losses), \
        [(r.cell, r.start, r.current, r.final, r.vs_current) for r in losses]


@pytest.mark.parametrize("budget", BUDGETS)
def test_a_change_never_raises_the_write_tail_beyond_the_limit(budget, results):
    s = answers.summary([r for r in results if r.budget == budget])
    assert s["p99_over_changed"] == 0


def test_probes_never_make_the_answer_worse(results):
    by = {(r.cell, r.start, r.budget): min(r.vs_best or 0, 1.0) for r in results}
    for (cell, start, budget), score in by.items():
        if budget > 0:
            assert score >= by[(cell, start, 0)] - 1e-9, (cell, start, budget)


def test_the_median_answer_is_near_the_best_without_probes(results):
    # docs/model.md, "The answer, scored": the median answer lands on the grid's best at 0 probes
    assert answers.summary([r for r in results if r.budget == 0])["median_vs_best"] >= 0.95


def test_every_answer_without_probes_is_within_80_percent_of_the_best(results):
    """Undecided answers included (they keep the current value): model version 10 carries the raidz
    geometry in its linear mean, and the raidz1 of six's PostgreSQL at 8K, held out, changes to 4K
    (it had been undecided at 76.2 % with version 9; docs/model.md, "The answer, scored")."""
    at = [r for r in results if r.budget == 0]
    assert answers.summary(at)["worst_vs_best"] >= 0.8, answers.table(at)


def test_the_answers_the_application_lab_holds_are_postgres_recordsize_and_go_unscored_in_fio_units(results):
    """The application lab's findings (advisor/model/data/app-findings.json): on SSD and HDD pools a
    change of PostgreSQL's recordsize the model alone predicts is held (pgbench at the disks' pace
    did not confirm it), and on SSD the file server's 1M (a copy at the disks' pace was slower);
    such an answer keeps the current value and is not scored in fio's units, where it would lose
    by construction. A probe of the pool that measures the gain beyond its noise decides."""
    held = [r for r in results if r.held]
    assert held and all(r.cell.split("/")[2] in ("postgres", "fileserver") and r.held == ["recordsize"]
                        for r in held), answers.table(held)
    # PostgreSQL: at 0 probes, and 1 (a new dataset's first probe measures the default alone); two
    # probes measured the proposal beyond their noise on every layout, and decide. The file server's
    # two probes (bandwidth, noisier) do not always separate 1M from 128K: those stay held.
    assert all(r.budget in (0, 1) for r in held if r.cell.split("/")[2] == "postgres"), answers.table(held)
    # the lab's findings are the SSD and HDD media's: every layout of either may hold
    assert {r.cell.split("/")[1] for r in held} >= {"ssd-mirror2x2", "hdd-mirror2x2", "hdd-raidz1x4"}
    assert all(r.statuses["recordsize"] == "undecided" for r in held)
    at = [r for r in results if r.budget == 0]
    at_held = [r for r in held if r.budget == 0]
    assert answers.summary(at)["held"] == len(at_held) and answers.summary(at)["scored"] <= len(at) - len(at_held)


def test_the_cli_prints_the_tables_and_refuses_bad_budgets(capsys):
    assert main(["evaluate", "--answers", "--shipped-fit", "--budget", "0", "--cells", "ssd-mirror2x2/mysql",
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    [run] = report["runs"]
    assert {r["cell"].split("/")[2] for r in run["results"]} == {"mysql"} and len(run["results"]) == 2
    assert main(["evaluate", "--answers", "--budget", "-1"]) == 2
    assert main(["evaluate", "--answers", "--budget", "0", "--change-probability", "1.5"]) == 2
    assert main(["evaluate", "--answers", "--budget", "0", "--cells", "no-such-cell"]) == 2
    assert "no cell contains 'no-such-cell'" in capsys.readouterr().err



def test_an_undecided_answer_measured_by_its_own_command_is_decided_and_no_worse():
    """A pool that ran the measure command of an undecided answer (`probe --param
    recordsize=128K,8K,4K,32K`): every value it names is measured in one run, and the answer that
    reads the run back decides (no longer undecided) and is no worse than without it."""
    prior = samples(load_csv())
    predictor, _ = fitted.load(prior_path())
    results = answers.evaluate_answers(partial(ShippedFit, predictor, prior), prior, answers.measured_rows(),
                                       load_rulebook(), answers.load_hosts(HOSTS / "2.3.2"), [0, answers.MEASURE],
                                       "hdd-raidz2x6/fileserver")
    by = {(r.start, r.budget): r for r in results}
    before, after = by[("common", 0)], by[("common", answers.MEASURE)]
    assert before.statuses["recordsize"] == "undecided" and before.current.startswith("1M")
    assert "recordsize=1M" in after.probed and "recordsize=128K" in after.probed and len(after.probed) >= 3
    assert after.statuses["recordsize"] != "undecided"
    assert after.vs_best >= before.vs_best
    decided = by[("default", answers.MEASURE)]
    assert decided.probed == [] and decided.final == by[("default", 0)].final  # nothing asked, nothing run


@pytest.mark.parametrize("budget", BUDGETS)
def test_every_decided_answer_is_within_80_percent_of_the_best(budget, results):
    # docs/model.md, "The answer, scored": an answer that changes or keeps by its evidence lands
    # within 80 % of its grid's best at every budget (2026-11-28: worst 93.1 %, once the rule's
    # value breaks the model's caution-only ties); what is left below is `undecided` (keep the
    # current value, and here is the probe that decides)
    low = [(r.cell, r.start, r.final, r.vs_best) for r in results if r.budget == budget
           and r.vs_best is not None and r.vs_best < 0.8 and "undecided" not in r.statuses.values()]
    assert not low


def test_two_probes_of_an_existing_dataset_measure_its_own_value_and_land_within_90_percent(results):
    """The profiler told of a dataset (`[profiler] datasets`) measures its recordsize first, as the
    run's baseline, then what expected improvement asks for: the answer then rests on the measured
    change from the dataset's value, not on the model's guess of it (2026-11-28: hdd-raidz1x4
    PostgreSQL at 8K went from undecided at 69.8 % of the best to 4K at 100 %)."""
    at = [r for r in results if r.budget == 2]
    existing = [r for r in at if r.start == "common"]
    assert existing and all(r.probed[0] == f"recordsize={r.current.split(',')[0]}" for r in existing), \
        [(r.cell, r.current, r.probed) for r in existing]
    assert all(p.startswith("recordsize=") for r in existing for p in r.probed)
    assert answers.summary(at)["worst_vs_best"] >= 0.9, answers.table(at)


X8 = REPO / "tests" / "lab" / "experiments" / "data" / "hdd-raidz1x8-2026-11-29.csv"


def test_a_layout_the_model_never_saw_is_answered_near_its_best(capsys):
    """`evaluate --answers --test CSV`: the raidz1 of eight HDDs, measured in the lab and kept out of
    the prior (tests/lab/experiments/data/hdd-raidz1x8-2026-11-29.md), answered by the shipped fit as
    it is.  Model version 10 carries the raidz geometry in its linear mean: every answer at 0 and 2
    probes lands within 90 % of the grid's best (version 9: PostgreSQL 81.4 %, and the file server's
    new dataset 73.2 % after two probes), none harmful."""
    assert main(["evaluate", "--answers", "--shipped-fit", "--test", str(X8), "--budget", "0,2", "--json"]) == 0
    [run] = json.loads(capsys.readouterr().out)["runs"]
    assert {r["cell"].split("/")[1] for r in run["results"]} == {"hdd-raidz1x8"} and len(run["results"]) == 20
    # held answers (the application lab's finding: PostgreSQL's recordsize on HDD) keep the current
    # value and are not scored in fio's units; every other lands within 90 % of the best
    held = [r for r in run["results"] if r["held"]]
    assert all(r["cell"].split("/")[2] == "postgres" and r["held"] == ["recordsize"] for r in held), held
    assert all(r["vs_best"] >= 0.9 and not r["harm"] for r in run["results"] if not r["held"]), run["results"]
    assert not [r for r in held if r["harm"]]


def test_test_cells_must_be_held_out_and_scored_as_answers(capsys):
    assert main(["evaluate", "--answers", "--shipped-fit", "--test", str(prior_path()), "--budget", "0"]) == 2
    assert "cells of the prior, not held out" in capsys.readouterr().err
    assert main(["evaluate", "--test", str(X8), "--budget", "1"]) == 2
    assert "give --answers with it" in capsys.readouterr().err
    assert main(["evaluate", "--answers", "--test", str(X8), "--models", "nope", "--budget", "0"]) == 2
    capsys.readouterr()
    for path in (REPO / "tests", REPO / "LICENSE"):  # a directory; a file that is no lab grid
        assert main(["evaluate", "--answers", "--shipped-fit", "--test", str(path), "--budget", "0"]) == 2
        assert f"--test {path}: " in capsys.readouterr().err


def test_pairs_refuse_cells_that_are_not_there_and_say_when_nothing_is_left_to_predict(capsys):
    assert main(["evaluate", "--pairs", "--shipped-fit", "--budget", "0", "--cells", "no-such-cell"]) == 2
    assert "no cell's name contains 'no-such-cell'" in capsys.readouterr().err
    assert main(["evaluate", "--pairs", "--shipped-fit", "--budget", "99", "--cells", "hdd-raidz1x5/postgres"]) == 0
    assert "no pair left to predict" in capsys.readouterr().out
    assert main(["evaluate", "--pairs", "--prior", str(REPO / "tests"), "--budget", "0"]) == 2


def test_the_probability_the_answer_changes_on_is_met_by_the_held_out_pairs(capsys):
    """`evaluate --pairs`: every pair of a held-out cell's candidates that one decision compares,
    grouped by the model's probability that its predicted winner gains, raw and calibrated (the
    scale fitted on the other cells' pairs: what the answer reads).  Where the answer changes an
    existing dataset (P >= CHANGE_PROBABILITY, 0.95), at least that share of the held-out pairs
    measured a gain (model version 11, shipped fit: raw 98.5 %, calibrated 95.4 %, docs/model.md);
    where it creates a dataset with the pick (P >= NEW_DATASET_PROBABILITY, 0.8), at least 90 %;
    and the groups rise with the probability."""
    from advisor.engine.decide import CHANGE_PROBABILITY, NEW_DATASET_PROBABILITY

    assert main(["evaluate", "--pairs", "--shipped-fit", "--budget", "0", "--json"]) == 0
    [report] = json.loads(capsys.readouterr().out)

    def share_gained(rows: list[dict], threshold: float) -> float:
        sure = [r for r in rows if r["from"] >= threshold]
        assert sure and sum(r["pairs"] for r in sure) >= 50
        return sum(r["measured_gain"] * r["pairs"] for r in sure) / sum(r["pairs"] for r in sure)

    for rows in (report["summary"], report["calibrated"]):
        assert share_gained(rows, CHANGE_PROBABILITY) >= CHANGE_PROBABILITY
        assert share_gained(rows, NEW_DATASET_PROBABILITY) >= 0.9
        gains = [r["measured_gain"] for r in rows]
        assert gains[0] > 0.5 and gains[-1] >= max(gains[:-1]), rows
    assert report["scale"] < 1  # without probes the model is too modest (docs/model.md)
    assert all(p["probability"] >= 0.5 and p["winner"] != p["other"] for p in report["pairs"])
    assert all(p["calibrated"] >= p["probability"] for p in report["pairs"])
    assert main(["evaluate", "--pairs", "--budget", "-1"]) == 2
