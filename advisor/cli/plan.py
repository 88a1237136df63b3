"""`zfs-advisor plan`: candidate pool layouts for a set of disks, each with its predicted usable
capacity, sequential bandwidth, random IOPS and fault tolerance (docs/planner.md).

The disks are given by their numbers (--disks --size --seq --iops), or measured: --pool P takes
the member disks of P as its stored `probe --efficiency` run read them.

Exit codes: 0 done, 2 bad input or no stored run for the pool.
"""
from __future__ import annotations

import argparse
import sys

from advisor.config.settings import load_settings
from advisor.engine.units import format_size
from advisor.layout.planned_disks import PlanInputError, given_disks, measured_disks, parse_block
from advisor.layout.predict import LayoutPrediction, PlanResponse, plan
from advisor.store.probes import read_existing


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plan", help="candidate pool layouts for a set of disks: capacity, bandwidth, IOPS, "
                                    "fault tolerance")
    p.add_argument("--disks", metavar="N", help="how many disks (all alike)")
    p.add_argument("--size", metavar="SIZE", help="each disk's size: 4T or 4TB = 4*10^12 bytes, 3.6TiB")
    p.add_argument("--seq", metavar="RATE", help="each disk's sequential read rate, bytes/s: 200M = 200 MB/s")
    p.add_argument("--write-seq", metavar="RATE", help="sequential write rate (default: as --seq)")
    p.add_argument("--iops", metavar="N", help="each disk's random read IOPS at small blocks")
    p.add_argument("--write-iops", metavar="N", help="random write IOPS (default: as --iops)")
    p.add_argument("--media", help="hdd, ssd, nvme (shown, not used in the arithmetic)")
    p.add_argument("--ashift", help="the pool's ashift (default 12: 4K sectors)")
    p.add_argument("--recordsize", default="128K", help="block size of the data, for capacity and "
                                                        "sequential writes (default 128K)")
    p.add_argument("--block", default="4K", help="random I/O size, with a recordsize to match (default 4K)")
    p.add_argument("--pool", metavar="P", help="take the disks of pool P as its stored `probe --efficiency` "
                                               "run measured them (sizes, raw read rates, ashift)")
    p.add_argument("--state-dir", metavar="DIR", help="--pool: where the probe database lives (default: "
                                                      "the settings' state_dir)")
    p.add_argument("--config", metavar="FILE", help="TOML settings file (state_dir is read from it)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def _disks(args: argparse.Namespace):
    if args.pool:
        state_dir = args.state_dir or load_settings(args.config).state_dir
        report = read_existing(state_dir, lambda store: store.efficiency(args.pool) if store else None)
        if report is None:
            raise PlanInputError(f"no `probe --efficiency` run of pool {args.pool!r} is stored in {state_dir}; run "
                                 f"`zfs-advisor probe --pool {args.pool} --efficiency`, or give --disks --size --seq")
        return measured_disks(report, args.pool, args.iops, args.write_iops)
    return given_disks(args.disks, args.size, args.seq, args.iops, args.write_seq, args.write_iops, args.media,
                       args.ashift)


def run(args: argparse.Namespace) -> int:
    try:
        response = plan(_disks(args), parse_block(args.recordsize, "recordsize"), parse_block(args.block, "block"))
    except PlanInputError as exc:
        valid = f" (valid: {', '.join(exc.valid)})" if exc.valid else ""
        print(f"zfs-advisor plan: {exc.reason}{valid}", file=sys.stderr)
        return 2
    if args.json:
        sys.stdout.write(response.model_dump_json(indent=2) + "\n")
    else:
        sys.stdout.write("\n".join(table_lines(response)) + "\n")
    return 0


def _rate(value: float) -> str:
    return f"{value / 1e6:,.0f}"


def _iops(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _read_iops(p: LayoutPrediction) -> str:
    """The whole pool's random reads, and in brackets a new pool's where they are fewer."""
    one = p.random_read_iops_one_metaslab
    if p.random_read_iops is None or one is None or one >= 0.99 * p.random_read_iops:
        return _iops(p.random_read_iops)
    return f"{_iops(p.random_read_iops)} ({_iops(one)})"


def table_lines(response: PlanResponse) -> list[str]:
    d = response.disks
    rs, block = format_size(response.recordsize_bytes), format_size(response.random_block_bytes)
    iops = "" if d.random_read_iops is None else (f", {d.random_read_iops:,.0f} / {d.random_write_iops:,.0f} "
                                                  f"random read / write IOPS")
    lines = [f"{d.count} x {d.size_bytes / 1e12:.3g} TB {d.media} disks, {_rate(d.seq_read_bytes_per_second)} / "
             f"{_rate(d.seq_write_bytes_per_second)} MB/s read / write{iops}, ashift {d.ashift} ({d.source})",
             f"capacity in binary units as zfs list shows it; data: uncompressed {rs} records; "
             f"random: {block} blocks at a recordsize of {block}", ""]
    head = ("layout", "usable", f"data@{rs}", "seq rd MB/s", "seq wr MB/s", "rnd rd IOPS", "rnd wr IOPS", "survives")
    rows = [head]
    for p in response.layouts:
        spares = f" +{p.distributed_spares} spare" if p.distributed_spares else ""
        survives = (f"any {p.fault_tolerance_any}" + (f" (up to {p.fault_tolerance_best})"
                                                      if p.fault_tolerance_best > p.fault_tolerance_any else ""))
        rows.append((p.layout, format_size(p.usable_bytes), format_size(p.data_bytes),
                     _rate(p.seq_read_bytes_per_second), _rate(p.seq_write_bytes_per_second),
                     _read_iops(p), _iops(p.random_write_iops), survives + spares))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    for r in rows:
        lines.append("  ".join(c.ljust(w) if i in (0, 7) else c.rjust(w)
                               for i, (c, w) in enumerate(zip(r, widths, strict=True))).rstrip())
    if any(_read_iops(p).endswith(")") for p in response.layouts):
        lines += ["", "rnd rd IOPS (n): of data in one metaslab of each vdev, as a new pool holds its first data: "
                      "a raidz's blocks start on fewer of its disks there"]
    lines += ["", "method, sources and how far off it was in the lab: docs/planner.md; "
                  "the raidz rules: " + response.references[0]]
    return lines
