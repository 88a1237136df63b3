"""`zfs-advisor facts`: what the advisor knows about this host, as text or typed JSON."""
from __future__ import annotations

import argparse
import sys

from advisor.cli.common import add_printing_subcommand, command_settings, read_host
from advisor.cli.facts_text import facts_text


def register(sub: argparse._SubParsersAction) -> None:
    p = add_printing_subcommand(sub, "facts", "print what the advisor knows about this host")
    p.add_argument("--json", action="store_true", help="the typed facts as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    host = read_host(command_settings(args))
    sys.stdout.write(host.model_dump_json(indent=2) + "\n" if args.json else facts_text(host))
    return 0
