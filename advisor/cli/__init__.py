"""zfs-advisor command line: one module per subcommand, each adding itself with `register`.

Exit codes: 0 success, 1 the work failed, 2 bad usage or settings.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sqlite3
import sys

# One BLAS thread, unless the environment says otherwise; set before numpy is first imported, as
# OpenBLAS reads it when it loads. The model's matrices are small (hundreds of rows): its threads
# spun waiting for each other, the 12 Cholesky factorisations the model then made at load took 0.7-1.4 s of CPU instead of 0.16 s
# on a busy 2-core host, and in the service they took that CPU from the event loop.
for _threads in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_threads, "1")

from advisor import __version__
from advisor.config.settings import SettingsError
from advisor.engine.loader import RulesError
from advisor.host.snapshot import SnapshotError

# Each in its module advisor.cli.<name>.  Only the command that runs is imported: the others
# would bring the HTTP stack and more, seconds of start-up on a small or emulated host.
SUBCOMMANDS = ("serve", "facts", "snapshot", "list", "recommend", "verify", "probe", "profile", "evaluate", "plan")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole parser, or (`command`) that subcommand's in full and the others by name only."""
    parser = argparse.ArgumentParser(prog="zfs-advisor", description="Tuning advisor and exporter for OpenZFS.")
    parser.add_argument("--version", action="version", version=f"zfs-advisor {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in SUBCOMMANDS:
        if command in (None, name):
            importlib.import_module(f"advisor.cli.{name}").register(sub)
        else:
            sub.add_parser(name)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command = argv[0] if argv and argv[0] in SUBCOMMANDS else None  # otherwise: help or an error
    args = build_parser(command).parse_args(argv)
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
    except sqlite3.Error as exc:  # a database that opened but is damaged past its first pages
        print(f"zfs-advisor: the state database cannot be read: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
