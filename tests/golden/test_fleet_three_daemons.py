"""Three daemons as processes (`python -m advisor serve`, each with its own config file and state
directory) over the lab's recording of one layout (support.RECORDING, ssd-mirror2x2 on OpenZFS
2.3.2), scraped by a real Prometheus (Debian's).  Two have probed: their stores hold the lab's
measurements of that layout for PostgreSQL (tests/support/fleet.py: the prior's run, one repeat
each), the two candidates the profiler probes first there (the default, then 8K: `zfs-advisor
evaluate --fleet` lists what each sibling probed).  The third has probed nothing and has [fleet]
set: its answer cites both siblings by instance and recommends what its own answer would with
one sibling's two probes in its own store.  Not lab VMs: recorded host facts, lab-measured probes."""
from __future__ import annotations

import asyncio
import json
import re
import shutil
import urllib.request

import pytest

from advisor.config.settings import Settings
from advisor.service.app import create_app
from support import RECORDING
from support.fleet import store_sibling_probes
from support.service import Service

from .promserver import PrometheusServer

pytestmark = pytest.mark.skipif(shutil.which("prometheus") is None, reason="Debian's prometheus is not installed")

PROBED = ("128K", "8K")
QUERY = "/recommend?workload=postgres&pool=tank"


def _daemon(tmp_path, name: str, fleet: str = "") -> Service:
    state = tmp_path / name
    state.mkdir(exist_ok=True)
    config = tmp_path / f"{name}.toml"
    service = Service(RECORDING, tmp_path, "--config", str(config))
    config.write_text(f"state_dir = {json.dumps(str(state))}\n"
                      + fleet.replace("{instance}", f"127.0.0.1:{service.port}"))
    return service


def _get(service: Service, path: str) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{service.port}{path}", timeout=30) as resp:
        return json.load(resp)


def _recordsize(answer: dict) -> dict:
    [found] = [r for r in answer["recommendations"] if r["parameter"] == "recordsize"]
    return found


def _cited(answer: dict) -> list[str]:
    return [e["description"] for e in _recordsize(answer)["evidence"] if "sibling pools" in e["description"]]


def _interval(rec: dict) -> tuple[float, float]:
    """The 90 % interval of 8K's effect: the expected effect's, or for a held answer, which promises
    none, the model's prediction it shows as evidence ("+141% IOPS (+58%..+268%)")."""
    if rec["expected_effect"] is not None:
        return tuple(rec["expected_effect"]["interval"])
    [shown] = [e["display"] for e in rec["evidence"] if e["fact"] == "model.recordsize.8K.ratio"]
    low, high = re.search(r"\(([-+]\d+)%\.\.([-+]\d+)%\)", shown).groups()
    return 1 + int(low) / 100, 1 + int(high) / 100


async def _local_answer(http_client, state) -> dict:
    """This host's answer over `state`'s probe store, in this process."""
    client = await http_client(create_app(Settings(root=str(RECORDING), state_dir=str(state))))
    return await (await client.get(QUERY)).json()


async def test_the_third_daemon_answers_from_its_two_probed_siblings_as_from_its_own_two_probes(http_client, tmp_path):
    for repeat in (1, 2):
        await asyncio.to_thread(store_sibling_probes, tmp_path / f"sibling-{repeat}", repeat, PROBED)
    siblings = [_daemon(tmp_path, f"sibling-{repeat}") for repeat in (1, 2)]
    third = _daemon(tmp_path, "third", '[fleet]\nprometheus_url = "{url}"\ninstance = "{instance}"\n'
                                       "timeout_seconds = 10\ninterval_seconds = 30\n")
    targets = [f"127.0.0.1:{s.port}" for s in (*siblings, third)]
    with siblings[0], siblings[1], PrometheusServer(tmp_path, targets=targets, scrape_interval="1s") as prom:
        await asyncio.to_thread(prom.wait_for, "count(zfs_advisor_probe_repeat_iops) == 4")
        (tmp_path / "third.toml").write_text((tmp_path / "third.toml").read_text().replace("{url}", prom.url))
        with third:
            for _ in range(300):  # the reader reads at start-up, in the background
                with_fleet = await asyncio.to_thread(_get, third, QUERY)
                if _cited(with_fleet):
                    break
                await asyncio.sleep(0.1)
            metrics = await asyncio.to_thread(
                lambda: urllib.request.urlopen(f"http://127.0.0.1:{third.port}/metrics", timeout=30).read().decode())
    cited = _cited(with_fleet)
    assert cited and "from 0 probes on this pool, 4 on 2 sibling pools (instances " in cited[0], cited
    assert targets[0] in cited[0] and targets[1] in cited[0] and targets[2] not in cited[0]
    assert "zfs_advisor_fleet_query_failures_total 0.0" in metrics
    own = _recordsize(await _local_answer(http_client, tmp_path / "sibling-1"))
    alone = _recordsize(await _local_answer(http_client, tmp_path / "nothing-probed"))
    fleet = _recordsize(with_fleet)
    # all three predict 8K; on this SSD pool the application lab holds that change until this pool's
    # own probe measures it beyond its noise (advisor/model/data/app-findings.json: one repeat of each
    # value does not), so each keeps 128K: the siblings' probes narrow the interval of the effect
    # toward the one of the pool's own two probes (docs/fleet.md has the numbers)
    assert {(r["status"], r["recommended"]) for r in (fleet, own, alone)} == {("undecided", "128K")}
    assert {r["measure_argv"][-1].split("=")[1].split(",")[0] for r in (fleet, own, alone)} == {"128K"}
    width = {name: _interval(r)[1] / _interval(r)[0] for name, r in (("fleet", fleet), ("own", own), ("alone", alone))}
    assert width["own"] < width["fleet"] < width["alone"]
    low, high = _interval(own)
    [fleet_ratio] = [e["value"] for e in fleet["evidence"] if e["fact"] == "model.recordsize.8K.ratio"]
    assert low < fleet_ratio < high
