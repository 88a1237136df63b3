"""`evaluate --apps` probes at the application's own pace: the probe's fio job run beside an
application cell (advisor/model/same_pace.py) is the 1- and 2-probe answers' probe, and is scored
for fidelity (advisor/model/probe_fidelity.py).  The grids are hand-made (tests/support/app_grid_rows.py):
the fio job's rows at 7 IOPS set against the fio grid's (the prior's cell, measured at 1,500 IOPS),
where the postgres job ran 8K at 2.35x of 128K."""
from __future__ import annotations

import contextlib
import io
import json
import math
from functools import partial
from pathlib import Path

import pytest

from advisor.model.app_grids import load_grids
from advisor.model.dataset import cells, load_csv, samples
from advisor.model.features import settings_key
from advisor.model.probe_fidelity import fidelity, table, verdict
from advisor.model.same_pace import pace_twins, probe_source, twin
from support import HOSTS
from support.app_grid_rows import write_grid

FIO_CELL = "zfs2.3.2/ssd-mirror2x2/postgres/512M"  # the prior's cell of the layout's postgres probe


def _beside(fio_8k: tuple[float, float], fio_128k: tuple[float, float], iops: int = 7, pg: float = 1.0) -> list[tuple]:
    """pgbench at 8K slower than at 128K beyond its repeats (its tps times `pg`), the fio job beside
    it, both at `iops` a disk."""
    pg_rows = [("pgbench-tpcb", rs, tps * pg, iops, iops) for rs, tps in (("8K", 8.8), ("128K", 10.1), ("128K", 10.4),
                                                                          ("8K", 8.4))]
    fio = [("fio-postgres", "8K", fio_8k[0], iops, iops), ("fio-postgres", "128K", fio_128k[0], iops, iops),
           ("fio-postgres", "128K", fio_128k[1], iops, iops), ("fio-postgres", "8K", fio_8k[1], iops, iops)]
    return fio + pg_rows


@pytest.fixture(scope="module")
def prior():
    return samples(load_csv())


def _cells(tmp_path: Path, rows: list[tuple], name: str = "g") -> list:
    write_grid(tmp_path / f"{name}.csv", rows)
    return load_grids(tmp_path)


def test_the_fio_job_beside_a_cell_is_its_grids_at_its_throttle(tmp_path):
    """Another throttle of the same grid is another pace: not the twin."""
    rows = _beside((16.6, 16.0), (19.0, 18.0)) + _beside((830.0, 800.0), (950.0, 900.0), iops=350, pg=50)
    grid = _cells(tmp_path, rows)
    for cell in (c for c in grid if c.app == "pgbench-tpcb"):
        fio = twin(cell, grid, "postgres")
        assert fio is not None and fio.app == "fio-postgres" and fio.disk_iops == cell.disk_iops
    pg7 = next(c for c in grid if c.app == "pgbench-tpcb" and c.disk_iops == 7)
    assert twin(pg7, [c for c in grid if c.disk_iops != 7], "postgres") is None
    assert twin(pg7, grid, "mysql") is None  # no fio-mysql ran


def test_without_its_own_the_fio_job_at_the_same_pace_in_another_grid_stands_in(tmp_path):
    """Another boot of the same layout and throttle: the probe on another day of the same pool.
    Never the job at another throttle, and the cell's own grid's job first."""
    pg_only = [r for r in _beside((1.0, 1.0), (1.0, 1.0)) if r[0] == "pgbench-tpcb"]
    write_grid(tmp_path / "a.csv", pg_only)
    write_grid(tmp_path / "b.csv", _beside((16.6, 16.0), (19.0, 18.0)))
    write_grid(tmp_path / "c.csv", _beside((830.0, 800.0), (950.0, 900.0), iops=350, pg=50))
    grids = load_grids(tmp_path)
    alone = next(c for c in grids if c.grid == "a")
    assert twin(alone, grids, "postgres") is None
    [other] = pace_twins(alone, grids, "postgres")
    assert other is not None and (other.grid, other.app, other.disk_iops) == ("b", "fio-postgres", 7)
    beside = next(c for c in grids if c.grid == "b" and c.app == "pgbench-tpcb")
    assert pace_twins(beside, grids, "postgres")[0] is twin(beside, grids, "postgres")
    assert pace_twins(alone, [c for c in grids if c.grid != "b"], "postgres") == []


def test_the_probe_results_for_a_cell_are_that_cells_fio_rows(tmp_path, prior):
    """Each fio row is one repeat of the probe's candidate of its recordsize, as a ratio to the
    row's own 128K: the fio grid's keys, the cell's numbers."""
    grid = _cells(tmp_path, _beside((16.6, 16.0), (19.0, 18.0)))
    fio = next(c for c in grid if c.app == "fio-postgres")
    held = cells(prior)[FIO_CELL]
    source, why = probe_source(fio, held)
    assert source is not None and why == ""
    by_label = {f"{v[0].obs.parameter}={v[0].obs.value}": v for v in source.samples.values()}
    assert sorted(by_label) == ["recordsize=128K", "recordsize=8K"]
    assert [s.obs.perf for s in by_label["recordsize=8K"]] == [16.6, 16.0]
    assert [s.obs.perf for s in by_label["recordsize=128K"]] == [19.0, 18.0]
    assert [s.y_perf for s in by_label["recordsize=8K"]] == pytest.approx([math.log(16.6 / 18.5),
                                                                           math.log(16.0 / 18.5)])
    fio_grid_keys = {settings_key(s.obs) for s in held}
    assert set(source.samples) <= fio_grid_keys  # candidates the probe plan can pick
    assert {r["iops"] for r in source.rows.values()} == {16.6, 16.0, 19.0, 18.0}
    assert all(r["write_p99"] is None for r in source.rows.values())  # not recorded: not made up


def test_a_fio_job_without_the_default_recordsize_stands_for_no_probe(tmp_path, prior):
    grid = _cells(tmp_path, [("fio-postgres", "8K", 16.6, 7, 7), ("fio-postgres", "32K", 18.0, 7, 7)])
    source, why = probe_source(grid[0], cells(prior)[FIO_CELL])
    assert source is None and "default recordsize" in why


@pytest.fixture(scope="module")
def answering(prior):
    pytest.importorskip("numpy")
    from advisor.engine.loader import load_rulebook
    from advisor.model import answers, fitted
    from advisor.model.dataset import prior_path
    from advisor.model.evaluation import ShippedFit

    predictor, _ = fitted.load(prior_path())
    hosts = {k: v for k, v in answers.load_hosts(HOSTS / "2.3.2").items() if k == "ssd-mirror2x2"}
    return partial(ShippedFit, predictor, prior), answers.measured_rows(), load_rulebook(), hosts, {}


def _answers(answering, prior, source=None, budgets=(1, 2)):
    from advisor.model.answers import evaluate_answers

    factory, rows, book, hosts, cache = answering
    return {(r.budget, r.start): r for r in evaluate_answers(factory, prior, rows, book, hosts, list(budgets), FIO_CELL,
                                                             cache, source=source)}


def test_the_answers_follow_the_cells_fio_rows_not_the_fio_grids(tmp_path, prior, answering):
    """A new dataset at 2 probes measures 128K and 8K: from the fio grid (8K 2.35x) the answer
    changes to 8K; from a cell where the job ran 8K at 0.88x of 128K it does not."""
    grid = _cells(tmp_path, _beside((16.6, 16.0), (19.0, 18.0)))
    source, _ = probe_source(next(c for c in grid if c.app == "fio-postgres"), cells(prior)[FIO_CELL])
    own, at_pace = _answers(answering, prior), _answers(answering, prior, source)
    assert own[(2, "default")].probed == at_pace[(2, "default")].probed == ["recordsize=128K", "recordsize=8K"]
    assert own[(2, "default")].final.startswith("8K,") and own[(2, "default")].probes_from == ""
    assert not at_pace[(2, "default")].final.startswith("8K,")
    assert at_pace[(2, "default")].probes_from == source.name and at_pace[(2, "default")].outside == []
    assert at_pace[(1, "default")].probes_from == source.name


def test_a_candidate_outside_the_cell_falls_back_to_the_fio_grid_and_is_named(tmp_path, prior, answering):
    """A cell that measured 128K alone: at 2 probes the plan's second candidate is not in it, so
    that budget is the fio grid's answer, the candidate named; 1 probe (128K) is the cell's."""
    grid = _cells(tmp_path, [("fio-postgres", "128K", 19.0, 7, 7), ("fio-postgres", "128K", 18.0, 7, 7)])
    source, _ = probe_source(grid[0], cells(prior)[FIO_CELL])
    own, at_pace = _answers(answering, prior), _answers(answering, prior, source)
    fell = at_pace[(2, "default")]
    assert fell.outside and fell.outside == [p for p in fell.probed if p != "recordsize=128K"]
    assert fell.probes_from == "" and (fell.probed, fell.final) == (own[(2, "default")].probed, own[(2, "default")].final)
    assert at_pace[(1, "default")].probed == ["recordsize=128K"] and at_pace[(1, "default")].probes_from == source.name


def test_the_fallback_is_flagged_in_the_table_and_the_json(tmp_path, capsys):
    pytest.importorskip("sklearn")
    from advisor.cli import main

    write_grid(tmp_path / "g.csv", _beside((16.6, 16.0), (19.0, 18.0)))
    fio_name = next(c.name for c in load_grids(tmp_path) if c.app == "fio-postgres")
    assert main(["evaluate", "--apps", str(tmp_path), "--shipped-fit", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    by = {(a["budget"], a["start"]): a for a in report["answers"]}
    assert {a["probes_from"] for (b, _), a in by.items() if b == 0} == {"-"}  # the 0-probe answer as it was
    for a in (a for (b, _), a in by.items() if b > 0):
        assert a["probes_from"] in ("cell", "fio grid")
        assert (a["probes_from"] == "fio grid") == bool(a["fallback"])
        assert a["probes_cell"] == (fio_name if a["probes_from"] == "cell" else "")
        outside = [p for p in a["probed"] if p not in ("recordsize=128K", "recordsize=8K")]
        assert a["fallback"] == (f"the probe would measure {', '.join(outside)}, not in this cell" if outside else "")
    [row] = report["fidelity"]
    assert row["fio_best"] == row["app_best"] == "128K" and row["fio_paced"] and row["app_paced"]
    assert main(["evaluate", "--apps", str(tmp_path), "--shipped-fit"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("does the probe's job rank the recordsizes as the application does")
    assert text.index("8K/128K: fio 0.88") < text.index("probes start")
    fell = [a for a in by.values() if a["fallback"]]
    assert ("fio grid* " in text) == ("* the fio grid's probes (" in text) == bool(fell)
    assert all(a["fallback"] in text for a in fell)


def test_fidelity_compares_each_recordsizes_ratio_to_the_default_with_its_interval(tmp_path):
    """At 7 IOPS the job ranks 8K below 128K as pgbench does (both beyond their noise); at 350 IOPS
    it ranks 8K above, pgbench below: they disagree.  Both follow the throttle, 7 to 350."""
    rows = _beside((16.6, 16.0), (19.0, 18.0)) + _beside((1500.0, 1550.0), (950.0, 900.0), iops=350, pg=5)
    grid = _cells(tmp_path, rows)
    by = {r.disk_iops: r for r in fidelity(grid)}
    assert sorted(by) == [7, 350]
    [slow], [fast] = by[7].ratios, by[350].ratios
    assert (slow.recordsize, slow.reference) == ("8K", "128K")
    assert slow.fio == pytest.approx(16.3 / 18.5) and slow.app == pytest.approx(8.6 / 10.25)
    assert slow.fio_interval[1] < 1 and slow.app_interval[1] < 1 and slow.verdict == "agree"
    assert fast.fio_interval[0] > 1 and fast.verdict == "disagree"
    assert (by[7].fio_best, by[350].fio_best, by[350].app_best) == ("128K", "8K", "128K")
    assert (by[7].fio_best_mean, by[7].app_best_mean) == pytest.approx((18.5, 10.25))
    assert all(r.fio_paced and r.app_paced for r in by.values())
    text = table(list(by.values()))
    assert "8K/128K: fio 0.88 (" in text and ": agree" in text and ": disagree" in text


def test_the_verdict_calls_a_side_only_beyond_the_noise():
    assert verdict(0.9, (0.8, 0.95), 0.85, (0.8, 0.9)) == "agree"
    assert verdict(1.2, (1.1, 1.3), 0.85, (0.8, 0.9)) == "disagree"
    assert verdict(1.2, (1.1, 1.3), 0.95, (0.8, 1.1)) == "fio alone beyond its noise, opposite directions"
    assert verdict(0.95, (0.8, 1.1), 0.85, (0.8, 0.9)) == "the application alone beyond its noise, same direction"
    assert verdict(0.9, None, 0.95, (0.8, 1.1)) == "neither beyond its noise, same direction"


# --- the committed grid with the fio job beside pgbench (docs/apps.md, "The probe at the application's pace")
BESIDE = "pgbench-fio-ssd-mirror2x2-zfs2.3"


@pytest.fixture(scope="module")
def beside_report():
    pytest.importorskip("sklearn")
    from advisor.cli import main

    capsys_free = io.StringIO()
    with contextlib.redirect_stdout(capsys_free):
        assert main(["evaluate", "--apps", "--shipped-fit", "--json"]) == 0
    return json.loads(capsys_free.getvalue())


def test_the_committed_fio_job_beside_pgbench_is_scored_for_fidelity(beside_report):
    """At 7 IOPS both paced by the disks and neither ranks 8K against 128K beyond its noise; at
    1,500 IOPS the storage paced neither, and fio alone ranks 8K above 128K."""
    rows = {f["disk_iops"]: f for f in beside_report["fidelity"] if f["app_cell"].startswith(BESIDE)}
    assert sorted(rows) == [7, 1500]
    assert (rows[7]["fio_paced"], rows[7]["app_paced"], rows[1500]["fio_paced"], rows[1500]["app_paced"]) == \
        (True, True, False, False)
    [slow], [fast] = rows[7]["ratios"], rows[1500]["ratios"]
    assert slow["fio_interval"][0] < 1 < slow["fio_interval"][1] and slow["app_interval"][0] < 1 < slow["app_interval"][1]
    assert slow["verdict"] == "neither beyond its noise, same direction"
    assert fast["fio_interval"][0] > 1 and fast["verdict"] == "fio alone beyond its noise, same direction"


def test_the_committed_cells_answers_probe_at_its_pace(beside_report):
    """Its 1- and 2-probe answers take the fio job's rows but where the plan measures 4K (a dataset
    at 8K, 2 probes); the cell ranks nothing, so no answer of it is harm."""
    mine = {(a["budget"], a["start"]): a for a in beside_report["answers"] if a["cell"].startswith(f"{BESIDE}:")}
    assert sorted(mine) == [(b, s) for b in (0, 1, 2) for s in ("common", "default")]
    fell = {k for k, a in mine.items() if a["probes_from"] == "fio grid"}
    assert fell == {(2, "common")} and "recordsize=4K" in mine[(2, "common")]["fallback"]
    assert all(a["probes_cell"].startswith(f"{BESIDE}: fio-postgres, 7 IOPS") for k, a in mine.items()
               if k[0] > 0 and k not in fell)
    assert mine[(2, "default")]["probed"] == ["recordsize=128K", "recordsize=8K"]
    assert not any(a["harm"] for a in mine.values())


def test_a_bandwidth_workloads_fio_job_stands_for_its_probe_in_mb_per_s(tmp_path, prior):
    """The file server's probe compares bandwidth (features.metric_of): its fio job beside a copy is
    recorded in MB/s, each row its candidate's bandwidth in bytes a second, as the prior stores it;
    the same job recorded in IOPS is refused."""
    rows = [("fio-fileserver", "128K", 4.0, 15, 15.0), ("fio-fileserver", "1M", 5.0, 15, 15.0),
            ("fio-fileserver", "1M", 5.2, 15, 15.0), ("fio-fileserver", "128K", 4.2, 15, 15.0)]
    write_grid(tmp_path / "mb.csv", rows, fio_metric="MB/s")
    [fio] = load_grids(tmp_path)
    held = cells(prior)["zfs2.3.2/ssd-mirror2x2/fileserver/512M"]
    source, why = probe_source(fio, held)
    assert source is not None and why == ""
    assert sorted(r["read_bw"] for r in source.rows.values()) == [4.0e6, 4.2e6, 5.0e6, 5.2e6]
    assert all(r["iops"] == 0.0 for r in source.rows.values())
    (tmp_path / "mb.csv").unlink()
    write_grid(tmp_path / "iops.csv", rows)
    [in_iops] = load_grids(tmp_path)
    none, why = probe_source(in_iops, held)
    assert none is None and "not what the probe compares" in why


def test_a_fio_job_the_disks_did_not_pace_stands_for_no_probe(tmp_path):
    """The file server's job at 15 IOPS ran from the ARC (its disks at 12 of 15 operations a second,
    the CPU the limit): it is no probe at the copy's pace, beside it or in another grid."""
    fio = [("fio-postgres", rs, v, 7, 4.0) for rs, v in (("8K", 30.0), ("128K", 31.0), ("128K", 29.0), ("8K", 32.0))]
    pg = [r for r in _beside((1.0, 1.0), (1.0, 1.0)) if r[0] == "pgbench-tpcb"]
    write_grid(tmp_path / "g.csv", fio + pg)
    grids = load_grids(tmp_path)
    cell = next(c for c in grids if c.app == "pgbench-tpcb")
    assert twin(cell, grids, "postgres") is not None  # beside it, at its throttle ...
    assert pace_twins(cell, grids, "postgres") == []  # ... but not at its pace
