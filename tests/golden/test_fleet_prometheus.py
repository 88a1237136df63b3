"""The fleet through a real Prometheus (Debian's `prometheus`): two sibling daemons' /metrics (the
real app over probe stores of the lab's measurements, tests/support/fleet.py) scraped, and a third
daemon on the same layout that has probed nothing reads them back and cites them in its answer."""
from __future__ import annotations

import asyncio
import shutil

import pytest
from aiohttp.test_utils import TestServer

from advisor.api.appkeys import FLEET
from advisor.config.settings import Settings
from advisor.service.app import create_app
from support import RECORDING
from support.fleet import exposition, serving, store_sibling_probes

from .promserver import PrometheusServer

pytestmark = pytest.mark.skipif(shutil.which("prometheus") is None, reason="Debian's prometheus is not installed")


async def _view(app, timeout: float = 60.0):
    """Waits for the reader's first good view (it reads at start-up)."""
    for _ in range(int(timeout * 10)):
        if app[FLEET].view is not None:
            return app[FLEET].view
        await asyncio.sleep(0.1)
    raise TimeoutError(f"no fleet view: {app[FLEET].last_error}")


async def test_a_pool_that_probed_nothing_reads_its_siblings_through_prometheus(http_client, tmp_path):
    servers = []
    for repeat in (1, 2):
        state = tmp_path / f"sibling-{repeat}"
        await asyncio.to_thread(store_sibling_probes, state, repeat, ("128K", "8K", "16K"))
        server = TestServer(serving(await exposition(http_client, state)), host="127.0.0.1")
        await server.start_server()
        servers.append(server)
    targets = [f"127.0.0.1:{s.port}" for s in servers]
    try:
        with PrometheusServer(tmp_path, targets=targets, scrape_interval="1s") as prom:
            await asyncio.to_thread(prom.wait_for, "count(zfs_advisor_probe_pool_info) == 2")
            await asyncio.to_thread(prom.wait_for, "count(zfs_advisor_probe_repeat_iops) == 6")
            fleet = {"prometheus_url": prom.url, "instance": "this-host:21134", "timeout_seconds": 10}
            app = create_app(Settings(root=str(RECORDING), state_dir=str(tmp_path / "own"), fleet=fleet))
            client = await http_client(app)
            view = await _view(app)
            assert {r.instance for r in view.runs} == set(targets)
            alone = await http_client(create_app(Settings(root=str(RECORDING), state_dir=str(tmp_path / "own"))))
            with_fleet = await (await client.get("/recommend", params={"workload": "postgres", "pool": "tank"})).json()
            without = await (await alone.get("/recommend", params={"workload": "postgres", "pool": "tank"})).json()
            metrics = await (await client.get("/metrics")).text()
    finally:
        for server in servers:
            await server.close()
    cited = [e["description"] for r in with_fleet["recommendations"] if r["parameter"] == "recordsize"
             for e in r["evidence"] if "sibling pools" in e["description"]]
    assert cited and "from 0 probes on this pool, 6 on 2 sibling pools (instances " in cited[0]
    assert all(t in cited[0] for t in targets)
    assert not any("sibling" in e["description"] for r in without["recommendations"] for e in r["evidence"])
    # the lab measured 8K best on this layout for PostgreSQL (docs/prior.md) and the fleet's prediction
    # says so too, but on an SSD pool the application lab holds that change until this pool's own probe
    # measures it beyond its noise (advisor/model/data/app-findings.json): the siblings narrow the
    # prediction, they do not lift the hold
    [recordsize] = [r for r in with_fleet["recommendations"] if r["parameter"] == "recordsize"]
    assert (recordsize["status"], recordsize["recommended"]) == ("undecided", "128K")
    assert "model.recordsize.8K.ratio" in {e["fact"] for e in recordsize["evidence"]}
    assert "zfs_advisor_fleet_view_age_seconds " in metrics and "zfs_advisor_fleet_query_failures_total 0.0" in metrics
