"""What set a probe run's pace (advisor/probe/run_counters.py reads the host, advisor/evidence/bound.py
judges): the host's CPU and steal time from /proc/stat, ZFS's kernel threads from their
/proc/<pid>/task/<tid>/stat, the pool's disks' busy time from /proc/diskstats, read through the
host's file view as the runner reads them.

/proc/diskstats lines are the lab recording's (tests/fixtures/hosts/2.3.2/ssd-mirror2x2/idle, a VM
of four virtual SSDs) with field 13, io_ticks, advanced by the test; the ZFS threads' ticks are the
lab's recording of a 4K random write (tests/fixtures/threads/*/PROVENANCE). The hosts recorded
there have no /proc/stat, so its samples are written here in the format of proc(5): a `cpu` line
of user nice system idle iowait irq softirq steal guest guest_nice ticks summed over the CPUs,
then one `cpuN` line per CPU.
"""
from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path

import pytest

from advisor.evidence.bound import CONTENDED, CPU_SATURATED, DISKS_BUSY, RunLoad, judge, storage_rows
from advisor.host.cpustat import cpu_share, parse_cpu_times
from advisor.host.files import HostFiles
from advisor.probe.fio_result import parse_fio_json
from advisor.probe.run_counters import io_window, run_load, sample_load
from support import HOSTS

TICKS = 100  # USER_HZ of the lab's kernel (the threads recording's clock_ticks)
SSD = HOSTS / "2.3.2" / "ssd-mirror2x2"
THREADS = Path(__file__).parents[1] / "fixtures" / "threads" / "2.3.2-slow-mirror2-randwrite"
THREADS_SECONDS = 7.075  # between its two readings (its PROVENANCE)
DISKS = ["sdb", "sdc"]  # two of the recording's pool disks, a mirror


def proc_stat(busy: int, idle: int, steal: int = 0, cpus: int = 2) -> str:
    """A /proc/stat head whose cpu line has `busy` ticks of user+system (split 3:1), `idle`
    (a quarter of it iowait) and `steal`, and guest time that is already part of user."""
    user, system = busy * 3 // 4, busy - busy * 3 // 4
    iowait = idle // 4
    head = f"cpu  {user} 0 {system} {idle - iowait} {iowait} 0 0 {steal} {user // 10} 0"
    per = [f"cpu{i} {user // cpus} 0 {system // cpus} {(idle - iowait) // cpus} {iowait // cpus} 0 0 "
           f"{steal // cpus} 0 0" for i in range(cpus)]
    return "\n".join([head, *per, "intr 0", "ctxt 0", "btime 1795000000", ""])


def diskstats(io_ticks_ms: dict[str, int]) -> str:
    """The recorded idle /proc/diskstats with the io_ticks (field 13) of the named disks set."""
    lines = []
    for line in (SSD / "idle" / "proc" / "diskstats").read_text().splitlines():
        fields = line.split()
        if fields[2] in io_ticks_ms:
            fields[12] = str(io_ticks_ms[fields[2]])
        lines.append(" ".join(fields))
    return "\n".join(lines) + "\n"


def host(tmp_path: Path, name: str, stat: str, disks: str, threads: Path | None = None) -> HostFiles:
    root = tmp_path / name
    if threads is not None:
        shutil.copytree(threads / "proc", root / "proc")
    (root / "proc").mkdir(parents=True, exist_ok=True)
    (root / "proc" / "stat").write_text(stat)
    (root / "proc" / "diskstats").write_text(disks)
    return HostFiles(root)


def window(tmp_path: Path, seconds: float, before: tuple[str, str], after: tuple[str, str], fio_cores: float,
           threads: bool = False) -> RunLoad:
    """The load over a run of `seconds` between two hosts written as (proc/stat, proc/diskstats)."""
    first = sample_load(host(tmp_path, "before", *before, THREADS / "before" if threads else None), DISKS)
    second = sample_load(host(tmp_path, "after", *after, THREADS / "after" if threads else None), DISKS)
    return run_load(first, second, seconds, fio_cores, TICKS)


def over_the_threads_recording(tmp_path: Path, busy_ratio: float, disk_ms: int, fio_cores: float) -> RunLoad:
    """The lab's threads recording (two CPUs, 7.075 s) with the host's CPU `busy_ratio` busy and
    the disks busy `disk_ms` each."""
    total = int(2 * THREADS_SECONDS * TICKS)
    busy = round(busy_ratio * total)
    return window(tmp_path, THREADS_SECONDS, (proc_stat(10_000, 5_000), diskstats({"sdb": 0, "sdc": 0})),
                  (proc_stat(10_000 + busy, 5_000 + total - busy), diskstats({"sdb": disk_ms, "sdc": disk_ms})),
                  fio_cores, threads=True)


def test_proc_stat_counts_guest_time_once_and_iowait_as_idle():
    times = parse_cpu_times(proc_stat(busy=1000, idle=400, steal=100))
    assert (times.total, times.idle, times.steal, times.cpus) == (1500, 400, 100, 2)
    later = parse_cpu_times(proc_stat(busy=1000 + 1900, idle=400 + 50, steal=100 + 50))
    share = cpu_share(times, later)
    assert share.busy == pytest.approx(1950 / 2000) and share.steal == pytest.approx(50 / 2000)
    assert cpu_share(later, later) is None  # no time between the readings: no share
    with pytest.raises(ValueError, match="no cpu line"):
        parse_cpu_times("intr 0\n")


def test_fio_reports_cpu_per_job_and_the_run_counts_every_job():
    """fio's usr_cpu and sys_cpu are a job's share of one CPU, averaged over a group's jobs: a
    group of 4 jobs (fio's JSON of a 4-job random read, tests/fixtures/fio/host-ext4) used 4 x that."""
    text = (Path(__file__).parents[1] / "fixtures" / "fio" / "host-ext4" / "random-read-4jobs.json").read_text()
    metrics = parse_fio_json(text)
    assert metrics.cpu_cores == pytest.approx(4 * (metrics.cpu_user_ratio + metrics.cpu_system_ratio))


def test_a_cpu_hog_beside_the_probe_makes_the_run_cpu_bound(tmp_path):
    """10 s, two CPUs: 98 % busy while fio used 0.3 of a CPU, the disks busy 31 % and 29 %."""
    load = window(tmp_path, 10.0, (proc_stat(10_000, 5_000), diskstats({"sdb": 100_000, "sdc": 100_000})),
                  (proc_stat(10_000 + 1_960, 5_000 + 40), diskstats({"sdb": 103_100, "sdc": 102_900})), 0.3)
    assert load.disks_busy == pytest.approx({"sdb": 0.31, "sdc": 0.29})
    assert load.cpu_busy_ratio == pytest.approx(0.98) and load.others_ratio == pytest.approx(0.98 - 0.15)
    judged = judge(load)
    assert judged.verdict == "cpu"
    assert judged.reason == ("the host's CPU set the pace, not the storage: CPU 98% busy (83% other programs' "
                             "work), while the busiest disk, sdb, was busy 31% of the 10 s")


def test_the_zfs_threads_cpu_is_the_probes_own_not_others(tmp_path):
    """The lab's threads recording (ZFS's threads used 0.88 of a CPU over 7.075 s) between the
    same kind of readings: their time is taken from the others' share."""
    load = over_the_threads_recording(tmp_path, 0.98, 2_000, 0.3)
    assert load.zfs_thread_cores == pytest.approx(0.883, abs=0.001)
    assert load.others_ratio == pytest.approx(load.cpu_busy_ratio - (0.3 + load.zfs_thread_cores) / 2)
    assert judge(load).verdict == "cpu"  # 39 % of the host was still others' work


def test_a_probe_that_keeps_the_cpu_busy_itself_is_kept(tmp_path):
    """97 % busy, but fio (1.05 CPUs) and ZFS's threads (0.88) did it: a cost of the setting."""
    load = over_the_threads_recording(tmp_path, 0.97, 3_000, 1.05)
    assert load.contention < CONTENDED
    judged = judge(load)
    assert judged.verdict == "unclear" and "the probe itself" in judged.reason


def test_busy_disks_with_cpu_to_spare_are_storage_bound_and_steal_counts_as_others(tmp_path):
    storage = window(tmp_path, 10.0, (proc_stat(10_000, 5_000), diskstats({"sdb": 0, "sdc": 0})),
                     (proc_stat(10_000 + 800, 5_000 + 1_200), diskstats({"sdb": 9_600, "sdc": 9_400})), 0.2)
    assert judge(storage).verdict == "storage" and storage.cpu_busy_ratio == pytest.approx(0.4)
    shutil.rmtree(tmp_path / "before")
    shutil.rmtree(tmp_path / "after")
    # a guest whose hypervisor ran another guest half the time: busy to the guest, none of its work
    stolen = window(tmp_path, 10.0, (proc_stat(10_000, 5_000, 100), diskstats({"sdb": 0, "sdc": 0})),
                    (proc_stat(10_000 + 900, 5_000 + 40, 100 + 1_060), diskstats({"sdb": 2_000, "sdc": 2_000})), 0.2)
    assert stolen.cpu_steal_ratio == pytest.approx(0.53) and stolen.contention >= CONTENDED
    judged = judge(stolen)
    assert judged.verdict == "cpu" and "53% stolen by the hypervisor" in judged.reason


def test_the_recorded_idle_and_load_diskstats_give_the_disks_busy_share():
    """The lab's two recordings of the SSD mirror, 217 s apart (their manifests): the disks had I/O
    in flight 13-14 % of that time; the recordings have no /proc/stat, so the run is not judged."""
    at = {name: datetime.fromisoformat(json.loads((SSD / name / "manifest.json").read_text())["created_at"]
                                       .replace("Z", "+00:00")) for name in ("idle", "load")}
    seconds = (at["load"] - at["idle"]).total_seconds()
    first, second = (sample_load(HostFiles(SSD / name), ["sdb", "sdc", "sdd"]) for name in ("idle", "load"))
    load = run_load(first, second, seconds, None, TICKS)
    assert load.disks_busy["sdb"] == pytest.approx((38336 - 9156) / 1000 / seconds)
    assert 0.13 < min(load.disks_busy.values()) <= max(load.disks_busy.values()) < 0.15
    assert load.cpu_busy_ratio is None
    assert judge(load).verdict == "unclear" and "CPU counters could not be read" in judge(load).reason


def test_the_summed_io_time_is_said_beside_io_ticks_and_does_not_change_a_cpu_verdict():
    """A hogged run whose busiest disk io_ticks put at 19 % while its I/Os were in flight 1.4 times
    the window (several at once): the verdict stays `cpu` (the lower end keeps no bad evidence), and
    the reason says the disks may have been busier than io_ticks shows."""
    load = RunLoad(seconds=38, cpus=2, cpu_busy_ratio=0.98, cpu_steal_ratio=0.0, others_ratio=0.53,
                   disks_busy={"sdc": 0.19, "sdb": 0.1}, disks_in_flight={"sdc": 1.4, "sdb": 0.5})
    judged = judge(load)
    assert judged.verdict == "cpu"
    assert "sdc, was busy 19% of the 38 s by io_ticks, with I/O in flight up to 100% of it" in judged.reason
    quiet = load.model_copy(update={"disks_in_flight": {"sdc": 0.3}})
    assert "in flight" not in judge(quiet).reason  # both ends low: nothing more to say


def test_the_recorded_diskstats_give_the_summed_io_time_at_or_above_io_ticks():
    at = {name: datetime.fromisoformat(json.loads((SSD / name / "manifest.json").read_text())["created_at"]
                                       .replace("Z", "+00:00")) for name in ("idle", "load")}
    first, second = (sample_load(HostFiles(SSD / name), ["sdb", "sdc", "sdd"]) for name in ("idle", "load"))
    load = run_load(first, second, (at["load"] - at["idle"]).total_seconds(), None, TICKS)
    assert set(load.disks_in_flight) == set(load.disks_busy)
    assert all(load.disks_in_flight[d] >= load.disks_busy[d] for d in load.disks_busy), load


@pytest.mark.parametrize("busy, others, disk, verdict", [
    (CPU_SATURATED, CONTENDED, DISKS_BUSY - 0.01, "cpu"),
    (CPU_SATURATED - 0.01, 0.8, 0.3, "unclear"),  # busy, not saturated
    (CPU_SATURATED, CONTENDED, DISKS_BUSY, "unclear"),  # both near saturation
    (CPU_SATURATED - 0.01, 0.0, DISKS_BUSY, "storage"),
    (0.2, 0.0, 0.5, "unclear"),  # neither: latency set the pace
])
def test_the_thresholds_divide_the_verdicts(busy, others, disk, verdict):
    load = RunLoad(seconds=30, cpus=2, cpu_busy_ratio=busy, cpu_steal_ratio=0.0, others_ratio=others,
                   disks_busy={"sdb": disk})
    assert judge(load).verdict == verdict


def test_the_window_is_fios_io_time_when_it_fits():
    assert io_window(33.0, 30.0, 2.0) == 32.0
    assert io_window(20.0, 30.0, 2.0) == 20.0  # a report longer than the readings: the readings
    assert io_window(5.0, 0.0, 0.0) == 5.0


def test_one_cpu_bound_repeat_sets_aside_its_runs_parameter():
    class Row:
        def __init__(self, run_id, parameter, bound, reason=None):
            self.run_id, self.parameter, self.bound, self.bound_reason = run_id, parameter, bound, reason

    rows = [Row(1, "recordsize", "storage"), Row(1, "recordsize", "cpu", "CPU 98% busy"), Row(1, "compression", None),
            Row(2, "recordsize", "unclear")]
    kept, aside = storage_rows(rows)
    assert [(r.run_id, r.parameter) for r in kept] == [(1, "compression"), (2, "recordsize")]
    assert [(a.run_id, a.parameter, a.repeats, a.reason) for a in aside] == [(1, "recordsize", 1, "CPU 98% busy")]
