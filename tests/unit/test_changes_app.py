"""Change verification through the real app (advisor/changes/, GET /v1/changes, /metrics) on the lab
recording of OpenZFS 2.3.2 on ssd-mirror2x2 under load.

DERIVED, NOT RECORDED: the lab recorded no host before and after a `zfs set`. The "after" snapshot
here is a copy of the recording (in the test's tmp dir) whose recorded `zfs get` output is edited:
tank/pg's recordsize 8192 -> 16384 and primarycache metadata -> all, as `zfs set` would show them;
for a module parameter, a copy whose recorded zfs_dirty_data_max file holds twice its value.
The I/O is synthetic too: counters that start at the recording's own objset and latency-histogram
values and grow per 15 s collection at a rate near the recording's, with a few per cent of
variation, faster after the change. What is real: the recorded facts, the engine's advice on them,
the app, its store and its HTTP answers.
"""
from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import time

import pytest

from advisor.api.appkeys import CHANGES, FACTS, RUNTIME
from advisor.config.settings import Settings
from advisor.host.snapshot import collect_from_root
from advisor.hostmodel.facts import Host
from advisor.service.app import create_app
from advisor.store.db import DB_FILE, connect
from advisor.store.probes import ProbeStore
from support import HOSTS
from support.changes import STEP, Progression
from support.remote import seen_from_remote
from support.waiting import await_until

LOAD = HOSTS / "2.3.2" / "ssd-mirror2x2" / "load"
WINDOW = 120


def derived_root(tmp_path):
    """A copy of the recording with tank/pg's recordsize and primarycache changed in its zfs get output."""
    root = tmp_path / "after-zfs-set"
    shutil.copytree(LOAD, root)
    zfs_get = root / "commands" / "005.out"
    text = zfs_get.read_text()
    edited = text.replace("tank/pg\trecordsize\t8192\tlocal", "tank/pg\trecordsize\t16384\tlocal")
    edited = edited.replace("tank/pg\tprimarycache\tmetadata\tlocal", "tank/pg\tprimarycache\tall\tlocal")
    assert edited.count("16384\tlocal") == text.count("16384\tlocal") + 1 and "primarycache\tall\tlocal" in edited
    zfs_get.write_text(edited)
    return root


def app_for(state_dir, **settings):
    given = {"root": str(LOAD), "state_dir": str(state_dir), "changes_window_seconds": WINDOW,
             "commands_interval_seconds": 3600, "workloads": {"tank/pg": "postgres"}, **settings}
    return create_app(Settings(**given))


async def hosts(tmp_path) -> tuple[Host, Host]:
    before = (await collect_from_root(LOAD)).host
    after = (await collect_from_root(derived_root(tmp_path))).host
    return before, after


async def observe_change(app, before: Host, after: Host, rate_after: float = 200.0, faster: bool = True) -> None:
    """9 collections before the change (8 intervals = WINDOW), then 9 after it at `rate_after`."""
    tracker, advice = app[CHANGES], app[RUNTIME].advice
    run = Progression(time.time() + 3600)  # after anything the app's own refresh collects
    for _ in range(WINDOW // STEP + 1):
        await asyncio.to_thread(tracker.observe, run.next(before, 100.0), advice)
    for _ in range(WINDOW // STEP + 1):
        await asyncio.to_thread(tracker.observe, run.next(after, rate_after, faster), advice)


async def test_a_change_is_recorded_compared_and_served(http_client, tmp_path):
    before, after = await hosts(tmp_path)
    app = app_for(tmp_path / "state")
    client = await http_client(app)
    await observe_change(app, before, after)
    body = await (await client.get("/v1/changes")).json()
    assert body["window_seconds"] == WINDOW
    by_param = {c["parameter"]: c for c in body["changes"]}
    assert set(by_param) == {"recordsize", "primarycache"}
    rs = by_param["recordsize"]
    assert (rs["scope"], rs["pool"], rs["dataset"], rs["old"], rs["new"], rs["source"]) == \
        ("dataset", "tank", "tank/pg", "8192", "16384", "local")
    # the engine's answer for tank/pg (postgres) had recordsize undecided, primarycache a change to "all"
    assert rs["followed_recommendation"] is None
    # the workloads setting names tank/pg postgres: the record says so (the model learns from it)
    assert rs["workload"] == "postgres"
    followed = by_param["primarycache"]["followed_recommendation"]
    assert followed["workload"] == "postgres" and followed["recommended"] == "all"
    assert rs["status"] == "done" and rs["verdict"] == "better", rs
    effects = {e["metric"]: e for e in rs["effects"]}
    iops = effects["iops"]
    assert iops["of"] == "dataset" and iops["ratio"] == pytest.approx(2.0, rel=0.05)
    assert 1 < iops["interval"][0] < 2 < iops["interval"][1] and iops["before"]["intervals"] == WINDOW // STEP
    assert effects["bandwidth"]["verdict"] == "better"
    p99 = effects["write_latency_p99"]
    assert p99["of"] == "pool" and p99["ratio"] < 1 and p99["better_when"] == "lower"
    assert rs["before_window"] and rs["after_window"] and not any(k.startswith("_") for k in rs)
    assert rs["notes"] == ["changed within the same collection interval as primarycache: the effect measured is "
                           "theirs together"]

    metrics = await (await client.get("/metrics")).text()
    assert 'zfs_advisor_change_effect_ratio{dataset="tank/pg",metric="iops",parameter="recordsize",pool="tank"} 2.0' \
        in metrics.splitlines()
    assert re.search(r'^zfs_advisor_change_timestamp_seconds\{dataset="tank/pg",new="16384",old="8192",'
                     r'parameter="recordsize",pool="tank",verdict="better"\} 1\.\d+e\+09$', metrics, re.MULTILINE)

    promtool = shutil.which("promtool")
    assert promtool, "promtool not found: install Debian's `prometheus` package (tests/run does)"
    checked = subprocess.run([promtool, "check", "metrics"], input=metrics.encode(), capture_output=True, timeout=60)
    assert checked.returncode == 0, (checked.stdout + checked.stderr).decode()

    # filters: a dataset without changes has none; a pool with them has them
    assert (await (await client.get("/v1/changes?dataset=tank/home")).json())["changes"] == []
    assert len((await (await client.get("/v1/changes?pool=tank&limit=1")).json())["changes"]) == 1


async def test_the_pages_show_the_changes_and_their_verdicts(http_client, tmp_path):
    """The overview and the pool's page list each change with its old and new value as a person reads
    them, the advice it followed, the verdict and the headline ratios; their links resolve."""
    before, after = await hosts(tmp_path)
    app = app_for(tmp_path / "state")
    client = await http_client(app)
    empty = await (await client.get("/")).text()
    assert "No change of a tracked setting was seen since the records began" in empty
    await observe_change(app, before, after)
    for path in ("/", "/pool/tank"):
        resp = await client.get(path)
        text = await resp.text()
        assert resp.status == 200 and "<h2>Setting changes and their effect</h2>" in text
        row = re.search(r"<tr><td>[^<]*</td><td><a href=\"/pool/tank#dataset-tank%2Fpg\">tank/pg</a></td>"
                        r"<td>recordsize</td>.*?</tr>", text).group(0)
        assert "8K -&gt; 16K" in row and "<td>better</td>" in row and "×2.00 (1.91 to 2.10), better" in row, row
        assert "yes: postgres, rule" in text  # the primarycache change followed the postgres advice
        for href in re.findall(r'href="(/v1/changes[^"]*)"', text):
            assert (await client.get(href.replace("&amp;", "&"))).status == 200


async def test_changes_are_durable_across_a_restart(http_client, tmp_path):
    """The records are in the database: a new app on the same state directory serves them; one still
    measuring when the service stopped measures its after window again from the restart on."""
    before, after = await hosts(tmp_path)
    app = app_for(tmp_path / "state")
    await http_client(app)
    tracker, advice = app[CHANGES], app[RUNTIME].advice
    run = Progression(time.time() + 3600)
    for _ in range(3):
        await asyncio.to_thread(tracker.observe, run.next(before, 100.0), advice)
    await asyncio.to_thread(tracker.observe, run.next(after, 100.0), advice)  # changed, then stopped
    assert (tmp_path / "state" / DB_FILE).exists()

    again = app_for(tmp_path / "state")
    client = await http_client(again)
    [measuring, _] = (await (await client.get("/v1/changes")).json())["changes"]
    assert measuring["status"] == "measuring" and "the before window is" in measuring["notes"][0]
    for _ in range(WINDOW // STEP + 2):
        await asyncio.to_thread(again[CHANGES].observe, run.next(after, 100.0), again[RUNTIME].advice)
    [done, _] = (await (await client.get("/v1/changes")).json())["changes"]
    assert done["status"] == "done" and any("restarted while measuring" in n for n in done["notes"])
    # three collections before the change: too short a before window for a verdict
    assert done["verdict"] == "not enough load"


async def test_no_change_no_record_and_no_database(http_client, tmp_path):
    """The app's own refresh feeds the tracker (a replayed recording is one moment: one sample however
    often it refreshes); a host whose settings stay put records nothing and creates no database."""
    app = app_for(tmp_path / "state", commands_interval_seconds=0.05)
    client = await http_client(app)
    await await_until(lambda: app[CHANGES].samples.times, 10, "the first sample")
    runs = app[FACTS].command_runs
    await await_until(lambda: app[FACTS].command_runs >= runs + 3, 10, "three refreshes more")
    body = await (await client.get("/v1/changes")).json()
    assert body["samples"] == 1 and body["changes"] == []
    assert not (tmp_path / "state" / DB_FILE).exists()


@pytest.mark.parametrize(("query", "status", "says", "valid"), [
    ("pool=nope", 404, "no pool 'nope'", ["tank"]),
    ("pool=bad%3Bx", 400, "invalid pool name", None),
    ("dataset=tank/nope", 404, "no dataset 'tank/nope'", "tank/pg"),
    ("limit=0", 400, "limit must be", None),
    ("limit=x", 400, "limit must be", None),
    ("verdict=better", 400, "unknown parameter 'verdict'", ["pool", "dataset", "limit"]),
])
async def test_bad_input_is_a_json_4xx_naming_what_is_valid(http_client, tmp_path, query, status, says, valid):
    app = app_for(tmp_path / "state")
    client = await http_client(app)
    # the first collection names the host's pools and datasets
    await await_until(lambda: app[FACTS].last is not None, 10, "the first collection")
    resp = await client.get(f"/v1/changes?{query}")
    err = (await resp.json())["error"]
    assert resp.status == status and says in err["reason"], err
    if isinstance(valid, list):
        assert err["valid"] == valid
    elif valid:
        assert valid in err["valid"]


async def test_the_api_needs_the_same_auth_as_the_others(http_client, tmp_path):
    app = app_for(tmp_path / "state", listen_address="0.0.0.0", api_token="s3cret-token")
    client = await http_client(seen_from_remote(app))
    assert (await client.get("/v1/changes")).status == 401
    resp = await client.get("/v1/changes", headers={"Authorization": "Bearer s3cret-token"})
    assert resp.status == 200


async def test_a_state_directory_that_cannot_be_written_keeps_the_changes_in_memory(http_client, tmp_path, caplog):
    before, after = await hosts(tmp_path)
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    app = app_for(blocked)
    client = await http_client(app)
    await observe_change(app, before, after)
    found = (await (await client.get("/v1/changes")).json())["changes"]
    assert {c["parameter"]: c["verdict"] for c in found} == {"recordsize": "better", "primarycache": "better"}
    assert sorted(c["id"] for c in found) == [1, 2]
    warned = [r for r in caplog.records if "cannot be stored" in r.getMessage()]
    assert len(warned) == 1 and "kept in memory until a restart" in warned[0].getMessage()


def derived_module_root(tmp_path):
    """A copy of the recording with zfs_dirty_data_max doubled in its parameter file (derived)."""
    root = tmp_path / "after-dirty-data-max"
    shutil.copytree(LOAD, root)
    param = root / "sys" / "module" / "zfs" / "parameters" / "zfs_dirty_data_max"
    assert param.read_text().strip() == "410327859"
    param.write_text("820655718\n")
    return root


async def test_a_module_parameter_change_is_measured_per_pool_unless_a_probe_ran(http_client, tmp_path):
    """A module parameter belongs to the host: its effects are each pool's (the sum of its datasets'
    counters and its latencies). While a probe runs, the prober changes and restores module
    parameters itself: such a change is not the user's and is not recorded."""
    before = (await collect_from_root(LOAD)).host
    after = (await collect_from_root(derived_module_root(tmp_path))).host
    app = app_for(tmp_path / "state")
    client = await http_client(app)
    await observe_change(app, before, after, rate_after=50.0, faster=False)
    [change] = (await (await client.get("/v1/changes?pool=tank")).json())["changes"]
    assert (change["scope"], change["pool"], change["dataset"], change["old"], change["new"]) == \
        ("module", None, None, "410327859", "820655718")
    iops = next(e for e in change["effects"] if e["metric"] == "iops")
    assert (iops["pool"], iops["of"], iops["verdict"]) == ("tank", "pool", "worse")
    assert iops["ratio"] == pytest.approx(0.5, rel=0.05) and change["verdict"] == "worse"

    probing = tmp_path / "probing"
    conn = connect(probing)
    ProbeStore(conn).start_run("tank", "postgres", None, {}, [], None)
    conn.close()
    app = app_for(probing)
    client = await http_client(app)
    await observe_change(app, before, after)
    assert (await (await client.get("/v1/changes")).json())["changes"] == []
