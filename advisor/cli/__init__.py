"""zfs-advisor command line: one module per subcommand, each adding itself with `register`.

Exit codes: 0 success, 1 the work failed, 2 bad usage or settings.
"""
from __future__ import annotations

import argparse
import sys

from advisor import __version__
from advisor.cli import evaluate, facts, probe, profile, recommend, serve, snapshot, verify
from advisor.engine.loader import RulesError
from advisor.host.snapshot import SnapshotError
from advisor.settings import SettingsError

SUBCOMMANDS = (serve, facts, snapshot, recommend, verify, probe, profile, evaluate)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="zfs-advisor", description="Tuning advisor and exporter for OpenZFS.")
    parser.add_argument("--version", action="version", version=f"zfs-advisor {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in SUBCOMMANDS:
        command.register(sub)
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
