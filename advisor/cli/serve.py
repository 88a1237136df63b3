"""`zfs-advisor serve`: the HTTP service until SIGTERM/SIGINT; READY=1 to systemd once bound;
SIGHUP reloads the configuration (advisor/service/reload.py)."""
from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import time
from collections.abc import Callable, Mapping

from aiohttp import web

from advisor import __version__
from advisor.api.appkeys import WEB_CONFIG
from advisor.cli.common import add_subcommand, settings
from advisor.config.settings import DEFAULT_PORT, Settings
from advisor.process import systemd
from advisor.process.logs import setup_logging
from advisor.process.memory import keep_big_blocks_apart
from advisor.server.connections import GuardedSite
from advisor.server.errors import JsonErrorAppRunner, loop_exception_handler
from advisor.server.limits import favour_the_event_loop
from advisor.server.stopping import REQUESTS_GRACE_SECONDS, exit_by_deadline
from advisor.service.app import create_app
from advisor.service.reload import CoalescedReloads, reload
from advisor.store.statedir import report_state_dir

log = logging.getLogger("advisor")

# A test hook (docs/deploy.md): wedge the event loop this many seconds after READY=1, so that a
# test can watch systemd's watchdog restart the service. Honoured only together with the second
# variable set to exactly WEDGE_CONSENT: one variable alone, or any other value, does nothing.
WEDGE_AFTER = "ZFS_ADVISOR_TEST_WEDGE_AFTER"
WEDGE_GUARD = "ZFS_ADVISOR_TEST_HOOKS"
WEDGE_CONSENT = "wedge-the-event-loop"


def register(sub: argparse._SubParsersAction) -> None:
    p = add_subcommand(sub, "serve", "run the HTTP service (/metrics, /recommend, /healthz, /v1/...)")
    p.add_argument("--port", type=int, help=f"TCP port (default {DEFAULT_PORT})")
    p.add_argument("--listen", metavar="ADDRESS", help="address to bind (default 127.0.0.1)")
    p.add_argument("--web.config.file", dest="web_config_file", metavar="FILE",
                   help="TLS and basic auth, in node_exporter's web config format (docs/security.md)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    def load() -> Settings:  # the config file and environment, then this command's flags: at start and on SIGHUP
        return settings(args, port=args.port, listen_address=args.listen, web_config_file=args.web_config_file)

    config = load()
    setup_logging(config.log_level, config.log_format)
    report_state_dir(config.state_dir, log)  # unwritable: served read-only, said once here
    keep_big_blocks_apart()  # bodies of megabytes go back to the kernel when dropped (advisor/server/bodies.py)
    favour_the_event_loop()  # a thread holding the GIL yields it to the loop within 0.5 ms
    return asyncio.run(_serve(create_app(config), config, load))


async def _serve(app: web.Application, settings: Settings, load: Callable[[], Settings] | None = None) -> int:
    asyncio.get_running_loop().set_exception_handler(loop_exception_handler)
    # aiohttp's parser errors as JSON 4xx too; a read timeout; connections counted at accept() and
    # capped below the file-descriptor limit (advisor/server/connections.py, docs/reliability.md)
    runner = JsonErrorAppRunner(app, handle_signals=False, shutdown_timeout=REQUESTS_GRACE_SECONDS)
    await runner.setup()
    web_config = app[WEB_CONFIG]
    ssl_context = web_config.ssl_context()
    site = GuardedSite(runner, settings.listen_address, settings.port, ssl_context=ssl_context)
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
    if load is not None:  # without it SIGHUP would end the process, and systemd counts that as a clean exit
        loop.add_signal_handler(signal.SIGHUP, CoalescedReloads(lambda: _reload(app, load, ssl_context)).request)
    log.info(
        "serving",
        extra={"address": settings.listen_address, "port": settings.port, "root": settings.root, "version": __version__,
               "tls": web_config.tls is not None, "basic_auth": web_config.basic_auth},
    )
    systemd.notify("READY=1")
    if (delay := wedge_after(os.environ)) is not None:
        loop.call_later(delay, _wedge)
    await stop.wait()
    log.info("shutting down")
    began = time.monotonic()
    exit_by_deadline()  # within TimeoutStopSec, whatever still runs (advisor/server/stopping.py)
    await runner.cleanup()
    log.info("stopped", extra={"seconds": round(time.monotonic() - began, 3)})
    return 0


def _reload(app: web.Application, load: Callable[[], Settings], ssl_context) -> None:
    """SIGHUP: apply what can change now, log what needs a restart; the service goes on either way."""
    systemd.notify(f"RELOADING=1\nMONOTONIC_USEC={time.monotonic_ns() // 1000}")
    try:
        done = reload(app, load, ssl_context)
    except Exception:  # a reload must never take the service down
        log.exception("reload failed; the running configuration is kept")
        done = None
    if done is not None and done.refused:
        log.error("reload refused, the running configuration is kept: %s", done.refused)
    elif done is not None:
        for kept in done.kept:
            log.warning("reload: %s changed but cannot change while running: kept", kept)
        log.info("reloaded: %s", ", ".join(done.applied) or "nothing to change", extra={"applied": done.applied})
    systemd.notify("READY=1")


def wedge_after(environ: Mapping[str, str]) -> float | None:
    """Seconds after READY=1 at which the test hook wedges the event loop, or None (the default)."""
    value = environ.get(WEDGE_AFTER)
    if value is None:
        return None
    if environ.get(WEDGE_GUARD) != WEDGE_CONSENT:
        log.warning("%s is ignored: test hooks are off (docs/deploy.md)", WEDGE_AFTER)
        return None
    try:
        delay = float(value)
    except ValueError:
        log.warning("%s=%r is not a number of seconds: ignored", WEDGE_AFTER, value)
        return None
    log.warning("test hook: the event loop will wedge %s s after start-up (%s)", delay, WEDGE_AFTER)
    return max(delay, 0.0)


def _wedge() -> None:
    """Block the event loop for good: no request, no WATCHDOG=1, no SIGTERM handling."""
    log.warning("test hook: wedging the event loop now")
    while True:
        time.sleep(3600)
