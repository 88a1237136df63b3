"""tests/lab/prior_grid.py's pure parts: the grid's probe call plans what it says (the plan's own
code), the job shape read back from the probe's fio jobs, the pool shape from its descriptor."""
from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from advisor.cli import build_parser
from advisor.engine.loader import load_rulebook
from advisor.probe.fio_job import Hygiene, build_job
from advisor.probe.probe_plan import fit_runtime

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab"))
import prior_grid  # noqa: E402 - after the sys.path line above


@pytest.fixture(scope="module")
def workloads():
    return load_rulebook().workloads


@pytest.mark.parametrize("workload", sorted(prior_grid.GRID))
def test_every_cell_has_the_working_set_and_the_runtime_the_grid_asks_for(workloads, workload):
    s = prior_grid.Settings()
    job = build_job(workloads[workload], "/probe", Hygiene(max_file_bytes=prior_grid.file_bytes(workload, s)))
    assert job.working_set_bytes == s.working_set
    n = prior_grid.n_candidates(workload)
    assert fit_runtime(prior_grid.probe_budget(n, s.working_set, s), n, s.repeats, s.ramp_s, s.working_set,
                       30, s.layout_rate, layout_per_repeat=False) == s.runtime_s
    # the probe call itself asks for that: one layout a candidate, as every row of the prior
    argv = shlex.split(prior_grid.probe_command(workload, "/tmp/state", s))
    args = build_parser().parse_args(argv[argv.index("advisor") + 1:])
    assert args.layout_per == "candidate" and args.repeats == s.repeats
    assert args.cache == "arc-cap"  # as the prior was measured
    assert "128K" in prior_grid.GRID[workload] and len(prior_grid.GRID[workload]) >= 4


def test_a_budgeted_probe_call_leaves_the_candidates_to_the_model():
    s = prior_grid.Settings()
    argv = shlex.split(prior_grid.probe_command("postgres", "/tmp/state", s, budget_probes=2))
    args = build_parser().parse_args(argv[argv.index("advisor") + 1:])
    assert args.budget_probes == 2 and not args.param
    whole = shlex.split(prior_grid.probe_command("postgres", "/tmp/state", s))
    assert "--budget-probes" not in whole and "--param" in whole
    # the time budget is the one for two candidates, not for the whole grid
    assert argv[argv.index("--budget") + 1] == f"{prior_grid.probe_budget(2, s.working_set, s)}s"
    grid = prior_grid.n_candidates("postgres")
    assert whole[whole.index("--budget") + 1] == f"{prior_grid.probe_budget(grid, s.working_set, s)}s"


def test_job_shape_of_the_probed_jobs(workloads):
    shape = lambda w: prior_grid.job_shape(build_job(workloads[w], "/probe").text)  # noqa: E731 - a one-line helper, read where it is used
    assert shape("postgres") == {"fsync_every": 0, "iodepth": 1, "numjobs": 4}
    assert shape("sqlite") == {"fsync_every": 32, "iodepth": 1, "numjobs": 1}
    assert shape("kafka") == {"fsync_every": 0, "iodepth": 1, "numjobs": 2}


def test_pool_shape_names_the_vdev_type():
    vdev = lambda t, w, p=None: {"type": t, "width": w, "nparity": p}  # noqa: E731 - a one-line helper, read where it is used
    assert prior_grid.pool_shape({"media": "hdd", "ashift": 12, "vdevs": [vdev("disk", 1)] * 5}) == {
        "media": "hdd", "vdev_type": "stripe", "top_vdevs": 5, "vdev_width": 1, "disks": 5, "ashift": 12}
    assert prior_grid.pool_shape({"media": "hdd", "ashift": 12, "vdevs": [vdev("raidz", 4, 1)]})["vdev_type"] == "raidz1"
    mirrors = prior_grid.pool_shape({"media": "ssd", "ashift": 12, "vdevs": [vdev("mirror", 2)] * 2})
    assert (mirrors["vdev_type"], mirrors["top_vdevs"], mirrors["disks"]) == ("mirror", 2, 4)


def _rows(layout: str, workload: str, candidates: list[tuple[str, str]], repeats: int = 2) -> list[dict[str, str]]:
    s = prior_grid.Settings()
    return [{"layout": layout, "workload": workload, "working_set_bytes": str(s.working_set),
             "parameter": p, "value": v, "repeat": str(r)} for p, v in candidates for r in range(1, repeats + 1)]


def _first_grid(workload: str) -> list[tuple[str, str]]:
    return [("recordsize", v) for v in prior_grid.GRID[workload]] + [("compression", "off")]


@pytest.mark.parametrize("workload", sorted(prior_grid.GRID))
def test_an_extension_is_new_recordsizes_measured_beside_the_baseline(workloads, workload):
    s = prior_grid.Settings()
    extension = prior_grid.EXTENSION[workload]
    assert len(extension) == 2 and not set(extension) & set(prior_grid.GRID[workload])
    rows = _rows("ssd-mirror2x2", workload, _first_grid(workload))
    assert prior_grid.cell_complete(rows, "ssd-mirror2x2", workload, s)
    assert not prior_grid.cell_complete(rows, "ssd-mirror2x2", workload, s, extend=True)
    sizes, extra, keep = prior_grid.cell_plan(rows, "ssd-mirror2x2", workload, s, extend=True)
    assert sizes == ("128K", *extension) and extra == () and keep
    # 7 candidates: the baseline and one more probe are 2/7, under a third of the grid
    assert len(prior_grid.required(workload, True)) == 7
    n = len(sizes)
    assert fit_runtime(prior_grid.probe_budget(n, s.working_set, s), n, s.repeats, s.ramp_s, s.working_set,
                       30, s.layout_rate, layout_per_repeat=False) == s.runtime_s
    rows += _rows("ssd-mirror2x2", workload, [("recordsize", v) for v in sizes])
    assert prior_grid.cell_complete(rows, "ssd-mirror2x2", workload, s, extend=True)


def test_a_cell_without_its_first_grid_is_measured_whole():
    s = prior_grid.Settings()
    rows = _rows("hdd-stripe5", "kafka", _first_grid("kafka")[:2])  # cut short
    sizes, extra, keep = prior_grid.cell_plan(rows, "hdd-stripe5", "kafka", s, extend=True)
    assert sizes == prior_grid.GRID["kafka"] + prior_grid.EXTENSION["kafka"] and extra == prior_grid.EXTRA
    assert not keep
    one_repeat = _rows("hdd-stripe5", "kafka", _first_grid("kafka"), repeats=1)
    assert not prior_grid.cell_complete(one_repeat, "hdd-stripe5", "kafka", s)


def test_one_run_measures_a_cell_of_several_runs_again_whole():
    s = prior_grid.Settings()
    first = [{**r, "run_id": "a"} for r in _rows("hdd-raidz1x4", "kafka", _first_grid("kafka"))]
    second = [{**r, "run_id": "b"} for r in _rows("hdd-raidz1x4", "kafka", [("recordsize", v) for v in
                                                                           ("128K", *prior_grid.EXTENSION["kafka"])])]
    rows = first + second
    assert prior_grid.cell_complete(rows, "hdd-raidz1x4", "kafka", s, extend=True)
    assert not prior_grid.cell_todo(rows, "hdd-raidz1x4", "kafka", s, extend=True, one_run=False)
    assert prior_grid.cell_todo(rows, "hdd-raidz1x4", "kafka", s, extend=True, one_run=True)
    sizes, extra, keep = prior_grid.cell_plan(rows, "hdd-raidz1x4", "kafka", s, extend=True, one_run=True)
    assert sizes == prior_grid.GRID["kafka"] + prior_grid.EXTENSION["kafka"] and extra == prior_grid.EXTRA
    assert not keep  # the new run replaces the cell's rows
    whole = [{**r, "run_id": "c"} for r in _rows("hdd-raidz1x4", "kafka", [("recordsize", v) for v in sizes]
                                                 + [("compression", "off")])]
    assert not prior_grid.cell_todo(whole, "hdd-raidz1x4", "kafka", s, extend=True, one_run=True)


MODULE = ("zfs_txg_timeout=5,30", "zfs_vdev_async_write_max_active=10,32")


def test_a_module_grid_probes_those_parameters_alone_on_the_dataset_defaults():
    s = prior_grid.Settings()
    argv = shlex.split(prior_grid.probe_command("postgres", "/tmp/state", s, module=MODULE))
    args = build_parser().parse_args(argv[argv.index("advisor") + 1:])
    assert args.param == list(MODULE) and args.budget_probes is None
    # not under an ARC cap (it would throttle the writes before the dirty-data limit does)
    assert args.cache == "uncached"
    assert build_parser().parse_args(shlex.split(prior_grid.probe_command("postgres", "/tmp/state", s))[5:]).cache \
        == "arc-cap"
    # four candidates, each with the runtime the grid asks for
    n = len(prior_grid.module_candidates(MODULE))
    assert n == 4 == prior_grid.n_extra(MODULE)
    assert argv[argv.index("--budget") + 1] == f"{prior_grid.probe_budget(4, s.working_set, s)}s"
    assert fit_runtime(prior_grid.probe_budget(n, s.working_set, s), n, s.repeats, s.ramp_s, s.working_set,
                       30, s.layout_rate, layout_per_repeat=False) == s.runtime_s
    assert prior_grid.n_extra(prior_grid.EXTRA) == 1
    rows = _rows("ssd-mirror2x2", "postgres", _first_grid("postgres"))
    assert prior_grid.cell_todo(rows, "ssd-mirror2x2", "postgres", s, False, False, MODULE)
    assert prior_grid.cell_plan(rows, "ssd-mirror2x2", "postgres", s, False, module=MODULE) == ((), MODULE, False)
    rows += _rows("ssd-mirror2x2", "postgres", prior_grid.module_candidates(MODULE))
    assert not prior_grid.cell_todo(rows, "ssd-mirror2x2", "postgres", s, False, False, MODULE)
    with pytest.raises(prior_grid.CandidateError):
        prior_grid.module_candidates(("recordsize=8K,128K",))


def _result(parameter: str, value: str, scope: str, baseline: bool, repeat: int, iops: float) -> dict:
    return {"parameter": parameter, "value": value, "scope": scope, "baseline": baseline, "repeat": repeat,
            "pool": {"media": "ssd", "ashift": 12, "vdevs": [{"type": "mirror", "width": 2}] * 2},
            "job": "[global]\nnumjobs=4\niodepth=1\n", "working_set_bytes": 512 << 20, "arc_max_bytes": 64 << 20,
            "runtime_seconds": 32.0, "iops": iops, "read_iops": iops / 2, "write_iops": iops / 2,
            "read_bw": iops * 4096, "write_bw": iops * 4096, "read_p50": 0.001, "read_p99": 0.01,
            "read_p999": 0.02, "write_p50": 0.001, "write_p99": 0.01, "write_p999": 0.02, "sync_p99": None,
            "cpu_user": 0.1, "cpu_system": 0.2, "compress_ratio": 1.0, "started_at": 1_800_000_000.0 + repeat,
            "arc_hit_ratio": 0.1, "written_bytes": 1}


def test_module_rows_mark_their_own_baseline_and_are_summarised_against_it():
    s = prior_grid.Settings()
    results = [_result(p, v, "module", b, rep, iops) for p, v, b, iops in (
        ("zfs_txg_timeout", "5", True, 1000.0), ("zfs_vdev_async_write_max_active", "10", True, 2000.0),
        ("zfs_txg_timeout", "30", False, 1500.0), ("zfs_vdev_async_write_max_active", "32", False, 2000.0))
        for rep in (1, 2)]
    output = {"run": {"workload": "postgres", "id": 1, "started_at": 1_800_000_000.0, "status": "completed"},
              "results": results}
    profile = {"pattern": "random", "block_size": "8K", "read_fraction": 0.7}
    rows = prior_grid.rows_of(output, zfs_version="2.3.2", layout="ssd-mirror2x2", profile=profile,
                              arc_min=32 << 20, s=s)
    assert [(r["parameter"], r["value"], r["baseline"]) for r in rows[::2]] == [
        ("zfs_txg_timeout", "5", 1), ("zfs_vdev_async_write_max_active", "10", 1),
        ("zfs_txg_timeout", "30", 0), ("zfs_vdev_async_write_max_active", "32", 0)]
    assert {r["recordsize_bytes"] for r in rows} == {128 << 10}  # the scratch dataset's defaults
    table = prior_grid.parameter_summary([{k: str(v) for k, v in r.items()} for r in rows])
    assert "| zfs_txg_timeout | 30 | 1,500 | 1.50x | 0.0% |" in table
    assert "| zfs_vdev_async_write_max_active | 32 | 2,000 | 1.00x |" in table
