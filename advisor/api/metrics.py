"""GET /metrics: the Prometheus exporter (text format 0.0.4), written by the app's FactsCollector.

Facts come from the app's FactsProvider: kstats and sysfs read for this
scrape, with the latest zpool/zfs output (refreshed in the background every
`commands_interval_seconds`), so a scrape normally forks nothing and N
concurrent scrapes share one read. When there is no command output yet, a
scrape waits for it at most `metrics_scrape_deadline_seconds` (or, if
shorter, 90% of the timeout Prometheus sends in
X-Prometheus-Scrape-Timeout-Seconds), then serves what there is and says so
(zfs_advisor_facts_stale 1). exporters/negotiation.py turns the text into
OpenMetrics and gzips it when the scrape asks for that.
"""
from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timezone

from aiohttp import web

from advisor.appkeys import ADVICE, EXPORT_OPTIONS, EXPORTER, FACTS, SETTINGS
from advisor.exporters.base import Scrape
from advisor.exporters.negotiation import negotiate
from advisor.facts import Host, ZfsInfo
from advisor.host.collect import Collection, CommandFacts, command_host

log = logging.getLogger(__name__)
routes = web.RouteTableDef()


async def warm(app: web.Application, commands: CommandFacts) -> None:
    """Render the command-built families of a new command output now, in a thread."""
    host = command_host(app[FACTS].files, commands)
    scrape = Scrape(host=host, options=app[EXPORT_OPTIONS], commands_generation=commands.finished_at)
    await asyncio.to_thread(app[EXPORTER].warm, scrape)


def deadline_seconds(configured: float, header: str | None) -> float:
    try:
        timeout = float(header) if header else None
    except ValueError:
        timeout = None
    return min(configured, 0.9 * timeout) if timeout and timeout > 0 else configured


@routes.get("/metrics")
async def get_metrics(request: web.Request) -> web.Response:
    app = request.app
    provider = app[FACTS]
    deadline = deadline_seconds(
        app[SETTINGS].metrics_scrape_deadline_seconds, request.headers.get("X-Prometheus-Scrape-Timeout-Seconds")
    )
    collection: Collection | None
    try:
        # the command wait gets 3/4 of the deadline: the rest is for reading kstats and rendering
        collection = await asyncio.wait_for(provider.get(wait_seconds=0.75 * deadline), deadline)
        stale = collection.stale
    except TimeoutError:
        collection, stale = provider.last, True
    except Exception:  # a collection that crashed: serve the last good one
        log.exception("facts collection failed")
        collection, stale = provider.last, True
    if collection is None:
        host = Host(
            collected_at=datetime.now(timezone.utc),
            zfs=ZfsInfo(present=False, reason="the first facts collection has not finished yet"),
        )
        collection = Collection(host)
    age = provider.age_seconds()
    scrape = Scrape(
        host=collection.host,
        options=app[EXPORT_OPTIONS],
        stale=stale,
        age_seconds=age,
        collections=provider.collections,
        command_runs=provider.command_runs,
        commands_generation=collection.commands_finished_at,
        source_durations=collection.durations,
        # the engine runs in a worker thread, as for /recommend (docs/architecture.md)
        recommendations=await asyncio.to_thread(app[ADVICE].for_host, collection.host, collection.commands_finished_at),
    )
    render = app[EXPORTER].render
    body, headers = await asyncio.to_thread(lambda: negotiate(render(scrape), request.headers))  # format, gzip
    return web.Response(body=body, headers=headers)
