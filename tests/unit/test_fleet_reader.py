"""The fleet's Prometheus down, slow past the timeout, or serving junk: /recommend answers as it
does without a fleet, the reader keeps its last good view and counts what failed and what it
refused (advisor/fleet/).  Real HTTP servers on loopback stand in for Prometheus; what they serve
is written here (a fake: no Prometheus can be made to serve NaN or wrong labels on purpose)."""
from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from advisor.api.appkeys import FLEET
from advisor.config.settings import FleetSettings, Settings
from advisor.fleet.reader import FleetReader
from advisor.fleet.series import FAMILIES, POOL_INFO
from advisor.service.app import create_app
from support import RECORDING
from support.waiting import await_until

INFO = {"instance": "sib:21134", "pool": "tank", "media": "ssd", "vdev_type": "mirror", "top_vdevs": "2",
        "vdev_width": "2", "ashift": "12", "disks": "4", "disk_model": "QEMU HARDDISK", "openzfs": "2.3"}
RUN = {"instance": "sib:21134", "pool": "tank", "workload": "postgres", "parameter": "recordsize"}


def _vector(*samples: tuple[dict, str]) -> dict:
    return {"status": "success", "data": {"resultType": "vector",
                                          "result": [{"metric": m, "value": [0, v]} for m, v in samples]}}


def _repeat(value: str, repeat: str, number: str, **changed: str) -> tuple[dict, str]:
    return {**RUN, "value": value, "repeat": repeat, **changed}, number


# Per query: a good run of two candidates, and beside it NaN, +Inf, a huge and a negative value, a
# sample without its labels, a repeat out of range and a run of a pool with no info series.
ANSWERS = {
    POOL_INFO: _vector((INFO, "1")),
    FAMILIES["iops"][0]: _vector(_repeat("128K", "1", "450"), _repeat("8K", "1", "1160"), _repeat("16K", "1", "NaN"),
                                 _repeat("32K", "1", "+Inf"), _repeat("64K", "1", "1e30"), _repeat("4K", "1", "-5"),
                                 ({"instance": "sib:21134"}, "7"), _repeat("8K", "99", "1100"),
                                 _repeat("8K", "1", "1000", pool="stranger")),
    FAMILIES["bandwidth"][0]: _vector(),
    FAMILIES["write_p99"][0]: _vector(),
    FAMILIES["working_set"][0]: _vector((RUN, "536870912")),
    FAMILIES["arc_max"][0]: _vector((RUN, "67108864")),
}


def _prometheus(answers: dict | None = None, delay: float = 0.0, body: str | None = None,
                hang: asyncio.Event | None = None) -> web.Application:
    """`hang`: every query waits until it is set (a Prometheus that never answers)."""
    async def query(request: web.Request) -> web.Response:
        await asyncio.sleep(delay)
        if hang is not None:
            await hang.wait()
        if body is not None:
            return web.Response(text=body)
        return web.json_response(answers[request.query["query"]])

    app = web.Application()
    app.router.add_get("/api/v1/query", query)
    return app


async def _served(app: web.Application) -> TestServer:
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    return server


async def _refresh(reader: FleetReader) -> bool:
    async with aiohttp.ClientSession() as session:
        return await reader.refresh(session)


async def test_junk_is_refused_and_counted_and_the_good_series_kept():
    server = await _served(_prometheus(ANSWERS))
    try:
        reader = FleetReader(FleetSettings(prometheus_url=f"http://127.0.0.1:{server.port}", timeout_seconds=5))
        assert await _refresh(reader)
    finally:
        await server.close()
    [run] = reader.view.runs
    assert sorted((r.value, r.iops) for r in run.repeats) == [("128K", 450.0), ("8K", 1160.0)]
    assert (run.working_set_bytes, run.arc_max_bytes, run.labels["disk_model"]) == (536870912, 67108864, "QEMU HARDDISK")
    assert dict(reader.refused) == {"not_finite": 2, "out_of_range": 2, "labels": 3}
    status = reader.status()
    assert status.failures == 0 and status.sibling_runs == 1 and status.age_seconds is not None


async def test_down_slow_and_not_json_are_failures_and_the_last_good_view_stays():
    good = await _served(_prometheus(ANSWERS))
    url = f"http://127.0.0.1:{good.port}"
    reader = FleetReader(FleetSettings(prometheus_url=url, timeout_seconds=0.5))
    assert await _refresh(reader)
    await good.close()  # down: nothing listens on the port any more
    assert not await _refresh(reader) and reader.failures == 1
    view = reader.view
    slow = await _served(_prometheus(ANSWERS, delay=30))
    junk = await _served(_prometheus(body="<html>502 Bad Gateway</html>"))
    try:
        for server, said in ((slow, "no answer within 0.5 s"), (junk, "not JSON")):
            reader.settings = FleetSettings(prometheus_url=f"http://127.0.0.1:{server.port}", timeout_seconds=0.5)
            assert not await _refresh(reader)
            assert said in reader.last_error
    finally:
        await slow.close()
        await junk.close()
    assert reader.failures == 3 and reader.view is view and reader.current() is view


def _answer(body: dict) -> list:
    return [(r["parameter"], r["status"], r.get("recommended"), r.get("current")) for r in body["recommendations"]]


JUNK_JSON = json.dumps({"status": "success", "data": {"resultType": "vector", "result": [{"metric": 1}]}})


@pytest.mark.parametrize("prometheus", ["down", "hung", "junk"])
async def test_recommend_answers_as_without_a_fleet(http_client, tmp_path, prometheus):
    """Down, hung past any deadline (the reader waits on it all along: timeout_seconds 60), or junk:
    /recommend answers at once (well before the fleet's timeout), 200, as the daemon without [fleet]."""
    alone = await http_client(create_app(Settings(root=str(RECORDING), state_dir=str(tmp_path))))
    params = {"workload": "postgres", "pool": "tank"}
    expected = await alone.get("/recommend", params=params)
    assert expected.status == 200
    released = asyncio.Event()
    server = await _served({"down": web.Application(), "hung": _prometheus(ANSWERS, hang=released),
                            "junk": _prometheus(body=JUNK_JSON)}[prometheus])
    if prometheus == "down":
        await server.close()  # nothing listens on its port any more
    try:
        fleet = {"prometheus_url": f"http://127.0.0.1:{server.port}", "timeout_seconds": 60, "instance": "me:1"}
        app = create_app(Settings(root=str(RECORDING), state_dir=str(tmp_path), fleet=fleet))
        client = await http_client(app)
        response = await asyncio.wait_for(client.get("/recommend", params=params), timeout=30)
        assert response.status == 200 and _answer(await response.json()) == _answer(await expected.json())
        view = app[FLEET].current()
        assert view is None or not view.runs  # nothing good read: the answer is as today's
        metrics = await (await client.get("/metrics")).text()
        assert "zfs_advisor_fleet_query_failures_total" in metrics
        # junk that is JSON reads as a view with every series refused; down and hung read nothing
        refused = prometheus == "junk"
        assert ('zfs_advisor_fleet_series_refused_total{reason="labels"}' in metrics) is refused
        assert ("zfs_advisor_fleet_view_age_seconds " in metrics) is refused
    finally:
        released.set()
        await server.close()


class _FailsOnce(FleetReader):
    """A reading that fails as refresh does not foresee (fault injection: no Prometheus answer
    was found that does this; tests/unit/test_fleet_reader.py's junk shapes are all caught)."""

    async def refresh(self, session: aiohttp.ClientSession) -> bool:
        if not self.failures:
            raise KeyError("data")
        return await super().refresh(session)


async def test_an_unforeseen_failure_is_counted_and_the_reader_reads_on():
    server = await _served(_prometheus(ANSWERS))
    reader = _FailsOnce(FleetSettings(prometheus_url=f"http://127.0.0.1:{server.port}", timeout_seconds=5,
                                      interval_seconds=30))
    reader.settings = reader.settings.model_copy(update={"interval_seconds": 0.01})  # below the setting's floor, to read again at once
    task = asyncio.create_task(reader.run())
    try:
        await await_until(lambda: reader.view is not None, 10, "the reader never read after its failure")
        assert not task.done()
    finally:
        task.cancel()
        await server.close()
    assert reader.failures == 1


def test_a_basic_auth_user_with_a_colon_is_refused(tmp_path):
    secret = tmp_path / "password"
    secret.write_text("x")
    with pytest.raises(ValueError, match="RFC 7617"):
        FleetSettings(prometheus_url="http://p:9090", basic_auth_username="a:b", basic_auth_password_file=secret)
