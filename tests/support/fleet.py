"""Sibling daemons for the fleet's tests (docs/fleet.md): the lab's measurements of a layout put in
probe stores as the prober stores them, and the real app's /metrics over each, served by plain
HTTP servers for a real Prometheus to scrape.

The host is the lab's recording of that layout (support.RECORDING, ssd-mirror2x2 on OpenZFS
2.3.2); the probe rows are the lab prior's runs of the same layout (advisor/model/data/
prior-zfs2.3.csv, docs/prior.md), one repeat per sibling: the lab measured each candidate twice
in one run, and each repeat stands for one sibling pool's probe.  Not a recording of a fleet of
hosts: one pool measured twice, so the siblings agree more than hosts would."""
from __future__ import annotations

import asyncio
from pathlib import Path

from aiohttp import web

from advisor.config.settings import Settings
from advisor.engine.loader import load_rulebook
from advisor.host.snapshot import collect_from_root
from advisor.model import answers
from advisor.model.dataset import cells, load_csv, samples
from advisor.service.app import create_app
from support import RECORDING

LAYOUT_CELL = "zfs2.3.2/ssd-mirror2x2/postgres/512M"


def store_sibling_probes(state_dir: Path, repeat: int, values: tuple[str, ...]) -> None:
    """A completed probe run of `values` (recordsize) on the recording's pool `tank`: the lab's
    repeat `repeat` of each."""
    host = asyncio.run(collect_from_root(str(RECORDING), 30.0)).host
    cell = cells(samples(load_csv()))[LAYOUT_CELL]
    run = [s for s in cell if s.obs.repeat == repeat and s.obs.parameter == "recordsize" and s.obs.value in values]
    answers._store_rows(str(state_dir), host, load_rulebook().workloads["postgres"], [run], answers.measured_rows())


async def exposition(http_client, state_dir: Path) -> str:
    """What the real app's /metrics says over the recording and that probe store."""
    client = await http_client(create_app(Settings(root=str(RECORDING), state_dir=str(state_dir))))
    return await (await client.get("/metrics")).text()


def serving(text: str, content_type: str = "text/plain; version=0.0.4") -> web.Application:
    """An app that answers every GET with `text` (a recorded /metrics, or a Prometheus API answer)."""
    async def handler(request: web.Request) -> web.Response:
        return web.Response(body=text.encode(), headers={"Content-Type": content_type})

    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    return app
