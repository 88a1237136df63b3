"""The measured prior of the regression engine: a grid of probe runs in the lab, as CSV.

    tests/lab/prior-grid                                   # the whole grid (about an hour)
    tests/lab/prior-grid --layouts ssd-mirror2x2 --workloads postgres
    tests/lab/prior-grid --max-minutes 30 --out /tmp/prior.csv
    tests/lab/prior-grid --extend                          # + 2 recordsizes per cell (EXTENSION)
    tests/lab/prior-grid --extend --one-run                # cells made of several runs, again in one
    tests/lab/prior-grid --layouts ssd-mirror2x2 --workloads postgres \
        --module-param zfs_txg_timeout=5,30 --out /tmp/module.csv   # module parameters, not recordsizes

For each layout (one VM boot each, holding /tmp/lab-vm.lock from boot to shutdown so other
lab users can run between layouts) and each workload, the real probe runner runs inside the
VM (`zfs-advisor probe --pool tank --workload W --param recordsize=... --param compression=off`,
the code of the committed HEAD, see below), with its own hygiene: a fresh scratch child per
candidate, files laid out once a candidate (`--layout-per candidate`, as every row so far) and
committed before measuring, warm-up discarded, >= 2 repeats,
the ARC capped below the working set.  Every stored repeat becomes one CSV row
(`COLUMNS`), appended after each (layout, workload) cell: a partial file is usable, and a
second call skips the cells already complete (an incomplete cell is measured again).

The guest runs the code of `git archive HEAD` (copied to a temporary directory shared at
/project), so edits made while the grid runs do not leak into it; the commit is recorded in
the provenance file.
"""

from __future__ import annotations

import argparse
import csv
import fcntl
import io
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[2]))  # the repository: `advisor` without PYTHONPATH
import labimage  # noqa: E402 - after the sys.path line above
import lablayouts  # noqa: E402 - after the sys.path line above
from advisor.model.features import job_shape  # noqa: E402,F401  (also used by tests/unit/test_prior_grid.py)
from advisor.model.features import pool_shape as model_pool_shape  # noqa: E402 - after the sys.path line above
from advisor.probe.candidates import CandidateError, parse_candidate_spec  # noqa: E402 - after the sys.path line above
from labvm import LabError, LabVM  # noqa: E402 - after the sys.path line above

REPO = labimage.REPO_ROOT
DATA_DIR = REPO / "advisor" / "model" / "data"
LOCK = Path("/tmp/lab-vm.lock")

COLUMNS = (
    "zfs_version,layout,media,vdev_type,top_vdevs,vdev_width,disks,ashift,workload,pattern,block_size_bytes,"
    "read_fraction,fsync_every,iodepth,numjobs,working_set_bytes,arc_max_bytes,parameter,value,baseline,"
    "recordsize_bytes,compression,logbias,primarycache,sync,atime,repeat,runtime_s,iops,read_iops,write_iops,"
    "read_bw_bytes,write_bw_bytes,read_p50_us,read_p99_us,write_p50_us,write_p99_us,compress_ratio,run_id,"
    "started_at,"
    # added after the agreed columns (only ever append here)
    "arc_hit_ratio,read_p999_us,write_p999_us,sync_p99_us,cpu_user,cpu_system,written_bytes,arc_min_bytes,"
    "file_bytes,ramp_s,run_status"
).split(",")

# The ZFS defaults a scratch child gets unless the candidate sets the property
# (rules/tunables.yaml, the probed defaults; this script runs without the package); the baseline
# row of a cell is the candidate equal to them.
DEFAULTS = {"recordsize": "128K", "compression": "lz4", "logbias": "latency", "primarycache": "all",
            "sync": "standard", "atime": "on"}

LAYOUTS = ("ssd-mirror2x2", "hdd-raidz1x4", "hdd-stripe5", "ssd-raidz1x4", "hdd-mirror2x2", "hdd-raidz2x6",
           "hdd-raidz1x5")
# recordsize grid per workload: below, at and above the I/O size, and the 128K default.
GRID = {
    "postgres": ("8K", "16K", "32K", "128K"),
    "mysql": ("8K", "16K", "64K", "128K"),
    "sqlite": ("4K", "16K", "64K", "128K"),
    "kafka": ("32K", "128K", "512K", "1M"),
    "fileserver": ("32K", "128K", "512K", "1M"),
}
EXTRA = ("compression=off",)  # against the lz4 baseline
# The second run of a cell (`--extend`): two more recordsizes, measured beside the 128K baseline
# again, since a run's candidates are compared with the baseline of the same run. With them a
# cell's grid is 7 candidates, and two probes (the baseline and one) are under a third of it.
EXTENSION = {
    "postgres": ("4K", "64K"),
    "mysql": ("4K", "32K"),
    "sqlite": ("8K", "32K"),
    "kafka": ("64K", "256K"),
    "fileserver": ("64K", "256K"),
}
BASELINE_RECORDSIZE = "128K"
# fio jobs (files) of the probed sections of each workload's job: the probe's --file-size is
# the working set divided by them, so every cell has the same working set against the ARC cap.
FILES = {"postgres": 4, "mysql": 4, "sqlite": 1, "kafka": 2, "fileserver": 2}

GUEST_PY = "/opt/zfs-advisor-venv/bin/python"
STATE_ROOT = "/var/lib/zfs-advisor-prior"
# zfs_arc_min is lowered to 32 MiB for the whole VM, as the runner does for itself since
# 99793a9 (advisor/probe/probe_service.py `_arc_limits`).  The cap is a quarter of the working set
# as the compressed ARC stores it, 64 MiB at the least: 512 MiB of 50 % compressible data
# (about 296 MiB in the ARC at lz4's 1.73:1) against a 64 MiB cap.  The first grids had
# 192 MiB (about 111 MiB stored) against 96 MiB, and the ARC served most of it (docs/prior.md).
ARC_MIN_BYTES = 32 << 20
OVERHEAD_S = 8.0  # advisor/probe/probe_plan.py OVERHEAD_SECONDS


@dataclass(frozen=True)
class Settings:
    repeats: int = 2
    runtime_s: int = 8
    ramp_s: int = 2
    working_set: int = 512 << 20
    layout_rate: int = 2 << 20  # deliberately low: only the deadline of each probe run depends on it


def log(msg: str) -> None:
    print(f"[prior-grid {datetime.now(UTC):%H:%M:%S}] {msg}", flush=True)


# --- what the probe is asked for ----------------------------------------------------------

def candidate_args(recordsizes: tuple[str, ...], extra: tuple[str, ...] = EXTRA) -> list[str]:
    return ["--param", "recordsize=" + ",".join(recordsizes), *(a for e in extra for a in ("--param", e))]


def n_candidates(workload: str) -> int:
    return len(GRID[workload]) + len(EXTRA)


def n_extra(extra: tuple[str, ...]) -> int:
    """Candidates in `--param` specs: one per value ('compression=off' 1, 'zfs_txg_timeout=5,30' 2)."""
    return sum(len(dict.fromkeys(v for v in e.partition("=")[2].split(",") if v)) for e in extra)


def module_candidates(module: tuple[str, ...]) -> list[tuple[str, str]]:
    """`--module-param` specs ('zfs_txg_timeout=5,30', the first value the baseline) -> their
    (parameter, value) candidates, read by the probe's own parser; only module parameters."""
    found = []
    for spec in module:
        for c in parse_candidate_spec(spec):
            if c.scope != "module":
                raise CandidateError(f"{spec!r}: {c.parameter} is not a module parameter")
            found.append((c.parameter, c.value))
    return found


def required(workload: str, extend: bool, module: tuple[str, ...] = ()) -> set[tuple[str, str]]:
    """The candidates a complete cell has measured: the grid, and with `extend` its extension;
    with `module` (a module-parameter grid) those candidates instead."""
    if module:
        return set(module_candidates(module))
    sizes = GRID[workload] + (EXTENSION[workload] if extend else ())
    extra = {(name, value) for name, value in (e.split("=", 1) for e in EXTRA)}
    return {("recordsize", v) for v in sizes} | extra


def probe_budget(n: int, working_set: int, s: Settings) -> int:
    """The --budget that makes the plan choose exactly `s.runtime_s` (plan.fit_runtime):
    per candidate overhead + layout at the assumed rate + repeats x (ramp + runtime), plus 1 s."""
    per = OVERHEAD_S + working_set / s.layout_rate + s.repeats * (s.runtime_s + s.ramp_s) + 1
    return int(n * per) + 1


def file_bytes(workload: str, s: Settings) -> int:
    return s.working_set // FILES[workload]


def probe_command(workload: str, state: str, s: Settings, recordsizes: tuple[str, ...] | None = None,
                  extra: tuple[str, ...] = EXTRA, budget_probes: int | None = None,
                  module: tuple[str, ...] = ()) -> str:
    """The probe CLI call of one cell (by default the workload's whole grid; with `budget_probes`,
    that many candidates chosen by the model; with `module`, those module-parameter specs alone,
    on the scratch dataset's defaults)."""
    recordsizes = recordsizes or GRID[workload]
    if module:
        n, candidates = len(module_candidates(module)), [a for spec in module for a in ("--param", spec)]
    elif budget_probes:
        n, candidates = budget_probes, ["--budget-probes", str(budget_probes)]
    else:
        n, candidates = len(recordsizes) + len(extra), candidate_args(recordsizes, extra)
    argv = ["env", "PYTHONPATH=/project", GUEST_PY, "-m", "advisor", "probe", "--state-dir", state,
            "--pool", "tank", "--workload", workload, *candidates,
            "--repeats", str(s.repeats), "--ramp", str(s.ramp_s), "--file-size", str(file_bytes(workload, s)),
            "--layout-rate", str(s.layout_rate), "--layout-per", "candidate",  # as every row of the prior so far
            # the prior's rows were measured with the ARC capped (docs/prior.md); a module grid's are
            # not: a 64 MiB ARC would hold back the writes long before zfs_dirty_data_max does (the
            # ARC's own throttle on dirty buffers), so they run as the probe does by default, the
            # scratch dataset's data kept out of the ARC (primarycache=metadata) and the ARC left alone
            "--cache", "uncached" if module else "arc-cap",
            "--budget", f"{probe_budget(n, s.working_set, s)}s", "--json"]
    return shlex.join(argv)


# --- rows -----------------------------------------------------------------------------

def parse_size(text: str) -> int:
    return lablayouts.parse_size(text)


def pool_shape(descriptor: dict) -> dict[str, object]:
    """The model's pool features (one definition: advisor/model/features.py) and the disk count."""
    return {**model_pool_shape(descriptor), "disks": sum(v.get("width", 0) for v in descriptor.get("vdevs") or [])}


def _us(seconds: float | None, ops: float) -> str | float:
    return "" if seconds is None or not ops else round(seconds * 1e6, 1)


def _num(v, digits: int = 3):
    return "" if v is None else round(v, digits)


def rows_of(output: dict, *, zfs_version: str, layout: str, profile: dict, arc_min: int,
            s: Settings) -> list[dict[str, object]]:
    """One row per stored repeat of the probe run in `output` (`probe --json`), keeping only
    candidates with at least `s.repeats` repeats (a candidate cut short says nothing)."""
    run = output["run"]
    results = output["results"]
    counts: dict[tuple[str, str], int] = {}
    for r in results:
        counts[(r["parameter"], r["value"])] = counts.get((r["parameter"], r["value"]), 0) + 1
    rows = []
    for r in results:
        if counts[(r["parameter"], r["value"])] < s.repeats:
            continue
        props = dict(DEFAULTS)
        if r["scope"] == "dataset":
            props[r["parameter"]] = r["value"]
        row = {
            "zfs_version": zfs_version, "layout": layout, **pool_shape(r["pool"]),
            "workload": run["workload"], "pattern": profile["pattern"],
            "block_size_bytes": parse_size(profile["block_size"]), "read_fraction": profile["read_fraction"],
            **(shape := job_shape(r["job"])),
            "working_set_bytes": r["working_set_bytes"], "arc_max_bytes": r["arc_max_bytes"] or "",
            "parameter": r["parameter"], "value": r["value"],
            # a module parameter's rows all have the default dataset properties: its baseline is the
            # candidate the probe compared the others with (the first value of its --param)
            "baseline": int(r["baseline"]) if r["scope"] == "module" else int(all(props[k] == v for k, v in DEFAULTS.items())),
            "recordsize_bytes": parse_size(props["recordsize"]), **{k: props[k] for k in DEFAULTS if k != "recordsize"},
            "repeat": r["repeat"],
            # fio's job_runtime under group_reporting is the sum over the job's threads
            "runtime_s": _num(r["runtime_seconds"] / shape["numjobs"]),
            "iops": _num(r["iops"], 1), "read_iops": _num(r["read_iops"], 1), "write_iops": _num(r["write_iops"], 1),
            "read_bw_bytes": round(r["read_bw"]), "write_bw_bytes": round(r["write_bw"]),
            "read_p50_us": _us(r["read_p50"], r["read_iops"]), "read_p99_us": _us(r["read_p99"], r["read_iops"]),
            "write_p50_us": _us(r["write_p50"], r["write_iops"]), "write_p99_us": _us(r["write_p99"], r["write_iops"]),
            "compress_ratio": _num(r["compress_ratio"], 2),
            "run_id": f"zfs{zfs_version}-{layout}-{run['workload']}-{run['id']}-{int(run['started_at'])}",
            "started_at": datetime.fromtimestamp(r["started_at"], UTC).isoformat(timespec="seconds"),
            "arc_hit_ratio": _num(r["arc_hit_ratio"], 4),
            "read_p999_us": _us(r["read_p999"], r["read_iops"]), "write_p999_us": _us(r["write_p999"], r["write_iops"]),
            "sync_p99_us": _us(r["sync_p99"], 1), "cpu_user": _num(r["cpu_user"], 4),
            "cpu_system": _num(r["cpu_system"], 4), "written_bytes": r["written_bytes"], "arc_min_bytes": arc_min,
            "file_bytes": file_bytes(run["workload"], s), "ramp_s": s.ramp_s, "run_status": run["status"],
        }
        rows.append({c: row.get(c, "") for c in COLUMNS})
    return rows


# --- the CSV ----------------------------------------------------------------------------

def read_rows(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def write_rows(path: Path, rows: list[dict[str, object]]) -> None:
    """Rewrite the whole file atomically (a reader never sees half a cell)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(buf.getvalue())
    tmp.replace(path)


def in_cell(row: dict[str, str], layout: str, workload: str, s: Settings) -> bool:
    """A cell is (layout, workload, working set): the same grid at another working set is another cell."""
    return (row["layout"] == layout and row["workload"] == workload
            and int(row["working_set_bytes"]) == s.working_set)


def measured(rows: list[dict[str, str]], layout: str, workload: str, s: Settings) -> set[tuple[str, str]]:
    """Candidates of the cell with at least `s.repeats` rows."""
    seen: dict[tuple[str, str], int] = {}
    for r in rows:
        if in_cell(r, layout, workload, s):
            seen[(r["parameter"], r["value"])] = seen.get((r["parameter"], r["value"]), 0) + 1
    return {c for c, n in seen.items() if n >= s.repeats}


def cell_complete(rows: list[dict[str, str]], layout: str, workload: str, s: Settings, extend: bool = False,
                  module: tuple[str, ...] = ()) -> bool:
    return required(workload, extend, module) <= measured(rows, layout, workload, s)


def cell_runs(rows: list[dict[str, str]], layout: str, workload: str, s: Settings) -> set[str]:
    """The probe runs the cell's rows come from."""
    return {r["run_id"] for r in rows if in_cell(r, layout, workload, s)}


def cell_todo(rows: list[dict[str, str]], layout: str, workload: str, s: Settings, extend: bool,
              one_run: bool, module: tuple[str, ...] = ()) -> bool:
    """Does the cell need a run?  Incomplete, or (`one_run`) made of several runs."""
    return (not cell_complete(rows, layout, workload, s, extend, module)
            or (one_run and len(cell_runs(rows, layout, workload, s)) > 1))


def cell_plan(rows: list[dict[str, str]], layout: str, workload: str, s: Settings,
              extend: bool, one_run: bool = False,
              module: tuple[str, ...] = ()) -> tuple[tuple[str, ...], tuple[str, ...], bool]:
    """What to run for a cell: (recordsizes, extra candidates, keep the cell's rows).
    A cell whose first grid is complete gets a run of the baseline and its extension, added to
    its rows, unless `one_run`; any other cell is measured whole, in one run (with the
    extension too when `extend`), and replaces the cell's rows.  A module-parameter grid
    (`module`) is always measured whole: no recordsizes, its specs as the extra candidates."""
    if module:
        return (), module, False
    if cell_complete(rows, layout, workload, s) and not one_run:
        return (BASELINE_RECORDSIZE, *EXTENSION[workload]), (), True
    return GRID[workload] + (EXTENSION[workload] if extend else ()), EXTRA, False


# --- the VM -------------------------------------------------------------------------------

class VMLock:
    """flock(2) on /tmp/lab-vm.lock, the same lock `flock /tmp/lab-vm.lock CMD` takes."""

    def __enter__(self):
        self.f = open(LOCK, "a")
        t0 = time.monotonic()
        fcntl.flock(self.f, fcntl.LOCK_EX)
        waited = time.monotonic() - t0
        if waited > 1:
            log(f"waited {waited:.0f} s for {LOCK}")
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.f, fcntl.LOCK_UN)
        self.f.close()


def snapshot_project(dest: Path) -> str:
    """`git archive HEAD` of the repository into `dest`; -> the commit."""
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=True).stdout.strip()
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.Popen(["git", "-C", str(REPO), "archive", commit], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", str(dest)], stdin=archive.stdout, check=True)
    archive.stdout.close()
    if archive.wait() != 0:
        raise RuntimeError("git archive failed")
    return commit


PROFILES_PY = (
    "import json; from advisor.engine.loader import load_rulebook; from advisor.config.settings import load_settings; "
    "b = load_rulebook(load_settings(None).rules_dir); "
    "print(json.dumps({n: {'pattern': w.io.pattern, 'block_size': w.io.block_size, "
    "'read_fraction': w.io.read_fraction} for n, w in b.workloads.items()}))")


def guest_facts(vm: LabVM) -> dict:
    out = vm.exec(
        f"echo {ARC_MIN_BYTES} > /sys/module/zfs/parameters/zfs_arc_min; "
        "cat /sys/module/zfs/version; uname -r; fio --version; "
        "awk '$1==\"c_min\"{print $3}' /proc/spl/kstat/zfs/arcstats; "
        "awk '$1==\"c_max\"{print $3}' /proc/spl/kstat/zfs/arcstats; "
        f"cd /project && PYTHONPATH=/project {GUEST_PY} -c {shlex.quote(PROFILES_PY)}", check=True).stdout
    lines = out.splitlines()
    return {"zfs_module": lines[0], "zfs_version": lines[0].split("-")[0], "kernel": lines[1], "fio": lines[2],
            "arc_c_min": int(lines[3]), "arc_c_max_default": int(lines[4]), "profiles": json.loads(lines[5])}


def probe_cell(vm: LabVM, workload: str, s: Settings, layout: str, recordsizes: tuple[str, ...] | None = None,
               extra: tuple[str, ...] = EXTRA, budget_probes: int | None = None,
               module: tuple[str, ...] = ()) -> dict | None:
    """Run the probe of one cell in a fresh state directory (twice if it gives no result, e.g.
    refused because the pool was not idle yet); -> `probe --json` output, or None."""
    cmd = probe_command(workload, f"{STATE_ROOT}/{workload}", s, recordsizes, extra, budget_probes, module)
    for attempt in (1, 2):
        vm.exec(f"rm -rf {STATE_ROOT}/{workload}; sync; sleep 5", check=True)  # a txg commit: an idle pool
        r = vm.exec(cmd, timeout=3600)
        try:
            output = json.loads(r.stdout)
        except json.JSONDecodeError:
            log(f"{layout}/{workload}: attempt {attempt} gave no result (rc {r.rc}): {r.stderr.strip()[-600:]}")
            continue
        return output
    return None


def _check_grid(ap: argparse.ArgumentParser, layouts: list[str], workloads: list[str], module: tuple[str, ...],
                out: Path | None) -> None:
    """Exits through `ap` (a usage error) on a workload without a grid, a module grid that does
    not parse or has no --out of its own; an unknown layout raises as lablayouts.get does."""
    for w in workloads:
        if w not in GRID:
            ap.error(f"workload {w!r} has no grid; valid: {sorted(GRID)}")
    for layout in layouts:
        lablayouts.get(layout)
    try:
        module_candidates(module)
    except CandidateError as exc:
        ap.error(str(exc))
    if module and out is None:
        ap.error("--module-param needs --out: a module-parameter grid does not belong in the prior")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zfs", default="2.3", help="OpenZFS line of the lab image (default 2.3)")
    ap.add_argument("--layouts", default=",".join(LAYOUTS), help="comma separated, in order")
    ap.add_argument("--workloads", default=",".join(GRID), help="comma separated, in order")
    ap.add_argument("--out", type=Path, default=None, help="CSV (default advisor/model/data/prior-zfs<line>.csv)")
    ap.add_argument("--repeats", type=int, default=Settings.repeats)
    ap.add_argument("--runtime", type=int, default=Settings.runtime_s, help="measured seconds per fio repeat")
    ap.add_argument("--ramp", type=int, default=Settings.ramp_s, help="warm-up seconds per repeat (discarded)")
    ap.add_argument("--working-set", default="512M",
                    help="bytes of files per cell, split over the job's files (the probe's --file-size)")
    ap.add_argument("--max-minutes", type=float, default=60.0,
                    help="wall-time budget: cells that would not fit (by the pace measured so far) are skipped")
    ap.add_argument("--project", type=Path, default=None,
                    help="directory shared as /project (default: a git archive of HEAD)")
    ap.add_argument("--extend", action="store_true",
                    help="measure each cell's EXTENSION too (a second run beside the baseline for complete cells)")
    ap.add_argument("--one-run", action="store_true",
                    help="measure again, whole and in one probe run, every cell whose rows come from several runs "
                         "(their candidates were compared with different measurements of the baseline)")
    ap.add_argument("--module-param", action="append", default=[], metavar="NAME=V1,V2",
                    help="a module-parameter grid instead of the recordsize grid (repeatable; the first value is "
                         "the baseline, e.g. zfs_txg_timeout=5,30); use --out, these rows are not the prior's")
    ap.add_argument("--summary", action="store_true", help="print the CSV's summary table (markdown) and stop")
    ap.add_argument("--by-parameter", action="store_true",
                    help="with --summary: each value against its own parameter's baseline (module grids)")
    ap.add_argument("--provenance", action="store_true", help="rewrite PROVENANCE.md from the meta file and stop")
    args = ap.parse_args(argv)
    s = Settings(repeats=args.repeats, runtime_s=args.runtime, ramp_s=args.ramp,
                 working_set=parse_size(args.working_set))
    out = args.out or DATA_DIR / f"prior-zfs{args.zfs}.csv"
    meta_path = out.with_suffix(".meta.json")
    if args.summary:
        print(parameter_summary(read_rows(out)) if args.by_parameter else markdown_summary(read_rows(out)))
        return 0
    if args.provenance:
        print(write_provenance(out, json.loads(meta_path.read_text())))
        return 0
    layouts = [x for x in args.layouts.split(",") if x]
    workloads = [x for x in args.workloads.split(",") if x]
    module = tuple(args.module_param)
    _check_grid(ap, layouts, workloads, module, args.out)
    t_start = time.monotonic()
    deadline = t_start + args.max_minutes * 60
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {"layouts": {}, "runs": []}
    tmp = Path(tempfile.mkdtemp(prefix="prior-grid-"))
    if args.project:
        project, commit = args.project.resolve(), "working tree " + str(args.project)
    else:
        project, commit = tmp / "project", snapshot_project(tmp / "project")
    log(f"project {commit}; out {out}")
    per_candidate: list[float] = []  # measured wall seconds per candidate, incl. the probe's own overhead
    boot_cost = 150.0
    skipped: list[str] = []
    run_meta = {"started_at": datetime.now(UTC).isoformat(timespec="seconds"), "commit": commit,
                "command": shlex.join(["tests/lab/prior-grid", *(argv if argv is not None else sys.argv[1:])]),
                "settings": s.__dict__, "cells": []}
    meta["runs"].append(run_meta)
    try:
        for layout in layouts:
            rows = read_rows(out)
            todo = [w for w in workloads if cell_todo(rows, layout, w, s, args.extend, args.one_run, module)]
            if not todo:
                log(f"{layout}: every cell complete, skipped")
                continue
            pace = statistics.fmean(per_candidate) if per_candidate else 60.0
            plan0 = cell_plan(rows, layout, todo[0], s, args.extend, args.one_run, module)
            if time.monotonic() + boot_cost + pace * (len(plan0[0]) + n_extra(plan0[1])) > deadline:
                skipped += [f"{layout}/{w}" for w in todo]
                log(f"{layout}: no time left for a single cell, skipped")
                continue
            with VMLock():
                t_boot = time.monotonic()
                with LabVM(args.zfs, layout, project=project) as vm:
                    boot_cost = time.monotonic() - t_boot
                    facts = guest_facts(vm)
                    lay = lablayouts.get(layout)
                    meta["layouts"][layout] = {
                        "description": lay.description, "zpool_create": list(lay.zpool_create),
                        "disks": [{"name": d.name, "media": d.media, "size": d.size, "iops": d.iops, "bps": d.bps,
                                   "logical_block_size": d.logical_block_size,
                                   "physical_block_size": d.physical_block_size} for d in lay.disks],
                        "image": labimage.image_key(args.zfs), "image_meta": vm.image.meta,
                        **{k: v for k, v in facts.items() if k != "profiles"},
                        "boot_and_create_s": round(boot_cost, 1)}
                    log(f"{layout}: up in {boot_cost:.0f} s; OpenZFS {facts['zfs_module']}, kernel {facts['kernel']}, "
                        f"{facts['fio']}, ARC c_min {facts['arc_c_min'] >> 20} MiB")
                    for workload in todo:
                        pace = statistics.fmean(per_candidate) if per_candidate else 60.0
                        sizes, extra, keep = cell_plan(read_rows(out), layout, workload, s, args.extend, args.one_run,
                                                       module)
                        n = len(sizes) + n_extra(extra)
                        need = pace * n + 30
                        if time.monotonic() + need > deadline:
                            skipped.append(f"{layout}/{workload}")
                            log(f"{layout}/{workload}: skipped, {need:.0f} s would pass the deadline")
                            continue
                        t0 = time.monotonic()
                        load_before = os.getloadavg()[0]
                        output = probe_cell(vm, workload, s, layout, sizes, extra, module=module)
                        took = time.monotonic() - t0
                        if output is None:
                            skipped.append(f"{layout}/{workload} (failed)")
                            continue
                        new = rows_of(output, zfs_version=facts["zfs_version"], layout=layout,
                                      profile=facts["profiles"][workload], arc_min=facts["arc_c_min"], s=s)
                        rows = [r for r in read_rows(out) if keep or not in_cell(r, layout, workload, s)]
                        write_rows(out, rows + new)
                        per_candidate.append(took / n)
                        run = output["run"]
                        run_meta["cells"].append({"layout": layout, "workload": workload, "status": run["status"],
                                                  "reason": run["reason"], "seconds": round(took, 1),
                                                  "rows": len(new), "candidates": [*sizes, *extra],
                                                  # the host's, VM included (2 vCPUs): above ~3, other work ran beside
                                                  "host_load_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)]})
                        meta_path.write_text(json.dumps(meta, indent=2) + "\n")
                        log(f"{layout}/{workload}: {run['status']}{' (' + run['reason'] + ')' if run['reason'] else ''}"
                            f", {len(new)} rows in {took:.0f} s ({took / n:.0f} s a candidate)")
                        print(summary_table(new), flush=True)
    except LabError as exc:
        log(f"lab VM failed: {exc}")
        return 125
    finally:
        run_meta["wall_s"] = round(time.monotonic() - t_start, 1)
        run_meta["skipped"] = skipped
        run_meta["ended_at"] = datetime.now(UTC).isoformat(timespec="seconds")
        meta_path.write_text(json.dumps(meta, indent=2) + "\n")
        subprocess.run(["rm", "-rf", str(tmp)])
    write_provenance(out, meta)
    log(f"done in {(time.monotonic() - t_start) / 60:.1f} min; skipped: {', '.join(skipped) or 'none'}")
    return 0 if not skipped else 3


def write_provenance(csv_path: Path, meta: dict) -> Path:
    """PROVENANCE.md beside the CSV, from the grid's meta file (what each boot read in the VM)."""
    rows = read_rows(csv_path)
    cells = sorted({(r["layout"], r["workload"], r["working_set_bytes"]) for r in rows})
    lines = [f"# {csv_path.name}: where the {'prior' if csv_path.name.startswith('prior-') else 'grid'} comes from", "",
             f"{len(rows)} rows (one per fio repeat of a probe candidate), {len(cells)} cells (layout x workload x "
             "working set), measured in the qemu ZFS lab (docs/lab.md) by `tests/lab/prior-grid`; "
             "columns, method and a summary in docs/prior.md.", "", "## Lab", ""]
    layouts = meta.get("layouts", {})
    images = {v["image"]: v for v in layouts.values()}
    for key, v in images.items():
        im = v["image_meta"]
        lines.append(f"- image `{key}`: OpenZFS package {im.get('zfs_package')}, kernel {im.get('kernel')}, "
                     f"built {im.get('built_at')}")
    versions = {(v["zfs_module"], v["kernel"], v["fio"]) for v in layouts.values()}
    for z, k, f in sorted(versions):
        lines.append(f"- read in the VM: `/sys/module/zfs/version` {z}, `uname -r` {k}, `fio --version` {f}")
    # the ARC as the rows say it was: capped (the prior's rows) or left alone (a module grid's)
    arc = ("The runner caps `zfs_arc_max` (`arc_max_bytes`): 96 MiB for the 192 MiB working sets (max(working set "
           "/ 4, c_min + 64 MiB), up to commit 6ca9695), 64 MiB for the 512 MiB ones (a quarter of the working set "
           "as the compressed ARC stores it, 64 MiB at the least)"
           if any(r.get("arc_max_bytes") for r in rows) else
           "The ARC is not capped (`arc_max_bytes` empty): the probe's default, the scratch datasets' data kept "
           "out of it (primarycache=metadata)")
    lines += [
        f"- VM: qemu TCG (no KVM), 2 vCPUs, 4096 MiB; `zfs_arc_min` lowered to 32 MiB at boot. {arc}",
        "", "## Layouts (qemu throttles per disk)", "",
        "| layout | disks | per-disk throttle | zpool create |", "| --- | --- | --- | --- |"]
    for name, v in layouts.items():
        d = v["disks"]
        kinds = sorted({(x["media"], x["logical_block_size"], x["physical_block_size"], x["iops"], x["bps"]) for x in d})
        throttle = "; ".join(f"{m} {lb}/{pb}: {i} IOPS, {b / 1e6:.0f} MB/s" for m, lb, pb, i, b in kinds)
        lines.append(f"| `{name}` | {len(d)} x {d[0]['size'] >> 30} GiB | {throttle} | "
                     f"`zpool create {' '.join(v['zpool_create'])}` |")
    lines += ["", "## Runs", ""]
    for run in meta.get("runs", []):
        lines += [f"- `{run['command']}` at commit {run['commit']}: {run['started_at']} to {run.get('ended_at', '?')}, "
                  f"wall time {run.get('wall_s', 0) / 60:.1f} min; settings {json.dumps(run['settings'])}; "
                  f"cells measured {len(run['cells'])}"
                  + (f"; skipped {', '.join(run['skipped'])}" if run.get("skipped") else "")]
    lines += ["", "## Caveats", "",
              "- The host has 2 cores shared with other work (other helpers' tests and VMs may have run beside the "
              "grid); absolute numbers are those of an emulated CPU. Compare ratios within a cell.",
              "- The ARC is compressed: with 50 % compressible data the 96 MiB cap held most of the 192 MiB working "
              "sets (cells `.../192M`, median ARC hit ratio 0.74-0.89 per layout); the 512 MiB cells were measured "
              "against a 64 MiB cap. `arc_hit_ratio` says how much of each repeat was served from memory.",
              "- Each repeat is short (`ramp_s` warm-up discarded, 8 s measured); `runtime_s` is per fio thread.",
              ]
    lines += meta.get("notes", [])
    # the prior's is PROVENANCE.md (shipped with it); another grid's (a module-parameter grid) its own
    path = csv_path.parent / ("PROVENANCE.md" if csv_path.name.startswith("prior-") else
                              f"{csv_path.stem}.PROVENANCE.md")
    path.write_text("\n".join(lines) + "\n")
    return path


def markdown_summary(rows: list[dict[str, str]]) -> str:
    """Per cell: each candidate's IOPS mean ± half the range of its repeats, its ratio to the
    baseline of its own run, mean write p99, ARC hit ratio, ranked by that ratio; the best marked."""
    cells: dict[tuple[str, str, str], dict[str, list[dict]]] = {}
    for r in rows:
        cells.setdefault((r["layout"], r["workload"], r["working_set_bytes"]), {}).setdefault(
            f"{r['parameter']}={r['value']}", []).append(r)
    out = ["| layout | workload | candidate | IOPS (mean ± half range) | vs baseline | write p99 ms | "
           "read p99 ms | ARC hit | repeats |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for (layout, workload, ws), cands in cells.items():
        def mean(rs, col, scale=1.0):
            vals = [float(r[col]) for r in rs if r[col] != ""]
            return statistics.fmean(vals) / scale if vals else None
        base = next((rs for rs in cands.values() if rs[0]["baseline"] == "1"), None)
        base_iops = mean(base, "iops") if base else None
        # a candidate against the baseline of its own run (a cell extended by a second run has two)
        by_run: dict[str, list[float]] = {}
        for r in base or []:
            by_run.setdefault(r["run_id"], []).append(float(r["iops"]))
        run_base = {run: statistics.fmean(v) for run, v in by_run.items()}

        def ratio(rs, base_iops=base_iops, run_base=run_base):  # this cell's baselines, bound now
            if not base_iops:
                return None
            return statistics.fmean(float(r["iops"]) / run_base.get(r["run_id"], base_iops) for r in rs)
        ranked = sorted(cands.items(), key=lambda kv: -(ratio(kv[1]) or mean(kv[1], "iops")))
        for i, (name, rs) in enumerate(ranked):
            iops = [float(r["iops"]) for r in rs]
            m = statistics.fmean(iops)
            fmt = lambda v: "-" if v is None else f"{v:.1f}"  # noqa: E731 - a one-line helper, read where it is used
            label = f"**{name}**" if i == 0 else name
            hit = mean(rs, "arc_hit_ratio")
            ws_note = f" ({int(ws) >> 20} MiB)"
            out.append(f"| {layout if i == 0 else ''} | {workload + ws_note if i == 0 else ''} | {label}"
                       f"{' (baseline)' if rs[0]['baseline'] == '1' else ''} | {m:,.0f} ± {(max(iops) - min(iops)) / 2:,.0f} | "
                       f"{(f'{ratio(rs):.2f}x' if base_iops else '-')} | {fmt(mean(rs, 'write_p99_us', 1000))} | "
                       f"{fmt(mean(rs, 'read_p99_us', 1000))} | "
                       f"{'-' if hit is None else f'{hit:.0%}'} | "
                       f"{len(rs)} |")
    return "\n".join(out)


def parameter_summary(rows: list[dict[str, str]]) -> str:
    """Per (layout, workload, parameter), each value against that parameter's own baseline (the
    grid of several parameters, each with a baseline of its own, as `--module-param` measures):
    mean IOPS, its ratio to the baseline's mean, the spread of the repeats ((max - min) / mean),
    mean write p99."""
    groups: dict[tuple[str, str, str], dict[str, list[dict]]] = {}
    for r in rows:
        groups.setdefault((r["layout"], r["workload"], r["parameter"]), {}).setdefault(r["value"], []).append(r)
    out = ["| layout | workload | parameter | value | IOPS mean | vs baseline | spread of repeats | "
           "write p99 ms | repeats |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for (layout, workload, parameter), values in groups.items():
        base = next((rs for rs in values.values() if rs[0]["baseline"] == "1"), None)
        base_mean = statistics.fmean(float(r["iops"]) for r in base) if base else None
        for value, rs in sorted(values.items(), key=lambda kv: kv[1][0]["baseline"] != "1"):
            iops = [float(r["iops"]) for r in rs]
            m = statistics.fmean(iops)
            p99 = [float(r["write_p99_us"]) / 1000 for r in rs if r["write_p99_us"] != ""]
            out.append(f"| {layout} | {workload} | {parameter} | {value}{' (baseline)' if rs[0]['baseline'] == '1' else ''}"
                       f" | {m:,.0f} | {f'{m / base_mean:.2f}x' if base_mean else '-'} | "
                       f"{(max(iops) - min(iops)) / m:.1%} | {f'{statistics.fmean(p99):.1f}' if p99 else '-'} | "
                       f"{len(rs)} |")
    return "\n".join(out)


def summary_table(rows: list[dict[str, object]]) -> str:
    """Per candidate: IOPS mean, spread (max-min)/mean, worst write p99, ranked."""
    by: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        by.setdefault((str(r["parameter"]), str(r["value"])), []).append(r)
    stats = []
    for (p, v), rs in by.items():
        iops = [float(r["iops"]) for r in rs]
        p99 = [float(r["write_p99_us"]) for r in rs if r["write_p99_us"] not in ("", None)]
        mean = statistics.fmean(iops)
        stats.append((mean, f"  {p + '=' + v:>20} {mean:>9,.0f} IOPS  ±{(max(iops) - min(iops)) / mean / 2:5.1%}  "
                            f"write p99 {max(p99) / 1000 if p99 else float('nan'):8.1f} ms  (n={len(rs)})"))
    return "\n".join(line for _, line in sorted(stats, reverse=True))


if __name__ == "__main__":
    sys.exit(main())
