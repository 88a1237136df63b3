"""The runner judges every repeat it stores: a plan of two candidates run by `PlanRunner`, the
commands it starts answered by a stand-in for zfs and fio (fio writes a lab run's real JSON,
tests/fixtures/fio/lab-zfs2.3.2-ssd-mirror2x2, and moves the host's counters on while it "runs":
a CPU kept busy by others with the disks idle, or the disks busy with the CPU to spare). What the
runner does with them is the real code: the host read before and after each repeat, the verdict
stored with the result, evidence() setting a CPU-bound run aside.

/proc/stat is written in proc(5)'s format (user nice system idle iowait irq softirq steal guest
guest_nice over two CPUs); /proc/diskstats lines are in the kernel's format
(Documentation/admin-guide/iostats.rst), io_ticks the 13th field.
"""
from __future__ import annotations

import logging
from pathlib import Path

import pytest

from advisor.engine.loader import load_rulebook
from advisor.host.files import HostFiles
from advisor.host.runner import CommandResult, CommandRunner
from advisor.probe.candidates import make_candidate
from advisor.probe.plan_runner import FIO_ARGV, PlanRunner
from advisor.probe.probe_plan import Budget
from advisor.probe.probe_service import ProbeConfig, ProbeService
from advisor.probe.safety import Thresholds
from advisor.probe.scratch import ScratchArea
from advisor.probe.temporary_modparams import ModuleParams, ParamGuard
from advisor.store.probe_evidence import evidence

FIO_JSON = Path(__file__).parents[1] / "fixtures" / "fio" / "lab-zfs2.3.2-ssd-mirror2x2" / "postgres-data-8K-quota.json"
DESCRIPTOR = {"pool": "tank", "layout": "1 x mirror of 2", "ashift": 12, "media": "ssd",
              "vdevs": [{"type": "mirror", "width": 2, "ashift": 12, "nparity": None, "disks": ["sdb", "sdc"]}],
              "disks": [{"name": "sdb", "media": "ssd"}, {"name": "sdc", "media": "ssd"}]}


class Host:
    """The host's counters under a root, moved on by each fio run as `pace` says."""

    def __init__(self, root: Path, pace: str):
        self.root, self.pace = root, pace
        self.busy, self.idle, self.io_ms = 100_000, 400_000, 0
        (root / "proc").mkdir(parents=True)
        self.write()

    def write(self) -> None:
        (self.root / "proc" / "stat").write_text(
            f"cpu  {self.busy} 0 0 {self.idle} 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\ncpu1 0 0 0 0 0 0 0 0 0 0\n")
        (self.root / "proc" / "diskstats").write_text("".join(
            f"   8      {16 * i} {name} 6415 0 152309 31411 9392 0 384227 33345 0 {self.io_ms} 65998 0 0 0 0 87 1242\n"
            for i, name in enumerate(("sda", "sdb", "sdc"), 1)))

    def run_fio(self) -> None:
        """30 s of two CPUs (6,000 ticks): 99 % busy, or 40 %; the disks idle, or busy throughout."""
        busy = 5_940 if self.pace == "cpu" else 2_400
        self.busy, self.idle = self.busy + busy, self.idle + 6_000 - busy
        self.io_ms += 0 if self.pace == "cpu" else 10_000_000  # far past any window: busy all of it
        self.write()


class ZfsAndFio(CommandRunner):
    """zfs answers as for mounted scratch datasets; fio writes the lab run's JSON and moves the host on."""

    def __init__(self, host: Host):
        super().__init__()
        self.host, self.datasets = host, set[str]()

    async def run(self, argv, timeout_seconds=None) -> CommandResult:
        argv = tuple(argv)

        def ok(out: str = "") -> CommandResult:
            return CommandResult(argv, 0, out, "")

        if argv[:len(FIO_ARGV)] == FIO_ARGV:
            output = next(a for a in argv if a.startswith("--output="))[len("--output="):]
            Path(output).write_text(FIO_JSON.read_text())
            if not argv[-1].endswith("-layout.fio"):
                self.host.run_fio()
            return ok()
        if argv[:2] == ("zfs", "list"):
            return ok(argv[-1]) if argv[-1] in self.datasets else CommandResult(argv, 1, "", "no such dataset")
        if argv[:2] == ("zfs", "create"):
            self.datasets.add(argv[-1])
        elif argv[:2] == ("zfs", "destroy"):
            self.datasets = {d for d in self.datasets if d != argv[-1] and not d.startswith(argv[-1] + "/")}
        elif argv[:2] == ("zfs", "get"):
            return ok({"mountpoint": "/tank/zfs-advisor-probe/x", "mounted": "yes", "compressratio": "1.00x"}[argv[-2]])
        return ok()


async def run_plan(tmp_path: Path, pace: str) -> ProbeService:
    host = Host(tmp_path / "root", pace)
    runner = ZfsAndFio(host)
    files = HostFiles(host.root)
    service = ProbeService(ProbeConfig(tmp_path / "state", cache="uncached"), load_rulebook(), runner=runner,
                           files=files)
    candidates = [make_candidate("recordsize", "128K", baseline=True), make_candidate("recordsize", "8K")]
    plan = service.plan("tank", "postgres", Budget(seconds=600), candidates=candidates)
    run_id = service.store.start_run("tank", "postgres", None, {}, [], DESCRIPTOR)
    scratch = ScratchArea("tank", runner)
    await PlanRunner(plan, service.rulebook.workloads["postgres"], run_id, service.store, runner, files, scratch,
                     ParamGuard(ModuleParams(files), service.store, run_id), Thresholds(), tmp_path,
                     DESCRIPTOR).run()
    service.store.end_run(run_id, "completed")
    return service


async def test_each_repeat_beside_a_busy_cpu_is_stored_cpu_bound_and_set_aside(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="advisor.probe.plan_runner"):
        service = await run_plan(tmp_path, "cpu")
    results = service.store.results(1)
    assert len(results) >= 4 and {r.bound for r in results} == {"cpu"}
    first = results[0]
    assert first.load["cpu_busy_ratio"] == pytest.approx(0.99) and first.load["disks_busy"] == {"sdb": 0.0, "sdc": 0.0}
    assert first.load["fio_cores"] == pytest.approx(0.4755, abs=1e-3)  # the lab run's fio: 0.48 of a CPU
    assert first.bound_reason.startswith("the host's CPU set the pace, not the storage: CPU 99% busy")
    assert sum("set aside as evidence" in m for m in caplog.messages) == len(results)
    [ev] = evidence(service.store, "tank", "postgres")
    assert ev.candidates == [] and [a.run_id for a in ev.set_aside] == [1]


async def test_busy_disks_with_cpu_to_spare_are_stored_storage_bound_and_kept(tmp_path):
    service = await run_plan(tmp_path, "storage")
    results = service.store.results(1)
    assert {r.bound for r in results} == {"storage"}
    assert results[0].load["disks_busy"] == {"sdb": 1.0, "sdc": 1.0} and results[0].load["cpu_busy_ratio"] == 0.4
    [ev] = evidence(service.store, "tank", "postgres")
    assert {c.value for c in ev.candidates} == {"8K", "128K"} and ev.set_aside == []
