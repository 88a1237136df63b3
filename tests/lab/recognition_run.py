"""Runs inside a lab VM (tests/lab/record-recognition): each workload profile's own probe fio job
(advisor/probe/fio_job.py, every file-system role) and jobs no profile was written for, one at a
time on a fresh dataset tank/rec, and records what the daemon reads per dataset while each runs:
every objset kstat of the pool (/proc/spl/kstat/zfs/tank/objset-*) every SAMPLE_SECONDS, raw.

OUT/<job>/<n>.objsets holds sample n (the files' texts, each after a line `== <file> <seconds>`),
OUT/<job>/job.fio the job, OUT/RUN.json what ran with which versions.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, "/project")

from advisor.engine.loader import load_rulebook  # noqa: E402 - after the sys.path line above
from advisor.probe.fio_job import Hygiene, build_job  # noqa: E402 - after the sys.path line above

KSTATS = Path("/proc/spl/kstat/zfs/tank")
DATASET, MOUNT = "tank/rec", "/tank/rec"
RUNTIME, RAMP, SAMPLE_SECONDS = 40, 5, 5
HYGIENE = Hygiene(runtime_seconds=RUNTIME, ramp_seconds=RAMP, max_file_bytes=256 << 20)

# What the jobs no profile was tuned on should be recognised as: the pgbench-like mix is PostgreSQL's
# data and WAL on one dataset (rules/workloads/postgres.yaml: the data role shares_with the wal), so
# postgres/data; a file copy is no database.
OTHERS_EXPECTED = {"pgbench-like": "postgres/data", "file-copy": "unknown"}

# Jobs no profile was tuned on (fio(1) options; `directory` is added).
PGBENCH_LIKE = f"""[global]
ioengine=psync
time_based=1
runtime={RUNTIME}
ramp_time={RAMP}
randrepeat=0
fallocate=none
refill_buffers=1
buffer_compress_percentage=50
thread=1
[tables]
rw=randrw
rwmixread=50
bs=8K
size=256M
numjobs=2
[wal]
rw=write
bs=8K
fdatasync=1
size=64M
"""

# A file copy: a tree of many small and some large files copied in, as `cp -a` does it.
COPY = ("set -e; for i in 1 2 3; do cp -a /usr/lib /tank/rec/lib.$i; cp -a /usr/share /tank/rec/share.$i; "
        "rm -rf /tank/rec/lib.$i /tank/rec/share.$i; done")


def run(argv: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(argv, check=True, text=True, capture_output=True, **kw)


def sample(path: Path) -> None:
    chunks = []
    for entry in sorted(os.listdir(KSTATS)):
        if entry.startswith("objset-"):
            try:
                chunks.append(f"== {entry} {time.time():.3f}\n" + (KSTATS / entry).read_text())
            except OSError:
                continue
    path.write_text("".join(chunks))


def fresh_dataset() -> None:
    subprocess.run(["zfs", "destroy", "-r", DATASET], capture_output=True)
    run(["zfs", "create", "-o", "atime=off", DATASET])


def record(out: Path, argv: list[str], skip_seconds: float, seconds: float, stop: bool = False) -> None:
    """Start `argv`, skip its first seconds (layout, warm-up), then sample for `seconds`
    (and with `stop`, end it there)."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(skip_seconds)
    n, start = 0, time.monotonic()
    while proc.poll() is None and time.monotonic() - start <= seconds + 0.5:
        sample(out / f"{n:02d}.objsets")
        n += 1
        time.sleep(max(0.0, start + n * SAMPLE_SECONDS - time.monotonic()))
    if stop and proc.poll() is None:
        proc.terminate()
        proc.wait()
        return
    proc.wait()
    if proc.returncode:
        raise SystemExit(f"{argv} failed: {proc.stderr.strip()[-300:]}")


def fio_job(out: Path, name: str, text: str, layout_text: str | None) -> dict:
    out.mkdir(parents=True)
    (out / "job.fio").write_text(text)
    fresh_dataset()
    started = time.time()
    if layout_text:  # files laid out first, outside the recorded window
        (out / "layout.fio").write_text(layout_text)
        run(["fio", str(out / "layout.fio")])
        (out / "layout.fio").unlink()
    record(out, ["fio", "--output-format=terse", str(out / "job.fio")], RAMP + 1, RUNTIME - 2)
    return {"job": name, "fio": True, "started": started}


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    book = load_rulebook()
    ran = []
    only = set(sys.argv[2:])
    for name, workload in sorted(book.workloads.items()):
        for role in workload.roles:
            if role.dataset_type != "filesystem":
                continue
            label = f"{name}.{role.name}"
            if only and label not in only:
                continue
            job = build_job(workload, MOUNT, HYGIENE, role=role.name)
            ran.append({**fio_job(out / label, label, job.text, job.layout_text),
                        "profile": name, "role": role.name, "sections": list(job.sections)})
            print(label, "done", flush=True)
    if not only or "pgbench-like" in only:
        text = PGBENCH_LIKE.replace("[global]\n", f"[global]\ndirectory={MOUNT}\n", 1)
        ran.append({**fio_job(out / "pgbench-like", "pgbench-like", text,
                              text.replace("[global]\n", "[global]\ncreate_only=1\n", 1)), "profile": None})
        print("pgbench-like done", flush=True)
    if not only or "file-copy" in only:
        (out / "file-copy").mkdir()
        (out / "file-copy" / "job.sh").write_text(COPY + "\n")
        fresh_dataset()
        started = time.time()
        record(out / "file-copy", ["sh", "-c", COPY], 1, 40, stop=True)
        ran.append({"job": "file-copy", "fio": False, "started": started, "profile": None})
        print("file-copy done", flush=True)
    versions = {"kernel": os.uname().release, "zfs": Path("/sys/module/zfs/version").read_text().strip(),
                "fio": run(["fio", "--version"]).stdout.strip()}
    (out / "RUN.json").write_text(json.dumps({"versions": versions, "sample_seconds": SAMPLE_SECONDS,
                                              "runtime": RUNTIME, "ramp": RAMP, "jobs": ran}, indent=1) + "\n")


if __name__ == "__main__":
    main()
