"""`zfs-advisor snapshot DIR`: record everything the advisor reads, for replay with --root."""
from __future__ import annotations

import argparse
import asyncio

from advisor.cli.common import add_printing_subcommand, command_settings
from advisor.host.runner import CommandRunner
from advisor.host.snapshot import record_snapshot


def register(sub: argparse._SubParsersAction) -> None:
    p = add_printing_subcommand(sub, "snapshot", "record everything the advisor reads into DIR, for replay with --root")
    p.add_argument("directory", metavar="DIR", help="new or empty directory")
    p.add_argument("--note", help="free text stored in the manifest (how and why it was recorded)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    config = command_settings(args)
    manifest = asyncio.run(
        record_snapshot(args.directory, config.root, CommandRunner(config.command_timeout_seconds), args.note)
    )
    failed = sum(1 for c in manifest.commands if c.returncode != 0)
    print(
        f"recorded {len(manifest.files)} files and {len(manifest.commands)} commands "
        f"({failed} failed) from {manifest.hostname} (ZFS {manifest.zfs_version or 'absent'}) into {args.directory}"
    )
    return 0
