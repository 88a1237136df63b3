"""The expected effect in the application's terms: the pool's disks' busy share over the daemon's
window bounds what a storage gain can do for the application (Amdahl), through the real answer path.

The window is fed as the daemon feeds it (Recogniser.observe after each collection) with the lab's
ssd-mirror2x2 host snapshot, its disks' counters replaced by a recording's /proc/diskstats:

* not storage-bound: tests/fixtures/apps/pgbench-tpcb-8K, a real pgbench run in the lab whose
  busiest disk, sda, was busy 42 % of the 47 s between its two readings (PROVENANCE.md there);
* storage-bound: a STAND-IN.  No recording of a storage-bound load with both /proc/diskstats
  readings exists in the repository yet (the host snapshots read them once; the lab's storage-bound
  pgbench cells are being recorded), and the lab cannot run in unit tests: the same pgbench
  readings, with each pool disk's io_ticks advanced by 95 % of the run instead of what they were.
  Replace it with a storage-bound cell's before.txt/after.txt when one is committed.
"""
from __future__ import annotations

import json
import sys
from dataclasses import replace
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
from support import FIXTURES, RECORDING
from support.contract import mismatches
from support.probes import seed_recordsize_probe

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab"))
from appevidence import Reading, parse_reading  # noqa: E402 - after the sys.path line above

PGBENCH = FIXTURES / "apps" / "pgbench-tpcb-8K"
POOL_DISKS = ("sda", "sdb", "sdc", "sdd")  # tank's on the lab's ssd-mirror2x2, in the snapshot and the recording


def reading(name: str) -> Reading:
    return parse_reading((PGBENCH / name).read_text())


def saturated(before: Reading, after: Reading, busy: float) -> Reading:
    """The stand-in above: `after` with the pool's disks busy `busy` of the time since `before`."""
    seconds = after.clock - before.clock
    disks = dict(after.disks)
    for name in POOL_DISKS:
        disks[name] = after.disks[name].model_copy(
            update={"io_seconds": before.disks[name].io_seconds + busy * seconds})
    return replace(after, disks=disks)


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


async def test_the_same_change_states_a_different_effect_on_a_storage_bound_and_a_cpu_bound_load(book, host, tmp_path):
    seed_recordsize_probe(tmp_path)
    before, after = reading("before.txt"), reading("after.txt")
    loads = {"pgbench (disks 42 % busy)": window(host, before, after),
             "storage-bound stand-in": window(host, before, saturated(before, after, 0.95))}
    answers = {name: recordsize(Answerer(book, tmp_path, pools_busy=w.pools_busy), host) for name, w in loads.items()}
    (cpu_answer, cpu), (storage_answer, storage) = answers.values()

    # the storage evidence decides the change, the same on both: only the stated effect differs
    assert (cpu.status, cpu.recommended) == (storage.status, storage.recommended) == ("change", "8K")
    assert cpu.expected_effect.change_ratio == storage.expected_effect.change_ratio
    gain = storage.expected_effect.change_ratio
    assert gain > 1.5

    idle, busy = cpu.expected_effect.application_bound, storage.expected_effect.application_bound
    assert idle.verdict == "not storage-bound" and busy.verdict == "storage-bound"
    assert idle.disks_busy == pytest.approx(0.42, abs=0.005)  # sda: 19.42 s of io_ticks in 46.56 s
    assert busy.disks_busy == pytest.approx(0.95, abs=0.01)
    assert idle.window_seconds == busy.window_seconds == round(after.clock - before.clock)
    # storage-bound: the bound close to the storage gain; the other well below it
    assert busy.bound_ratio == pytest.approx(amdahl_bound(gain, 0.95), rel=0.01)
    assert busy.bound_ratio > 0.85 * gain
    assert idle.bound_ratio == pytest.approx(amdahl_bound(gain, idle.disks_busy), rel=0.01)
    assert idle.bound_ratio < 0.75 * gain and idle.bound_ratio < 1.3
    assert idle.text.startswith("the pool's disks were busy 42% of the last 47 s (not storage-bound): a storage "
                                f"change moves this workload by at most x{idle.bound_ratio:.2f} (Amdahl's bound")
    assert "busy 95% of the last 47 s (storage-bound)" in busy.text

    # and so in the text answer, beside the effect in fio's units
    assert f"on the application: {idle.text}" in " ".join(recommend_text(cpu_answer).split())
    assert f"on the application: {busy.text}" in " ".join(recommend_text(storage_answer).split())


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
    busy = {n: counters[n].model_copy(update={"io_seconds": counters[n].io_seconds + 30}) for n in POOL_DISKS}
    recogniser.observe(with_counters(host, {**counters, **busy}), t0 + 30)  # busy all 30 s
    assert recogniser.pools_busy()["tank"].verdict == "storage-bound"
    assert recogniser.pools_generation == generation + 1
    recogniser.observe(with_counters(host, {**counters, **busy}), t0 + 80)  # then idle 50 s
    tank = recogniser.pools_busy()["tank"]
    assert tank.window_seconds == 50 and tank.busiest[1] == 0.0  # the window starts at t0+30 now
    assert tank.text == "not storage-bound (disks idle 100%)"


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
    assert (bound["verdict"], bound["disks_busy"], bound["window_seconds"]) == ("not storage-bound", 0.42, 47)
    doc = await (await client.get("/openapi.json")).json()
    assert mismatches(doc, "GET", "/recommend", resp.status, resp.headers["Content-Type"], body) == []
    text = await (await client.get("/recommend", params={**params, "format": "text"})).text()
    assert "on the application: the pool's disks were busy 42%" in " ".join(text.split())
    # the page says it beside tank/home's recordsize change, from the same window
    page = await (await client.get("/pool/tank")).text()
    assert "<p>On the application: the pool&#x27;s disks were busy 42% of the last 47 s" in page


def test_amdahls_bound_runs_from_no_gain_at_idle_disks_to_the_whole_gain_at_busy_ones():
    assert amdahl_bound(2.0, 0.0) == 1.0 and amdahl_bound(2.0, 1.0) == 2.0
    assert amdahl_bound(2.0, 0.5) == pytest.approx(4 / 3)  # half the time halved: 1 / 0.75
    shares = [amdahl_bound(1.9, b / 10) for b in range(11)]
    assert shares == sorted(shares)
    # a ratio that is no gain carries no "at most": nothing is said
    assert application_bound(0.9, pool_busy("tank", {"sda": 0.5}, 300)) is None
    assert application_bound(1.9, pool_busy("tank", {}, 300)) is None
