"""Concurrent requests share one body per collection, heavy work is bounded, bodies arrive whole.

Behaviour, not timing (the load benchmark, tests/bench/load.py, measures): a recorded lab host,
the real app on a real socket, many requests at once.
"""
from __future__ import annotations

import asyncio
import gc
import gzip
import json

from advisor.api.appkeys import BODIES, LIMITER
from advisor.config.settings import Settings
from advisor.server.limits import HeapFreezer
from advisor.service.app import create_app
from support import RECORDING

PROMETHEUS = {"Accept": "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5",
              "Accept-Encoding": "gzip"}


async def _app_client(http_client):
    # facts_max_age large: every request of the test is served from one collection
    app = create_app(Settings(root=str(RECORDING), facts_max_age_seconds=3600))
    return app, await http_client(app, auto_decompress=False)


async def _body(client, path: str, headers: dict[str, str]) -> tuple[int, dict, bytes]:
    resp = await client.get(path, headers=headers)
    return resp.status, dict(resp.headers), await resp.read()


async def test_concurrent_scrapes_get_identical_bodies_rendered_once(http_client):
    app, client = await _app_client(http_client)
    await client.get("/healthz")
    answers = await asyncio.gather(*(_body(client, "/metrics", PROMETHEUS) for _ in range(30)))
    assert {status for status, _, _ in answers} == {200}
    assert len({body for _, _, body in answers}) == 1
    assert app[BODIES].metrics.builds == 1
    _, headers, body = answers[0]
    assert headers["Content-Encoding"] == "gzip" and headers["Content-Type"].startswith("application/openmetrics-text")
    text = gzip.decompress(body)
    assert text.endswith(b"# EOF\n") and int(headers["Content-Length"]) == len(body)
    plain = await asyncio.gather(*(_body(client, "/metrics", {"Accept-Encoding": "identity"}) for _ in range(10)))
    assert len({body for _, _, body in plain}) == 1 and app[BODIES].metrics.builds == 2  # one more variant
    assert b"zfs_advisor_source_up" in plain[0][2]


async def test_concurrent_facts_requests_share_one_serialisation(http_client):
    app, client = await _app_client(http_client)
    answers = await asyncio.gather(*(_body(client, "/v1/facts", {"Accept-Encoding": "identity"}) for _ in range(20)))
    assert len({body for _, _, body in answers}) == 1 and app[BODIES].facts.builds == 1
    facts = json.loads(answers[0][2])
    assert facts["pools"] and answers[0][1]["Content-Type"].startswith("application/json")
    zipped = await _body(client, "/v1/facts", {"Accept-Encoding": "gzip"})
    assert json.loads(gzip.decompress(zipped[2])) == facts


async def test_uncompressed_bodies_are_cached_deflated_and_sent_plain(http_client):
    from advisor.server.deflated import Deflated

    app, client = await _app_client(http_client)
    status, headers, plain = await _body(client, "/metrics", {"Accept-Encoding": "identity"})
    assert status == 200 and "Content-Encoding" not in headers and b"# TYPE zfs_arc_hits_total counter" in plain
    assert int(headers["Content-Length"]) == len(plain)
    cached = [task.result() for task in app[BODIES].metrics._tasks.values()]
    assert len(cached) == 1 and isinstance(cached[0], Deflated) and cached[0].stored < len(plain)
    _, _, zipped = await _body(client, "/metrics", {"Accept-Encoding": "gzip"})
    assert gzip.decompress(zipped).split(b"\n")[:6] == plain.split(b"\n")[:6]  # self-metrics differ further on
    await _body(client, "/v1/facts", {"Accept-Encoding": "identity"})
    assert all(isinstance(t.result(), Deflated) for t in app[BODIES].facts._tasks.values())


async def test_beyond_the_queue_heavy_requests_get_503_with_retry_after_and_healthz_still_answers(http_client):
    app, client = await _app_client(http_client)
    limiter = app[LIMITER]
    limiter.max_waiting = 0
    holders = [limiter.slot() for _ in range(limiter.in_flight)]
    for holder in holders:  # every slot busy, nobody may wait
        await holder.__aenter__()
    try:
        for path in ("/metrics", "/v1/facts", "/recommend?workload=postgres", "/v1/pools", "/v1/probes"):
            resp = await client.get(path)
            assert resp.status == 503 and resp.headers["Retry-After"] == "1"
            assert (await resp.json())["error"]["reason"].startswith("busy")
        assert (await client.get("/healthz")).status == 200
        assert (await client.get("/v1/workloads")).status == 200
    finally:
        for holder in holders:
            await holder.__aexit__(None, None, None)
    assert (await client.get("/metrics")).status == 200
    assert limiter.refused == 5


def test_heap_freezer_freezes_and_unfreezes_on_schedule():
    try:
        freezer = HeapFreezer(unfreeze_every=3600)
        freezer.freeze()
        assert gc.get_freeze_count() > 0  # the objects alive now are out of the full passes
        freezer.unfreeze_every = 0
        freezer.freeze()
        assert gc.get_freeze_count() == 0  # due: unfrozen, so a full pass collects frozen cycles
    finally:
        gc.unfreeze()


async def test_concurrent_identical_bad_queries_each_get_their_error(http_client):
    _, client = await _app_client(http_client)
    answers = await asyncio.gather(*(_body(client, "/recommend?workload=nope", {}) for _ in range(10)))
    assert {status for status, _, _ in answers} == {404}
    assert all(json.loads(body)["error"]["valid"] for _, _, body in answers)


async def test_probe_ids_and_limits_in_other_digits_are_a_400(http_client):
    """'²'.isdigit() is True but int('²') raises: found by schemathesis (GET /v1/probes/%C2%B2)."""
    _, client = await _app_client(http_client)
    assert (await client.get("/v1/probes/%C2%B2")).status == 400
    assert (await client.get("/v1/probes?limit=%C2%B2")).status == 400


def test_the_service_favours_the_event_loop_for_the_gil():
    import sys

    from advisor.process.memory import keep_big_blocks_apart
    from advisor.server.limits import LOOP_SWITCH_INTERVAL_SECONDS, favour_the_event_loop

    before = sys.getswitchinterval()
    try:
        favour_the_event_loop()
        assert abs(sys.getswitchinterval() - LOOP_SWITCH_INTERVAL_SECONDS) < 1e-6
        keep_big_blocks_apart()  # glibc or not, it must not fail
        assert len(bytes(4 << 20)) == 4 << 20
    finally:
        sys.setswitchinterval(before)


async def test_a_sliced_body_lets_go_of_each_chunk_once_sent():
    from advisor.server.bodies import SLICE, SlicedBody

    chunks = (b"a" * (SLICE + 10), b"b" * 5, b"c" * (2 * SLICE))
    body = SlicedBody(chunks, "application/json")
    sent, unsent_at_write = [], []

    class Writer:
        async def write(self, data):
            sent.append(bytes(data))
            unsent_at_write.append(sum(len(c) for c in body._unsent))

    assert body.size == sum(map(len, chunks)) and await body.as_bytes() == b"".join(chunks)
    await body.write_with_length(Writer(), None)
    assert b"".join(sent) == b"".join(chunks)
    # while the first chunk is sent the others are still held; while the last is, nothing else
    assert unsent_at_write[0] == len(chunks[1]) + len(chunks[2]) and unsent_at_write[-1] == 0
    assert not body._unsent


def test_cached_collector_text_is_kept_deflated_in_segments_of_whole_families():
    from advisor.exporters.base import Scrape
    from advisor.exporters.collector import MetricsRenderer
    from advisor.exporters.negotiation import to_openmetrics
    from support.hosts import make_host

    host = make_host(datasets=3000)
    exporter = MetricsRenderer()
    scrape = Scrape(host=host, commands_generation=1.0)
    text = exporter.render(scrape)
    kept = {name: body for name, (_, body) in exporter._text_cache.items()}
    assert {"datasets", "vdevs", "module"} <= set(kept)
    datasets = kept["datasets"]
    assert len(datasets.segments) > 1 and datasets.stored < datasets.size / 5
    for segment in datasets.inflated():  # whole families: each one alone rewrites as the whole does
        assert segment.startswith(b"# HELP ") and segment.endswith(b"\n")
        assert to_openmetrics(segment)[:-len(b"# EOF\n")] in to_openmetrics(text)
    assert datasets.inflate() in text and datasets.inflate() in exporter.render(scrape)  # reused as it was
    assert exporter._text_cache["datasets"][1] is datasets
