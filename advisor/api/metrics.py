"""GET /metrics: the Prometheus exporter (text format 0.0.4), written by the app's MetricsRenderer.

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
import sqlite3

from aiohttp import web

from advisor.api.appkeys import BODIES, CHANGES, EXPORTER, FACTS, FLEET, RECOGNISER, RUNTIME, SETTINGS
from advisor.exporters.base import Scrape
from advisor.exporters.collector import MetricsRenderer
from advisor.exporters.negotiation import response_headers, variant
from advisor.hostmodel.facts import Host
from advisor.process.logs import RateLimitedLog
from advisor.server.bodies import Body, body_response
from advisor.store.db import StoreError
from advisor.store.probe_stats import ProbeStats, probe_stats
from advisor.store.probes import read_existing
from advisor.store.reader_health import rows_skipped

log = logging.getLogger(__name__)
# said again on every request while it lasts: once a minute, with a count (advisor/process/logs.py)
_repeated = RateLimitedLog(log, interval=60.0)
routes = web.RouteTableDef()


async def warm(app: web.Application, host: Host, commands_generation: float) -> None:
    """Render the command-built families of a new command output (`host`, as the commands made
    it) now, in a thread."""
    scrape = Scrape(host=host, options=app[RUNTIME].export_options, commands_generation=commands_generation)
    await asyncio.to_thread(app[EXPORTER].warm, scrape)


def deadline_seconds(configured: float, header: str | None) -> float:
    try:
        timeout = float(header) if header and len(header) <= 32 else None  # Prometheus sends e.g. "10"
    except ValueError:
        timeout = None
    return min(configured, 0.9 * timeout) if timeout and timeout > 0 else configured


async def _probe_stats(app: web.Application) -> ProbeStats | None:
    """The probe store's counts and last results, when there is a store (never created here); when it
    cannot be read, why (its collectors report failure, exporters/probes.py)."""
    settings = app[SETTINGS]
    try:
        return await asyncio.to_thread(
            read_existing, settings.state_dir, lambda store: probe_stats(store, settings.profiler) if store else None)
    except (StoreError, sqlite3.Error) as exc:  # the other families go on; the log says why
        _repeated.log(logging.WARNING, "probe store", "probe store under %s cannot be read for /metrics: %s",
                      settings.state_dir, exc)
        return ProbeStats(unreadable=f"the probe store under {settings.state_dir} cannot be read: {exc}")


@routes.get("/metrics")
async def get_metrics(request: web.Request) -> web.Response:
    app = request.app
    provider = app[FACTS]
    deadline = deadline_seconds(
        app[SETTINGS].metrics_scrape_deadline_seconds, request.headers.get("X-Prometheus-Scrape-Timeout-Seconds")
    )
    collection, stale = await provider.for_scrape(deadline)
    openmetrics, gzip_it = variant(request.headers)
    bodies = app[BODIES].metrics
    runtime = app[RUNTIME]  # as it is now: a reload while this renders applies from the next scrape
    changes = app[CHANGES]
    recognised = app[RECOGNISER].exported()  # the body's key and its content: one reading
    fleet = app[FLEET].status() if FLEET in app else None  # the same

    async def encoded() -> Body:  # only the variant asked for is kept: text and OpenMetrics are 16 MB each
        scrape = Scrape(
            host=collection.host,
            options=runtime.export_options,
            stale=stale,
            age_seconds=provider.age_seconds(),
            collections=provider.collections,
            command_runs=provider.command_runs,
            commands_generation=collection.commands_finished_at,
            source_durations=collection.durations,
            # the engine runs in a worker thread, as for /recommend (docs/architecture.md)
            recommendations=await asyncio.to_thread(runtime.advice.for_host, collection.host,
                                                    collection.commands_finished_at),
            workload_datasets=runtime.advice.datasets,
            probes=await _probe_stats(app),
            changes=tuple(changes.exported()),
            recognised=recognised,
            store_rows_skipped=tuple(rows_skipped().items()),
            fleet=fleet,
        )
        return await asyncio.to_thread(_rendered, app[EXPORTER], scrape, openmetrics, gzip_it)

    body = await bodies.get(collection, (stale, openmetrics, gzip_it, runtime.generation, changes.generation,
                                          recognised, fleet),
                             encoded)
    return body_response(body, response_headers(openmetrics, gzip_it))


def _rendered(exporter: MetricsRenderer, scrape: Scrape, openmetrics: bool, gzip_it: bool) -> Body:
    """The variant asked for: the text kept deflated (advisor/server/deflated.py), sent inflated a
    segment at a time to a client that wants it plain, or as it is in one gzip member; the
    whole text is never held at once, and the segments of unchanged collectors are reused."""
    body = exporter.encoded(scrape, openmetrics)
    return body.gzip_parts() if gzip_it else body
