"""/recommend, /v1/workloads, /v1/pools and /openapi.json through the real app and HTTP.

Facts come from a hand-built host (test_engine_synthetic) so each case is
exact; the recorded lab snapshots are served through the same app in
test_recommend_lab.py.
"""
from __future__ import annotations

import pytest

from advisor.api.appkeys import FACTS
from advisor.api.openapi import build_openapi
from advisor.config.settings import Settings
from advisor.engine.loader import RulesError, load_rulebook
from advisor.engine.service import recommend
from advisor.engine.text import recommend_text
from advisor.host.collect import Collection
from advisor.host.facts_provider import FactsProvider
from advisor.service.app import create_app
from support.hosts import synthetic_host


class StaticFacts(FactsProvider):
    def __init__(self, host):
        super().__init__("/")
        self._host = host

    async def get(self, max_age_seconds=None):
        return Collection(self._host)

    async def for_answers(self, wait_seconds=None):
        return Collection(self._host)


@pytest.fixture
def host():
    return synthetic_host("4kn-ashift9")


@pytest.fixture
async def client(http_client, host, tmp_path):
    app = create_app(Settings(root=str(tmp_path), model=False))  # the rules' contract (the model: test_model_recommend.py)
    app[FACTS] = StaticFacts(host)
    return await http_client(app)


async def test_recommend_json_keeps_the_contract(client):
    resp = await client.get("/recommend", params={"workload": "postgres", "dataset": "tank/pg"})
    assert resp.status == 200 and resp.content_type == "application/json"
    body = await resp.json()
    assert body["workload"] == "postgres"
    assert body["target"] == {"pool": "tank", "dataset": "tank/pg", "new_dataset": False, "create": None,
                              "create_argv": None}
    assert {"generated_at", "facts", "recommendations"} <= set(body)
    for rec in body["recommendations"]:
        assert {"parameter", "scope", "current", "recommended", "change", "confidence", "source", "explanation",
                "evidence", "expected_effect", "apply", "references"} <= set(rec)
        assert rec["scope"] in ("pool-create", "pool", "dataset", "module")
        assert 0 <= rec["confidence"] <= 1 and rec["source"] == "rule" and rec["expected_effect"] is None
    recordsize = next(r for r in body["recommendations"] if r["parameter"] == "recordsize")
    assert recordsize["current"] == "8K" and recordsize["recommended"] == "8K" and recordsize["change"] is False
    assert recordsize["status"] == "undecided" and recordsize["apply"] is None
    assert recordsize["measure_argv"] == ["zfs-advisor", "probe", "--pool", "tank", "--workload", "postgres",
                                          "--param", "recordsize=8K,32K"]
    primarycache = next(r for r in body["recommendations"] if r["parameter"] == "primarycache")
    assert primarycache["status"] == "change" and primarycache["apply"] == "zfs set primarycache=all tank/pg"


async def test_same_answer_as_the_engine_and_as_text(client, host):
    expected = recommend(host, load_rulebook(), "postgres", dataset="tank/pg")
    body = await (await client.get("/recommend?workload=postgres&dataset=tank/pg")).json()
    assert [(r["rule"], r["status"], r["current"], r["recommended"]) for r in body["recommendations"]] == [
        (r.rule, r.status, r.current, r.recommended) for r in expected.recommendations
    ]
    for query, headers in (("&format=text", {}), ("", {"Accept": "text/plain"})):
        resp = await client.get("/recommend?workload=postgres&dataset=tank/pg" + query, headers=headers)
        assert resp.status == 200 and resp.content_type == "text/plain"
        text = await resp.text()
        # Same text as rendering the engine's answer, but for the generation time.
        assert text.splitlines()[2:] == recommend_text(expected).splitlines()[2:]
        assert "sda, sdb report 4096-byte physical sectors but pool tank was created with ashift=9" in text
        # the rules alone on a disputed rule: keep tank/pg's 8K, and the probe that decides
        assert "MEASURE [dataset] recordsize on tank/pg: keep 8K until measured" in text
        assert "measure: zfs-advisor probe --pool tank --workload postgres --param recordsize=8K,32K" in text


async def test_workload_parameters_pass_through(client):
    body = await (await client.get("/recommend?workload=postgres&role=wal&page_size=16K")).json()
    assert body["parameters"] == {"role": "wal", "page_size": "16K", "cache_percent": "25"}  # given, else default
    assert body["target"]["dataset"] == "tank/postgres-wal" and body["target"]["new_dataset"] is True


@pytest.mark.parametrize(
    "query, status, valid",
    [
        ("?workload=general&dataset=tank/pg", 400, "postgres"),  # the general answer is about pools: no dataset
        ("?pool=tank&role=wal", 400, "postgres"),  # nor workload parameters
        ("?pool=nope", 404, "tank"),
        ("?workload=oracle", 404, "general"),
        ("?workload=", 400, "general"),  # empty is not "none": leave it out for the general answer
        ("?pool=", 400, "tank"),  # nor an empty pool or dataset: not "every pool"
        ("?workload=postgres&pool=", 400, "tank"),
        ("?workload=postgres&dataset=", 400, "tank/pg"),
        ("?workload=postgres&pool=tank&dataset=", 400, "tank/pg"),
        ("?dataset=", 400, "tank/pg"),
        ("?workload=oracle", 404, "postgres"),
        ("?workload=oracle", 404, "auto"),  # the workload the dataset's I/O looks like (docs/recognition.md)
        ("?workload=postgres&pool=nope", 404, "tank"),
        ("?workload=postgres&dataset=tank/nope", 404, "tank/pg"),
        ("?workload=postgres&pool=tank&dataset=other/x", 404, "tank/pg"),
        ("?workload=postgres&format=xml", 400, "text"),
        ("?workload=postgres&page_size=3K", 400, "8K"),
        ("?workload=postgres&colour=blue", 400, "page_size"),
        ("?workload=postgres&workload=mysql", 400, None),
    ],
)
async def test_bad_requests_are_json_errors_listing_valid_values(client, query, status, valid):
    resp = await client.get("/recommend" + query)
    assert resp.status == status and resp.content_type == "application/json"
    error = (await resp.json())["error"]
    assert error["status"] == status and error["reason"]
    if valid:
        assert valid in error["valid"]


@pytest.mark.parametrize(
    "query",
    [
        "?workload=" + "x" * 5000,
        "?workload=postgres&pool=" + "t" * 300,
        "?workload=postgres&dataset=tank/%00",
        "?workload=postgres&dataset=tank/$(reboot)",
        "?workload=postgres&dataset=tank/../../etc",
        "?workload=postgres&pool=%F0%9F%92%A5",
        "?workload=%E2%80%AEsergtsop",
        "?workload=postgres&page_size=" + "9" * 100,
        "?workload=postgres&" + "&".join(f"p{i}=1" for i in range(40)),
        "?workload=postgres&dataset=tank%2Fpg%0A",
        "?workload[]=postgres",
        "?%ZZ=1",
    ],
)
async def test_hostile_input_is_a_clear_4xx_never_a_500(client, query):
    resp = await client.get("/recommend" + query)
    assert 400 <= resp.status < 500
    if resp.content_type == "application/json":
        assert (await resp.json())["error"]["status"] == resp.status


async def test_a_huge_request_line_is_refused_before_the_handler(client):
    resp = await client.get("/recommend?workload=" + "x" * 20000)
    assert 400 <= resp.status < 500


async def test_workloads_lists_every_profile_with_descriptions(client):
    body = await (await client.get("/v1/workloads")).json()
    names = [w["name"] for w in body["workloads"]]
    assert sorted(names) == sorted(load_rulebook().workloads) and "postgres" in names
    pg = next(w for w in body["workloads"] if w["name"] == "postgres")
    assert pg["description"] and pg["io"]["block_size"] == "8K" and pg["io"]["sync"] == "heavy"
    assert pg["parameters"]["page_size"]["default"] == "8K" and pg["parameters"]["role"]["values"] == ["data", "wal"]
    assert "[global]" in pg["fio_job"] and "bs=8K" in pg["fio_job"]
    one = await (await client.get("/v1/workloads/vm")).json()
    assert one["roles"][0]["dataset_type"] == "volume"
    missing = await client.get("/v1/workloads/oracle")
    assert missing.status == 404 and "postgres" in (await missing.json())["error"]["valid"]


async def test_pools_lists_layout_media_and_datasets(client):
    body = await (await client.get("/v1/pools")).json()
    assert body["pools"] == [
        {"name": "tank", "health": "ONLINE", "media": "hdd", "layout": "mirror-0 (2 disks)", "ashift_min": 9,
         "size_bytes": None, "capacity_ratio": 0.3, "fragmentation_ratio": 0.1, "datasets": ["tank", "tank/pg", "tank/vm"]}
    ]


async def test_openapi_documents_every_route_and_only_those(client):
    doc = await (await client.get("/openapi.json")).json()
    assert doc["openapi"].startswith("3.1")
    routed = {r.resource.canonical for r in client.app.router.routes() if r.method == "GET"}
    assert set(doc["paths"]) == routed
    assert doc == build_openapi(load_rulebook())
    assert "postgres" in doc["paths"]["/recommend"]["get"]["parameters"][0]["schema"]["enum"]


async def test_openapi_workload_parameters_are_what_each_workload_accepts(client):
    """Every documented workload parameter value is accepted by each workload the document says
    takes it, and refused (400) by the ones it says do not."""
    doc = await (await client.get("/openapi.json")).json()
    book = load_rulebook()
    for param in doc["paths"]["/recommend"]["get"]["parameters"]:
        if param["name"] in ("workload", "pool", "dataset", "format"):
            continue
        for workload in sorted(book.workloads):
            declared = book.workloads[workload].all_parameters().get(param["name"])
            documented = f"{workload}: " in param["description"].split("Not accepted")[0]
            assert documented == (declared is not None), (param["name"], workload)
            value = declared.values[0] if declared else param["schema"]["enum"][0]
            resp = await client.get("/recommend", params={"workload": workload, param["name"]: value})
            assert resp.status == (200 if declared else 400), (param["name"], workload, await resp.text())


def test_openapi_schemas_are_the_models_schemas():
    from advisor.engine.models import Recommendation

    doc = build_openapi()
    rec = doc["components"]["schemas"]["Recommendation"]
    assert set(rec["properties"]) == set(Recommendation.model_fields)
    assert set(rec["properties"]["scope"]["enum"]) == {"pool-create", "pool", "dataset", "module"}


def test_broken_rules_stop_the_app_from_starting(tmp_path):
    (tmp_path / "workloads").mkdir()
    with pytest.raises(RulesError):
        create_app(Settings(root=str(tmp_path), rules_dir=str(tmp_path)))


async def test_random_queries_never_cause_a_500(client):
    import random
    from urllib.parse import quote

    rng = random.Random(5)
    alphabet = "ab/.-_:@#%&=;$`'\" \t\n\x00\u202e\U0001f4a5" + "tankpgpostgres"
    keys = ["workload", "pool", "dataset", "format", "role", "page_size", "x"]
    for _ in range(150):
        parts = []
        for _ in range(rng.randint(0, 5)):
            key = rng.choice(keys)
            value = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
            if rng.random() < 0.5:
                value = rng.choice(["postgres", "tank", "tank/pg", "text", "wal", "16K"])
            parts.append(f"{quote(key)}={quote(value)}")
        resp = await client.get("/recommend?" + "&".join(parts))
        assert resp.status < 500, parts
