"""GET /metrics through the real app: content type, coalescing, the scrape deadline."""
from __future__ import annotations

import asyncio
import shutil

import pytest
from prometheus_client.parser import text_string_to_metric_families

from advisor.api.appkeys import FACTS
from advisor.api.metrics import deadline_seconds
from advisor.config.settings import Settings
from advisor.service.app import create_app
from support import RECORDING, HangingRunner
from support.waiting import await_until


@pytest.fixture
def root(tmp_path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "meminfo").write_text("MemTotal:  1024 kB\n")
    return tmp_path


def values(text: str, name: str) -> dict:
    return {
        tuple(sorted(s.labels.items())): s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == name
    }


async def test_metrics_is_prometheus_text_with_self_metrics(http_client, root):
    client = await http_client(create_app(Settings(root=str(root))))
    resp = await client.get("/metrics")
    assert resp.status == 200
    assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    text = await resp.text()
    assert values(text, "zfs_advisor_facts_stale") == {(): 0.0}
    assert values(text, "zfs_advisor_source_up")[(("source", "zfs"),)] == 0.0  # no ZFS here: no data, no error
    assert not [n for n in values(text, "zfs_advisor_scrape_collector_success").values() if n != 1.0]
    assert "zfs_pool_" not in text


async def test_parallel_scrapes_share_one_collection(http_client, root):
    app = create_app(Settings(root=str(root)))
    client = await http_client(app)
    texts = await asyncio.gather(*(client.get("/metrics") for _ in range(10)))
    bodies = [await r.text() for r in texts]
    assert app[FACTS].collections == 1
    assert {tuple(values(b, "zfs_advisor_facts_collections_total").values()) for b in bodies} == {(1.0,)}


async def test_a_hung_zpool_serves_the_last_command_output_and_says_so(http_client, tmp_path):
    host = tmp_path / "host"
    shutil.copytree(RECORDING, host)
    app = create_app(Settings(root=str(host), metrics_scrape_deadline_seconds=0.2, command_timeout_seconds=0.3,
                              commands_interval_seconds=0.3, facts_max_age_seconds=0))
    client = await http_client(app)
    first = await (await client.get("/metrics")).text()
    assert values(first, "zfs_advisor_facts_stale") == {(): 0.0}
    app[FACTS].runner = HangingRunner()
    await await_until(app[FACTS].commands_overdue, 10, "the hanging refresh to pass interval + command timeout")
    resp = await client.get("/metrics", headers={"X-Prometheus-Scrape-Timeout-Seconds": "0.1"})
    text = await resp.text()
    assert resp.status == 200
    assert values(text, "zfs_advisor_facts_stale") == {(): 1.0}
    assert values(text, "zfs_advisor_facts_age_seconds")[()] >= 0.6
    health = "zfs_pool_health"
    assert values(text, health) == values(first, health) and values(text, health)  # last good zpool output


async def test_scrapes_fork_nothing_while_the_command_output_is_recent(http_client, tmp_path):
    host = tmp_path / "host"
    shutil.copytree(RECORDING, host)
    app = create_app(Settings(root=str(host), facts_max_age_seconds=0, commands_interval_seconds=3600))
    client = await http_client(app)
    for _ in range(3):
        text = await (await client.get("/metrics")).text()
    assert values(text, "zfs_advisor_command_runs_total") == {(): 1.0}
    assert values(text, "zfs_advisor_facts_collections_total") == {(): 3.0}


def test_deadline_follows_the_prometheus_timeout_header_when_shorter():
    assert deadline_seconds(8.0, None) == 8.0
    assert deadline_seconds(8.0, "10") == 8.0
    assert deadline_seconds(8.0, "5") == pytest.approx(4.5)
    assert deadline_seconds(8.0, "junk") == 8.0


def test_bad_regex_settings_are_rejected_at_load():
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="regular expression"):
        Settings(metrics_pool_include="(")
