"""The aiohttp application factory: the one place services are wired together.

It builds every resource (facts provider, rule book, advice, exporter), puts
each on the app under its typed key (advisor.appkeys), adds every api
module's routes and starts the background work in cleanup contexts. Nothing
else adds routes or resources, so nothing depends on an order of set-up calls.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import AsyncIterator

from aiohttp import web

from advisor import systemd
from advisor.api import facts, health, metrics, openapi, pools, probes, recommend, workloads
from advisor.api.auth import token_middleware
from advisor.api.errors import error_middleware
from advisor.appkeys import ADVICE, EXPORT_OPTIONS, EXPORTER, FACTS, RULEBOOK, SETTINGS
from advisor.engine.advice import Advice
from advisor.engine.loader import RuleBook, load_rulebook
from advisor.exporters.base import ExportOptions
from advisor.exporters.collector import FactsCollector
from advisor.host.provider import FactsProvider
from advisor.settings import Settings, SettingsError

ROUTES = (health.routes, facts.routes, recommend.routes, workloads.routes, pools.routes, probes.routes, openapi.routes,
          metrics.routes)

log = logging.getLogger(__name__)


def create_app(settings: Settings) -> web.Application:
    """The service for `settings`; a broken rule (RulesError) or a `workloads` entry naming no
    workload (SettingsError) stops start-up here."""
    book = load_rulebook(settings.rules_dir)
    check_workloads_setting(settings.workloads, book)
    app = web.Application(middlewares=[error_middleware, token_middleware])
    app[SETTINGS] = settings
    app[FACTS] = FactsProvider(
        settings.root, settings.command_timeout_seconds, settings.facts_max_age_seconds,
        settings.commands_interval_seconds,
    )
    app[RULEBOOK] = book
    app[ADVICE] = Advice(book, settings.workloads)
    app[EXPORTER] = FactsCollector()
    app[EXPORT_OPTIONS] = ExportOptions.from_settings(settings)
    for routes in ROUTES:
        app.add_routes(routes)
    app.cleanup_ctx.append(_systemd_lifecycle)
    app.cleanup_ctx.append(_background_refresh)
    return app


def check_workloads_setting(workloads: dict[str, str], book: RuleBook) -> None:
    for dataset, workload in workloads.items():
        if workload not in book.workloads:
            raise SettingsError(f"workloads: {dataset} = {workload!r} is not a workload; valid: "
                                + ", ".join(sorted(book.workloads)))


async def _background_refresh(app: web.Application) -> AsyncIterator[None]:
    """zpool/zfs run on a timer, not on the scrape path (advisor.host.provider); after each
    run the exporter renders what it builds from their output."""
    task = asyncio.create_task(app[FACTS].run(after_refresh=lambda commands: metrics.warm(app, commands)))
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def _systemd_lifecycle(app: web.Application) -> AsyncIterator[None]:
    """WATCHDOG=1 while the event loop is alive, STOPPING=1 at exit (READY=1 is sent
    by `serve` once the socket is bound)."""
    interval = systemd.watchdog_interval_seconds()
    pinger = asyncio.create_task(_watchdog(interval)) if interval else None
    yield
    systemd.notify("STOPPING=1")
    if pinger:
        pinger.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await pinger


async def _watchdog(interval: float) -> None:
    while True:
        systemd.notify("WATCHDOG=1")
        await asyncio.sleep(interval)
