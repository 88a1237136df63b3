"""POST /v1/probes queues a run (never runs fio), and the profiler's pass over queued runs and
configured pools: refused plans, expiry, a busy pool and a spent daily budget (real aiohttp
server, real SQLite store; zpool answers replayed from lab recordings, kstats from the lab
recording's files, changed under the profiler's feet for the busy pool)."""
from __future__ import annotations

import asyncio
import shutil
import time

import pytest

from advisor.config.settings import ProfilerSettings, Settings
from advisor.engine.loader import load_rulebook
from advisor.engine.service import recommend
from advisor.evidence.parameters import summarize
from advisor.host.files import HostFiles
from advisor.host.runner import CommandResult, ReplayRunner
from advisor.host.snapshot import collect_from_root, open_snapshot
from advisor.probe.candidates import make_candidate
from advisor.probe.probe_plan import Budget
from advisor.probe.probe_service import ProbeConfig, ProbeService
from advisor.probe.profiler import Profiler, choose_candidates, profiler_config
from advisor.service.app import create_app
from advisor.store.db import connect
from advisor.store.probes import QUEUE_SIGNAL, ProbeStore, ResultRow
from support import FIXTURES, RECORDING

TOKEN = "s3cret-token-for-tests"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
BODY = {"pool": "tank", "workload": "postgres", "params": {"recordsize": ["8K", "128K"]}, "budget": {"seconds": 120}}
STATUS_TEXT = FIXTURES / "raw" / "2.3.2-ssd-mirror2x2" / "zpool-status-pPL.after-scrub.txt"


def app(tmp_path, **extra):
    return create_app(Settings(root=str(RECORDING), state_dir=str(tmp_path / "state"), **extra))


async def test_post_queues_a_run_that_get_shows_queued(http_client, tmp_path):
    client = await http_client(app(tmp_path, api_token=TOKEN))
    resp = await client.post("/v1/probes", json=BODY, headers=AUTH)
    assert resp.status == 202, await resp.text()
    answer = await resp.json()
    assert answer["status"] == "queued" and resp.headers["Location"] == answer["location"] == f"/v1/probes/{answer['id']}"
    shown = await (await client.get(answer["location"])).json()
    assert shown["run"]["status"] == "queued" and shown["results"] == [] and shown["evidence"] == []
    assert shown["run"]["request"]["params"] == {"recordsize": ["8K", "128K"]}
    assert (tmp_path / "state" / QUEUE_SIGNAL).read_text().strip() == str(answer["id"])
    listed = (await (await client.get("/v1/probes")).json())["runs"]
    assert [(r["id"], r["status"]) for r in listed] == [(answer["id"], "queued")]


async def test_post_without_a_configured_token_is_refused_even_on_loopback(http_client, tmp_path):
    client = await http_client(app(tmp_path))
    resp = await client.post("/v1/probes", json=BODY)
    assert resp.status == 403
    assert "api_token" in (await resp.json())["error"]["reason"]
    assert not (tmp_path / "state").exists()


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"}])
async def test_post_without_the_token_is_401(http_client, tmp_path, headers):
    client = await http_client(app(tmp_path, api_token=TOKEN))
    resp = await client.post("/v1/probes", json=BODY, headers=headers)
    assert resp.status == 401 and resp.headers["WWW-Authenticate"].startswith("Bearer")
    assert (await resp.json())["error"]["status"] == 401


@pytest.mark.parametrize("change, status, valid", [
    ({"pool": "nosuch"}, 404, "tank"),
    ({"pool": "../etc"}, 400, None),
    ({"workload": "nosuch"}, 404, "postgres"),
    ({"role": "nosuch"}, 400, "data"),
    ({"set": {"page_size": "3K"}}, 400, "8K"),
    ({"set": {"nosuch": "1"}}, 400, "page_size"),
    ({"params": {"nosuch": ["1", "2"]}}, 400, "recordsize"),
    ({"params": {"recordsize": ["8K"]}}, 400, None),
    ({"params": {"recordsize": ["8K", "12K"]}}, 400, None),
    ({"params": {"zfs_txg_timeout": ["5", "5; reboot"]}}, 400, None),
    ({"budget": {"seconds": 5}}, 422, "budget"),
    ({"budget": {"seconds": 100000}}, 400, None),
    ({"budget": {"daily_seconds": 100000}}, 422, "budget"),
    ({"extra": 1}, 422, "pool"),
])
async def test_post_validates_the_body(http_client, tmp_path, change, status, valid):
    client = await http_client(app(tmp_path, api_token=TOKEN))
    resp = await client.post("/v1/probes", json={**BODY, **change}, headers=AUTH)
    error = (await resp.json())["error"]
    assert (resp.status, error["status"]) == (status, status), error
    if valid:
        assert valid in error["valid"]
    assert (await (await client.get("/v1/probes")).json())["runs"] == []


async def test_post_bounds_and_types_the_body(http_client, tmp_path):
    client = await http_client(app(tmp_path, api_token=TOKEN))
    assert (await client.post("/v1/probes", data=b"{" + b" " * 20000 + b"}", headers={**AUTH, "Content-Type": "application/json"})).status == 413
    assert (await client.post("/v1/probes", data=b"pool=tank", headers={**AUTH, "Content-Type": "text/plain"})).status == 415
    resp = await client.post("/v1/probes", data=b"{not json", headers={**AUTH, "Content-Type": "application/json"})
    assert resp.status == 400 and (await resp.json())["error"]["status"] == 400
    resp = await client.post("/v1/probes", data=b"[" * 5000 + b"]" * 5000,  # json.loads: RecursionError
                             headers={**AUTH, "Content-Type": "application/json"})
    assert resp.status == 400 and "nested too deeply" in (await resp.json())["error"]["reason"]

    async def chunked():  # no Content-Length: bounded while reading
        for _ in range(40):
            yield b" " * 1024

    resp = await client.post("/v1/probes", data=chunked(), headers={**AUTH, "Content-Type": "application/json"})
    assert resp.status == 413


async def test_the_queue_is_bounded(http_client, tmp_path):
    client = await http_client(app(tmp_path, api_token=TOKEN, profiler={"max_queued": 2}))
    statuses = [(await client.post("/v1/probes", json=BODY, headers=AUTH)).status for _ in range(3)]
    assert statuses == [202, 202, 409]


async def test_openapi_documents_the_post(http_client, tmp_path):
    client = await http_client(app(tmp_path))
    doc = await (await client.get("/openapi.json")).json()
    post = doc["paths"]["/v1/probes"]["post"]
    assert {"202", "401", "403", "413", "422"} <= set(post["responses"])
    assert post["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/ProbeRequest")
    assert "ProbeRequest" in doc["components"]["schemas"]


# --- the profiler ---------------------------------------------------------------------------

def _result(run_id: int, value: str, iops: float, baseline: bool) -> ResultRow:
    return ResultRow(run_id=run_id, parameter="recordsize", value=value, scope="dataset", baseline=baseline, repeat=1,
                     started_at=0.0, iops=iops, read_iops=iops, write_iops=0, read_bw=0, write_bw=0, write_p99=0.01,
                     runtime_seconds=10, written_bytes=1 << 20, pool={}, job="")


def test_choose_candidates_measures_what_this_pool_has_not_measured(tmp_path):
    service = _service(tmp_path, ProfilerSettings())
    plan = service.plan("tank", "postgres", Budget(seconds=600))
    assert choose_candidates(plan, []) == plan.candidates + plan.dropped
    history = [summarize("recordsize", [_result(1, "128K", 400, True), _result(1, "8K", 1100, False)])]
    chosen = choose_candidates(plan, history)
    assert [(c.value, c.baseline) for c in chosen] == [
        ("128K", True), ("16K", False), ("4K", False), ("32K", False), ("64K", False)]
    everything = history + [summarize("recordsize", [_result(2, "128K", 400, True), _result(2, "16K", 900, False),
                                                     _result(2, "4K", 700, False), _result(2, "32K", 800, False),
                                                     _result(2, "64K", 600, False)])]
    assert choose_candidates(plan, everything) == []


def _host_files(tmp_path) -> HostFiles:
    """The lab recording's files (arcstats, the pool's objset kstats, disks), in a copy of our own."""
    root = tmp_path / "root"
    if not root.exists():
        shutil.copytree(RECORDING, root, symlinks=True)
    return open_snapshot(root)[0]


def _replay(*extra: CommandResult) -> ReplayRunner:
    """zpool status as recorded in the lab (after a scrub: idle, ONLINE); the size and free
    space the lab recording's `zpool get` reports for tank."""
    props = (RECORDING / "commands").glob("*.out")
    size = free = None
    for out in props:
        for line in out.read_text().splitlines():
            fields = line.split("\t")
            if len(fields) >= 3 and fields[0] == "tank" and fields[1] in ("size", "free"):
                size, free = (fields[2], free) if fields[1] == "size" else (size, fields[2])
    assert size and free
    return ReplayRunner([
        CommandResult(("zpool", "status", "-pPL", "tank"), 0, STATUS_TEXT.read_text(), ""),
        CommandResult(("zpool", "list", "-Hp", "-o", "size,free", "tank"), 0, f"{size}\t{free}\n", ""),
        *extra,
    ])


def _service(tmp_path, settings: ProfilerSettings, *extra: CommandResult) -> ProbeService:
    config = profiler_config(settings, ProbeConfig(tmp_path / "state"))
    return ProbeService(config, load_rulebook(), runner=_replay(*extra), files=_host_files(tmp_path))


def _queue(service: ProbeService, request: dict, queued_at: float | None = None) -> int:
    run_id = service.store.queue_run(request["pool"], request["workload"], None, request.get("budget", {}), request)
    if queued_at is not None:
        service.store.conn.execute("UPDATE probe_runs SET queued_at = ? WHERE id = ?", (queued_at, run_id))
    return run_id


async def test_a_queued_run_that_cannot_be_planned_fails_saying_why(tmp_path):
    service = _service(tmp_path, ProfilerSettings(idle_window_seconds=1))
    run_id = _queue(service, {**BODY, "set": {"page_size": "3K"}})
    [outcome] = await Profiler(service, ProfilerSettings()).run_once()
    assert (outcome.action, outcome.kind) == ("failed", "plan")
    run = service.store.run(run_id)
    assert run.status == "failed" and "page_size" in run.reason and run.ended_at == run.started_at


async def test_a_queued_run_never_started_expires(tmp_path):
    settings = ProfilerSettings(queued_max_age_seconds=3600)
    service = _service(tmp_path, settings)
    run_id = _queue(service, BODY, queued_at=time.time() - 7200)
    [outcome] = await Profiler(service, settings).run_once()
    assert outcome.kind == "expired" and service.store.run(run_id).status == "failed"


async def test_the_profiler_skips_when_the_daily_budget_is_spent(tmp_path):
    settings = ProfilerSettings(enabled=True, pools=["tank"], workloads=["postgres"], daily_seconds=900,
                                idle_window_seconds=1)
    service = _service(tmp_path, settings)
    spent = service.store.start_run("tank", "mysql", None, {}, [], None)  # any workload counts for the pool
    service.store.conn.execute("UPDATE probe_runs SET started_at = ? WHERE id = ?", (time.time() - 800, spent))
    service.store.end_run(spent, "completed")
    queued = _queue(service, BODY)
    outcomes = await Profiler(service, settings).run_once()
    assert [(o.workload, o.action, o.kind) for o in outcomes] == [("postgres", "skipped", "budget")] * 2
    assert "daily budget" in outcomes[0].reason
    assert service.store.run(queued).status == "queued"  # tried again at the next pass
    assert [s.kind for s in service.store.skips()] == ["budget", "budget"]


async def _user_writes(tmp_path) -> None:
    """Another program writes 1 MiB to tank/pg every 0.1 s (its objset kstat's nwritten grows)."""
    objset = next(p for p in (tmp_path / "root/proc/spl/kstat/zfs/tank").glob("objset-*")
                  if "tank/pg" in p.read_text().split("dataset_name", 1)[1].split("\n", 1)[0])
    while True:
        await asyncio.sleep(0.1)  # the other program's pace: the behaviour the probe must notice
        lines = objset.read_text().splitlines()
        lines = [f"nwritten 4 {int(line.split()[2]) + (1 << 20)}" if line.startswith("nwritten ") else line
                 for line in lines]
        objset.write_text("\n".join(lines) + "\n")


async def test_the_profiler_skips_a_busy_pool_and_leaves_the_request_queued(tmp_path):
    settings = ProfilerSettings(idle_window_seconds=1.0)
    service = _service(tmp_path, settings)
    queued = _queue(service, BODY)
    writer = asyncio.create_task(_user_writes(tmp_path))
    [outcome] = await Profiler(service, settings).run_once()
    writer.cancel()
    assert (outcome.action, outcome.kind, outcome.run_id) == ("skipped", "busy", queued), outcome
    assert "not idle" in outcome.reason
    assert service.store.run(queued).status == "queued"


async def _pass_beside_a_cpu(tmp_path, busy_share: float, writer: bool = False,
                            **settings_given) -> tuple[ProbeService, int, object]:
    """A profiler pass over a queued run while the host's /proc/stat (written in proc(5)'s format,
    two CPUs at 100 ticks a second: the recording has none) counts `busy_share` of the time busy."""
    settings = ProfilerSettings(idle_window_seconds=1.0, **settings_given)
    service = _service(tmp_path, settings)
    queued = _queue(service, BODY)
    stat = tmp_path / "root" / "proc" / "stat"
    ticks = {"busy": 100_000, "idle": 400_000}

    def write() -> None:
        stat.write_text(f"cpu  {ticks['busy']} 0 0 {ticks['idle']} 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\n"
                        "cpu1 0 0 0 0 0 0 0 0 0 0\nbtime 1795000000\n")

    async def tick():  # 0.1 s of two CPUs is 20 ticks
        while True:
            await asyncio.sleep(0.1)  # the clock the CPU counters advance by
            ticks["busy"] += round(20 * busy_share)
            ticks["idle"] += 20 - round(20 * busy_share)
            write()

    write()
    busy = [asyncio.create_task(tick())] + ([asyncio.create_task(_user_writes(tmp_path))] if writer else [])
    [outcome] = await Profiler(service, settings).run_once()
    for task in busy:
        task.cancel()
    return service, queued, outcome


async def test_the_profiler_does_not_start_a_probe_while_the_hosts_cpu_is_busy(tmp_path):
    service, queued, outcome = await _pass_beside_a_cpu(tmp_path, 0.9)
    assert (outcome.action, outcome.kind, outcome.run_id) == ("skipped", "cpu", queued), outcome
    assert outcome.reason.startswith("the host's CPU is busy: 90% of 2 CPUs' time over 1 s (threshold 50%)")
    assert service.store.run(queued).status == "queued"  # tried again at the next pass
    assert [(s.kind, s.run_id) for s in service.store.skips()] == [("cpu", queued)]


async def test_a_pool_written_to_is_the_reason_given_when_the_cpu_is_busy_too(tmp_path):
    """The pool's own foreground I/O is the more specific reason (a writer busies the CPU as well)."""
    service, queued, outcome = await _pass_beside_a_cpu(tmp_path, 0.9, writer=True)
    assert (outcome.action, outcome.kind, outcome.run_id) == ("skipped", "busy", queued), outcome


@pytest.mark.parametrize("busy_share, settings_given", [(0.1, {}), (0.9, {"idle_max_cpu_busy": 0.95})])
async def test_a_quiet_cpu_lets_the_probe_start(tmp_path, busy_share, settings_given):
    """Under the threshold (the default 0.5, or `idle_max_cpu_busy`): past the gate, the run starts
    (and fails here, where no zfs command was recorded)."""
    service, queued, outcome = await _pass_beside_a_cpu(tmp_path, busy_share, **settings_given)
    assert (outcome.action, outcome.run_id) == ("ran", queued) and outcome.kind is None
    assert service.store.skips() == []


def test_usage_counts_probing_not_waiting_in_the_queue(tmp_path):
    store = ProbeStore(connect(tmp_path))
    run_id = store.queue_run("tank", "postgres", None, {}, BODY)
    store.conn.execute("UPDATE probe_runs SET started_at = 0 WHERE id = ?", (run_id,))
    assert store.usage_since("tank", -1) == (0.0, 0)
    assert store.claim_run(run_id, {}, [make_candidate("recordsize", "8K").model_dump()], None)
    assert not store.claim_run(run_id, {}, [], None)  # claimed once
    assert store.run(run_id).status == "running" and store.run(run_id).started_at > 0


# --- module parameters measured by a probe reach /recommend -----------------------------------

def _txg_rows(run_id: int) -> list[ResultRow]:
    """zfs_txg_timeout 5 (default, baseline) against 1: repeats that do not overlap."""
    out = []
    for value, iops in (("5", (1000.0, 1020.0)), ("1", (700.0, 720.0))):
        for repeat, measured in enumerate(iops, 1):
            out.append(ResultRow(run_id=run_id, parameter="zfs_txg_timeout", value=value, scope="module",
                                 baseline=value == "5", repeat=repeat, started_at=0.0, iops=measured, read_iops=0,
                                 write_iops=measured, read_bw=0, write_bw=0, write_p99=0.01, runtime_seconds=10,
                                 written_bytes=1 << 20, pool={}, job=""))
    return out


async def test_recommend_cites_a_measured_module_parameter(http_client, tmp_path):
    store = ProbeStore(connect(tmp_path))
    run = store.start_run("tank", "postgres", None, {}, [], None)
    for row in _txg_rows(run):
        store.add_result(row)
    store.end_run(run, "completed")
    store.conn.close()
    client = await http_client(create_app(Settings(root=str(RECORDING), state_dir=str(tmp_path))))
    answer = await (await client.get("/recommend", params={"workload": "postgres", "pool": "tank"})).json()
    rec = next(r for r in answer["recommendations"] if r["parameter"] == "zfs_txg_timeout")
    assert rec["scope"] == "module" and rec["source"] == "probe" and rec["pool"] is None
    assert "Measured on pool tank" in rec["explanation"] and f"probe run {run}" in rec["explanation"]
    assert "The evidence favours keeping the current 5" in rec["explanation"] and rec["recommended"] == "5"
    assert {e["fact"] for e in rec["evidence"]} >= {"probe.zfs_txg_timeout.5.iops", "probe.zfs_txg_timeout.1.iops"}
    assert rec["status"] == "passed" and rec["expected_effect"] is None  # 5, the current value, measured best


async def test_a_measured_module_value_overrules_the_rule_with_a_sysfs_write():
    """Here 1 measured faster than the default 5, beyond the repeats' spread: the advice changes."""
    host = (await collect_from_root(RECORDING)).host
    faster = [r.model_copy(update={"iops": r.iops + (600 if r.value == "1" else 0)}) for r in _txg_rows(7)]
    ev = summarize("zfs_txg_timeout", faster)
    answer = recommend(host, load_rulebook(), "postgres", pool="tank", measured=lambda pool, workload: [ev])
    rec = next(r for r in answer.recommendations if r.parameter == "zfs_txg_timeout")
    assert (rec.current, rec.recommended, rec.status, rec.scope, rec.pool) == ("5", "1", "change", "module", None)
    assert rec.apply == "echo 1 > /sys/module/zfs/parameters/zfs_txg_timeout" and rec.apply_argv is None
    assert "1 is measured +30% IOPS over the current 5" in rec.explanation and rec.expected_effect.change_ratio > 1.2


def test_profile_command_passes_and_lists_skips(tmp_path, capsys, monkeypatch):
    from advisor.cli import main

    for key in [k for k in __import__("os").environ if k.startswith("ZFS_ADVISOR_")]:
        monkeypatch.delenv(key)
    config = tmp_path / "config.toml"
    config.write_text(f'state_dir = "{tmp_path / "state"}"\n[profiler]\nworkloads = ["nosuch"]\n')
    assert main(["profile", "--config", str(config)]) == 2
    assert "nosuch" in capsys.readouterr().err
    config.write_text(f'state_dir = "{tmp_path / "state"}"\n')
    assert main(["profile", "--config", str(config)]) == 0  # nothing queued, profiler off: nothing to do
    store = ProbeStore(connect(tmp_path / "state"))
    store.note_skip("tank", "postgres", None, "busy", "pool tank is not idle")
    capsys.readouterr()
    assert main(["profile", "--config", str(config), "--skips"]) == 0
    assert '"kind":"busy"' in capsys.readouterr().out


async def test_sigterm_stops_a_pass_cleanly(tmp_path):
    """systemctl stop sends SIGTERM: the pass is cancelled (here while it watches for idleness,
    before the run is claimed, so the run stays queued) instead of Python dying on the spot."""
    import os
    import signal

    from advisor.cli.profile import _pass

    settings = ProfilerSettings(idle_window_seconds=30)
    service = _service(tmp_path, settings)
    queued = _queue(service, BODY)
    loop = asyncio.get_running_loop()
    loop.call_later(1.0, os.kill, os.getpid(), signal.SIGTERM)
    started = time.monotonic()
    try:
        assert await _pass(Profiler(service, settings)) is signal.SIGTERM
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
    assert time.monotonic() - started < 10
    assert service.store.run(queued).status == "queued"


async def test_with_budget_probes_the_model_chooses_what_a_background_run_measures(tmp_path):
    from advisor.cli.profile import model_chooser

    settings = ProfilerSettings(enabled=True, pools=["tank"], workloads=["postgres"], budget_probes=2)
    service = _service(tmp_path, settings)
    plan = service.plan("tank", "postgres", Budget(seconds=3600))
    assert model_chooser(service, Settings(profiler=settings, model=False)) is choose_candidates
    assert model_chooser(service, Settings(profiler=settings.model_copy(update={"budget_probes": 0}))) \
        is choose_candidates
    chosen = await model_chooser(service, Settings(profiler=settings))(plan, [])
    # the baseline (effects are ratios within one run) and the one candidate expected improvement asks for
    assert [c.baseline for c in chosen] == [True, False], chosen
    assert chosen[0].value == "128K" and chosen[1].parameter == "recordsize"
    assert len(chosen) < len(choose_candidates(plan, []))  # fewer than the plan's whole grid
    # what the pool measured already is not asked for again
    done = [summarize("recordsize", [_result(1, "128K", 400, True), _result(1, chosen[1].value, 900, False)])]
    again = await model_chooser(service, Settings(profiler=settings))(plan, done)
    assert chosen[1].value not in [c.value for c in again if not c.baseline]


async def test_with_a_dataset_named_the_run_measures_its_recordsize_against_what_the_model_asks_for(tmp_path):
    """`[workloads]` names the workload's dataset: its recordsize (read with `zfs get`) is the run's
    baseline in place of the default, so the run measures the change that dataset would make; the
    others are the same parameter (a ratio to 8K says nothing of compression=off at 128K)."""
    from advisor.cli.profile import model_chooser

    settings = ProfilerSettings(enabled=True, pools=["tank"], workloads=["postgres"], budget_probes=2)
    named = {"tank/pg": "postgres"}
    # what `zfs get -Hp -o value recordsize` prints for a filesystem at 8K (one value, in bytes)
    argv = ("zfs", "get", "-Hp", "-o", "value", "recordsize", "tank/pg")
    service = _service(tmp_path, settings, CommandResult(argv, 0, "8192\n", ""))
    plan = service.plan("tank", "postgres", Budget(seconds=3600))
    chosen = await model_chooser(service, Settings(profiler=settings, workloads=named))(plan, [])
    assert [(c.baseline, c.parameter) for c in chosen] == [(True, "recordsize"), (False, "recordsize")], chosen
    assert chosen[0].value == "8K" and chosen[1].value not in ("8K", "128K")
    # a value measured against the default only is measured again against the dataset's own
    vs_default = [summarize("recordsize", [_result(1, "128K", 400, True), _result(1, chosen[1].value, 900, False)])]
    again = await model_chooser(service, Settings(profiler=settings, workloads=named))(plan, vs_default)
    assert [c.value for c in again] == [c.value for c in chosen]
    # measured against 8K already: not asked for again
    vs_dataset = [summarize("recordsize", [_result(2, "8K", 400, True), _result(2, chosen[1].value, 900, False)])]
    third = await model_chooser(service, Settings(profiler=settings, workloads=named))(plan, vs_dataset)
    assert chosen[1].value not in [c.value for c in third if not c.baseline]
    # unreadable (no such dataset): the default is the baseline, as without the setting
    gone = _service(tmp_path, settings, CommandResult(argv, 1, "", "cannot open 'tank/pg': dataset does not exist"))
    fallback = await model_chooser(gone, Settings(profiler=settings, workloads=named))(plan, [])
    assert fallback[0].value == "128K" and fallback[0].baseline
    # two datasets of the workload on the pool at different recordsizes: one run cannot serve both
    other = ("zfs", "get", "-Hp", "-o", "value", "recordsize", "tank/pg2")
    two = _service(tmp_path, settings, CommandResult(argv, 0, "8192\n", ""), CommandResult(other, 0, "16384\n", ""))
    both = Settings(profiler=settings, workloads={**named, "tank/pg2": "postgres"})
    assert (await model_chooser(two, both)(plan, []))[0].value == "128K"


async def test_a_dataset_value_the_pool_measured_against_the_default_leaves_the_default_as_baseline(tmp_path):
    """This pool ran 128K and 8K in one run: the model reads both (its targets are ratios to the
    default), so the next run is chosen as without a dataset, the default its baseline."""
    from advisor.cli.profile import model_chooser

    settings = ProfilerSettings(enabled=True, pools=["tank"], workloads=["postgres"], budget_probes=2)
    argv = ("zfs", "get", "-Hp", "-o", "value", "recordsize", "tank/pg")
    service = _service(tmp_path, settings, CommandResult(argv, 0, "8192\n", ""))
    plan = service.plan("tank", "postgres", Budget(seconds=3600))
    probe = next(c for c in await model_chooser(service, Settings(profiler=settings))(plan, []) if c.baseline)
    assert probe.value == "128K"
    from advisor.probe.description import ProbeDescription
    from advisor.probe.pooldesc import read_pool_descriptor

    _, descriptor = await read_pool_descriptor("tank", service.runner, service.files)
    job = ProbeDescription().job(service.rulebook.workloads["postgres"], {})
    run = service.store.start_run("tank", "postgres", None, {}, [], descriptor)
    for value, iops, baseline in (("128K", 400.0, True), ("8K", 900.0, False)):
        for repeat in (1, 2):
            service.store.add_result(_result(run, value, iops + repeat, baseline).model_copy(
                update={"repeat": repeat, "pool": descriptor, "job": job.text,
                        "working_set_bytes": job.working_set_bytes, "arc_max_bytes": job.arc_max_bytes}))
    service.store.end_run(run, "completed")
    history = [summarize("recordsize", [_result(run, "128K", 401, True), _result(run, "8K", 901, False)])]
    chosen = await model_chooser(service, Settings(profiler=settings, workloads={"tank/pg": "postgres"}))(plan, history)
    # the run's effects are ratios to its baseline: the default, which the model reads
    assert [c.value for c in chosen if c.baseline] == ["128K"] and len(chosen) == 2, chosen
    assert "8K" not in [c.value for c in chosen], chosen
