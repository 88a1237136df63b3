"""What the application lab found of the prior's evidence (advisor/evidence/app_findings.py): the
shipped findings are the committed grids' figures, and a change the model alone predicts is held
where a real application at the disks' pace did not confirm it; a probe of the pool decides."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from advisor.engine.decide import Ladder, decide
from advisor.engine.loader import APP_FINDINGS, load_app_findings, load_rulebook
from advisor.evidence.app_findings import AppFinding, PairFinding, read_findings
from advisor.model.app_grids import load_grids
from support import HOSTS, REPO
from support.decisions import probe_run as _probe
from support.decisions import recordsize_rec as _rec
from support.decisions import synthetic_prediction as _synthetic

APPS_DATA = REPO / "tests" / "lab" / "apps-data"
SHIPPED = json.loads(APP_FINDINGS.read_text())["findings"]


@pytest.mark.parametrize("finding", SHIPPED, ids=lambda f: f"{f['workload']}-{f['parameter']}-{f['medium']}")
def test_each_shipped_finding_is_its_committed_grids_figures(finding):
    """Recomputed from the grid's cell as `evaluate --apps` reads it: the ratio and its 90 % interval
    (Student-t on the log metric, pooled over the cell's recordsizes), and the cell the storage paced."""
    grids = load_grids(APPS_DATA)
    for pair in finding["pairs"]:
        [cell] = [c for c in grids if c.grid == pair["grid"]
                  and all(str(getattr(c, k)) == str(v) for k, v in pair["cell"].items())]
        assert cell.scored, cell.why
        ratio, interval = cell.ratio(pair["value"], pair["against"])
        assert pair["ratio"] == pytest.approx(ratio, abs=0.0015)
        assert pair["interval"] == pytest.approx(list(interval), abs=0.0015)


def _finding(*pairs: PairFinding) -> AppFinding:
    return AppFinding("ssd", "postgres", "recordsize", "pgbench", "a throttled pool", "tps", pairs, "")


def _decide(rec, ladder: Ladder):
    return decide(rec, ladder, lambda r, v: ["zfs", "set", f"{r.parameter}={v}", r.dataset],
                  lambda r, vs: ["zfs-advisor", "probe", "--pool", "tank", "--param", f"{r.parameter}={','.join(vs)}"])


def test_a_gain_the_model_alone_predicts_is_held_where_the_application_did_not_confirm_it():
    pred = _synthetic("8K", (0.95, 1.5))  # 8K predicted 1.6x (1.44..1.76) over 128K: a change on its own
    assert _decide(_rec(), Ladder(prediction=pred)).status == "change"
    slower = _finding(PairFinding("8K", "128K", 0.87, (0.79, 0.96)))
    held = _decide(_rec(), Ladder(prediction=pred, finding=slower))
    assert (held.status, held.change, held.recommended) == ("undecided", False, "128K")
    assert held.measure_argv[:5] == ["zfs-advisor", "probe", "--pool", "tank", "--param"]
    assert held.measure_argv[5].startswith("recordsize=128K,8K")  # the current value, the proposal (the rule's too)
    assert "pgbench measured 8K at 0.87x the tps of 128K (90 % interval 0.79-0.96) on a throttled pool" in held.explanation
    assert "keep 128K until a probe of this pool measures a gain at its own pace" in held.explanation
    # measured the other way round (128K against 8K) it is the same finding
    inverted = _finding(PairFinding("128K", "8K", 1 / 0.87, (1 / 0.96, 1 / 0.79)))
    assert _decide(_rec(), Ladder(prediction=pred, finding=inverted)).status == "undecided"


def test_a_gain_the_application_confirmed_or_did_not_measure_stands():
    pred = _synthetic("8K", (0.95, 1.5))
    confirmed = _finding(PairFinding("8K", "128K", 1.3, (1.1, 1.5)))
    assert _decide(_rec(), Ladder(prediction=pred, finding=confirmed)).status == "change"
    elsewhere = _finding(PairFinding("32K", "128K", 0.98, (0.89, 1.09)))  # not the pair the model proposes
    assert _decide(_rec(), Ladder(prediction=pred, finding=elsewhere)).status == "change"


def test_a_probe_of_this_pool_that_measured_the_gain_decides_whatever_the_lab_found():
    """A probe here measured the pool at its own pace: a gain it found beyond its noise stands."""
    pred = _synthetic("8K", (0.95, 1.5))
    probe = _probe({"128K": 200.0, "8K": 470.0})
    slower = _finding(PairFinding("8K", "128K", 0.87, (0.79, 0.96)))
    out = _decide(_rec(), Ladder(probe=probe, prediction=pred, finding=slower))
    assert (out.status, out.recommended) == ("change", "8K")
    # ... and the answer says that its gain is the probe's fio job's, with the application's figure
    assert "The gain is the probe's, in its fio job's IOPS: in the application lab pgbench measured 8K at 0.87x " \
           "the tps of 128K (90 % interval 0.79-0.96)" in out.explanation, out.explanation
    assert [e.value for e in out.evidence if e.fact == "application.recordsize"] == [0.87]
    confirmed = _finding(PairFinding("8K", "128K", 1.3, (1.1, 1.5)))
    plain = _decide(_rec(), Ladder(probe=probe, prediction=pred, finding=confirmed))
    assert plain.status == "change" and "pgbench" not in plain.explanation  # the application agreed: nothing to say


def test_a_probe_that_did_not_separate_the_values_leaves_the_change_held():
    """The probe measured 8K at 1.17x 128K within a noise that does not exclude a loss: the model's
    confident gain is still the prior's, which the application lab did not confirm."""
    pred = _synthetic("8K", (0.95, 1.5))
    probe = _probe({"128K": 15.3, "8K": 17.9}, log_sd=0.4)
    slower = _finding(PairFinding("8K", "128K", 0.87, (0.79, 0.96)), PairFinding("32K", "128K", 0.98, (0.89, 1.09)))
    out = _decide(_rec(recommended="8K"), Ladder(probe=probe, prediction=pred, finding=slower))
    assert (out.status, out.recommended) == ("undecided", "128K")
    assert "(this one measured +17% IOPS" in out.explanation, out.explanation
    # the rule's 32K, which the probe did not measure, is held on the application's figure alone
    other = _decide(_rec(), Ladder(probe=probe, prediction=pred, finding=slower))
    assert (other.status, other.recommended) == ("undecided", "128K")
    assert "pgbench measured 32K at 0.98x the tps of 128K" in other.explanation


def _recordsize(root) -> dict:
    out = subprocess.run([sys.executable, "-m", "advisor", "recommend", "--root", str(root), "--workload", "postgres",
                          "--json"], capture_output=True, text=True, check=True, cwd=REPO).stdout
    return next(r for r in json.loads(out)["recommendations"] if r["parameter"] == "recordsize")


def test_on_the_lab_ssd_and_hdd_pools_the_new_postgres_dataset_keeps_128k_on_the_applications_figures():
    """The recorded lab hosts: each medium's finding names its least favourable pair: on the SSD
    mirror the grid with the WAL on its own dataset (8K at 0.94x), on the HDD mirror the raidz1
    grid's (8K at 0.79x), both beyond their noise."""
    ssd = _recordsize(HOSTS / "2.3.2" / "ssd-mirror2x2" / "idle")
    assert (ssd["status"], ssd["recommended"]) == ("undecided", "128K")
    assert "measured 8K at 0.94x the tps of 128K (90 % interval 0.92-0.96)" in ssd["explanation"]
    assert ssd["measure_argv"]
    hdd = _recordsize(HOSTS / "2.3.2" / "hdd-mirror2x2" / "idle")
    assert (hdd["status"], hdd["recommended"]) == ("undecided", "128K")
    assert "measured 8K at 0.79x the tps of 128K (90 % interval 0.63-0.97)" in hdd["explanation"]
    assert {("ssd", "postgres", "recordsize"), ("hdd", "postgres", "recordsize")} <= set(load_rulebook().app_findings)


def test_a_damaged_findings_file_is_not_used_and_the_answers_go_on(tmp_path, caplog):
    bad = tmp_path / "app-findings.json"
    bad.write_text('{"findings": [{"medium": "ssd"}]}')
    assert load_app_findings(bad) == {}
    assert "not readable" in caplog.text
    assert load_app_findings(tmp_path / "absent.json") == {}
    assert read_findings(APP_FINDINGS.read_text())  # the shipped one reads


def test_one_grid_that_saw_no_gain_holds_the_change_and_the_least_favourable_is_named():
    """Two layouts of one medium: one measured the proposal better beyond its noise, the other
    worse; the change is held on the worse one's figures (first, do no harm)."""
    same = lambda a, b: a == b  # noqa: E731 - the engine's same_value on plain labels
    confirmed = PairFinding("8K", "128K", 1.30, (1.10, 1.50), "mirror-grid")
    worse = PairFinding("128K", "8K", 1 / 0.78, (1 / 0.97, 1 / 0.63), "raidz-grid")  # measured the other way
    finding = _finding(confirmed, worse)
    held = finding.unconfirmed("8K", "128K", same)
    assert held is not None and held.grid == "raidz-grid" and held.ratio == pytest.approx(0.78)
    assert held.interval == pytest.approx((0.63, 0.97))
    assert _finding(confirmed).unconfirmed("8K", "128K", same) is None  # every grid confirmed it
    assert finding.unconfirmed("4K", "128K", same) is None  # never measured: nothing to hold on
