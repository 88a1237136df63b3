"""The page at `/` and its sub-pages, through the real app on the lab recording of OpenZFS 2.3.2 on
ssd-mirror2x2: what they show (the facts /v1/pools gives, /recommend's open advice, the probe
store's runs and efficiency reports), escaping, auth, bad input, and that every link resolves.

Probe rows are those of tests/support/probes.py (the prior's PostgreSQL cell on that layout).
"""
from __future__ import annotations

import html
import re
import shutil
from html.parser import HTMLParser
from urllib.parse import urldefrag, urljoin, urlsplit

import pytest

from advisor.api.appkeys import LIMITER
from advisor.config.settings import Settings
from advisor.page.markup import pool_href
from advisor.probe.pool_efficiency import Efficiency, diagnose, layout_rule
from advisor.server.limits import WorkLimiter
from advisor.service.app import create_app
from advisor.store.db import DB_FILE, connect
from advisor.store.probes import ProbeStore
from support import RECORDING
from support.probes import RECORDSIZE_POSTGRES, seed_recordsize_probe
from support.remote import seen_from_remote

# tank/home has recordsize 128K: the probe's 8K beats it, so its advice is a change measured by the probe
WORKLOADS = {"tank/pg": "postgres", "tank/home": "postgres"}
MIRROR = {"vdevs": [{"type": "mirror", "width": 2, "nparity": None, "disks": ["vdb", "vdc"]}]}


def app_for(state_dir, root=RECORDING, **settings):
    return create_app(Settings(root=str(root), state_dir=str(state_dir), **settings))


async def page(client, path: str, status: int = 200) -> str:
    resp = await client.get(path)
    text = await resp.text()
    assert resp.status == status, (path, text[:500])
    assert resp.content_type == "text/html" and resp.charset == "utf-8"
    return text


class Links(HTMLParser):
    """Every href and src of a page, and the ids it defines."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("href", "src") and value is not None:
                self.links.append(value)
            if name == "id" and value is not None:
                self.ids.add(value)


def parsed(text: str) -> Links:
    links = Links()
    links.feed(text)
    return links


async def crawl(client, start: str = "/") -> dict[str, int]:
    """Follow every same-origin link from `start` (HTML pages further), checking each fragment
    names an id of its page; external links may only be the rules' references (https)."""
    seen: dict[str, int] = {}
    todo, fragments = [start], []
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        resp = await client.get(path)
        seen[path] = resp.status
        if resp.content_type != "text/html":
            continue
        links = parsed(await resp.text())
        for href in links.links:
            assert "javascript:" not in href.lower()
            if href == "data:,":  # the empty icon: no favicon request
                continue
            target = urljoin(path, href)
            if urlsplit(target).scheme:
                assert target.startswith("https://"), target  # a reference, never fetched by the page
                continue
            target, fragment = urldefrag(target)
            if fragment:
                fragments.append((target, fragment))
            todo.append(target)
    for target, fragment in fragments:
        assert fragment in parsed(await (await client.get(target)).text()).ids, (target, fragment)
    return seen


async def test_a_host_without_probes_shows_its_pools_and_creates_no_store(http_client, tmp_path):
    client = await http_client(app_for(tmp_path))
    text = await page(client, "/")
    pools = (await (await client.get("/v1/pools")).json())["pools"]
    for pool in pools:  # the facts /v1/pools gives
        row = re.search(rf'<tr><td><a href="/pool/{pool["name"]}">{pool["name"]}</a>.*?</tr>', text).group(0)
        assert pool["health"] in row and f'{pool["capacity_ratio"] * 100:.0f}%' in row and html.escape(pool["layout"]) in row
    assert "No probe run is stored." in text and "zfslab" in text and "OpenZFS 2.3.2" in text
    assert "<script" not in text  # readable without JavaScript: there is none
    assert not (tmp_path / DB_FILE).exists()  # reading never creates the database
    pool_page = await page(client, "/pool/tank")
    assert "No efficiency report is stored" in pool_page and "No probe run is stored for this pool." in pool_page
    for name in pools[0]["datasets"]:
        assert f"<td>{name}</td>" in pool_page


async def test_the_open_advice_is_what_recommend_answers(http_client, tmp_path):
    seed_recordsize_probe(tmp_path)
    client = await http_client(app_for(tmp_path, workloads=WORKLOADS))
    text = await page(client, "/pool/tank")
    shown = 0
    for dataset in WORKLOADS:
        answer = await (await client.get("/recommend", params={"workload": "postgres", "dataset": dataset})).json()
        for rec in answer["recommendations"]:
            if rec["status"] not in ("change", "undecided"):
                continue
            block = _block(text, rec)
            assert html.escape(rec["explanation"]) in block and html.escape(rec["title"]) in block
            if rec["status"] == "change":
                assert f'<code>{html.escape(rec["current"])}</code> &rarr; <code>{html.escape(rec["recommended"])}' in block
                assert html.escape(rec["apply"]) in block
            for ev in rec["evidence"]:
                assert html.escape(ev["display"]) in block
            shown += 1
    assert shown >= 3
    # the probe's measurement, with its interval, on the dataset whose recordsize it beats
    recordsize = _block(text, {"parameter": "recordsize", "dataset": "tank/home", "status": "change"})
    assert re.search(r"Expected effect: IOPS &times;1\.\d\d \(90% interval &times;\d\.\d\d to &times;\d\.\d\d\) "
                     r"of the postgres probe&#x27;s fio job \(data role\); the application's own metric moves only "
                     r"as far as it waits on the storage", recordsize), recordsize
    assert "source probe" in recordsize
    # a dataset's passed and skipped items are counted, the whole answer a link away
    assert '<a href="/recommend?workload=postgres&amp;dataset=tank%2Fhome&amp;format=text">the whole answer</a>' in text
    overview = await page(client, "/")
    assert '<a href="/pool/tank#dataset-tank%2Fhome">tank/home</a>' in overview


def _block(text: str, rec: dict) -> str:
    where = f' on {rec["dataset"]}' if rec.get("dataset") else ""
    pattern = (rf'<article class="rec {rec["status"]}"><h4><span class="badge {rec["status"]}">[a-z]+</span> '
               rf'{re.escape(rec["parameter"] + where)}\b.*?</article>')
    found = re.search(pattern, text)
    assert found, (rec["parameter"], where)
    return found.group(0)


async def test_a_probe_run_has_a_chart_and_the_numbers_as_text(http_client, tmp_path):
    seed_recordsize_probe(tmp_path)
    client = await http_client(app_for(tmp_path, model=False))
    overview = await page(client, "/")
    assert '<a href="/probes/1">1</a>' in overview and "completed" in overview
    text = await page(client, "/probes/1")
    evidence = (await (await client.get("/v1/probes/1")).json())["evidence"][0]["candidates"]
    svg = re.search(r"<svg .*?</svg>", text).group(0)
    assert svg.count("<rect ") == 2 * len(RECORDSIZE_POSTGRES)  # an IOPS bar and a p99 bar per candidate
    for cand in evidence:
        assert f">{cand['iops']:,.0f}</text>" in svg and f">{cand['write_p99_seconds'] * 1000:.2f} ms</text>" in svg
        assert f"<td>{cand['iops_min']:,.0f} to {cand['iops_max']:,.0f}</td>" in text
    assert "<td>8K</td><td>1</td>" in text and "128K (baseline)" in text
    assert "&times;1.88" in text  # 8K's IOPS over the baseline's, as /v1/probes/1's evidence says
    assert "[global]" in text  # the fio job


async def test_an_efficiency_report_is_shown_as_stored(http_client, tmp_path):
    results = [Efficiency(direction="read", measured_bytes_per_second=110e6, pool_bytes_per_second=120e6,
                          expected_bytes_per_second=240e6, ratio=0.5, expectation=layout_rule(MIRROR, "read"),
                          diagnosis=diagnose("read", 0.5, MIRROR, {}, 0.95)),
               Efficiency(direction="write", measured_bytes_per_second=114e6, pool_bytes_per_second=228e6,
                          expected_bytes_per_second=120e6, ratio=0.95, expectation=layout_rule(MIRROR, "write"),
                          diagnosis=diagnose("write", 0.95, MIRROR, {}, 0.4))]
    store = ProbeStore(connect(tmp_path))
    random = {"test": "rand-read-4k", "unit": "IOPS", "measured": 3012.0, "expected": 6000.0, "ratio": 0.502,
              "expectation": "2 x mirror of 2: 2 disks each = 4 disks", "diagnosis": ["disk bound"]}
    store.add_efficiency("tank", {"pool": MIRROR, "results": [r.model_dump(mode="json") for r in results],
                                  "random_results": [random],
                                  "note": "a disk's write rate is assumed equal to its measured read rate"})
    store.conn.close()
    client = await http_client(app_for(tmp_path, model=False))
    text = await page(client, "/pool/tank")
    assert "<h3>seq-read: 50% of what the layout should give</h3>" in text
    assert "<h3>seq-write: 95% of what the layout should give</h3>" in text
    for result in results:
        for sentence in result.diagnosis:
            assert f"<li>{html.escape(sentence)}</li>" in text
    assert "<h3>rand-read-4k: 50% of what the layout should give</h3>" in text
    assert "measured 3,012 IOPS, the layout's 6,000 IOPS" in text
    assert "CPU busy 95% during the run" in text and "assumed equal to its measured read rate" in text
    assert re.search(r'<a href="/pool/tank">tank</a>.*?<td>yes</td></tr>', await page(client, "/"))


@pytest.mark.parametrize("report", [{"results": {"read": 1}}, {"results": ["read", None, {"ratio": "x"}]}, [1, 2]])
async def test_an_efficiency_report_of_another_shape_is_no_500(http_client, tmp_path, report):
    store = ProbeStore(connect(tmp_path))
    store.add_efficiency("tank", report)
    store.conn.close()
    client = await http_client(app_for(tmp_path, model=False))
    assert "<h2>Efficiency</h2>" in await page(client, "/pool/tank")


async def test_a_page_takes_a_work_slot(http_client, tmp_path):
    """The pages are heavy work: with every slot taken and no room to wait, a 503 at once."""
    app = app_for(tmp_path, model=False)
    app[LIMITER] = WorkLimiter(in_flight=1, waiting=0)
    client = await http_client(app)
    async with app[LIMITER].slot():
        resp = await client.get("/pool/tank")
        assert resp.status == 503 and resp.headers["Retry-After"] == "1"
    await page(client, "/pool/tank")


async def test_hostile_text_is_escaped_everywhere(http_client, tmp_path):
    """Names and text from the host, the store and the efficiency report are never markup."""
    evil = '<script>alert("x")</script>&"\''
    root = tmp_path / "host"
    shutil.copytree(RECORDING, root)
    (root / "proc/sys/kernel/hostname").write_text(evil + "\n")
    state = tmp_path / "state"
    store = ProbeStore(connect(state))
    run = store.start_run(evil, evil, evil, {evil: evil}, [], None)
    store.end_run(run, "failed", reason=evil)
    store.add_efficiency("tank", {"results": [{"test": evil, "ratio": 0.5, "diagnosis": [evil]}], "note": evil})
    store.conn.close()
    client = await http_client(app_for(state, root=root, model=False))
    for path in ("/", "/pool/tank", f"/probes/{run}", "/pool/" + "%3Cscript%3E", "/probes/%3Cscript%3E"):
        text = await (await client.get(path)).text()
        assert "<script" not in text, path
        assert "&lt;script&gt;" in text, path
    assert html.escape(evil) in await page(client, "/")
    # a run's pool that is not on this host is not a link (it would not resolve)
    assert f"<td>{html.escape(evil)}</td>" in await page(client, f"/probes/{run}")


@pytest.mark.parametrize("path, status, says", [
    ("/pool/c0t0d0", 400, "looks like a device name"),
    ("/pool/mirror", 400, "reserved vdev keyword"),
    ("/pool/" + "a" * 300, 400, "longer than"),
    ("/pool/nosuch", 404, "no pool &#x27;nosuch&#x27; on this host"),
    ("/probes/abc", 400, "whole number"),
    ("/probes/%C2%B2", 400, "whole number"),  # "²".isdigit()
    ("/probes/" + "9" * 19, 400, "whole number"),
    ("/probes/42", 404, "no probe run 42"),
])
async def test_bad_input_is_an_html_4xx_naming_what_is_valid(http_client, tmp_path, path, status, says):
    seed_recordsize_probe(tmp_path)
    client = await http_client(app_for(tmp_path, model=False))
    text = await page(client, path, status)
    assert says in text
    if path == "/pool/nosuch":
        assert '<li><a href="/pool/tank">tank</a></li>' in text


async def test_an_unreadable_store_is_said_on_the_page_not_a_500(http_client, tmp_path):
    (tmp_path / DB_FILE).write_bytes(b"this is not a database" * 100)
    client = await http_client(app_for(tmp_path, model=False))
    assert "the probe database cannot be read" in await page(client, "/")
    assert "the probe database cannot be read" in await page(client, "/pool/tank")
    assert "the probe database cannot be read" in await page(client, "/probes/1", 404)


async def test_the_pages_need_the_token_beyond_loopback(http_client, tmp_path):
    seed_recordsize_probe(tmp_path)
    client = await http_client(seen_from_remote(app_for(tmp_path, api_token="s3cret-token", model=False)))
    for path in ("/", "/pool/tank", "/probes/1", "/pool/nosuch"):
        resp = await client.get(path)
        assert resp.status == 401 and "Bearer" in (await resp.json())["error"]["reason"], path
        resp = await client.get(path, headers={"Authorization": "Bearer s3cret-token"})
        assert resp.status in (200, 404), path


@pytest.mark.parametrize("probes", [False, True])
async def test_every_link_resolves(http_client, tmp_path, probes):
    if probes:
        seed_recordsize_probe(tmp_path)
    client = await http_client(app_for(tmp_path, workloads=WORKLOADS))
    seen = await crawl(client)
    assert {"/", "/pool/tank"} <= seen.keys() and ("/probes/1" in seen) == probes
    assert {path: status for path, status in seen.items() if status != 200} == {}


def test_pool_links_are_percent_encoded():
    assert pool_href("tank 2:b") == "/pool/tank%202%3Ab"
