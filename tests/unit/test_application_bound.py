"""The expected effect in the application's terms: the pool's disks' busy share over the daemon's
window bounds what a storage gain can do for the application (Amdahl, at the busy share's upper
end), through the real answer path.

The window is fed as the daemon feeds it (Recogniser.observe after each collection), with two real
recordings of the lab's ssd-mirror2x2 pool:

* the disks set the pace: tests/fixtures/apps/pgbench-tpcb-8K, a pgbench run whose disks completed
  their 30 IOPS throttle (34.8-36.3 operations a second) while io_ticks said the busiest, sda, was
  busy only 42 % of the 47 s between the two readings; its summed I/O time (field 11 of
  /proc/diskstats) was 48.0 s: the upper end is 1.  Its counters replace those of the lab's host
  snapshot (tests/fixtures/hosts/2.3.2/ssd-mirror2x2/idle, the same pool and disks);
* the disks had idle time by both measures: that host snapshot and the one taken under fio load
  after it (.../load, tests/fixtures/hosts/PROVENANCE.md), 216 s apart by the kstats' read times:
  io_ticks 15 % and summed I/O time 27 % for the busiest disk.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from advisor.answering.answerer import Answerer, Query
from advisor.answering.qualified_effects import application_bound
from advisor.api.appkeys import RECOGNISER
from advisor.config.settings import Settings
from advisor.engine.loader import load_rulebook
from advisor.engine.text import recommend_text
from advisor.evidence.application_bound import amdahl_bound, pool_busy
from advisor.host.snapshot import collect_from_root
from advisor.hostmodel.facts import DiskStats, Host
from advisor.recognise.signature import signatures
from advisor.recognise.window import Recogniser
from advisor.service.app import create_app
from support import FIXTURES, HOSTS, RECORDING
from support.contract import mismatches
from support.probes import seed_recordsize_probe

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab"))
from appevidence import Reading, parse_reading  # noqa: E402 - after the sys.path line above

PGBENCH = FIXTURES / "apps" / "pgbench-tpcb-8K"
UNDER_LOAD = HOSTS / "2.3.2" / "ssd-mirror2x2" / "load"  # RECORDING is the same pool idle, before it
POOL_DISKS = ("sda", "sdb", "sdc", "sdd")  # tank's on the lab's ssd-mirror2x2, in the snapshot and the recording


def reading(name: str) -> Reading:
    return parse_reading((PGBENCH / name).read_text())


def kstat_clock(snapshot: Path) -> float:
    """When a host snapshot read its counters: arcstats' snaptime (the header's last field, ns since
    boot), read right after /proc/diskstats (advisor/host/collect.py reads them in that order)."""
    return int((snapshot / "proc/spl/kstat/zfs/arcstats").read_text().split("\n", 1)[0].split()[-1]) / 1e9


def with_counters(host: Host, disks: dict[str, DiskStats]) -> Host:
    return host.model_copy(update={"disks": [d.model_copy(update={"stats": disks.get(d.name)}) for d in host.disks]})


@pytest.fixture(scope="module")
def book():
    return load_rulebook()


@pytest.fixture
async def host():
    return (await collect_from_root(RECORDING)).host


def window(host: Host, before: Reading, after: Reading) -> Recogniser:
    """The daemon's window over the two readings, as two collections at the readings' clocks."""
    recogniser = Recogniser(signatures(load_rulebook().workloads))
    for r in (before, after):
        recogniser.observe(with_counters(host, r.disks), r.clock)
    return recogniser


def recordsize(answerer: Answerer, host: Host):
    answer = answerer.answer(host, Query("postgres", pool="tank"))
    return answer, next(r for r in answer.recommendations if r.parameter == "recordsize")


async def test_the_same_change_states_a_different_effect_where_the_disks_set_the_pace_and_where_they_idled(
        book, host, tmp_path):
    seed_recordsize_probe(tmp_path)
    before, after = reading("before.txt"), reading("after.txt")
    paced = window(host, before, after)
    idled = Recogniser(signatures(book.workloads))
    for snapshot in (RECORDING, UNDER_LOAD):
        idled.observe((await collect_from_root(snapshot)).host, kstat_clock(snapshot))
    answers = [recordsize(Answerer(book, tmp_path, pools_busy=w.pools_busy), host) for w in (paced, idled)]
    (paced_answer, at_pace), (idled_answer, idle) = answers

    # the storage evidence decides the change, the same on both: only the stated effect differs
    assert (at_pace.status, at_pace.recommended) == (idle.status, idle.recommended) == ("change", "8K")
    assert at_pace.expected_effect.change_ratio == idle.expected_effect.change_ratio
    gain = at_pace.expected_effect.change_ratio
    assert gain > 1.5

    full, low = at_pace.expected_effect.application_bound, idle.expected_effect.application_bound
    # pgbench at its disks' throttle: io_ticks 42 % (sda: 19.42 s in 46.56 s), the summed I/O time
    # over the window (48.0 s): io_ticks cannot tell, and the bound is the whole gain
    assert (full.verdict, full.disks_busy, full.disks_busy_upper) == ("undetermined", 0.42, 1.0)
    assert full.window_seconds == round(after.clock - before.clock) == 47
    assert full.bound_ratio == pytest.approx(gain, abs=0.001)
    assert full.text.startswith(
        "the pool's disks were busy 42-100% of the last 47 s (undetermined: the disks may have set its pace, "
        f"and the full gain may reach it): a storage change moves this workload by at most x{gain:.2f}")
    # idle by both measures: sda's io_ticks 31.4 s and sdc's summed I/O time 58.3 s in 216 s
    assert (low.verdict, low.disks_busy, low.disks_busy_upper) == ("not storage-bound", 0.15, 0.27)
    assert low.window_seconds == 216
    assert low.bound_ratio == pytest.approx(amdahl_bound(gain, 0.27), rel=0.001)
    assert low.bound_ratio < 1.2 < 0.75 * gain
    assert low.text.startswith("the pool's disks were busy 15-27% of the last 216 s (not storage-bound): "
                               f"a storage change moves this workload by at most x{low.bound_ratio:.2f}")

    # and so in the text answer, beside the effect in fio's units
    assert f"on the application: {full.text}" in " ".join(recommend_text(paced_answer).split())
    assert f"on the application: {low.text}" in " ".join(recommend_text(idled_answer).split())


async def test_without_a_window_the_answer_says_nothing_new(book, host, tmp_path):
    seed_recordsize_probe(tmp_path)
    before = reading("before.txt")
    one_collection = Recogniser(signatures(book.workloads))
    one_collection.observe(with_counters(host, before.disks), before.clock)
    assert one_collection.pools_busy() == {}
    plain = Answerer(book, tmp_path).answer(host, Query("postgres", pool="tank"))
    windowless = Answerer(book, tmp_path, pools_busy=one_collection.pools_busy).answer(
        host, Query("postgres", pool="tank"))
    assert windowless.model_dump(exclude={"generated_at"}) == plain.model_dump(exclude={"generated_at"})
    assert all("application_bound" not in (r.get("expected_effect") or {})
               for r in plain.model_dump(mode="json")["recommendations"])


async def test_the_window_is_the_recognitions_and_rolls_with_it(book, host):
    """Busy share over the recognition's window: a reading older than the window no longer counts."""
    before = reading("before.txt")
    recogniser = Recogniser(signatures(book.workloads), window_seconds=60)
    counters = dict(before.disks)
    t0 = before.clock
    recogniser.observe(with_counters(host, counters), t0)
    generation = recogniser.pools_generation
    # counters advanced by hand (only the window's arithmetic is under test): busy all 30 s, with
    # 1.5 I/Os in flight on average
    busy = {n: counters[n].model_copy(update={"io_seconds": counters[n].io_seconds + 30,
                                              "weighted_io_seconds": counters[n].weighted_io_seconds + 45})
            for n in POOL_DISKS}
    recogniser.observe(with_counters(host, {**counters, **busy}), t0 + 30)
    assert recogniser.pools_busy()["tank"].verdict == "storage-bound"
    assert recogniser.pools_busy()["tank"].busiest_upper[1] == 1.0  # 45 s in flight in 30 s: capped
    assert recogniser.pools_generation == generation + 1
    recogniser.observe(with_counters(host, {**counters, **busy}), t0 + 80)  # then idle 50 s
    tank = recogniser.pools_busy()["tank"]
    assert tank.window_seconds == 50 and tank.busiest[1] == 0.0  # the window starts at t0+30 now
    assert tank.text == "not storage-bound (disks busy 0%)"


async def test_the_daemons_answer_carries_the_bound_as_its_contract_says(http_client, host, tmp_path):
    """The service's own window (the app's recogniser, fed as after each collection) reaches
    /recommend, its JSON matches /openapi.json, and a new window is a new answer, not a kept one."""
    seed_recordsize_probe(tmp_path)
    app = create_app(Settings(root=str(RECORDING), state_dir=str(tmp_path), model=False,
                              workloads={"tank/home": "postgres"}))
    client = await http_client(app)
    params = {"workload": "postgres", "pool": "tank"}

    def effect(body: dict) -> dict:
        return next(r for r in body["recommendations"] if r["parameter"] == "recordsize")["expected_effect"]

    assert "application_bound" not in effect(await (await client.get("/recommend", params=params)).json())
    before, after = reading("before.txt"), reading("after.txt")
    for r in (before, after):
        app[RECOGNISER].observe(with_counters(host, r.disks), r.clock)
    resp = await client.get("/recommend", params=params)
    body = await resp.read()
    bound = effect(json.loads(body))["application_bound"]
    assert (bound["verdict"], bound["disks_busy"], bound["disks_busy_upper"], bound["window_seconds"]) == (
        "undetermined", 0.42, 1.0, 47)
    doc = await (await client.get("/openapi.json")).json()
    assert mismatches(doc, "GET", "/recommend", resp.status, resp.headers["Content-Type"], body) == []
    text = await (await client.get("/recommend", params={**params, "format": "text"})).text()
    assert "on the application: the pool's disks were busy 42-100%" in " ".join(text.split())
    # the page says it beside tank/home's recordsize change, from the same window
    page = await (await client.get("/pool/tank")).text()
    assert "<p>On the application: the pool&#x27;s disks were busy 42-100% of the last 47 s" in page


def test_amdahls_bound_runs_from_no_gain_at_idle_disks_to_the_whole_gain_at_busy_ones():
    assert amdahl_bound(2.0, 0.0) == 1.0 and amdahl_bound(2.0, 1.0) == 2.0
    assert amdahl_bound(2.0, 0.5) == pytest.approx(4 / 3)  # half the time halved: 1 / 0.75
    shares = [amdahl_bound(1.9, b / 10) for b in range(11)]
    assert shares == sorted(shares)
    # a ratio that is no gain carries no "at most": nothing is said
    assert application_bound(0.9, pool_busy("tank", {"sda": 0.5}, {"sda": 0.5}, 300)) is None
    assert application_bound(1.9, pool_busy("tank", {}, {}, 300)) is None


@pytest.mark.parametrize(("lower", "upper", "verdict"), [
    (0.85, 1.0, "storage-bound"),  # io_ticks alone reaches the threshold
    (0.42, 1.0, "undetermined"),  # pgbench at its throttle: the ends straddle it
    (0.42, 0.80, "undetermined"),
    (0.15, 0.27, "not storage-bound"),  # idle by both measures
])
def test_the_verdict_takes_each_end_where_it_is_sure_and_the_bound_the_upper_one(lower, upper, verdict):
    busy = pool_busy("tank", {"sda": lower, "sdb": lower / 2}, {"sda": upper, "sdb": upper / 2}, 300)
    assert busy.verdict == verdict
    bound = application_bound(2.0, busy)
    assert bound.verdict == verdict and bound.bound_ratio == pytest.approx(amdahl_bound(2.0, upper), abs=0.001)


def test_the_upper_end_is_never_below_the_lower_one():
    """Read a moment apart and rounded, the summed time can come out under io_ticks: the upper end
    is then the lower one; a disk without a summed time is taken as busy throughout."""
    busy = pool_busy("tank", {"sda": 0.5, "sdb": 0.3}, {"sda": 0.49}, 60)
    assert busy.disks_in_flight == {"sda": 0.5, "sdb": 1.0}
