"""/openapi.json is the API's contract: every route of the real app, asked over HTTP, answers as the
document says for that operation and status (content type and body by its schema).

The app serves the lab recording of OpenZFS 2.3.2 on ssd-mirror2x2 under load, with a probe store
holding a completed run and an efficiency report (tests/support/probes.py) and two setting changes
the tracker observed: one done, one still measuring. So every answer has content to check.
"""
from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

import pytest
from openapi_spec_validator import validate

from advisor.api.appkeys import CHANGES
from advisor.api.openapi import build_openapi
from advisor.config.settings import Settings
from advisor.engine.loader import load_rulebook
from advisor.host.snapshot import collect_from_root
from advisor.hostmodel.facts import Host, Property
from advisor.service.app import create_app
from support import HOSTS
from support.contract import mismatches, operation_path
from support.probes import seed_efficiency_report, seed_recordsize_probe

LOAD = HOSTS / "2.3.2" / "ssd-mirror2x2" / "load"
TOKEN = "contract-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
WINDOW = 60  # the shortest changes_window_seconds
PROBE = {"pool": "tank", "workload": "postgres", "params": {"recordsize": ["8K", "128K"]}, "budget": {"seconds": 120}}

# (method, path with its query, request options, the status it answers): every operation's success,
# and the errors a client can cause
REQUESTS: list[tuple[str, str, dict, int]] = [
    ("GET", "/healthz", {}, 200),
    ("GET", "/v1/facts", {}, 200),
    ("GET", "/metrics", {}, 200),
    ("GET", "/metrics", {"headers": {"Accept": "application/openmetrics-text; version=1.0.0"}}, 200),
    ("GET", "/openapi.json", {}, 200),
    ("GET", "/recommend?workload=postgres&dataset=tank/pg", {}, 200),
    ("GET", "/recommend", {}, 200),
    ("GET", "/recommend?workload=postgres&format=text", {}, 200),
    ("GET", "/recommend?workload=nope", {}, 404),
    ("GET", "/recommend?workload=postgres&page_size=x", {}, 400),
    ("GET", "/v1/workloads", {}, 200),
    ("GET", "/v1/workloads/postgres", {}, 200),
    ("GET", "/v1/workloads/nope", {}, 404),
    ("GET", "/v1/pools", {}, 200),
    ("GET", "/v1/probes", {}, 200),
    ("GET", "/v1/probes?limit=0", {}, 400),
    ("GET", "/v1/probes?workload=nope", {}, 404),
    ("GET", "/v1/probes/1", {}, 200),
    ("GET", "/v1/probes/999", {}, 404),
    ("GET", "/v1/probes/x", {}, 400),
    ("POST", "/v1/probes", {"json": PROBE, "headers": AUTH}, 202),
    ("POST", "/v1/probes", {"json": PROBE}, 401),
    ("POST", "/v1/probes", {"data": b"pool=tank", "headers": {**AUTH, "Content-Type": "text/plain"}}, 415),
    ("POST", "/v1/probes", {"json": {"pool": "tank"}, "headers": AUTH}, 422),
    ("POST", "/v1/probes", {"json": {**PROBE, "pool": "nope"}, "headers": AUTH}, 404),
    ("POST", "/v1/probes", {"json": {**PROBE, "budget": {"seconds": 10**7}}, "headers": AUTH}, 400),
    ("GET", "/v1/plan?disks=4&size=4T&seq=200M&iops=300", {}, 200),
    ("GET", "/v1/plan?disks=4", {}, 400),
    ("GET", "/v1/efficiency", {}, 200),
    ("GET", "/v1/efficiency?pool=tank", {}, 200),
    ("GET", "/v1/efficiency?pool=nope", {}, 404),
    ("GET", "/v1/efficiency?x=1", {}, 400),
    ("GET", "/v1/changes", {}, 200),
    ("GET", "/v1/changes?limit=x", {}, 400),
    ("GET", "/v1/changes?pool=nope", {}, 404),
    ("GET", "/v1/pools", {"headers": {"Host": "rebound.example"}}, 403),
    ("GET", "/", {}, 200),
    ("GET", "/pool/tank", {}, 200),
    ("GET", "/pool/nope", {}, 404),
    ("GET", "/pool/-x", {}, 400),
    ("GET", "/probes/1", {}, 200),
    ("GET", "/probes/999", {}, 404),
    ("GET", "/probes/x", {}, 400),
]


def with_recordsize(host: Host, value: str, at: float) -> Host:
    changed = host.model_copy(deep=True)
    changed.collected_at = datetime.fromtimestamp(at, UTC)
    dataset = changed.dataset("tank/pg")
    assert dataset is not None
    dataset.properties = {**dataset.properties, "recordsize": Property(value=value, source="local")}
    return changed


async def observe_two_changes(app) -> None:
    """tank/pg's recordsize 8192 -> 16384 (measured over a whole window: done), then -> 32768 (measuring)."""
    host = (await collect_from_root(LOAD)).host
    tracker, start = app[CHANGES], time.time() + 3600  # after anything the app's own refresh collects
    for at, value in ((start, "8192"), (start + 15, "16384"), (start + 15 + WINDOW, "16384"),
                      (start + 30 + WINDOW, "32768")):
        await asyncio.to_thread(tracker.observe, with_recordsize(host, value, at))


@pytest.fixture
async def client(http_client, tmp_path):
    state = tmp_path / "state"
    seed_recordsize_probe(state)
    seed_efficiency_report(state)
    app = create_app(Settings(root=str(LOAD), state_dir=str(state), api_token=TOKEN, changes_window_seconds=WINDOW,
                              commands_interval_seconds=3600, model=False))
    client = await http_client(app)
    await observe_two_changes(app)
    return client


def test_the_document_is_valid_openapi_3_1():
    doc = build_openapi(load_rulebook())
    validate(doc)  # openapi-spec-validator: the OpenAPI 3.1 schema, and each schema by its dialect
    assert doc["openapi"] == "3.1.0"


def test_every_operation_documents_its_answers():
    """Each operation has a success answer with content, and every 4xx/5xx whose body is JSON is
    the shared error document."""
    doc = build_openapi(load_rulebook())
    for path, operations in doc["paths"].items():
        for method, operation in operations.items():
            statuses = operation["responses"]
            assert any(s.startswith("2") and statuses[s].get("content") for s in statuses), (method, path)
            for status, response in statuses.items():
                json_schema = response["content"].get("application/json", {}).get("schema")
                if status >= "400" and json_schema is not None:
                    assert json_schema == {"$ref": "#/components/schemas/ErrorResponse"}, (method, path, status)
            assert {"401", "403", "500", "503"} <= set(statuses), (method, path)


async def test_every_route_answers_as_the_document_says(client):
    doc = await (await client.get("/openapi.json")).json()
    found, succeeded = [], set()
    for method, target, options, status in REQUESTS:
        resp = await client.request(method, target, **options)
        body = await resp.read()
        if resp.status != status:
            found.append(f"{method} {target}: {resp.status}, not {status}: {body[:200]!r}")
            continue
        found += mismatches(doc, method, resp.url.path, resp.status, resp.headers.get("Content-Type", ""), body)
        if status < 300:
            succeeded.add((method.lower(), resp.url.path))
    assert not found, "\n".join(found)
    # every operation of the document was asked, and answered with success
    routed = {(m, p) for p, ops in doc["paths"].items() for m in ops}
    asked = {(m, operation_path(doc, p)) for m, p in succeeded}
    assert routed <= asked, sorted(routed - asked)


async def test_the_answers_have_content_to_check(client):
    """The store and the tracker hold what the schemas describe: a run with results and evidence, changes
    done and measuring; an unknown run's 404 lists the runs there are."""
    run = await (await client.get("/v1/probes/1")).json()
    assert run["results"] and run["evidence"] and run["run"]["status"] == "completed"
    changes = (await (await client.get("/v1/changes")).json())["changes"]
    assert [c["status"] for c in changes] == ["measuring", "done"] and changes[1]["effects"]
    missing = await (await client.get("/v1/probes/999")).json()
    assert missing["error"]["valid"] == ["1"] and "GET /v1/probes" in missing["error"]["reason"]
