"""The fleet wired into the app when [fleet] prometheus_url is set (docs/fleet.md): the reader
runs in the background from start-up, and the model reads the siblings of a pool from its last
good view; /metrics says the view's age and the reader's failures."""
from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web

from advisor.api.appkeys import FLEET, MODEL
from advisor.config.settings import Settings
from advisor.evidence.pool_shape import pool_shape
from advisor.fleet.reader import FleetReader
from advisor.fleet.view import own_instances, siblings_for
from advisor.hostmodel.facts import Host
from advisor.hostmodel.pool_labels import pool_labels
from advisor.model.features import Observation


def install(app: web.Application, settings: Settings) -> None:
    if settings.fleet.prometheus_url is None:
        return
    reader = FleetReader(settings.fleet)
    app[FLEET] = reader
    own = own_instances(settings.fleet.instance)
    model = app[MODEL]

    def siblings(pool: str, workload: str, base: Observation, host: Host | None) -> Any:
        view = reader.current()
        facts = host.pool(pool) if host is not None else None
        if view is None or facts is None or host is None:
            return None
        descriptor = model.probes.pool(facts, host.disks)
        disks = [d for v in descriptor.get("vdevs") or [] for d in v.get("disks") or [] if d]
        labels = pool_labels(pool, pool_shape(descriptor), disks, host)
        labels.pop("pool")
        return siblings_for(view, labels, workload, base, own)

    model.siblings = siblings
    model.fleet_generation = lambda: getattr(reader.current(), "fetched_at", None)
    app.cleanup_ctx.append(_read_fleet)


async def _read_fleet(app: web.Application) -> AsyncIterator[None]:
    """The reader's loop, from start-up to shutdown; a reading under way is cancelled."""
    task = asyncio.create_task(app[FLEET].run(), name="fleet-reader")
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
