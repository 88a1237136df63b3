"""`zfs-advisor serve`: the HTTP service until SIGTERM/SIGINT; READY=1 to systemd once bound."""
from __future__ import annotations

import argparse
import asyncio
import logging
import signal

from aiohttp import web

from advisor import __version__, systemd
from advisor.api.errors import JsonErrorAppRunner
from advisor.app import create_app
from advisor.cli.common import add_subcommand, settings
from advisor.logs import setup_logging
from advisor.settings import DEFAULT_PORT
from advisor.settings import Settings

log = logging.getLogger("advisor")


def register(sub: argparse._SubParsersAction) -> None:
    p = add_subcommand(sub, "serve", "run the HTTP service (/metrics, /recommend, /healthz, /v1/...)")
    p.add_argument("--port", type=int, help=f"TCP port (default {DEFAULT_PORT})")
    p.add_argument("--listen", metavar="ADDRESS", help="address to bind (default 127.0.0.1)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    config = settings(args, port=args.port, listen_address=args.listen)
    setup_logging(config.log_level, config.log_format)
    return asyncio.run(_serve(create_app(config), config))


async def _serve(app: web.Application, settings: Settings) -> int:
    runner = JsonErrorAppRunner(app, handle_signals=False)  # aiohttp's parser errors as JSON 4xx too
    await runner.setup()
    site = web.TCPSite(runner, settings.listen_address, settings.port)
    try:
        await site.start()
    except OSError as exc:
        log.error("cannot listen on %s:%s: %s", settings.listen_address, settings.port, exc.strerror or exc)
        await runner.cleanup()
        return 1
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    log.info(
        "serving",
        extra={"address": settings.listen_address, "port": settings.port, "root": settings.root, "version": __version__},
    )
    systemd.notify("READY=1")
    await stop.wait()
    log.info("shutting down")
    await runner.cleanup()
    return 0
