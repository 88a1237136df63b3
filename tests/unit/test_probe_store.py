"""The SQLite store, module parameter save/restore and evidence ranking (real sqlite, real files)."""
from __future__ import annotations

import math
import shutil
import sqlite3
from pathlib import Path

import pytest

from advisor.host.files import HostFiles
from advisor.hostmodel.tunables import DATASET_DEFAULTS
from advisor.probe.candidates import DATASET_PROPERTIES, CandidateError, parse_candidate_spec, recordsize_grid
from advisor.probe.probe_service import EFFICIENCY_RUN_ID
from advisor.probe.safety import LockBusy, ProbeLock
from advisor.probe.temporary_modparams import ModuleParamError, ModuleParams, ParamGuard, restore_leftovers
from advisor.store.db import DB_FILE, MIGRATIONS, SCHEMA_VERSION, StoreError, _statements, connect
from advisor.store.probe_evidence import evidence
from advisor.store.probes import ProbeStore, ResultRow

POOL = {"pool": "tank", "layout": "2 x mirror of 2", "ashift": 12, "media": "ssd"}


@pytest.fixture
def store(tmp_path):
    return ProbeStore(connect(tmp_path / "state"))


def result(run_id: int, value: str, repeat: int, iops: float, p99: float, baseline: bool = False) -> ResultRow:
    return ResultRow(run_id=run_id, parameter="recordsize", value=value, scope="dataset", baseline=baseline,
                     repeat=repeat, started_at=0.0, iops=iops, read_iops=iops * 0.7, write_iops=iops * 0.3,
                     read_bw=0, write_bw=0, write_p99=p99, runtime_seconds=10, written_bytes=1 << 20,
                     pool=POOL, job="[global]")


def test_schema_is_versioned_and_wal(tmp_path):
    conn = connect(tmp_path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    connect(tmp_path)  # a second open migrates nothing and fails nothing
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match="newer"):
        connect(tmp_path)


def test_runs_and_results_round_trip(store):
    run = store.start_run("tank", "postgres", "data", {"seconds": 60}, [{"parameter": "recordsize"}], POOL)
    store.add_result(result(run, "128K", 1, 1000, 0.030, baseline=True))
    store.end_run(run, "completed")
    row = store.run(run)
    assert row.status == "completed" and row.ended_at is not None and row.pool_descriptor == POOL
    [r] = store.results(run)
    assert r.iops == 1000 and r.baseline is True and r.pool == POOL
    assert store.results_for("tank", "postgres") == [r]
    assert store.results_for("tank", "mysql") == []
    seconds, written = store.usage_since("tank", 0)
    assert written == 1 << 20 and seconds >= 0
    with pytest.raises(sqlite3.IntegrityError):
        store.end_run(run, "bogus")  # type: ignore[arg-type]  # a status outside the Literal: what the store refuses


def test_layout_bytes_count_against_the_daily_budget(store):
    run = store.start_run("tank", "postgres", None, {}, [], POOL)
    store.add_result(result(run, "128K", 1, 1000, 0.030, baseline=True).model_copy(
        update={"layout_written_bytes": 256 << 20}))
    store.add_result(result(run, "128K", 2, 1000, 0.030, baseline=True))  # a result without a counted layout
    assert [r.layout_written_bytes for r in store.results(run)] == [256 << 20, None]
    assert store.usage_since("tank", 0)[1] == (256 << 20) + 2 * (1 << 20)


def test_a_runs_own_total_counts_what_no_result_carries(store):
    """An aborted repeat or layout wrote to the pool but stored no result: the run's own total
    (kept by the runner as it goes) is what the daily budget sums; a run without one (stored
    before schema 5) still counts through its results."""
    aborted = store.start_run("tank", "postgres", None, {}, [], POOL)
    store.add_result(result(aborted, "128K", 1, 1000, 0.030, baseline=True))  # 1 MiB in its result
    store.set_run_written(aborted, 300 << 20)  # + a layout and a repeat cut short: no result
    store.end_run(aborted, "aborted", "foreground I/O")
    older = store.start_run("tank", "postgres", None, {}, [], POOL)
    store.add_result(result(older, "8K", 1, 1000, 0.030))
    elsewhere = store.start_run("other", "postgres", None, {}, [], POOL)
    store.set_run_written(elsewhere, 1 << 30)
    assert store.run(aborted).written_bytes == 300 << 20 and store.run(older).written_bytes is None
    assert store.usage_since("tank", 0)[1] == (300 << 20) + (1 << 20)
    assert store.usage_since("other", 0)[1] == 1 << 30


def test_a_version_4_database_gains_the_run_total_and_counts_as_before(tmp_path):
    conn = sqlite3.connect(tmp_path / DB_FILE, isolation_level=None)
    migrate_to(conn, 4)
    conn.execute("INSERT INTO probe_runs (pool, workload, status, started_at, budget_json, plan_json)"
                 " VALUES ('tank', 'postgres', 'completed', 1.0, '{}', '[]')")
    conn.execute("INSERT INTO probe_results (run_id, parameter, value, scope, baseline, repeat, started_at, iops,"
                 " read_iops, write_iops, read_bw, write_bw, runtime_seconds, written_bytes, layout_written_bytes,"
                 " pool_json, job) VALUES (1, 'recordsize', '8K', 'dataset', 0, 1, 1.0, 900, 600, 300, 0, 0, 10, 4096,"
                 " 8192, '{}', '')")
    conn.close()
    store = ProbeStore(connect(tmp_path))
    assert store.run(1).written_bytes is None
    assert store.usage_since("tank", 0)[1] == 4096 + 8192


def test_a_version_3_database_keeps_its_results_and_gains_the_layout_column(tmp_path):
    conn = sqlite3.connect(tmp_path / DB_FILE, isolation_level=None)
    migrate_to(conn, 3)
    conn.execute("INSERT INTO probe_runs (pool, workload, status, started_at, budget_json, plan_json)"
                 " VALUES ('tank', 'postgres', 'completed', 1.0, '{}', '[]')")
    conn.execute("INSERT INTO probe_results (run_id, parameter, value, scope, baseline, repeat, started_at, iops,"
                 " read_iops, write_iops, read_bw, write_bw, runtime_seconds, written_bytes, pool_json, job)"
                 " VALUES (1, 'recordsize', '8K', 'dataset', 0, 1, 1.0, 900, 600, 300, 0, 0, 10, 4096, '{}', '')")
    conn.close()
    store = ProbeStore(connect(tmp_path))
    [r] = store.results(1)
    assert (r.iops, r.written_bytes, r.layout_written_bytes) == (900, 4096, None)
    assert store.usage_since("tank", 0)[1] == 4096


def test_a_version_7_database_keeps_its_results_as_evidence_and_gains_the_runs_verdict(tmp_path):
    """Results stored before runs were judged read as not judged (bound None) and stay evidence; a
    judged result keeps its verdict, reason and the host's counters; a verdict no code writes is refused."""
    conn = sqlite3.connect(tmp_path / DB_FILE, isolation_level=None)
    migrate_to(conn, 7)
    conn.execute("INSERT INTO probe_runs (pool, workload, status, started_at, budget_json, plan_json)"
                 " VALUES ('tank', 'postgres', 'completed', 1.0, '{}', '[]')")
    for value, baseline, iops in (("128K", 1, 700), ("8K", 0, 1800)):
        conn.execute("INSERT INTO probe_results (run_id, parameter, value, scope, baseline, repeat, started_at, iops,"
                     " read_iops, write_iops, read_bw, write_bw, runtime_seconds, written_bytes, pool_json, job)"
                     f" VALUES (1, 'recordsize', '{value}', 'dataset', {baseline}, 1, 1.0, {iops}, 0, 0, 0, 0, 10,"
                     " 4096, '{}', '')")
    conn.close()
    store = ProbeStore(connect(tmp_path))
    assert [(r.value, r.bound, r.bound_reason, r.load) for r in store.results(1)] == [
        ("128K", None, None, None), ("8K", None, None, None)]
    [ev] = evidence(store, "tank", "postgres")
    assert ev.best == "8K"
    run = store.start_run("tank", "postgres", None, {}, [], POOL)
    load = {"seconds": 30.0, "cpu_busy_ratio": 0.98, "disks_busy": {"sdb": 0.3}}
    store.add_result(result(run, "8K", 1, 436, 0.01).model_copy(
        update={"bound": "cpu", "bound_reason": "the host's CPU set the pace", "load": load}))
    [judged] = store.results(run)
    assert (judged.bound, judged.bound_reason, judged.load) == ("cpu", "the host's CPU set the pace", load)
    with pytest.raises(sqlite3.IntegrityError):
        store.conn.execute("UPDATE probe_results SET bound = 'disk' WHERE run_id = ?", (run,))


def test_aborted_runs_give_no_evidence(store):
    run = store.start_run("tank", "postgres", None, {}, [], POOL)
    store.add_result(result(run, "128K", 1, 1000, 0.03, baseline=True))
    store.end_run(run, "aborted", "foreground I/O")
    assert evidence(store, "tank", "postgres") == []


def test_evidence_ranks_with_effect_and_dispersion(store):
    run = store.start_run("tank", "postgres", None, {}, [], POOL)
    for rep, (a, b, c) in enumerate([(1185, 1563, 1426), (1205, 1541, 1400)], 1):
        store.add_result(result(run, "128K", rep, a, 0.036, baseline=True))
        store.add_result(result(run, "8K", rep, b, 0.0043))
        store.add_result(result(run, "32K", rep, c, 0.0148))
    store.end_run(run, "completed")
    [ev] = evidence(store, "tank", "postgres")
    assert ev.baseline == "128K" and ev.best == "8K"
    assert [c.value for c in ev.candidates] == ["8K", "32K", "128K"]
    best = ev.candidates[0]
    # pooled over the three candidates: each pair's log difference squared over 2, 3 degrees of
    # freedom; t(0.95, 3) = 2.353 (any table of Student's t); the ratio of two means of 2 repeats
    # each has sd * sqrt(1/2 + 1/2)
    sd = math.sqrt(sum(math.log(a / b) ** 2 / 2 for a, b in [(1185, 1205), (1563, 1541), (1426, 1400)]) / 3)
    assert ev.repeat_log_sd == pytest.approx(sd) and ev.degrees_of_freedom == 3
    half = 2.3534 * sd
    ratio = 1552 / 1195
    assert best.effect_ratio == pytest.approx(ratio)
    assert best.effect_interval == pytest.approx((ratio * math.exp(-half), ratio * math.exp(half)), rel=1e-4)
    assert best.distinguishable and best.iops_dispersion == pytest.approx(22 / 1552)
    assert best.run_interval == pytest.approx((1552 * math.exp(-half * math.sqrt(1.5)),
                                               1552 * math.exp(half * math.sqrt(1.5))), rel=1e-4)
    assert best.write_p99_ratio == pytest.approx(0.0043 / 0.036)
    assert best.expected_effect() == {"metric": "iops", "change_ratio": round(ratio, 3),
                                      "interval": [round(v, 3) for v in best.effect_interval],
                                      "measured_on": "the probe's fio job, run on this pool"}
    assert ev.candidate("32K").rank == 2 and ev.candidate("4K") is None
    base = ev.candidates[-1]
    assert base.effect_ratio == 1 and base.effect_interval == (1, 1) and not base.distinguishable


def test_one_repeat_each_gives_no_interval(store):
    """Without a second repeat of any candidate there is no noise to measure: no interval, no
    expected effect, and the candidates are not told apart."""
    run = store.start_run("tank", "postgres", None, {}, [], POOL)
    store.add_result(result(run, "128K", 1, 1000, 0.03, baseline=True))
    store.add_result(result(run, "8K", 1, 2000, 0.004))
    store.end_run(run, "completed")
    [ev] = evidence(store, "tank", "postgres")
    best = ev.candidates[0]
    assert ev.repeat_log_sd is None and ev.degrees_of_freedom == 0
    assert best.effect_ratio == 2 and best.effect_interval is None and best.run_interval is None
    assert not best.distinguishable and best.expected_effect() is None


def _params_root(tmp_path, **values):
    d = tmp_path / "root" / "sys/module/zfs/parameters"
    d.mkdir(parents=True)
    for k, v in values.items():
        (d / k).write_text(f"{v}\n")
    return HostFiles(tmp_path / "root"), d


def test_original_is_saved_before_the_change_and_restored(tmp_path, store):
    files, d = _params_root(tmp_path, zfs_txg_timeout=5, zfs_arc_max=0)
    run = store.start_run("tank", "postgres", None, {}, [], POOL)
    guard = ParamGuard(ModuleParams(files), store, run)
    guard.set("zfs_txg_timeout", "1")
    guard.set("zfs_txg_timeout", "2")  # the first original is kept
    assert (d / "zfs_txg_timeout").read_text() == "2"
    assert store.saved_module_params() == [(run, "zfs_txg_timeout", "5", None)]
    assert guard.restore() == []
    assert (d / "zfs_txg_timeout").read_text() == "5" and store.saved_module_params() == []


def test_leftovers_of_a_killed_run_are_restored_to_the_oldest_original(tmp_path, store):
    files, d = _params_root(tmp_path, zfs_arc_max=0)
    kstat = tmp_path / "root/proc/spl/kstat/zfs"
    kstat.mkdir(parents=True)
    (kstat / "arcstats").write_text("13 1 0x01 2 96 1 1\nname type data\nc_min 4 128227456\nc_max 4 2051638272\n")
    first = store.start_run("tank", "postgres", None, {}, [], POOL)
    ParamGuard(ModuleParams(files), store, first).set("zfs_arc_max", "268435456")  # then "killed"
    # 0 means "default" and the ARC ignores a 0 written later: the limit in effect is saved too
    assert store.saved_module_params() == [(first, "zfs_arc_max", "0", "2051638272")]
    second = store.start_run("tank", "postgres", None, {}, [], POOL)
    ParamGuard(ModuleParams(files), store, second).set("zfs_arc_max", "134217728")  # killed again
    assert restore_leftovers(ModuleParams(files), store) == [("zfs_arc_max", "0")]
    assert (d / "zfs_arc_max").read_text() == "0" and store.saved_module_params() == []


class WriteLog(ModuleParams):
    """The real ModuleParams, noting the order of its writes (the ARC applies zfs_arc_min only
    up to the zfs_arc_max in effect, so the order matters on a host; files here do not care)."""

    def __init__(self, files):
        super().__init__(files)
        self.writes: list[tuple[str, str]] = []

    def write(self, name, value):
        self.writes.append((name, value))
        super().write(name, value)


def _arc_root(tmp_path):
    files, d = _params_root(tmp_path, zfs_arc_min=0, zfs_arc_max=0)
    kstat = tmp_path / "root/proc/spl/kstat/zfs"
    kstat.mkdir(parents=True)
    (kstat / "arcstats").write_text("13 1 0x01 2 96 1 1\nname type data\nc_min 4 2147483648\nc_max 4 66571993088\n")
    return files, d


def test_the_arc_floor_goes_down_before_the_cap_and_back_after_it(tmp_path, store):
    files, d = _arc_root(tmp_path)
    params = WriteLog(files)
    guard = ParamGuard(params, store, store.start_run("tank", "postgres", None, {}, [], POOL))
    guard.set("zfs_arc_min", str(192 << 20))
    guard.set("zfs_arc_max", str(256 << 20))
    assert guard.restore() == []
    # the cap lifted (to the limit in effect, then "default") before the floor returns
    assert params.writes == [("zfs_arc_min", str(192 << 20)), ("zfs_arc_max", str(256 << 20)),
                             ("zfs_arc_max", "66571993088"), ("zfs_arc_max", "0"),
                             ("zfs_arc_min", "2147483648"), ("zfs_arc_min", "0")]
    assert (d / "zfs_arc_min").read_text() == "0" and (d / "zfs_arc_max").read_text() == "0"


def test_leftover_arc_limits_come_back_cap_first(tmp_path, store):
    files, _ = _arc_root(tmp_path)
    guard = ParamGuard(ModuleParams(files), store, store.start_run("tank", "postgres", None, {}, [], POOL))
    guard.set("zfs_arc_min", str(32 << 20))
    guard.set("zfs_arc_max", str(96 << 20))  # then "killed"
    params = WriteLog(files)
    assert restore_leftovers(params, store) == [("zfs_arc_max", "0"), ("zfs_arc_min", "0")]
    assert [name for name, _ in params.writes] == ["zfs_arc_max", "zfs_arc_max", "zfs_arc_min", "zfs_arc_min"]


def test_an_efficiency_run_killed_with_the_arc_capped_is_put_back_like_a_probe(tmp_path, store):
    files, d = _arc_root(tmp_path)
    params = WriteLog(files)
    ParamGuard(params, store, EFFICIENCY_RUN_ID).cap_arc(32 << 20, 64 << 20)  # then "killed"
    assert params.writes == [("zfs_arc_min", str(32 << 20)), ("zfs_arc_max", str(64 << 20))]  # floor first
    assert {name for _, name, _, _ in store.saved_module_params()} == {"zfs_arc_min", "zfs_arc_max"}
    assert restore_leftovers(ModuleParams(files), store) == [("zfs_arc_max", "0"), ("zfs_arc_min", "0")]
    assert (d / "zfs_arc_min").read_text() == "0" and (d / "zfs_arc_max").read_text() == "0"
    assert store.saved_module_params() == []


class ArcModel(ModuleParams):
    """A fake, since no ARC runs here: the part of arc_tuning_update() (module/zfs/arc.c) the guard
    relies on, kept in arcstats: a new zfs_arc_min in [32 MiB, c_max] sets c_min and raises c to
    it; a new zfs_arc_max of at least 64 MiB above c_min sets c_max and lowers c to it; 0 is
    ignored.  The lab checks the real ARC (tests/lab/test_systemd.py)."""

    def __init__(self, files, arcstats, c, c_min, c_max, store=None):
        super().__init__(files)
        self.arcstats, self.store, self.saved_at_write = arcstats, store, {}
        self.arc = {"c": c, "c_min": c_min, "c_max": c_max}
        self._publish()

    def _publish(self):
        self.arcstats.write_text("13 1 0x01 3 144 1 1\nname type data\n"
                                 + "".join(f"{k} 4 {v}\n" for k, v in self.arc.items()))

    def write(self, name, value):
        super().write(name, value)
        self.saved_at_write[(name, value)] = self.store.saved_module_params() if self.store else None
        v, arc = int(value), self.arc
        if name == "zfs_arc_min" and v and v != arc["c_min"] and 32 << 20 <= v <= arc["c_max"]:
            arc["c_min"], arc["c"] = v, max(arc["c"], v)
        elif name == "zfs_arc_max" and v and v != arc["c_max"] and v >= 64 << 20 and v > arc["c_min"]:
            arc["c_max"], arc["c"] = v, min(arc["c"], v)
        self._publish()


def test_the_arcs_target_goes_back_to_where_it_was_before_the_cap(tmp_path, store):
    """Lifting the cap leaves c at the floor (128 MiB here, as measured in the lab): the floor is
    raised to the old target for a moment, saved first as any change, then put back."""
    files, d = _arc_root(tmp_path)
    arc = ArcModel(files, tmp_path / "root/proc/spl/kstat/zfs/arcstats", 697 << 20, 128 << 20, 2 << 30, store)
    run = store.start_run("tank", "postgres", None, {}, [], POOL)
    guard = ParamGuard(arc, store, run)
    guard.cap_arc(32 << 20, 64 << 20)
    assert arc.arc == {"c": 64 << 20, "c_min": 32 << 20, "c_max": 64 << 20}
    assert guard.restore() == []
    assert arc.arc == {"c": 697 << 20, "c_min": 128 << 20, "c_max": 2 << 30}
    assert (d / "zfs_arc_min").read_text() == "0" and (d / "zfs_arc_max").read_text() == "0"
    # while the floor stood at the old target, the store held what brings it back after a crash
    assert arc.saved_at_write[("zfs_arc_min", str(697 << 20))] == [(run, "zfs_arc_min", "0", str(128 << 20))]
    assert store.saved_module_params() == []


def test_the_arcs_target_is_left_alone_when_nothing_capped_it(tmp_path, store):
    files, _ = _arc_root(tmp_path)
    (d := tmp_path / "root/sys/module/zfs/parameters" / "zfs_txg_timeout").write_text("5\n")
    arc = ArcModel(files, tmp_path / "root/proc/spl/kstat/zfs/arcstats", 697 << 20, 128 << 20, 2 << 30)
    guard = ParamGuard(arc, store, store.start_run("tank", "postgres", None, {}, [], POOL))
    guard.set("zfs_txg_timeout", "1")
    assert guard.restore() == [] and d.read_text() == "5"
    assert {name for name, _ in arc.saved_at_write} == {"zfs_txg_timeout"} and arc.arc["c"] == 697 << 20


def test_an_arc_target_that_grew_back_on_its_own_is_not_touched(tmp_path, store):
    files, _ = _arc_root(tmp_path)
    arc = ArcModel(files, tmp_path / "root/proc/spl/kstat/zfs/arcstats", 200 << 20, 128 << 20, 2 << 30, store)
    guard = ParamGuard(arc, store, store.start_run("tank", "postgres", None, {}, [], POOL))
    guard.cap_arc(None, 64 << 20)
    arc.arc["c"] = 300 << 20  # grew while probing, above the target noted before the cap
    arc.arc["c_max"] = 400 << 20
    arc._publish()
    guard.restore()
    assert arc.arc["c"] == 300 << 20
    assert ("zfs_arc_min", str(200 << 20)) not in arc.saved_at_write


def test_module_param_names_and_values_are_checked(tmp_path, store):
    files, _ = _params_root(tmp_path, zfs_txg_timeout=5)
    params = ModuleParams(files)
    with pytest.raises(ModuleParamError):
        params.read("../../etc/passwd")
    with pytest.raises(ModuleParamError):
        params.write("zfs_txg_timeout", "1; reboot")
    with pytest.raises(ModuleParamError):
        params.read("zfs_no_such_parameter")


def test_one_probe_per_pool(tmp_path):
    with ProbeLock(tmp_path, "tank"), pytest.raises(LockBusy, match="another probe"):
        ProbeLock(tmp_path, "tank").__enter__()
    with ProbeLock(tmp_path, "tank"):
        pass  # released on exit


def test_candidates():
    assert recordsize_grid("8K") == ["4K", "8K", "16K", "32K", "64K", "128K"]
    assert recordsize_grid("1M") == recordsize_grid("128K") == ["32K", "64K", "128K", "256K", "512K", "1M"]
    cands = parse_candidate_spec("recordsize=8K,16K,128K")
    assert [c.baseline for c in cands] == [False, False, True]
    assert cands[0].dataset_properties()["recordsize"] == "8K" and cands[0].key == "recordsize-8K"
    assert parse_candidate_spec("zfs_txg_timeout=1,5")[0].module_parameters() == {"zfs_txg_timeout": "1"}
    # the OpenZFS guide's redundant_metadata=most for databases, measured against the default all, which
    # every scratch child is created with (a pool root set to most must not leak into the baseline)
    # the properties a probe sets are the ones it knows a default of (an answer's `probed`)
    assert set(DATASET_PROPERTIES) == set(DATASET_DEFAULTS)
    most, base = parse_candidate_spec("redundant_metadata=most,all")
    assert base.baseline and base.dataset_properties()["redundant_metadata"] == "all"
    assert most.dataset_properties()["redundant_metadata"] == "most"
    assert parse_candidate_spec("recordsize=8K")[0].dataset_properties()["redundant_metadata"] == "all"
    for bad in ("recordsize=3K", "recordsize=8K;rm", "compression=bogus", "quota=1G", "zfs_txg_timeout=-1", "x",
                "redundant_metadata=half", "volblocksize=16K"):
        with pytest.raises(CandidateError):
            parse_candidate_spec(bad)


@pytest.mark.skipif(__import__("os").geteuid() != 0, reason="needs root: the prober's side of the shared database")
def test_root_writing_the_apis_database_leaves_it_writable_by_the_api(tmp_path_factory):
    """The prober (root) creates or writes the database in the API's state directory; every file
    SQLite leaves there (database, -wal, -shm) keeps the API's owner, and the API's user can
    then still read (WAL: it writes -shm) and queue. The API's user here is nobody."""
    import os
    import pwd
    import subprocess
    import sys
    import tempfile

    nobody = pwd.getpwnam("nobody")
    top = Path(tempfile.mkdtemp(prefix="zfs-advisor-shared-", dir="/tmp"))  # pytest's own tmp is root's alone
    top.chmod(0o755)
    state = top / "state"
    state.mkdir(mode=0o750)
    os.chown(state, nobody.pw_uid, nobody.pw_gid)
    store = ProbeStore(connect(state))  # root, the database not there yet
    run = store.start_run("tank", "postgres", None, {}, [], POOL)  # and kept open, as during a probe
    owners = {p.name: p.stat().st_uid for p in state.iterdir()}
    assert owners == {n: nobody.pw_uid for n in ("advisor.sqlite3", "advisor.sqlite3-wal", "advisor.sqlite3-shm")}
    api = ("import sys; from advisor.store.db import connect; from advisor.store.probes import ProbeStore; "
           "s = ProbeStore(connect(sys.argv[1])); print(s.run(int(sys.argv[2])).status, "
           "s.queue_run('tank', 'postgres', None, {}, {}))")
    out = subprocess.run(["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups",
                          sys.executable, "-c", api, str(state), str(run)], capture_output=True, text=True,
                         cwd=__import__("pathlib").Path(__file__).resolve().parents[2], timeout=60)
    assert out.returncode == 0, out.stderr
    status, queued = out.stdout.split()
    assert status == "running" and store.run(int(queued)).status == "queued"
    store.conn.close()
    shutil.rmtree(top)


def migrate_to(conn: sqlite3.Connection, version: int) -> None:
    """The schema as an older zfs-advisor left it: the first `version` migrations."""
    for number in range(version):
        for statement in _statements(MIGRATIONS[number]):
            conn.execute(statement)
    conn.execute(f"PRAGMA user_version = {version}")
