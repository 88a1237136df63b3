"""What the pool-efficiency lab tests share: the random-I/O probe in the guest and the reading
of its report (test_probe_efficiency.py, test_scaling_cpu.py)."""
from __future__ import annotations

from labprobe import PROBE

# Small random I/O (advisor/probe/random_efficiency.py), 40 s of fio runs in all.
RANDOM_PROBE = f"{PROBE} --pool tank --efficiency random --budget 40s --file-size 32M --json"


def random_lines(layout: str, report: dict) -> list[str]:
    lines = [f"{layout} raw random IOPS: {report['raw_random_iops']}"]
    for r in report["random_results"]:
        levels = ", ".join(f"{lv['jobs']} jobs {lv['iops']:.0f} IOPS (disks busy "
                           f"{sum(d['busy_ratio'] for d in lv['disks'].values()) / len(lv['disks']):.0%}, queue "
                           f"{sum(d['queue_depth'] for d in lv['disks'].values()) / len(lv['disks']):.1f}, busiest "
                           f"{lv['threads']['busiest'][0]['name'] if lv['threads']['busiest'] else '-'} "
                           f"{lv['threads']['busiest'][0]['busy_ratio'] if lv['threads']['busiest'] else 0:.0%}, "
                           f"CPU {lv['cpu_busy_ratio']:.0%})" for lv in r["levels"])
        lines.append(f"{layout} {r['test']}: {r['measured']:.0f} of {r['expected']:.0f} IOPS ({r['ratio']:.0%}; "
                     f"{r['expectation']}); {levels}; {r['diagnosis']}")
    return lines


def disk_share(result: dict, raw_iops: dict[str, float]) -> float:
    """The I/Os a second each disk did at the best level, over its raw random read IOPS (mean)."""
    [level] = [lv for lv in result["levels"] if lv["jobs"] == result["jobs"]]
    shares = [d["ops"] / level["seconds"] / raw_iops[name] for name, d in level["disks"].items() if raw_iops.get(name)]
    return sum(shares) / len(shares)
