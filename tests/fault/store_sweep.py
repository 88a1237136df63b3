"""Every GET route of the real app, asked over HTTP against one state directory: what test_store.py
checks a damaged probe store against. Also a program, for the cases that need a process of their
own (a read-only mount, another user):

    python -m tests.fault.store_sweep SNAPSHOT STATE_DIR    # prints the sweep as JSON
"""
from __future__ import annotations

import asyncio
import json
import re
import sys
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from advisor.config.settings import Settings
from advisor.service.app import create_app

# What a route's placeholders are filled with: the pool the seeded runs name, their first id.
PLACEHOLDERS = {"{name}": "tank", "{id}": "1"}
# Queries that make a route read the store (an answer for a workload reads its probe evidence).
QUERIES = {"/recommend": ["", "?workload=postgres", "?workload=postgres&dataset=tank/pg"],
           "/v1/plan": ["", "?pool=tank&workload=postgres"], "/v1/probes": ["", "?pool=tank"],
           "/v1/efficiency": ["", "?pool=tank"]}
_SAMPLE = re.compile(r"^(zfs_advisor_(?:store_rows_skipped_total|scrape_collector_success)\{[^}]*\}) (\S+)$",
                     re.MULTILINE)


def paths(app) -> list[str]:
    found = []
    for route in app.router.routes():
        if route.method != "GET":
            continue
        path = route.resource.canonical
        for placeholder, value in PLACEHOLDERS.items():
            path = path.replace(placeholder, value)
        found += [path + q for q in QUERIES.get(path, [""])]
    return sorted(set(found), key=lambda p: (p == "/healthz", p))  # health last: after the reads it reports on


async def sweep(snapshot: str, state_dir: str) -> dict[str, Any]:
    """{"statuses": {path: status}, "bodies": {path: text of a 5xx}, "healthz": its JSON,
    "metrics": {self-metric sample: value}, "answer": /recommend?workload=postgres's JSON}."""
    app = create_app(Settings(root=snapshot, state_dir=state_dir, model=False))
    out: dict[str, Any] = {"statuses": {}, "bodies": {}}
    async with TestClient(TestServer(app)) as client:
        for path in paths(app):
            resp = await client.get(path)
            text = await resp.text()
            out["statuses"][path] = resp.status
            if resp.status >= 500:
                out["bodies"][path] = text[:5000]
            if path == "/metrics":
                out["metrics"] = {m[0]: float(m[1]) for m in _SAMPLE.findall(text)}
            elif path == "/healthz":
                out["healthz"] = json.loads(text)
            elif path == "/recommend?workload=postgres":
                out["answer"] = json.loads(text)
    return out


if __name__ == "__main__":
    print(json.dumps(asyncio.run(sweep(sys.argv[1], sys.argv[2]))))
