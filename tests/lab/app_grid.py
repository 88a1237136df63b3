"""The application lab: real applications' own metrics per layout and recordsize, as CSV.

    tests/lab/app-grid --layouts ssd-mirror2x2 --apps pgbench-tpcb --recordsizes 8K,32K,128K
    tests/lab/app-grid --layouts hdd-mirror2x2 --apps copy,borg --repeats 3
    tests/lab/app-grid --apps copy,borg --tree-mib 512 ...  # 256 MiB of random files beside the small ones
    tests/lab/app-grid --apps media-read --recordsizes 128K,1M --media-mib 192 ...  # large files read back
    tests/lab/app-grid --apps mariadb-oltp --throttle-scale 0.005 ...  # sysbench oltp_read_write
    tests/lab/app-grid --throttle-scale 0.25 ...        # every disk's IOPS and MB/s throttle x 0.25
    tests/lab/app-grid --throttle-scale 0.02,0.01 ...   # both in one boot: does the metric follow the disks?
    tests/lab/app-grid --throttle-scale 0.01 --bytes-per-op 16K ...  # MB/s = IOPS x 16K: large requests cost more
    tests/lab/app-grid --apps pgbench-tpcb --pg-wal separate ...  # the WAL on a dataset of its own (128K)

Boots the application image (line 2.3-apps, `tests/lab/build-image --zfs 2.3-apps`) once per
layout, holding /tmp/lab-vm.lock from boot to shutdown.  Per layout: the ARC capped (zfs_arc_max,
zfs(4)) and the application's own cache sized so the data set does not fit; each application's
data made once in `tank/appsrc` and copied onto one dataset per recordsize (labapps.py).  Then
the runs, repeats in interleaved order (the cells, each a throttle scale and a recordsize, forward,
then backward, ...), each after `zpool export`/`zpool import` (an empty ARC).  The setup runs at the
layout's own throttles; each run at its scale's, set through qemu's QMP socket (labqmp.py).  A run:
start the application, read the guest's counters,
the measured command, read them again, stop.  Each run is one CSV row with the application's
metric and what set its pace (appevidence.py): the pool disks' busy share, the guest's and the
host's CPU, and `bound` (`storage`, `cpu` or `unclear`).  Rows are appended as they come; a
PROVENANCE.md-like file is written beside the CSV (`<csv stem>.PROVENANCE.md`).

The guest runs the commands of the committed HEAD (`git archive`, as prior_grid does).
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
import time
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[2]))  # the repository: `advisor` without PYTHONPATH
import appevidence  # noqa: E402 - after the sys.path line above
import labapps  # noqa: E402 - after the sys.path line above
import labimage  # noqa: E402 - after the sys.path line above
import lablayouts  # noqa: E402 - after the sys.path line above
from advisor.engine.units import parse_size  # noqa: E402 - after the sys.path line above
from advisor.host.cpustat import cpu_share, parse_cpu_times  # noqa: E402 - after the sys.path line above
from labvm import LabVM  # noqa: E402 - after the sys.path line above
from prior_grid import VMLock, log, snapshot_project  # noqa: E402 - after the sys.path line above

LAYOUTS = ("ssd-mirror2x2", "hdd-mirror2x2", "hdd-raidz1x4")
PARAMS = "/sys/module/zfs/parameters"
ARC_MIN_BYTES = 32 << 20
ARC_MAX_BYTES = 64 << 20  # with the applications' 32 MiB caches, well under their data (pgbench -s 10: about 160 MiB)

COLUMNS = ("started_at,zfs_version,image,layout,disk_iops,disk_bps,app,metric,higher_is_better,recordsize,"
           "compression,repeat,position,value,seconds,disk_busy_max,disk_busy_mean,guest_cpu_busy,guest_cpu_steal,"
           "host_cpu_busy,bound,bound_reason,arc_max_bytes,app_cache_bytes,data_bytes,run_id,throttle_scale,clients,"
           "synchronous_commit,disk_ops_max,pg_wal").split(",")
Cell = TypeVar("Cell")


def interleaved(cells: list[Cell], repeats: int) -> list[tuple[int, Cell]]:
    """(repeat, cell) in run order: forward, backward, forward...: no cell always first or last, so a
    drift of the host over the grid does not fall on one of them."""
    order = []
    for r in range(repeats):
        order += [(r + 1, c) for c in (cells if r % 2 == 0 else cells[::-1])]
    return order


def scaled(layout: lablayouts.Layout, factor: float, bytes_per_op: int | None = None) -> lablayouts.Layout:
    """The layout with every disk's qemu throttle times `factor` (the emulated CPU must not be what
    bounds an application: docs/apps.md); with `bytes_per_op`, each disk's MB/s set to its scaled
    IOPS times that, so a request larger than it costs its size (an SSD's cost: docs/apps.md,
    "What a request costs")."""
    if factor == 1 and bytes_per_op is None:
        return layout
    disks = []
    for d in layout.disks:
        iops = int(d.iops * factor) if d.iops else None
        bps = iops * bytes_per_op if bytes_per_op and iops else int(d.bps * factor) if d.bps else None
        disks.append(replace(d, iops=iops, bps=bps))
    return replace(layout, disks=tuple(disks))


def _request_size(text: str) -> int:
    """--bytes-per-op: a size of at least one 512-byte sector (0 or less would throttle nothing)."""
    size = parse_size(text)
    if size < 512:
        raise ValueError(text)
    return size


def host_cpu() -> str:
    return Path("/proc/stat").read_text()


def guest_disks(vm: LabVM) -> list[str]:
    """The kernel names (sdX) of the layout's disks in the guest."""
    paths = " ".join(d.by_id for d in vm.disks())
    out = vm.exec(f"for p in {paths}; do basename $(readlink -f $p); done", check=True).stdout
    return out.split()


def guest_setup(vm: LabVM, apps: list[labapps.App], recordsizes: list[str], s: labapps.Settings) -> dict:
    """The ARC capped, each application's source data and its copies; -> facts for the provenance."""
    vm.exec(f"echo {ARC_MIN_BYTES} > {PARAMS}/zfs_arc_min; echo {ARC_MAX_BYTES} > {PARAMS}/zfs_arc_max", check=True)
    vm.exec(f"zfs create -o recordsize=128K -o compression={s.compression} tank/appsrc", check=True)
    sizes = {}
    for app in {a.source: a for a in apps}.values():
        t0 = time.monotonic()
        vm.exec(app.setup(s), check=True, timeout=3600)
        for rs in recordsizes:  # the data's copies come before each run when fresh (run_layout)
            vm.exec(labapps.copy_onto(app, rs, s), check=True, timeout=3600)
        sizes[app.source] = int(vm.exec(f"du -sb {labapps.SOURCE}/{app.source} | cut -f1", check=True).stdout)
        log(f"{app.source}: {sizes[app.source] >> 20} MiB laid out and copied in {time.monotonic() - t0:.0f} s")
    facts = vm.exec("cat /sys/module/zfs/version; uname -r; cat /etc/zfs-advisor-lab-apps.txt", check=True).stdout
    lines = facts.splitlines()
    return {"zfs_module": lines[0], "kernel": lines[1], "apps": dict(l.split("=", 1) for l in lines[2:] if "=" in l),
            "data_bytes": sizes}


# The daemon's view of the run, for workload recognition (docs/recognition.md): every objset kstat of
# the pool every 5 s, in the recordings' format (advisor/recognise/recorded.py).
OBJSETS = ("mkdir -p /tmp/objsets && rm -f /tmp/objsets/*; ( n=10; while :; do for f in /proc/spl/kstat/zfs/tank/objset-*; "
           "do echo \"== ${f##*/} $(date +%s.%N)\"; cat $f; done > /tmp/objsets/$n.objsets; n=$((n + 1)); sleep 5; "
           "done ) >/dev/null 2>&1 & sampler=$!; ")


def one_run(vm: LabVM, app: labapps.App, rs: str, s: labapps.Settings, disks: list[str],
            throttled: lablayouts.Layout, full: lablayouts.Layout, objsets: Path | None = None) -> dict:
    """Start, throttle, read, run, read, stop; -> the row's measured part.  The pool's import and the
    application's start run at the layout's own throttles (MariaDB's start at 7 IOPS outlasted its
    client's handshake), the measured command at `throttled`'s, the stop at `full`'s again.  With `objsets`, the pool's objset
    kstats sampled over the run are copied there, with the run's raw readings and report (run.txt)."""
    folder = "/" + labapps.dataset(app, rs)
    vm.exec("zpool export tank && zpool import -d /dev/disk/by-id tank", check=True, timeout=600)
    vm.exec(app.start(folder, s), check=True, timeout=600)
    vm.set_throttles(throttled.disks)
    sampler = (OBJSETS, "kill $sampler; ") if objsets else ("", "")
    script = (f"{sampler[0]}{appevidence.SNAPSHOT} > /tmp/before; {{ {app.run(folder, s)} ; }} > /tmp/app.out 2>&1; "
              f"rc=$?; {appevidence.SNAPSHOT} > /tmp/after; {sampler[1]}cat /tmp/before; echo @@SPLIT; "
              f"cat /tmp/after; echo @@SPLIT; cat /tmp/app.out; exit $rc")
    host_before = parse_cpu_times(host_cpu())
    r = vm.exec(script, timeout=s.seconds * 20 + 600)
    host_share = cpu_share(host_before, parse_cpu_times(host_cpu()))
    vm.set_throttles(full.disks)  # a server's shutdown writes its dirty pages: not at 7 IOPS
    vm.exec(app.stop(folder, s), check=True, timeout=600)
    if objsets:
        vm.copy_out("/tmp/objsets", objsets)
        (objsets / "run.txt").write_text(r.stdout)  # the guest's readings and the application's report, raw
        # the run's own, one a line, the data's first: the recognition reads them
        (objsets / "dataset").write_text("".join(d + "\n" for d in labapps.run_datasets(app, rs, s)))
    before, after, output = r.stdout.split("@@SPLIT\n", 2)
    if r.rc != 0:
        raise RuntimeError(f"{app.name} at {rs} failed (rc {r.rc}): {output[-800:]}")
    load = appevidence.cell_load(appevidence.parse_reading(before), appevidence.parse_reading(after), disks,
                                 host_share.busy if host_share else None)
    bound, why = appevidence.verdict(load)
    return {"value": app.parse(output), "seconds": round(load.seconds, 2),
            "disk_busy_max": round(load.busiest[1], 3), "disk_ops_max": round(max(load.disks_ops.values(), default=0), 1), "disk_busy_mean": round(load.mean_disk_busy, 3),
            "guest_cpu_busy": _r(load.cpu_busy), "guest_cpu_steal": _r(load.cpu_steal),
            "host_cpu_busy": _r(load.host_cpu_busy), "bound": bound, "bound_reason": why}


def _r(v: float | None) -> float | str:
    return "" if v is None else round(v, 3)


def header_mismatch(path: Path) -> str | None:
    """Why rows cannot be appended to `path` (its header is not COLUMNS: an older grid), or None."""
    if not path.exists():
        return None
    with path.open(newline="") as f:
        header = next(csv.reader(f), [])
    if header == COLUMNS:
        return None
    missing = [c for c in COLUMNS if c not in header]
    return (f"{path} has other columns than this app-grid writes (missing: {', '.join(missing) or 'none'}): "
            "its rows would be misread; write to a new --out")


def append_rows(path: Path, rows: list[dict]) -> None:
    new = not path.exists()
    with path.open("a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        if new:
            w.writeheader()
        w.writerows(rows)


def run_layout(name: str, args: argparse.Namespace, s: labapps.Settings, meta: dict) -> None:
    full = lablayouts.get(name)
    apps = [labapps.APPS[a] for a in args.apps]
    vm = LabVM(labimage.APPS, name, project=args.project, memory_mib=4096)
    with VMLock(), vm:
        disks = guest_disks(vm)
        t0 = time.monotonic()
        facts = guest_setup(vm, apps, args.recordsizes, s)  # at the layout's own throttles: faster
        meta["boots"].append({"layout": name, "boot_s": round(vm.timings["boot_to_ssh"]),
                              "setup_s": round(time.monotonic() - t0),
                              "disks": [asdict(d) for d in scaled(full, args.throttle_scale[0], args.bytes_per_op).disks],
                              **facts})
        run_id = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        cells = [(f, c, rs) for f in args.throttle_scale for c in args.clients for rs in args.recordsizes]
        for app in apps:
            for position, (repeat, (factor, clients, rs)) in enumerate(interleaved(cells, args.repeats), 1):
                s = replace(s, clients=clients)
                layout = scaled(full, factor, args.bytes_per_op)
                vm.set_throttles(full.disks)  # the copy, the import and the start at the layout's own
                if app.data_on_dataset and s.fresh_copy:
                    vm.exec(labapps.fresh_copy(app, rs, s), check=True, timeout=3600)
                started = datetime.now(UTC).isoformat(timespec="seconds")
                objsets = (args.objsets / f"{name}-{app.name}-{rs}-x{factor:g}-c{clients}-{repeat}" if args.objsets else None)
                measured = one_run(vm, app, rs, s, disks, layout, full, objsets)
                disk = layout.disks[0]
                row = {"started_at": started, "zfs_version": facts["zfs_module"].split("-")[0],
                       "image": vm.image.path.name, "layout": name, "disk_iops": disk.iops, "disk_bps": disk.bps,
                       "app": app.name, "metric": app.metric, "higher_is_better": int(app.higher_is_better),
                       "recordsize": rs, "compression": s.compression, "repeat": repeat, "position": position,
                       "arc_max_bytes": ARC_MAX_BYTES, "data_bytes": facts["data_bytes"][app.source],
                       "app_cache_bytes": labapps.cache_bytes(app, s),
                       "run_id": run_id, "throttle_scale": factor, "clients": s.clients,
                       "synchronous_commit": s.synchronous_commit if app.source == "pg" else "",
                       "pg_wal": s.pg_wal if app.source == "pg" else "", **measured}
                append_rows(args.out, [row])
                log(f"{name} {app.name} {rs} x{factor:g} c{clients} #{repeat}: {row['value']} {app.metric}, {row['bound']}: "
                    f"{row['bound_reason']}")


def summary(rows: list[dict[str, str]]) -> str:
    """Per (layout, app, disk throttle, recordsize): the metric's mean and each repeat, the bound of
    each run."""
    groups: dict[tuple[str, ...], list[dict[str, str]]] = {}
    for r in rows:
        app = r["app"] + (" (WAL on its own dataset)" if r.get("pg_wal") == "separate" else "")
        groups.setdefault((r["layout"], app, r["disk_iops"], r.get("clients", ""), r["recordsize"]), []).append(r)
    out = ["| layout | app | disk IOPS | clients | recordsize | mean | repeats (run order) | disks busy (busiest) | "
           "guest CPU | host CPU | bound |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for (layout, app, iops, clients, rs), rs_rows in groups.items():
        vals = [float(r["value"]) for r in rs_rows]
        def pct(col: str, rows: list = rs_rows) -> str:
            return " / ".join(f"{float(r[col]):.0%}" if r[col] else "-" for r in rows)

        runs = " / ".join(f"{v:g} (#{r['position']})" for v, r in zip(vals, rs_rows, strict=True))
        out.append(f"| {layout} | {app} | {iops} | {clients} | {rs} | {sum(vals) / len(vals):.1f} {rs_rows[0]['metric']} | {runs} | "
                   f"{pct('disk_busy_max')} | {pct('guest_cpu_busy')} | {pct('host_cpu_busy')} | "
                   f"{' / '.join(r['bound'] for r in rs_rows)} |")
    return "\n".join(out)


def write_provenance(csv_path: Path, meta: dict) -> Path:
    with csv_path.open() as f:
        rows = list(csv.DictReader(f))
    lines = [f"# {csv_path.name}: where it comes from", "",
             f"{len(rows)} rows, one per application run, measured in the qemu ZFS lab (docs/lab.md) by "
             "`tests/lab/app-grid` (docs/apps.md).", "", "## Runs", ""]
    for run in meta["runs"]:
        lines.append(f"- `{run['command']}` at commit {run['commit']}: {run['started_at']} to "
                     f"{run.get('ended_at', '?')}, wall time {run.get('wall_s', 0) / 60:.1f} min; settings "
                     f"{json.dumps(run['settings'])}; disk throttles x {run['throttle_scale']}")
        lines += [f"  - layout `{b['layout']}`: boot to ssh {b['boot_s']} s, setup {b['setup_s']} s (at the layout's "
                  "own throttles)" for b in run["boots"] if "setup_s" in b]
        for boot in run["boots"]:
            d = boot["disks"][0]
            scales = run["throttle_scale"] if isinstance(run["throttle_scale"], list) else [run["throttle_scale"]]
            cells = " at the first scale; each row's disk_iops and disk_bps are its own" if len(scales) > 1 else ""
            lines.append(f"  - layout `{boot['layout']}`: {len(boot['disks'])} disks at {d['iops']} IOPS, "
                         f"{d['bps'] / 1e6:.3g} MB/s each{cells}; OpenZFS `{boot['zfs_module']}`, kernel {boot['kernel']}; "
                         f"{', '.join(f'{k} {v}' for k, v in boot['apps'].items())}; data "
                         f"{', '.join(f'{k} {v >> 20} MiB' for k, v in boot['data_bytes'].items())}")
    lines += ["", "VM: qemu TCG (no KVM), 2 vCPUs, 4096 MiB, image `" + (rows[0]["image"] if rows else "?") +
              f"`; `zfs_arc_min` {ARC_MIN_BYTES >> 20} MiB, `zfs_arc_max` {ARC_MAX_BYTES >> 20} MiB; each run after "
              "`zpool export`/`zpool import` (an empty ARC).", "", "## Summary", "", summary(rows), ""]
    path = csv_path.with_name(csv_path.stem + ".PROVENANCE.md")
    path.write_text("\n".join(lines) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layouts", default=",".join(LAYOUTS))
    ap.add_argument("--apps", default="pgbench-tpcb")
    ap.add_argument("--recordsizes", default="8K,32K,128K")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--seconds", type=int, default=labapps.Settings.seconds, help="one timed run")
    ap.add_argument("--throttle-scale", default="1", help="every disk's IOPS and MB/s throttle times this; "
                    "several (0.02,0.01): each a cell of its own in one boot")
    ap.add_argument("--bytes-per-op", type=_request_size, metavar="SIZE",
                    help="each disk's MB/s throttle set to its (scaled) IOPS times SIZE (16K: a 128K request costs "
                    "eight 8K ones, as on an SSD; without it the layout's MB/s scaled, about 133K an operation "
                    "on the SSD profile)")
    ap.add_argument("--clients", default=str(labapps.Settings.clients),
                    help="pgbench's clients (-c); several (8,16): each a cell of its own")
    ap.add_argument("--synchronous-commit", choices=("on", "off"), default=labapps.Settings.synchronous_commit,
                    help="PostgreSQL's synchronous_commit (on as Debian ships it)")
    ap.add_argument("--pg-wal", choices=labapps.PG_WAL, default=labapps.Settings.pg_wal,
                    help="PostgreSQL's WAL in its data directory (same) or on a dataset of its own at "
                    f"recordsize {labapps.WAL_RECORDSIZE} (separate)")
    ap.add_argument("--pg-scale", type=int, default=labapps.Settings.pg_scale, help="pgbench -i -s")
    ap.add_argument("--tree-mib", type=int, default=labapps.Settings.tree_mib,
                    help="copy's and borg's tree: half of this in 32 MiB files of random bytes (at least one), "
                    "beside the image's small files")
    ap.add_argument("--media-mib", type=int, default=labapps.Settings.media_mib,
                    help=f"media-read's files: this in {labapps.MEDIA_FILES} files of random bytes")
    ap.add_argument("--compression", default=labapps.Settings.compression,
                    help="every dataset's compression (off: the data set must not fit the ARC compressed)")
    ap.add_argument("--objsets", type=Path, help="record the pool's objset kstats over each run here")
    ap.add_argument("--out", type=Path, default=labimage.LAB_DIR / "apps-data" / "apps-zfs2.3.csv")
    args = ap.parse_args(argv)
    if args.tree_mib < 1:
        ap.error(f"--tree-mib: a number of MiB, 1 or more, not {args.tree_mib}")
    if args.media_mib < labapps.MEDIA_FILES:
        ap.error(f"--media-mib: a number of MiB, {labapps.MEDIA_FILES} or more (one a file), not {args.media_mib}")
    args.layouts, args.apps, args.recordsizes = (v.split(",") for v in (args.layouts, args.apps, args.recordsizes))
    try:
        args.throttle_scale = [float(f) for f in args.throttle_scale.split(",")]
        args.clients = [int(c) for c in args.clients.split(",")]
    except ValueError:
        ap.error(f"--throttle-scale and --clients: numbers separated by commas, not {args.throttle_scale!r}, "
                 f"{args.clients!r}")
    unknown = [a for a in args.apps if a not in labapps.APPS] + [x for x in args.layouts if x not in lablayouts.load()]
    if unknown:
        ap.error(f"unknown: {', '.join(unknown)}; apps: {', '.join(labapps.APPS)}; layouts: see tests/lab/vm layouts")
    mismatch = header_mismatch(args.out)
    if mismatch:
        ap.error(mismatch)
    s = labapps.Settings(seconds=args.seconds, clients=max(args.clients), synchronous_commit=args.synchronous_commit,
                         pg_wal=args.pg_wal, pg_scale=args.pg_scale, tree_mib=args.tree_mib,
                         media_mib=args.media_mib, compression=args.compression)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    meta_path = args.out.with_suffix(".meta.json")
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {"runs": []}
    with tempfile.TemporaryDirectory(prefix="app-grid-") as tmp:
        args.project = Path(tmp)
        commit = snapshot_project(args.project)
        run = {"command": "tests/lab/app-grid " + " ".join(argv if argv is not None else sys.argv[1:]),
               "commit": commit, "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
               "settings": asdict(s), "throttle_scale": args.throttle_scale,
               "bytes_per_op": args.bytes_per_op, "boots": []}
        meta["runs"].append(run)
        t0 = time.monotonic()
        try:
            for name in args.layouts:
                run_layout(name, args, s, run)
        finally:
            run["ended_at"] = datetime.now(UTC).isoformat(timespec="seconds")
            run["wall_s"] = round(time.monotonic() - t0)
            meta_path.write_text(json.dumps(meta, indent=1) + "\n")
            if args.out.exists():
                log(f"provenance: {write_provenance(args.out, meta)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
