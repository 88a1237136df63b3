"""The aiohttp application factory: the one place services are wired together."""
from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import AsyncIterator

from aiohttp import web

from advisor import systemd
from advisor.api import facts, health, metrics
from advisor.api import recommend
from advisor.api.errors import error_middleware
from advisor.appkeys import FACTS, SETTINGS
from advisor.host.provider import FactsProvider
from advisor.settings import Settings

log = logging.getLogger(__name__)


def create_app(settings: Settings) -> web.Application:
    app = web.Application(middlewares=[error_middleware])
    app[SETTINGS] = settings
    app[FACTS] = FactsProvider(
        settings.root, settings.command_timeout_seconds, settings.facts_max_age_seconds,
        settings.commands_interval_seconds,
    )
    app.router.add_get("/healthz", health.healthz)
    app.router.add_get("/v1/facts", facts.get_facts)
    recommend.setup(app, settings.rules_dir)  # loads the rules: a broken rule stops start-up here
    metrics.setup(app)
    app.cleanup_ctx.append(_systemd_lifecycle)
    app.cleanup_ctx.append(_background_refresh)
    return app


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
