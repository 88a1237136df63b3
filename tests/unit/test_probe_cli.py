"""`zfs-advisor probe`: plans, stored runs and results as a person and a script read them."""
from __future__ import annotations

import gc
import json

from advisor.cli import main
from advisor.store.db import connect
from advisor.store.probes import ProbeStore, ResultRow

POOL = {"pool": "tank", "layout": "2 x mirror of 2", "ashift": 12, "media": "ssd"}


def _store_run(state, bound: str | None = None, reason: str | None = None) -> int:
    store = ProbeStore(connect(state))
    run = store.start_run("tank", "postgres", None, {"seconds": 300}, [], POOL)
    for value, iops, base in (("128K", 446, True), ("8K", 1166, False)):
        for rep in (1, 2):
            store.add_result(ResultRow(run_id=run, parameter="recordsize", value=value, scope="dataset", baseline=base,
                                       repeat=rep, started_at=0, iops=iops + rep, read_iops=0, write_iops=0, read_bw=0,
                                       write_bw=0, write_p99=0.0065 if value == "8K" else 0.0708, runtime_seconds=30,
                                       written_bytes=0, compress_ratio=1.0, pool=POOL, job="[global]", bound=bound,
                                       bound_reason=reason))
    store.end_run(run, "completed")
    return run


def test_show_prints_the_ranked_table(tmp_path, capsys):
    run = _store_run(tmp_path)
    assert main(["probe", "--state-dir", str(tmp_path), "--show", str(run)]) == 0
    out = capsys.readouterr().out
    assert "run 1: completed" in out and "2 x mirror of 2" in out
    rows = [line.split() for line in out.splitlines() if line.strip().startswith(("1 ", "2 "))]
    assert [r[1] for r in rows] == ["8K", "128K"] and rows[0][5] == "2.61x"
    low, high = (float(v.replace(",", "")) for v in rows[0][4].split(".."))  # a run of 8K, 90 %
    assert low < float(rows[0][2].replace(",", "")) < high
    assert rows[0][6].startswith("(") and rows[1][5] == "1.00x" and rows[1][6] != "(1.00..1.00)"


def test_list_and_show_json(tmp_path, capsys):
    run = _store_run(tmp_path)
    assert main(["probe", "--state-dir", str(tmp_path), "--list", "--json"]) == 0
    [listed] = json.loads(capsys.readouterr().out)
    assert listed["id"] == run and listed["status"] == "completed"
    assert main(["probe", "--state-dir", str(tmp_path), "--show", str(run), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["evidence"][0]["best"] == "8K" and len(shown["results"]) == 4
    assert main(["probe", "--state-dir", str(tmp_path), "--show", "99"]) == 1


def test_show_says_a_cpu_bound_run_was_set_aside(tmp_path, capsys):
    reason = "the host's CPU set the pace, not the storage: CPU 99% busy"
    run = _store_run(tmp_path, "cpu", reason)
    assert main(["probe", "--state-dir", str(tmp_path), "--show", str(run)]) == 0
    out = capsys.readouterr().out
    assert f"set aside as evidence about the storage (recordsize, 4 repeats CPU-bound): {reason}" in out
    assert main(["probe", "--state-dir", str(tmp_path), "--show", str(run), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["bound"]["verdict"] == "cpu"


def test_usage_errors_exit_2(tmp_path, capsys):
    assert main(["probe", "--state-dir", str(tmp_path), "--pool", "tank"]) == 2
    assert main(["probe", "--state-dir", str(tmp_path), "--pool", "tank", "--workload", "postgres",
                 "--repeats", "1"]) == 2
    assert main(["probe", "--state-dir", str(tmp_path), "--pool", "tank", "--workload", "postgres",
                 "--param", "recordsize=7K", "--plan-only"]) == 2
    assert "power of two" in capsys.readouterr().err


def test_list_and_show_only_read(tmp_path, capsys):
    """No probe ever ran: --list lists nothing and --show finds nothing, and neither creates the database."""
    assert main(["probe", "--state-dir", str(tmp_path), "--list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert main(["probe", "--state-dir", str(tmp_path), "--list"]) == 0
    assert main(["probe", "--state-dir", str(tmp_path), "--show", "1"]) == 1
    assert "no run 1" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
    _store_run(tmp_path)  # and a database that exists is read as it is
    gc.collect()  # the writer's connection closed (its last checkpoint written) before the files are compared
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert main(["probe", "--state-dir", str(tmp_path), "--list"]) == 0
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_a_cpu_bound_repeat_says_so_as_it_is_measured(capsys):
    from pathlib import Path
    from types import SimpleNamespace

    from advisor.cli.probe import _progress
    from advisor.probe.candidates import make_candidate
    from advisor.probe.fio_result import parse_fio_json
    from advisor.probe.plan_runner import Progress

    fio = Path(__file__).parents[1] / "fixtures" / "fio" / "host-ext4" / "random-read-4jobs.json"
    metrics = parse_fio_json(fio.read_text())
    show = _progress(SimpleNamespace(estimated_seconds=100.0))
    for bound in ("cpu", "storage"):
        show(Progress("result", make_candidate("recordsize", "8K"), 1, 2, 1, metrics, 10.0, bound))
    cpu, storage = capsys.readouterr().err.splitlines()
    assert cpu.endswith("IOPS (CPU-bound: set aside as evidence)") and storage.endswith("IOPS")
