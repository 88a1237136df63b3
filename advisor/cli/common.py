"""What every subcommand takes: a settings file and a host root (live, or a recorded snapshot)."""
from __future__ import annotations

import argparse
import asyncio

from advisor.config.settings import Settings, load_settings
from advisor.host.snapshot import collect_from_root
from advisor.hostmodel.facts import Host
from advisor.process.logs import setup_logging

QUIET_LEVELS = ("warning", "error")  # a configured level at least this quiet is kept without --verbose


def add_subcommand(sub: argparse._SubParsersAction, name: str, help_text: str) -> argparse.ArgumentParser:
    """A subcommand with --config and --root."""
    p = sub.add_parser(name, help=help_text)
    p.add_argument("--config", metavar="FILE", help="TOML settings file (default: /etc/zfs-advisor/config.toml)")
    p.add_argument("--root", metavar="DIR", help="read this host snapshot instead of the live host")
    return p


def add_printing_subcommand(sub: argparse._SubParsersAction, name: str, help_text: str) -> argparse.ArgumentParser:
    """A subcommand that prints an answer and exits: quiet on stderr unless asked."""
    p = add_subcommand(sub, name, help_text)
    p.add_argument("-v", "--verbose", action="store_true",
                   help="log on stderr at the configured log_level (default: warnings and errors only)")
    return p


def settings(args: argparse.Namespace, **overrides: object) -> Settings:
    """The settings for one command: file and environment, then its flags."""
    return load_settings(args.config, root=args.root, **overrides)


def command_settings(args: argparse.Namespace) -> Settings:
    """The settings of a command that prints and exits; its log goes to stderr as text, and only
    warnings and errors unless --verbose: the answer is on stdout, an INFO line beside it is noise."""
    config = settings(args)
    level = config.log_level if args.verbose or config.log_level in QUIET_LEVELS else "warning"
    setup_logging(level, "text")
    return config


def read_host(settings: Settings) -> Host:
    """Every fact about the host (or the snapshot) once."""
    return asyncio.run(collect_from_root(settings.root, settings.command_timeout_seconds)).host
