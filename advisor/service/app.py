"""The aiohttp application factory: the one place services are wired together.

It builds every resource (facts provider, rule book, advice, exporter), puts
each on the app under its typed key (advisor.api.appkeys), adds every api
module's routes and starts the background work in cleanup contexts. Nothing
else adds routes or resources, so nothing depends on an order of set-up calls.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator

from aiohttp import web

from advisor.answering.answerer import Answerer
from advisor.answering.exported_advice import Advice
from advisor.api import (
    changes,
    efficiency,
    facts,
    health,
    metrics,
    openapi,
    page,
    plan,
    pools,
    probes,
    recommend,
    workloads,
)
from advisor.api.appkeys import (
    ANSWERER,
    ANSWERS,
    BODIES,
    CHANGES,
    EXPORTER,
    FACTS,
    LIMITER,
    MODEL,
    OPENAPI_JSON,
    PASSWORDS,
    RECOGNISER,
    RULEBOOK,
    RUNTIME,
    SETTINGS,
    WEB_CONFIG,
)
from advisor.api.auth import auth_middleware
from advisor.api.runtime import Runtime, client_ca_digest
from advisor.changes.detect import tracked
from advisor.changes.tracker import ChangeTracker
from advisor.config.settings import Settings, SettingsError
from advisor.config.webconfig import check_exposure, load_web_config
from advisor.engine.answer_cache import AnswerCache
from advisor.engine.loader import RuleBook, load_rulebook
from advisor.exporters.base import ExportOptions
from advisor.exporters.collector import MetricsRenderer
from advisor.host.collect import CommandFacts
from advisor.host.facts_provider import FactsProvider
from advisor.model.regression_model import build_model
from advisor.process import systemd
from advisor.process.memory import release_freed_memory
from advisor.recognise.signature import signatures
from advisor.recognise.window import Recogniser
from advisor.server.bodies import Bodies
from advisor.server.body import body_middleware
from advisor.server.errors import error_middleware
from advisor.server.limits import HeapFreezer, WorkLimiter
from advisor.server.passwords import PasswordChecks
from advisor.service import fleet

ROUTES = (health.routes, facts.routes, recommend.routes, workloads.routes, pools.routes, probes.routes, openapi.routes,
          metrics.routes, plan.routes, page.routes, efficiency.routes, changes.routes)

log = logging.getLogger(__name__)


def create_app(settings: Settings) -> web.Application:
    """The service for `settings`; a broken rule (RulesError), a `workloads` entry naming no
    workload or an unusable web config file (SettingsError) stops start-up here."""
    book = load_rulebook(settings.rules_dir)
    check_workloads_setting(settings.workloads, book)
    web_config = load_web_config(settings.web_config_file)
    check_exposure(settings, web_config)
    limiter = WorkLimiter()
    # a request's body arrives before it takes a work slot (advisor/server/body.py)
    app = web.Application(middlewares=[error_middleware, auth_middleware, body_middleware, limiter.middleware()])
    app[SETTINGS] = settings
    app[WEB_CONFIG] = web_config
    app[PASSWORDS] = PasswordChecks()
    app[LIMITER] = limiter
    app[BODIES] = Bodies()
    app[ANSWERS] = AnswerCache()
    app[FACTS] = FactsProvider(
        settings.root, settings.command_timeout_seconds, settings.facts_max_age_seconds,
        settings.commands_interval_seconds,
    )
    app[RULEBOOK] = book
    app[MODEL] = build_model(settings.state_dir, book, enabled=settings.model)
    app[EXPORTER] = MetricsRenderer()
    app[CHANGES] = ChangeTracker(tracked(book), settings.state_dir, settings.changes_window_seconds)
    app[RECOGNISER] = Recogniser(signatures(book.workloads))
    app[ANSWERER] = Answerer(book, settings.state_dir, app[MODEL], app[RECOGNISER].pools_busy)
    app[OPENAPI_JSON] = openapi.openapi_json(book)
    app[RUNTIME] = Runtime(ExportOptions.from_settings(settings),
                           Advice(app[ANSWERER], settings.workloads),
                           client_ca_digest(web_config))
    for routes in ROUTES:
        app.add_routes(routes)
    app.cleanup_ctx.append(_systemd_lifecycle)
    app.cleanup_ctx.append(_password_checks)
    app.cleanup_ctx.append(_background_refresh)
    app.cleanup_ctx.append(_fit_model)
    fleet.install(app, settings)
    return app


def check_workloads_setting(workloads: dict[str, str], book: RuleBook) -> None:
    for dataset, workload in workloads.items():
        if workload not in book.workloads:
            raise SettingsError(f"workloads: {dataset} = {workload!r} is not a workload; valid: "
                                + ", ".join(sorted(book.workloads)))


async def _background_refresh(app: web.Application) -> AsyncIterator[None]:
    """zpool/zfs run on a timer, not on the scrape path (advisor.host.facts_provider); after each
    run the exporter renders what it builds from their output."""
    heap = HeapFreezer()
    await asyncio.to_thread(app[CHANGES].load)

    async def after_refresh(commands: CommandFacts) -> None:
        # The collection first (the change tracker's sample, which requests share), then the
        # exporter's render: rendering first made the first /recommend after start-up wait for it
        # too (at 10,000 datasets 0.45 s of 2.5 s of CPU); a scrape before the render renders alone.
        await _observe_changes(app, commands)
        await metrics.warm(app, app[FACTS].command_host(commands), commands.finished_at)
        await asyncio.to_thread(release_freed_memory)  # the parse's and the render's temporaries
        heap.freeze()  # the new facts are long-lived: out of the full GC passes (advisor/server/limits.py)

    task = asyncio.create_task(app[FACTS].run(after_refresh=after_refresh))
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def _observe_changes(app: web.Application, commands: CommandFacts) -> None:
    """Each command refresh is one sample of the change tracker: the collection made of it (kstats
    read now, or by a request that already combined them with this output), which requests then
    share (advisor.host.facts_provider): no collection more than there would have been."""
    provider = app[FACTS]
    try:
        last = provider.last
        if last is not None and last.commands_finished_at == commands.finished_at:
            collection = last
        else:
            collection = await provider.get(max_age_seconds=0)
        await asyncio.to_thread(app[CHANGES].observe, collection.host, app[RUNTIME].advice,
                                collection.commands_finished_at)
        await asyncio.to_thread(app[RECOGNISER].observe, collection.host, time.monotonic())
    except Exception:  # the exporter and the API go on without this sample; the log says why
        log.exception("change tracking failed for this collection")


# How long a stop waits for a fit still under way: on a real host a fit takes seconds and ends
# cleanly; in a slow VM it may take minutes, and TimeoutStopSec is 30 s.
FIT_STOP_WAIT_SECONDS = 10.0


async def _fit_model(app: web.Application) -> AsyncIterator[None]:
    """The regression model is fitted after start-up in a thread of its own (answers that consult
    it wait for the fit, `ModelProvider.status`).  A daemon thread, not the loop's executor: a
    fit cannot be interrupted, and asyncio waits for its executor's threads at exit without a
    limit (in a slow VM that ran past TimeoutStopSec); a stop waits FIT_STOP_WAIT_SECONDS at most."""
    app[MODEL].begin()
    fit = threading.Thread(target=app[MODEL].fit, name="model-fit", daemon=True)
    fit.start()
    yield
    await asyncio.to_thread(fit.join, FIT_STOP_WAIT_SECONDS)


async def _password_checks(app: web.Application) -> AsyncIterator[None]:
    """The bcrypt thread goes with the app (a check under way is not waited for)."""
    yield
    app[PASSWORDS].close()


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
