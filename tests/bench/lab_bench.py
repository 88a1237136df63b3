#!/usr/bin/env python3
"""Lab benchmark (not a timed test): zfs-advisor vs node_exporter's zfs collector in the VM.

    tests/bench/lab_bench.py [--zfs 2.3] [--layout ssd-mirror2x2] [--datasets 10,100,1000] [--scrapes 20]
                             [--record DIR]

Boots a lab VM (tests/lab), writes and reads some data, then for each dataset
count (created under tank/bench) scrapes, from inside the VM and one at a
time, both exporters:

- zfs-advisor (`python -m advisor serve`, the working copy) with
  facts_max_age_seconds=0: every scrape reads the kstats again, and zpool/zfs
  run in the background every 15 s (commands_interval_seconds);
- node_exporter (Debian's prometheus-node-exporter) with only its zfs
  collector (`--collector.disable-defaults --collector.zfs`).

Columns: scrape latency p50/p99, CPU seconds per scrape of the exporter and
the processes it waited for (utime+stime+cutime+cstime from /proc/<pid>/stat),
"background CPU s/run": zfs-advisor's CPU while nobody scrapes, per command
run (zpool/zfs included): at a 15 s scrape interval, a scrape costs the sum
of the two; all series and ZFS series (zfs_* without zfs_advisor_*,
node_zfs_*). The VM's CPU is emulated (qemu TCG): compare the ratios, not
the absolute times.
--record DIR also copies an `advisor snapshot` taken at the largest count.
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests" / "lab")]
from advisor.config.settings import DEFAULT_PORT  # noqa: E402 - after the sys.path line above
from labvm import LabVM  # noqa: E402 - after the sys.path line above

PY = "PYTHONPATH=/project /opt/zfs-advisor-venv/bin/python"
MEASURE = r"""
import json, os, statistics, sys, time, urllib.request
url, pid, n, idle = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
def cpu():
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in f[11:15]) / os.sysconf("SC_CLK_TCK")
for _ in range(120):
    try:
        urllib.request.urlopen(url, timeout=60).read(); break
    except OSError:
        time.sleep(1)
c0, times = cpu(), []
for _ in range(n):
    t = time.perf_counter(); body = urllib.request.urlopen(url, timeout=120).read().decode()
    times.append(time.perf_counter() - t)
cpu_s = (cpu() - c0) / n
c1 = cpu(); time.sleep(idle); idle_cpu = cpu() - c1
lines = [l for l in body.splitlines() if l and not l.startswith("#")]
times.sort()
print(json.dumps({"p50": statistics.median(times), "p99": times[round(0.99 * (len(times) - 1))], "cpu": cpu_s,
    "idle_cpu": idle_cpu,
    "series": len(lines),
    "zfs_series": sum(1 for l in lines if (l.startswith("zfs_") and not l.startswith("zfs_advisor_"))
                      or l.startswith("node_zfs_"))}))
"""


def start(vm: LabVM, name: str, command: str) -> int:
    out = vm.exec(f"nohup {command} >/root/{name}.log 2>&1 & echo $!", check=True).stdout
    return int(out.strip())


COMMANDS_INTERVAL = 15  # zfs-advisor's default commands_interval_seconds
IDLE_RUNS = 3  # background runs measured without scrapes


def measure(vm: LabVM, url: str, pid: int, scrapes: int, idle_seconds: float) -> dict:
    vm.write_file("/root/measure.py", MEASURE)
    out = vm.exec(f"/opt/zfs-advisor-venv/bin/python /root/measure.py {url} {pid} {scrapes} {idle_seconds}",
                  timeout=3600, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--zfs", default="2.3")
    parser.add_argument("--layout", default="ssd-mirror2x2")
    parser.add_argument("--datasets", default="10,100,1000")
    parser.add_argument("--scrapes", type=int, default=20)
    parser.add_argument("--record", type=Path, help="copy an advisor snapshot taken at the largest count here")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # stop the VM on kill, too
    counts = [int(x) for x in args.datasets.split(",")]
    out_dir = args.record.resolve().parent if args.record else None
    if out_dir:
        out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    with LabVM(args.zfs, args.layout, out_dir=out_dir) as vm:
        vm.exec("dd if=/dev/urandom of=/tank/pg/bench-io bs=1M count=64 conv=fsync status=none && "
                "dd if=/tank/pg/bench-io of=/dev/null bs=8k status=none && zfs create tank/bench",
                timeout=900, check=True)
        advisor = start(vm, "advisor", f"env ZFS_ADVISOR_FACTS_MAX_AGE_SECONDS=0 {PY} -m advisor serve --port {DEFAULT_PORT}")
        node = start(vm, "node", "prometheus-node-exporter --collector.disable-defaults --collector.zfs "
                                 "--web.listen-address=127.0.0.1:9100")
        existing = int(vm.exec("zfs list -H -o name -t filesystem,volume | wc -l", check=True).stdout)
        created = 0
        for n in counts:
            t0 = time.monotonic()
            # in parallel: creations batch into shared txgs instead of one txg sync each
            vm.exec(f"seq {created} {n - 1} | xargs -P 16 -I@ zfs create tank/bench/ds@", timeout=7200, check=True)
            created = n
            print(f"[bench] {n} datasets created ({time.monotonic() - t0:.0f} s)", file=sys.stderr, flush=True)
            time.sleep(COMMANDS_INTERVAL + 5)  # zfs-advisor's background run sees the new datasets
            for name, url, pid, idle in (
                ("zfs-advisor", f"http://127.0.0.1:{DEFAULT_PORT}/metrics", advisor, IDLE_RUNS * COMMANDS_INTERVAL),
                ("node_exporter zfs", "http://127.0.0.1:9100/metrics", node, 0),
            ):
                r = measure(vm, url, pid, args.scrapes, idle)
                rows.append((n + existing, name, r))
                print(f"[bench] {name} at {n + existing} datasets: {r}", file=sys.stderr, flush=True)
        if args.record:
            snap = f"/out/{args.record.name}"
            vm.exec(f"rm -rf {snap} && {PY} -m advisor snapshot {snap} --note 'lab_bench: {args.layout}, "
                    f"{created} extra datasets'", timeout=1800, check=True)
        version = vm.exec("cat /sys/module/zfs/version", check=True).stdout.strip()
    print(f"OpenZFS {version}, layout {args.layout}, lab VM (qemu TCG: compare ratios, not absolute times)\n")
    print("| datasets | exporter | scrapes | p50 s | p99 s | CPU s/scrape | background CPU s/run | series "
          "| ZFS series |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for n, name, r in rows:
        background = f"{r['idle_cpu'] / IDLE_RUNS:.3f}" if name == "zfs-advisor" else "-"
        print(f"| {n:,} | {name} | {args.scrapes} | {r['p50']:.3f} | {r['p99']:.3f} | {r['cpu']:.3f} "
              f"| {background} | {r['series']:,} | {r['zfs_series']:,} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
