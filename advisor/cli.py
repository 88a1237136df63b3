"""zfs-advisor command line: serve | facts | snapshot (more subcommands register here).

Exit codes: 0 success, 1 the work failed, 2 bad usage or settings.
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

from aiohttp import web

from advisor import __version__, systemd
from advisor.engine import commands as engine_commands
from advisor.engine.loader import RulesError
from advisor.host.snapshot import SnapshotError, collect_from_root, record_snapshot
from advisor.logs import setup_logging
from advisor.report import facts_text
from advisor.settings import Settings, SettingsError, load_settings

log = logging.getLogger("advisor")


def _settings(args: argparse.Namespace, **overrides: object) -> Settings:
    return load_settings(getattr(args, "config", None), root=getattr(args, "root", None), **overrides)


def cmd_serve(args: argparse.Namespace) -> int:
    settings = _settings(args, port=args.port, listen_address=args.listen)
    setup_logging(settings.log_level, settings.log_format)
    from advisor.app import create_app

    return asyncio.run(_serve(create_app(settings), settings))


async def _serve(app: web.Application, settings: Settings) -> int:
    runner = web.AppRunner(app, handle_signals=False)
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


def cmd_facts(args: argparse.Namespace) -> int:
    settings = _settings(args)
    setup_logging(settings.log_level, "text")
    collection = asyncio.run(collect_from_root(settings.root, settings.command_timeout_seconds))
    if args.json:
        sys.stdout.write(collection.host.model_dump_json(indent=2) + "\n")
    else:
        sys.stdout.write(facts_text(collection.host))
    return 0


def cmd_snapshot(args: argparse.Namespace) -> int:
    settings = _settings(args)
    setup_logging(settings.log_level, "text")
    from advisor.host.runner import CommandRunner

    manifest = asyncio.run(
        record_snapshot(args.directory, settings.root, CommandRunner(settings.command_timeout_seconds), args.note)
    )
    failed = sum(1 for c in manifest.commands if c.returncode != 0)
    print(
        f"recorded {len(manifest.files)} files and {len(manifest.commands)} commands "
        f"({failed} failed) from {manifest.hostname} (ZFS {manifest.zfs_version or 'absent'}) into {args.directory}"
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="zfs-advisor", description="Tuning advisor and exporter for OpenZFS.")
    parser.add_argument("--version", action="version", version=f"zfs-advisor {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--config", metavar="FILE", help="TOML settings file (default: /etc/zfs-advisor/config.toml)")
        p.add_argument("--root", metavar="DIR", help="read this host snapshot instead of the live host")

    p = sub.add_parser("serve", help="run the HTTP service (/metrics, /recommend, /healthz, /v1/...)")
    common(p)
    p.add_argument("--port", type=int, help="TCP port (default 9135)")
    p.add_argument("--listen", metavar="ADDRESS", help="address to bind (default 127.0.0.1)")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("facts", help="print what the advisor knows about this host")
    common(p)
    p.add_argument("--json", action="store_true", help="the typed facts as JSON")
    p.set_defaults(func=cmd_facts)

    p = sub.add_parser("snapshot", help="record everything the advisor reads into DIR, for replay with --root")
    common(p)
    p.add_argument("directory", metavar="DIR", help="new or empty directory")
    p.add_argument("--note", help="free text stored in the manifest (how and why it was recorded)")
    p.set_defaults(func=cmd_snapshot)

    engine_commands.register(sub, common)  # recommend, verify
    from advisor.probe import cli as probe_cli

    probe_cli.add_parser(sub)  # probe
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except SettingsError as exc:
        print(f"zfs-advisor: {exc}", file=sys.stderr)
        return 2
    except RulesError as exc:
        print(f"zfs-advisor: broken rules: {exc}", file=sys.stderr)
        return 2
    except SnapshotError as exc:
        print(f"zfs-advisor: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
