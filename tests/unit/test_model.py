"""The regression model (advisor/model/): one feature space for lab rows and stored probes, fixed
seeds, local probes outweighing the lab and narrowing the interval, probe choice by expected
improvement, and the leave-one-cell-out evaluation on the shipped prior.

Data: the shipped prior (advisor/model/data/prior-zfs2.3.csv, measured in the lab, its
provenance beside it); "local probes" are that CSV's rows of one cell written to a real store as
the probe runner writes them, with the cell left out of the prior the model is fitted on.
"""
from __future__ import annotations

import csv
import math
import statistics
from dataclasses import replace
from itertools import pairwise

import pytest

pytest.importorskip("sklearn")

import numpy as np  # noqa: E402 - after the importorskip above

from advisor.engine.loader import load_rulebook  # noqa: E402 - after the importorskip above
from advisor.evidence.arc_cap import disk_read_equivalent  # noqa: E402 - after the importorskip above
from advisor.model.answers import Grid  # noqa: E402 - after the importorskip above
from advisor.model.dataset import cells, load_csv, prior_path, samples  # noqa: E402 - after the importorskip above
from advisor.model.evaluation import ShippedFit, evaluate, evaluate_cell, nested_caution, summary, twins  # noqa: E402 - after the importorskip above
from advisor.model.features import WorkloadShape, from_csv_row, from_result, lab_cell, vector  # noqa: E402 - after the importorskip above
from advisor.model.provider import ModelProvider, candidates_of  # noqa: E402 - after the importorskip above
from advisor.model.regress import GPModel, QuantileBoost  # noqa: E402 - after the importorskip above
from advisor.model.select import next_candidates  # noqa: E402 - after the importorskip above
from advisor.probe.description import ProbeDescription  # noqa: E402 - after the importorskip above
from advisor.probe.fio_job import Hygiene, build_job  # noqa: E402 - after the importorskip above
from advisor.store.db import connect  # noqa: E402 - after the importorskip above
from advisor.store.probes import ProbeStore, ResultRow  # noqa: E402 - after the importorskip above
from advisor.store.results import StoredResults  # noqa: E402 - after the importorskip above

BOOK = load_rulebook()
CELL = "zfs2.3.2/ssd-mirror2x2/postgres/512M"
MIRROR2X2 = {"pool": "tank", "layout": "2 x mirror of 2", "ashift": 12, "media": "ssd",
             "vdevs": [{"type": "mirror", "width": 2, "ashift": 12, "nparity": None, "disks": ["vdb", "vdc"]},
                       {"type": "mirror", "width": 2, "ashift": 12, "nparity": None, "disks": ["vdd", "vde"]}]}


def csv_rows(cell: str = CELL) -> list[dict[str, str]]:
    with prior_path().open(newline="") as f:
        return [r for r in csv.DictReader(f) if lab_cell(r) == cell]


def result_row(row: dict[str, str], run_id: int = 1) -> ResultRow:
    """The store record the probe runner wrote for this CSV row (the CSV is made from such records)."""
    us = lambda k: float(row[k]) / 1e6 if row.get(k) else None  # noqa: E731 - a one-line helper, read where it is used
    job = build_job(BOOK.workloads[row["workload"]], "/probe", Hygiene(max_file_bytes=48 << 20)).text
    return ResultRow(
        run_id=run_id, parameter=row["parameter"], value=row["value"], scope="dataset",
        baseline=row["baseline"] == "1", repeat=int(row["repeat"]), started_at=0.0, iops=float(row["iops"]),
        read_iops=float(row["read_iops"]), write_iops=float(row["write_iops"]), read_bw=float(row["read_bw_bytes"]),
        write_bw=float(row["write_bw_bytes"]), read_p99=us("read_p99_us"), write_p99=us("write_p99_us"),
        runtime_seconds=float(row["runtime_s"]), written_bytes=0, working_set_bytes=int(row["working_set_bytes"]),
        arc_max_bytes=int(row["arc_max_bytes"]), pool=MIRROR2X2, job=job)


def local_samples(rows: list[dict[str, str]]):
    shape = WorkloadShape.of(BOOK.workloads["postgres"])
    return samples(from_result(result_row(r), shape, "tank") for r in rows)


@pytest.fixture(scope="module")
def prior_without_cell():
    return [s for s in samples(load_csv()) if s.obs.cell != CELL]


@pytest.fixture(scope="module")
def model(prior_without_cell):
    return GPModel(seed=0).fit(prior_without_cell)


@pytest.fixture(scope="module")
def grid():
    shape = WorkloadShape.of(BOOK.workloads["postgres"])
    base = from_result(result_row(csv_rows()[0]), shape, "tank").with_candidate("recordsize", "128K")
    return candidates_of(ProbeDescription(), base, BOOK.workloads["postgres"])


def test_a_lab_row_and_the_store_record_it_came_from_are_one_point():
    for row in csv_rows():
        lab = from_csv_row(row)
        local = from_result(result_row(row), WorkloadShape.of(BOOK.workloads["postgres"]), "tank")
        assert vector(lab) == pytest.approx(vector(local))
        assert lab.perf == local.perf and lab.settings == local.settings and lab.baseline == local.baseline


def test_an_uncached_probe_is_described_like_a_capped_one_and_a_cached_one_is_not():
    """A probe that kept its data out of the ARC (scratch primarycache=metadata, the default) read
    from the disks like the prior's capped probes: its ARC feature is the cap they would have set;
    a probe that did neither keeps no cap (its reads may have come from memory)."""
    shape = WorkloadShape.of(BOOK.workloads["postgres"])
    row = result_row(csv_rows()[0]).model_copy(update={"compress_percentage": 50})
    uncached = row.model_copy(update={"arc_max_bytes": None, "scratch_primarycache": "metadata"})
    cached = row.model_copy(update={"arc_max_bytes": None})
    equivalent = disk_read_equivalent(row.working_set_bytes, 50)
    assert from_result(uncached, shape, "tank").arc_max_bytes == equivalent
    assert from_result(cached, shape, "tank").arc_max_bytes is None
    assert vector(from_result(uncached, shape, "tank")) != vector(from_result(cached, shape, "tank"))


def test_targets_are_ratios_to_the_baseline_of_the_same_run():
    cell = [s for s in samples(load_csv()) if s.obs.cell == CELL]
    rows = csv_rows()
    runs = {r["run_id"] for r in rows}
    for run in runs:
        mine = [s for s in cell if s.obs.run == run]
        base = [s.y_perf for s in mine if s.obs.baseline]
        assert sum(math.exp(y) for y in base) / len(base) == pytest.approx(1.0) and len(base) >= 2
        mean_base = statistics.fmean(float(r["iops"]) for r in rows if r["run_id"] == run and r["baseline"] == "1")
        first = next(s for s in mine if not s.obs.baseline)
        assert math.exp(first.y_perf) * mean_base == pytest.approx(first.obs.perf)


def test_a_run_without_a_baseline_is_compared_with_the_cells():
    observations = [o for o in load_csv() if o.cell == CELL]
    cell_base = statistics.fmean(o.perf for o in observations if o.baseline)
    # another run of the cell that measured one candidate and no baseline (cut short)
    cut_short = replace(next(o for o in observations if not o.baseline), run="cut-short")
    orphan = next(s for s in samples([*observations, cut_short]) if s.obs.run == "cut-short")
    assert math.exp(orphan.y_perf) * cell_base == pytest.approx(orphan.obs.perf)


def test_fixed_seed_same_predictions(prior_without_cell, grid):
    # The seed drives the optimizer's restarts and the boosting's subsamples, whatever the
    # data: the other cells of the same pool suffice (the whole prior took 96 s here).
    pool = CELL.split("/")[1]
    some = [s for s in prior_without_cell if s.obs.cell.split("/")[1] == pool]
    assert len({s.obs.cell for s in some}) >= 3
    a = GPModel(seed=0).fit(some).predict([], grid)
    b = GPModel(seed=0).fit(some).predict([], grid)
    assert list(a.perf.mean) == list(b.perf.mean) and list(a.perf.sd) == list(b.perf.sd)
    qa = QuantileBoost(seed=0).fit(some).predict([], grid)
    qb = QuantileBoost(seed=0).fit(some).predict([], grid)
    assert list(qa.perf.mean) == list(qb.perf.mean)


def test_the_interval_narrows_as_local_probes_arrive(model, grid):
    rows = csv_rows()
    order = ["128K", "8K", "32K", "16K"]
    widths = []
    local = []
    for value in [None, *order]:
        if value is not None:
            local += local_samples([r for r in rows if r["parameter"] == "recordsize" and r["value"] in
                                    {"128K", value}])
            local = list({(s.obs.value, s.obs.repeat): s for s in local}.values())
        p = model.predict(local, grid)
        widths.append([float(w) for w in p.perf.sd])
    for before, after in pairwise(widths):
        assert all(a <= b + 1e-9 for a, b in zip(after, before, strict=True)), (before, after)
    i8k = next(i for i, c in enumerate(grid) if c.value == "8K")
    assert widths[-1][i8k] < 0.5 * widths[0][i8k]


def test_local_probes_outweigh_the_prior(model, grid):
    rows = [r for r in csv_rows() if r["parameter"] == "recordsize" and r["value"] in ("128K", "8K")]
    local = local_samples(rows)
    measured = sum(s.y_perf for s in local if s.obs.value == "8K") / 2
    i8k = next(i for i, c in enumerate(grid) if c.value == "8K")
    before = float(model.predict([], grid).perf.mean[i8k])
    after = float(model.predict(local, grid).perf.mean[i8k])
    assert abs(after - measured) < abs(before - measured) or abs(before - measured) < 0.05
    noise = math.sqrt(model.predict(local, grid).perf.noise)
    assert abs(after - measured) < noise  # as close as the repeats themselves allow


def test_expected_improvement_starts_with_the_baseline_and_never_repeats(model, grid):
    first = next_candidates(model, [], grid, 1)
    assert [c.value for c in first] == ["128K"] and first[0].baseline
    batch = next_candidates(model, [], grid, 3)
    assert len({c.candidate for c in batch}) == 3 and batch[0].baseline
    local = local_samples([r for r in csv_rows() if r["value"] in ("128K", "8K")])
    following = next_candidates(model, local, grid, 2)
    assert not {c.candidate for c in following} & {s.obs.candidate for s in local}
    assert next_candidates(model, local, grid, 2) == following  # deterministic


def test_next_probe_candidates_reads_the_store(tmp_path):
    store = ProbeStore(connect(tmp_path))
    run = store.start_run("tank", "postgres", "data", {}, [], MIRROR2X2)
    rows = csv_rows()
    first_run = next(r["run_id"] for r in rows if r["value"] == "8K")  # 8K and the baseline beside it
    for r in rows:
        if r["value"] in ("128K", "8K") and r["run_id"] == first_run:
            store.add_result(result_row(r, run))
    store.end_run(run, "completed")
    store.conn.close()
    provider = ModelProvider(StoredResults(tmp_path), ProbeDescription(), BOOK).fit()
    chosen = provider.next_probe_candidates("tank", "postgres", 2, descriptor=MIRROR2X2)
    assert chosen[0].baseline and len(chosen) == 2
    assert chosen[1].value not in ("128K", "8K")  # probed already
    prediction = provider.predict("tank", "postgres", "recordsize", descriptor=MIRROR2X2)
    assert prediction is not None and prediction.local_probes == 4
    assert prediction.candidate("8K").probes == 2


def test_leave_one_cell_out_on_the_shipped_prior():
    prior = samples(load_csv())
    if len({s.obs.cell for s in prior}) < 3:
        pytest.skip("the shipped prior has fewer than three cells")
    # Every sixth cell held out, one optimizer start a fold: 5 folds of 30 (every third cell took
    # 101 s in CI on a slow 2-core machine, every other cell 133 s); docs/model.md has the whole
    # evaluation, `zfs-advisor evaluate`.
    held = sorted({s.obs.cell for s in prior})[::6]
    s = summary([evaluate_cell(lambda: GPModel(seed=0, restarts=0), prior, cell, 2) for cell in held])
    # Floors, not the issue's targets (docs/model.md, "Evaluation", says what the data give):
    # in the median held-out cell the pick is no worse than leaving the ZFS default, and the
    # 90 % intervals cover at least half of the held-out repeats (below that they would claim a
    # certainty the data do not have), those of the write p99 too.
    assert s["median_vs_default"] >= 1.0
    assert s["coverage"] >= 0.5
    assert s["p99_checked"] == s["checked"] and s["p99_coverage"] >= 0.5


def test_nested_caution_never_lets_the_judged_cell_choose_the_knob():
    from itertools import combinations

    three = ["zfs2.3.2/ssd-mirror2x2/mysql/512M", "zfs2.3.2/ssd-mirror2x2/postgres/512M", "zfs2.3.2/ssd-mirror2x2/sqlite/512M"]
    prior = [s for s in samples(load_csv()) if s.obs.cell in three]
    cache: dict = {}
    results = nested_caution(lambda: GPModel(seed=0, restarts=0), prior, 2, [0.0, 1.0], cache)
    assert [r.cell for r in results] == three and all(r.caution in (0.0, 1.0) for r in results)
    # every training set is the prior less the judged cell (outer) or less it and one more (inner):
    # the outer cell never trains a model whose score chooses its own CAUTION
    assert set(cache) == {frozenset({c}) for c in three} | {frozenset(p) for p in combinations(three, 2)}
    fixed = evaluate(lambda: GPModel(seed=0, restarts=0), prior, 2, caution=results[0].caution)
    assert fixed[0].pick == results[0].pick


def test_the_deviation_variance_widens_the_intervals_without_a_refit(model, grid):
    from advisor.model.evaluation import with_deviation

    narrow, wide = with_deviation(model, 0.0), with_deviation(model, 0.2)
    assert wide.fitted.perf is model.fitted.perf and model.fitted.deviation != 0.2  # the original is untouched
    a, b = narrow.predict([], grid).perf, wide.predict([], grid).perf
    assert (b.sd >= a.sd - 1e-12).all() and (b.sd > a.sd + 1e-3).any()
    assert list(a.mean) == pytest.approx(list(b.mean))  # no probe of the pool: the lab's means alone


def test_a_held_out_cell_takes_its_twins_at_other_working_sets_with_it():
    names = ["zfs2.3.2/ssd/postgres/192M", "zfs2.3.2/ssd/postgres/512M", "zfs2.3.2/ssd/mysql/512M",
             "zfs2.3.2/ssd-raidz/postgres/512M"]
    assert twins("zfs2.3.2/ssd/postgres/512M", names) == {"zfs2.3.2/ssd/postgres/192M", "zfs2.3.2/ssd/postgres/512M"}
    assert twins("zfs2.3.2/ssd/mysql/512M", names) == {"zfs2.3.2/ssd/mysql/512M"}


def test_evaluate_says_which_cells_there_are_when_none_matches(capsys):
    from advisor.cli import main

    assert main(["evaluate", "--models", "gp", "--budget", "1", "--cells", "/no-such-cell"]) == 2
    err = capsys.readouterr().err
    assert "no cell's name contains '/no-such-cell'" in err and CELL in err


def test_evaluate_refuses_a_negative_deviation():
    from advisor.cli import main

    assert main(["evaluate", "--models", "gp", "--deviation", "-0.1"]) == 2
    assert main(["evaluate", "--models", "gp", "--deviation", "wide"]) == 2
    assert main(["evaluate", "--models", "gp", "--leap", "far"]) == 2
    assert main(["evaluate", "--models", "gp", "--leap", "nan"]) == 2


@pytest.mark.parametrize("models", ["", ",,", "nope", "gp,nope"])
def test_evaluate_refuses_no_model_or_an_unknown_one(models, capsys):
    from advisor.cli import main

    assert main(["evaluate", "--models", models, "--budget", "1"]) == 2
    assert ("models must be among ['gp', 'gp-hdd-linear-mean', 'gp-no-linear-mean', 'gp-v9', 'gp-with-width', "
            "'gp-workload', 'quantile-gb']") in capsys.readouterr().err


# --- the shipped fit (advisor/model/fitted.py, advisor/model/gp.py) -------------------------------
def test_numpy_predictions_are_scikit_learns(model, grid):
    """gp.FittedGP.predict is GaussianProcessRegressor.predict(return_cov=True), to rounding."""
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

    from advisor.model.gp import matrix

    f = model.fitted.perf
    kernel = ConstantKernel(f.constant, "fixed") * RBF(f.length_scales, "fixed") + WhiteKernel(f.noise, "fixed")
    reference = GaussianProcessRegressor(kernel, optimizer=None).fit(f.X_train, f.X_train @ np.zeros(f.X_train.shape[1]))
    reference.alpha_ = f.alpha  # the fitted weights, as the library stores them
    X = matrix(grid)
    mu, cov = f.predict(X)
    mu_ref, cov_ref = reference.predict(X[:, f.keep], return_cov=True)
    # the linear mean (fitted before the GP, which models what it leaves) is added on top
    assert np.allclose(mu, f.mean_of(X) + mu_ref, atol=1e-12) and np.allclose(cov, cov_ref, atol=1e-12)
    assert np.abs(mu_ref).max() > 0.05  # not a trivial comparison of zeros


def test_more_disk_ios_cost_performance_in_the_linear_mean(model):
    """The perf GP's linear mean over the busiest disk's reads and the disks a record lies on (HDDs,
    against the default's) and the records an I/O touches (SSDs) has the sign of the physics: more
    I/Os or seeks for the disks, fewer IOPS.  None of them is in the perf kernel (model version
    10: there the raidz geometry grows with the width beyond the lab's); the write-p99 GP has no
    linear mean and keeps the geometry in its kernel."""
    from advisor.model.features import FEATURES
    from advisor.model.gp import FittedGP

    perf, p99 = model.fitted.perf, model.fitted.p99
    hdd, ssd = FEATURES.index("log2_hdd_busiest_disk_vs_default"), FEATURES.index("log2_ssd_records_per_io")
    seeks = FEATURES.index("log2_hdd_disks_per_record_vs_default")
    assert perf.linear is not None and p99.linear is None
    assert all(-math.log(2) < perf.linear[i] < 0 for i in (hdd, ssd, seeks)), perf.linear
    assert np.count_nonzero(perf.linear) == 3
    geometry = [hdd, seeks, FEATURES.index("log2_hdd_disks_per_record")]
    assert not any(perf.keep[i] for i in geometry + [ssd])
    assert p99.keep[hdd] and p99.keep[FEATURES.index("log2_hdd_disks_per_record")] and not p99.keep[ssd]
    twin = FittedGP.from_json(perf.to_json())  # what the shipped file keeps of it
    assert list(twin.linear) == list(perf.linear)
    X = np.zeros((1, len(FEATURES)))
    X[0, ssd] = 1.0
    assert twin.predict(X)[0] == pytest.approx(perf.predict(X)[0])


def test_the_kernels_leave_the_raw_vdev_width_out(model):
    """The width reaches the model through what it does to a record only (model version 7);
    version 6, kept for the evaluation, had it in its kernels too, and version 9 had the raidz
    geometry in its performance kernel."""
    from advisor.model.features import FEATURES
    from advisor.model.regress import GPVersion9, GPWithWidth

    i = FEATURES.index("log2_vdev_width")
    assert not model.fitted.perf.keep[i] and not model.fitted.p99.keep[i]
    few = [s for s in samples(load_csv()) if "/postgres/" in s.obs.cell]  # widths 1, 2, 4, 5 and 6
    with_width = GPWithWidth(seed=0, restarts=0).fit(few)
    assert with_width.fitted.perf.keep[i] and with_width.fitted.p99.keep[i]
    version9 = GPVersion9(seed=0, restarts=0).fit(few)
    assert version9.fitted.perf.keep[FEATURES.index("log2_hdd_disks_per_record")]
    assert not version9.fitted.perf.keep[FEATURES.index("log2_hdd_disks_per_record_vs_default")]
    assert np.count_nonzero(version9.fitted.perf.linear) <= 2


def test_the_shipped_fit_matches_a_refit_of_the_shipped_prior():
    from advisor.model import fitted

    assert fitted.main(["--check"]) == 0


def test_the_check_refuses_other_data_less_likely_hyperparameters_and_stale_workload_fits():
    """`--check`'s comparison, on the shipped document against itself with one part changed (no
    refit: the shipped file stands in for the refit)."""
    import json

    from advisor.model import fitted
    from advisor.model.gp import FittedGP

    shipped = json.loads(fitted.fitted_path(prior_path()).read_text())
    assert fitted._disagreement(shipped, shipped, prior_path(), 0.5) is None

    def refitted_at(doc: dict, scale: float) -> dict:
        """The write-p99 GP with its noise level times `scale`, its weights solved again for the
        same targets: a consistent fit, only a less likely one."""
        f = FittedGP.from_json(doc)
        y = fitted._targets(f)
        g = FittedGP(f.constant, f.length_scales, f.noise * scale, f.keep, f.X_train, np.zeros(len(y)))
        return dict(doc, noise=g.noise, alpha=np.linalg.solve(g.factor().T, np.linalg.solve(g.factor(), y)).tolist())

    worse = dict(shipped, write_p99=refitted_at(shipped["write_p99"], 10.0))
    assert "nats less likely" in fitted._disagreement(worse, shipped, prior_path(), 0.5)
    moved = dict(shipped, write_p99=refitted_at(shipped["write_p99"], 1.001))  # a step along the optimum
    assert "not the stored GP conditioned on" in fitted._disagreement(moved, shipped, prior_path(), 0.5)
    shifted = dict(shipped, perf=dict(shipped["perf"], alpha=[a * 1.01 for a in shipped["perf"]["alpha"]]))
    assert "other targets" in fitted._disagreement(shifted, shipped, prior_path(), 0.5)
    steeper = dict(shipped, perf=dict(shipped["perf"], linear={f: 2 * b for f, b in shipped["perf"]["linear"].items()}))
    assert "another linear mean" in fitted._disagreement(steeper, shipped, prior_path(), 0.5)
    uncalibrated = dict(shipped, calibration=[1.0, 1.0, 1.0])  # not what the stored GPs give
    assert "calibration: stored [1.0, 1.0, 1.0]" in fitted._disagreement(uncalibrated, shipped, prior_path(), 0.5)


def test_a_fit_for_another_prior_or_a_damaged_one_is_refused(tmp_path):
    import json

    from advisor.model import fitted

    csv_copy = tmp_path / "prior.csv"
    csv_copy.write_bytes(prior_path().read_bytes())
    shipped = json.loads(fitted.fitted_path(prior_path()).read_text())
    target = fitted.fitted_path(csv_copy)
    assert target.name == "prior.gp.json"
    with pytest.raises(fitted.FittedError, match="no fitted model"):
        fitted.load(csv_copy)
    target.write_text(json.dumps(shipped))
    fitted.load(csv_copy)  # the same bytes: accepted
    csv_copy.write_bytes(prior_path().read_bytes() + b"\n")
    with pytest.raises(fitted.FittedError, match="another version of prior.csv"):
        fitted.load(csv_copy)
    csv_copy.write_bytes(prior_path().read_bytes())
    for damage, reason in [(dict(shipped, model_version="0"), "model version"),
                           (dict(shipped, perf=dict(shipped["perf"], alpha=[1.0])), "damaged"),
                           (dict(shipped, perf=dict(shipped["perf"], keep=["no_such_feature"])), "damaged"),
                           (dict(shipped, perf=dict(shipped["perf"], linear={"no_such_feature": 1.0})), "damaged"),
                           ({k: v for k, v in shipped.items() if k != "by_workload"}, "damaged"),
                           (dict(shipped, by_workload={"postgres": {"perf": None}}), "damaged"),
                           # the calibration scales an sd: a scale of 0, a negative, NaN or no number is refused
                           ({k: v for k, v in shipped.items() if k != "calibration"}, "damaged"),
                           (dict(shipped, calibration=[0.0, 0.74, 0.99]), r"within \(0, 10\)"),
                           (dict(shipped, calibration=[0.73, -1.0, 0.99]), r"within \(0, 10\)"),
                           (dict(shipped, calibration=[0.73, float("nan"), 0.99]), r"within \(0, 10\)"),
                           (dict(shipped, calibration=["wide", 0.74, 0.99]), "damaged")]:
        target.write_text(json.dumps(damage))
        with pytest.raises(fitted.FittedError, match=reason):
            fitted.load(csv_copy)
    target.write_text("{not json")
    with pytest.raises(fitted.FittedError, match="cannot be read"):
        fitted.load(csv_copy)


def test_refitting_a_file_that_is_no_prior_is_refused_with_the_reason(tmp_path, capsys):
    from advisor.model import fitted

    for name, content in [("absent.csv", None), ("text.csv", b"not,a,prior\n1,2,3\n"), ("bytes.csv", b"\xff\xfe")]:
        path = tmp_path / name
        if content is not None:
            path.write_bytes(content)
        assert fitted.main(["--csv", str(path)]) == 2
        assert str(path) in capsys.readouterr().err
        assert not fitted.fitted_path(path).exists()


def test_the_per_workload_gp_predicts_from_its_workloads_rows(prior_without_cell, grid):
    from advisor.model.evaluation import with_deviation
    from advisor.model.regress import WorkloadGP

    # two workloads with two layouts each, one workload on one layout only
    keep = {"zfs2.3.2/hdd-mirror2x2/postgres/512M", "zfs2.3.2/hdd-raidz1x4/postgres/512M",
            "zfs2.3.2/hdd-mirror2x2/mysql/512M", "zfs2.3.2/hdd-raidz1x4/mysql/512M", "zfs2.3.2/ssd-mirror2x2/sqlite/512M"}
    prior = [s for s in prior_without_cell if s.obs.cell in keep]
    model = WorkloadGP(seed=0, restarts=0).fit(prior)
    assert sorted(model.by_workload) == ["mysql", "postgres"]  # sqlite: one layout, the overall GP
    postgres_alone = GPModel(seed=0, restarts=0).fit([s for s in prior if s.obs.workload == "postgres"])
    ours, theirs = model.predict([], grid).perf, postgres_alone.predict([], grid).perf
    assert list(ours.mean) == pytest.approx(list(theirs.mean)) and list(ours.sd) == pytest.approx(list(theirs.sd))
    sqlite = [replace(q, workload="sqlite") for q in grid]
    assert list(model.predict([], sqlite).perf.mean) == pytest.approx(list(model.overall.predict([], sqlite).perf.mean))
    wide = with_deviation(model, 0.2)  # the deviation reaches every GP of it
    assert wide.by_workload["postgres"].fitted.deviation == 0.2 and model.by_workload["postgres"].fitted.deviation != 0.2


def test_the_shipped_gp_conditions_a_workload_on_its_own_lab_rows(model, grid):
    from advisor.model.gp import conditioned_on, matrix

    fitted = model.fitted
    # the prior without ssd-mirror2x2/postgres still has postgres on two layouts
    assert {"postgres", "mysql", "sqlite", "kafka", "fileserver"} <= set(fitted.by_workload)
    everything = conditioned_on(fitted.perf, np.ones(len(fitted.perf.X_train), dtype=bool))
    X = matrix(grid)
    assert fitted.perf.predict(X)[0] == pytest.approx(everything.predict(X)[0])  # y recovered from the fit
    own, _ = fitted.by_workload["postgres"]
    assert own.constant == fitted.perf.constant and list(own.length_scales) == list(fitted.perf.length_scales)
    assert len(own.X_train) == sum(1 for s in samples(load_csv()) if s.obs.workload == "postgres"
                                   and s.obs.cell != CELL)
    assert list(model.predict([], grid).perf.mean) == pytest.approx(list(own.predict(X)[0]))
    vm = [replace(q, workload="vm") for q in grid]  # no lab rows: every row of the lab
    assert list(model.predict([], vm).perf.mean) == pytest.approx(list(fitted.perf.predict(matrix(vm))[0]))


# --- a layout the model never saw (docs/model.md, "A raidz width the prior has not seen") --------
@pytest.mark.parametrize("workload", ["postgres", "sqlite", "mysql", "kafka", "fileserver"])
def test_the_shipped_model_picks_well_on_a_raidz_width_it_never_saw(workload):
    """The raidz1 of five HDDs, every cell of that width left out: with two probes of the seven
    candidates (the baseline and one by expected improvement) the pick is within the write-p99
    limit and measures at least 90 % of the grid's best, and with three it is the best (the
    targets of docs/model.md, "Evaluation").  Its first three cells were measured after model
    version 6 was chosen; all five are in the prior now, so they are left out here (by conditioning
    the shipped fit on the other rows: the hyperparameters did see them)."""
    from advisor.model import fitted

    predictor, _ = fitted.load(prior_path())
    prior = samples(load_csv())
    width5 = {s.obs.cell for s in prior if s.obs.vdev_width == 5 and s.obs.vdev_type == "raidz1"}
    [held] = [c for c in width5 if f"/{workload}/" in c]
    two, three = (evaluate_cell(lambda: ShippedFit(predictor, prior), prior, held, budget,
                                exclude=frozenset(width5)) for budget in (2, 3))
    assert two.pick_p99_ok and two.pick_vs_oracle >= 0.9, two
    # with three, the best, or a setting the grid cannot tell from it (the 90 % interval of the ratio
    # of their means, repeats pooled, covers 1): model version 10 picks 4K for PostgreSQL, 0.95x 8K
    # (0.88..1.02)
    grid = Grid(cells(prior)[held])
    pick, best = (grid.key(*_setting(label)) for label in (three.pick, three.oracle))
    assert pick is not None and best is not None, three
    _, interval = grid.ratio(pick, best)
    assert three.pick == three.oracle or (interval is not None and interval[1] >= 1.0), (three, interval)


def _setting(label: str) -> tuple[str, str]:
    """(recordsize, compression) of an evaluation's label ("recordsize=8K", "compression=off")."""
    parameter, value = label.split("=")
    return (value, "lz4") if parameter == "recordsize" else ("128K", value)


def test_a_probe_run_whose_first_value_is_not_the_default_is_not_read_as_the_default():
    """`zfs-advisor probe --param recordsize=8K,4K` (the command an undecided answer gives) stores 8K
    as the run's baseline; the model's targets are ratios to the ZFS default, so 8K must not be read
    as 128K's performance (y = 0 at 8K).  Alone, such a run cannot be placed: the model leaves it out;
    beside a run that measured the default on the same pool, it is placed against that one."""
    shape = WorkloadShape.of(BOOK.workloads["postgres"])
    rows = csv_rows()
    run_of = lambda value: next(r["run_id"] for r in rows if r["value"] == value)  # noqa: E731 - a one-line helper, read where it is used
    eight_four = [dict(r, baseline="1" if r["value"] == "8K" else "0") for r in rows
                  if r["value"] in ("8K", "4K") and r["run_id"] == run_of("8K")]
    assert eight_four and all(r["parameter"] == "recordsize" for r in eight_four)
    alone = samples(from_result(result_row(r, 2), shape, "tank") for r in eight_four)
    assert alone == []
    defaults = [r for r in rows if r["value"] == "128K" and r["run_id"] == run_of("8K")]
    both = samples([*(from_result(result_row(r, 1), shape, "tank") for r in defaults),
                    *(from_result(result_row(r, 2), shape, "tank") for r in eight_four)])
    y8 = [s.y_perf for s in both if s.obs.value == "8K"]
    base = statistics.fmean(float(r["iops"]) for r in defaults)
    assert y8 and all(abs(y - math.log(float(r["iops"]) / base)) < 1e-9
                      for y, r in zip(y8, [r for r in eight_four if r["value"] == "8K"], strict=True))
    assert min(y8) > 0.1  # postgres at 8K on this layout beats the default: not 0, as read against itself
