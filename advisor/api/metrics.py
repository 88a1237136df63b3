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

from advisor.api.recommend import RULEBOOK
from advisor.appkeys import FACTS, SETTINGS
from advisor.engine.loader import RuleBook
from advisor.engine.models import Recommendation
from advisor.engine.service import recommend
from advisor.facts import Host, ZfsInfo
from advisor.host.collect import Collection, CommandFacts, command_host
from advisor.settings import SettingsError
from exporters.base import ExportOptions, Scrape
from exporters.collector import FactsCollector
from exporters.negotiation import negotiate

log = logging.getLogger(__name__)
EXPORTER = web.AppKey("metrics_exporter", FactsCollector)
OPTIONS = web.AppKey("metrics_options", ExportOptions)


def setup(app: web.Application) -> None:
    """Route /metrics and give the app its exporter (after recommend.setup: it needs the rules)."""
    book = app[RULEBOOK]
    for dataset, workload in app[SETTINGS].workloads.items():
        if workload not in book.workloads:
            raise SettingsError(f"workloads: {dataset} = {workload!r} is not a workload; valid: "
                                + ", ".join(sorted(book.workloads)))
    app[ADVICE] = Advice()
    app[EXPORTER] = FactsCollector()
    app[OPTIONS] = ExportOptions.from_settings(app[SETTINGS])
    app.router.add_get("/metrics", get_metrics)


class Advice:
    """The engine's advice for the datasets in the `workloads` setting, computed once per command run."""

    def __init__(self) -> None:
        self._generation: float | None = None
        self._advice: tuple[tuple[str, Recommendation], ...] = ()

    async def for_collection(
        self, collection: Collection, book: RuleBook, workloads: dict[str, str]
    ) -> tuple[tuple[str, Recommendation], ...]:
        generation = collection.commands_finished_at
        if not workloads or generation is None:
            return ()
        if generation != self._generation:
            self._advice = await asyncio.to_thread(advise, collection.host, book, workloads)
            self._generation = generation
        return self._advice


ADVICE = web.AppKey("metrics_advice", Advice)


def advise(host: Host, book: RuleBook, workloads: dict[str, str]) -> tuple[tuple[str, Recommendation], ...]:
    advice: list[tuple[str, Recommendation]] = []
    for dataset, workload in sorted(workloads.items()):
        if host.dataset(dataset) is None:
            continue  # not on this host (yet): nothing to advise
        try:
            response = recommend(host, book, workload, dataset=dataset, now=host.collected_at)
        except Exception:  # the exporter goes on without this dataset's advice; the log says why
            log.exception("recommendations for %s (%s) failed", dataset, workload)
            continue
        advice += [(workload, r) for r in response.recommendations]
    return tuple(advice)


async def warm(app: web.Application, commands: CommandFacts) -> None:
    """Render the command-built families of a new command output now, in a thread."""
    host = command_host(app[FACTS].files, commands)
    scrape = Scrape(host=host, options=app[OPTIONS], commands_generation=commands.finished_at)
    await asyncio.to_thread(app[EXPORTER].warm, scrape)


def deadline_seconds(configured: float, header: str | None) -> float:
    try:
        timeout = float(header) if header else None
    except ValueError:
        timeout = None
    return min(configured, 0.9 * timeout) if timeout and timeout > 0 else configured


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
        options=app[OPTIONS],
        stale=stale,
        age_seconds=age,
        collections=provider.collections,
        command_runs=provider.command_runs,
        commands_generation=collection.commands_finished_at,
        source_durations=collection.durations,
        recommendations=await app[ADVICE].for_collection(collection, app[RULEBOOK], app[SETTINGS].workloads),
    )
    render = app[EXPORTER].render
    body, headers = await asyncio.to_thread(lambda: negotiate(render(scrape), request.headers))  # format, gzip
    return web.Response(body=body, headers=headers)
