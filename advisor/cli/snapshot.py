"""`zfs-advisor snapshot DIR`: record everything the advisor reads, for replay with --root.

Exit codes: 0 recorded (a command that failed is named on stderr: its failure is recorded and
replayed as it happened, as a `zdb -C` timing out under load is in some of the lab's recordings);
1 every command failed (no zfs or zpool to run, or no permission: the recording holds none of
the pool facts it was made for) or the directory is not empty; 2 bad usage.
"""
from __future__ import annotations

import argparse
import asyncio
import shlex
import sys

from advisor.cli.common import add_printing_subcommand, command_settings
from advisor.host.runner import CommandRunner
from advisor.host.snapshot import Manifest, RecordedCommand, record_snapshot


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
    failed = [c for c in manifest.commands if c.returncode != 0]
    print(
        f"recorded {len(manifest.files)} files and {len(manifest.commands)} commands "
        f"({len(failed)} failed) from {manifest.hostname} (ZFS {manifest.zfs_version or 'absent'}) into {args.directory}"
    )
    return failure_report(manifest, failed)


def failure_report(manifest: Manifest, failed: list[RecordedCommand]) -> int:
    """The exit code of a recording whose `failed` commands are named on stderr."""
    for c in failed:
        print(f"zfs-advisor snapshot: {shlex.join(c.argv)} failed (exit {c.returncode}); recorded as it failed",
              file=sys.stderr)
    if failed and len(failed) == len(manifest.commands):
        print(f"zfs-advisor snapshot: all {len(failed)} commands failed: the recording holds no pool or dataset "
              "facts (are zfs and zpool installed, and is this run allowed to use them?)", file=sys.stderr)
        return 1
    return 0
