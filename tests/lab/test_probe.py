"""Probes on a real lab pool: results that independent fio reproduces, an abort within 1 s on
foreground writes, recovery after SIGKILL, and user data left untouched (docs/lab.md: costs)."""

from __future__ import annotations

import json
import os
import statistics
import time

import pytest

import prior_grid
from advisor.evidence.interval import run_interval
from labchecks import check_decided_from_the_probe
from labparams import lab_params
from labprobe import PARAMS, PROBE, SMALL, STATE, abort_by_a_writer, arc_demand_data, params, wait_for

pytestmark = pytest.mark.lab

# The probe plan runs on OpenZFS 2.3 (the same code on both lines, ~7 min a line); the crash
# recovery runs on both, since module parameters behave differently there (zfs_arc_max on 2.1).
LAYOUT = lab_params(["ssd-mirror2x2"], lines=["2.3"])
BOTH_LINES = lab_params(["ssd-mirror2x2"])
PRIOR_SAMPLE = ("8K", "128K")  # the candidates of `probed`: a sample of the shipped prior's grid
USER_FILES = ("find /tank -path /tank/zfs-advisor-probe -prune -o -type f -print0 | sort -z | "
              "xargs -0 sha256sum; sha256sum /dev/zvol/tank/vm")


def _json(vm, args: str) -> dict:
    return json.loads(vm.exec(f"{PROBE} {args} --json", check=False).stdout)


def _foreground_written(vm) -> dict[str, int]:
    """nwritten of every dataset's objset kstat but the scratch ones."""
    out = vm.exec("grep -H -e dataset_name -e nwritten /proc/spl/kstat/zfs/tank/objset-*", check=True).stdout
    names, written = {}, {}
    for line in out.splitlines():
        path, _, rest = line.partition(":")
        fields = rest.split()
        if fields[0] == "dataset_name":
            names[path] = fields[2]
        else:
            written[path] = int(fields[2])
    return {names[p]: w for p, w in written.items() if p in names and "zfs-advisor-probe" not in names[p]}


@pytest.fixture(scope="module")
def probed(request):
    """One probe plan (recordsize 8K vs 128K, postgres data job) on an idle pool, with the
    user's files checksummed and the foreground write counters read before and after.  It is the
    probe tests/lab/prior-grid runs for a cell of the shipped prior, with its settings (512 MiB,
    8 s repeats, one layout a candidate, zfs_arc_min lowered for the VM as the grid did): one run
    serves these tests and `test_a_sample_of_the_prior_reproduces`, which before had a probe of its
    own of the same pool, workload and candidates (about 210 s of CI's lab time)."""
    vm = request.getfixturevalue("lab_vm")
    vm.exec("for d in home pg media logs; do head -c 3M /dev/urandom > /tank/$d/user-file; done; "
            "head -c 8M /dev/urandom | dd of=/dev/zvol/tank/vm bs=1M conv=fsync status=none; sync; "
            f"rm -rf {STATE}", check=True)
    before_sums = vm.exec(USER_FILES, check=True).stdout
    before_written = _foreground_written(vm)
    arc_min = vm.exec("awk '$1==\"c_min\"{print $3}' /proc/spl/kstat/zfs/arcstats", check=True).stdout.strip()
    settings = prior_grid.Settings()
    command = prior_grid.probe_command("postgres", STATE, settings, recordsizes=PRIOR_SAMPLE, extra=())
    try:
        facts = prior_grid.guest_facts(vm)  # lowers zfs_arc_min as the grid did
        plan = json.loads(vm.exec(f"{command} --plan-only", check=True).stdout)
        vm.exec("sleep 6", check=True)  # a txg commit, so the probe finds the pool idle
        started = time.monotonic()
        run = json.loads(vm.exec(command, timeout=3600).stdout)
        took = time.monotonic() - started
    finally:
        # the effective floor the other lab tests expect (writing 0 would not restore it)
        vm.exec(f"echo {arc_min} > {PARAMS}/zfs_arc_min", check=True)
    run["plan"], run["facts"], run["settings"] = plan, facts, settings
    return vm, run, took, before_sums, before_written


@pytest.mark.parametrize("lab_vm", LAYOUT, indirect=True, scope="session")
def test_the_probe_stores_each_repeat_with_its_pool_and_data(lab_vm, probed):
    """Both candidates, two repeats each, with the pool's layout, ashift and media, the data's
    stated compressibility and the ratio it achieved, and the ARC cap the repeat ran under.  Half
    compressible data compresses at 128K records (1.88x in docs/probes.md), not at 8K on ashift 12:
    a compressed 8K record would still take two 4K sectors, so it is stored as it is (1.00x)."""
    vm, run, took, _, _ = probed
    assert run["run"]["status"] == "completed", run["run"]
    [ev] = run["evidence"]
    assert {c["value"] for c in ev["candidates"]} == {"8K", "128K"}
    assert ev["pool"]["layout"] == "2 x mirror of 2" and ev["pool"]["ashift"] == 12 and ev["pool"]["media"] == "ssd"
    for value in ("8K", "128K"):
        repeats = [r for r in run["results"] if r["value"] == value]
        assert len(repeats) == 2 and all(r["compress_percentage"] == 50 and r["arc_max_bytes"] for r in repeats)
        assert all(r["compress_ratio"] > 1.2 if value == "128K" else r["compress_ratio"] >= 1 for r in repeats), \
            repeats


# A long lab job (ZFS_ADVISOR_LAB_LONG=1), like the grid comparison: it costs CI a minute and a half
# of VM time.  With the prior grid's probe as the fixture it passed in the 5 runs since 2026-11-26
# (plain fio -8.4, +9.0, +5.1, +11.4 and +7.4 % from the probe); before that it was an xfail,
# plain fio landing -21 .. +13 % from the probe of the time (docs/probes.md).
@pytest.mark.skipif(os.environ.get("ZFS_ADVISOR_LAB_LONG") != "1",
                    reason="a long lab job: set ZFS_ADVISOR_LAB_LONG=1 (docs/lab.md)")
@pytest.mark.parametrize("lab_vm", LAYOUT, indirect=True, scope="session")
def test_probe_results_match_an_independent_fio_run(lab_vm, probed):
    """Two independent fio runs of the stored job, in a dataset made like the candidate's with
    the same ARC cap, land (their mean) within the 90 % interval the probe's repeats give for
    the mean of two more runs (advisor/evidence/interval.py). A 90 % interval: one check in ten
    may fail by chance, and what moves between runs but not between repeats (the host) is not
    in it (docs/probes.md)."""
    vm, run, took, _, _ = probed
    assert run["run"]["status"] == "completed", run["run"]
    [ev] = run["evidence"]
    r8 = [r for r in run["results"] if r["value"] == "8K"]
    job = r8[0]["job"].replace(next(l for l in r8[0]["job"].splitlines() if l.startswith("directory=")),
                               "directory=/tank/indep")
    arc = params(vm, "zfs_arc_min", "zfs_arc_max")
    c_min = arc["arcstats.c_min"]
    # the fixture lowered zfs_arc_min for the whole probe, as the prior grid does, so the plan needed
    # no floor of its own; a cap under the default floor would not hold (the ARC served everything)
    floor = run["plan"]["arc_min_bytes"] or prior_grid.ARC_MIN_BYTES
    iops, hit_ratios = [], []
    quota = run["run"]["budget"]["space_bytes"]
    vm.exec("cat > /tmp/indep.fio", input=job, check=True)
    vm.exec("sed '0,/\\[global\\]/s//[global]\\ncreate_only=1/' /tmp/indep.fio > /tmp/indep-layout.fio", check=True)
    try:
        vm.exec((f"echo {floor} > {PARAMS}/zfs_arc_min && " if floor else "")
                + f"echo {r8[0]['arc_max_bytes']} > {PARAMS}/zfs_arc_max", check=True)
        per_repeat = run["plan"]["layout_per_repeat"]
        for i in range(2):  # as the probe's repeats: on a layout of their own, or on the candidate's one
            if per_repeat or i == 0:
                # on an idle pool, as the probe waits for one: the blocks of the datasets destroyed
                # before (the probe's, the last run's) are freed in the background, in later txgs
                vm.exec(f"zpool wait -t free tank && zfs create -o recordsize=8K -o compression=lz4 -o atime=on "
                        f"-o quota={quota} tank/indep && "
                        "fio --output-format=json --output=/tmp/indep-layout.json /tmp/indep-layout.fio && "
                        "zpool sync tank && sleep 3", check=True, timeout=300)
            before = arc_demand_data(vm)
            out = vm.exec("fio --output-format=json /tmp/indep.fio", check=True, timeout=300).stdout
            hits, misses = (a - b for a, b in zip(arc_demand_data(vm), before, strict=True))
            jobs = json.loads(out[out.index("{"):])["jobs"][0]
            iops.append(jobs["read"]["iops"] + jobs["write"]["iops"])
            hit_ratios.append(hits / max(1, hits + misses))
            if per_repeat or i == 1:
                vm.exec("zfs destroy -r tank/indep", check=True)
    finally:
        vm.exec(f"zfs destroy -r tank/indep; echo {arc['arcstats.c_max']} > {PARAMS}/zfs_arc_max; "
                f"echo {arc['zfs_arc_max']} > {PARAMS}/zfs_arc_max; echo {c_min} > {PARAMS}/zfs_arc_min; "
                f"echo {arc['zfs_arc_min']} > {PARAMS}/zfs_arc_min")
    c8 = next(c for c in ev["candidates"] if c["value"] == "8K")
    independent = statistics.fmean(iops)
    low, high = run_interval(c8["iops"], ev["repeat_log_sd"], ev["degrees_of_freedom"], c8["repeats"], runs=len(iops))
    print(f"probe 8K: {c8['iops']:.0f} IOPS (repeats {c8['iops_min']:.0f}..{c8['iops_max']:.0f}, "
          f"dispersion {c8['iops_dispersion']:.1%}; log sd {ev['repeat_log_sd']:.4f} pooled over "
          f"{ev['degrees_of_freedom']} degrees of freedom; 90 % for the mean of {len(iops)} runs "
          f"{low:.0f}..{high:.0f}; ARC hit {[r['arc_hit_ratio'] for r in r8]}, ARC cap "
          f"{r8[0]['arc_max_bytes']}, floor {floor}); independent fio: {iops} (mean {independent:.0f}, "
          f"{independent / c8['iops'] - 1:+.1%}), ARC hit {hit_ratios}; probe took {took:.0f} s")
    assert low <= independent <= high, (c8, iops)


@pytest.mark.parametrize("lab_vm", LAYOUT, indirect=True, scope="session")
def test_probe_leaves_user_data_and_other_datasets_alone(lab_vm, probed):
    vm, run, _, before_sums, before_written = probed
    assert run["run"]["status"] == "completed"
    # each candidate laid out its own files (the whole working set) in its own scratch child, once:
    # the prior's way (`--layout-per candidate`); the prober-unit test in test_systemd.py sees the
    # default, a fresh layout per repeat
    assert run["plan"]["layout_per_repeat"] is False
    ws = run["plan"]["working_set_bytes"]
    written = {(r["value"], r["repeat"]): r["layout_written_bytes"] for r in run["results"]}
    first = min(r["repeat"] for r in run["results"])
    assert all((w >= ws) == (repeat == first) for (_, repeat), w in written.items()), written
    assert vm.exec(USER_FILES, check=True).stdout == before_sums
    after = _foreground_written(vm)
    assert after == before_written  # nothing but the scratch datasets was written
    assert vm.exec("zfs list -H tank/zfs-advisor-probe").rc != 0  # and they are gone


@pytest.mark.parametrize("lab_vm", LAYOUT, indirect=True, scope="session")
def test_recommend_advises_from_the_probe_of_this_pool(lab_vm, probed):
    """After the probe, /recommend's engine (the CLI, same code) cites the measurement: source
    probe, every candidate as evidence, an expected effect, and the measured best unless the
    probe could not tell it from the rule's value (the 90 % interval of their ratio)."""
    vm, run, _, _, _ = probed
    assert run["run"]["status"] == "completed"
    [ev] = run["evidence"]
    out = vm.exec(f"env ZFS_ADVISOR_STATE_DIR={STATE} PYTHONPATH=/project /opt/zfs-advisor-venv/bin/python "
                  "-m advisor recommend --workload postgres --pool tank --json", check=True).stdout
    rec = next(r for r in json.loads(out)["recommendations"] if r["parameter"] == "recordsize")
    print(f"recordsize: {rec['current']} -> {rec['recommended']} ({rec['status']}), effect {rec['expected_effect']}")
    assert {e["fact"] for e in rec["evidence"]} >= {"probe.recordsize.8K.iops", "probe.recordsize.128K.iops"}
    check_decided_from_the_probe(rec, ev, run["run"]["id"])


# -- a sample of the shipped prior reproduces (docs/prior.md, "Reproduces?") ---------------------
# PostgreSQL on the SSD mirror, recordsize 8K and 128K, probed again the way tests/lab/prior-grid
# measured them (the `probed` fixture): the effect of 8K against the 128K baseline falls within the
# interval the stored repeats give, and the ranking holds. OpenZFS 2.3 only (the data is of 2.3).
PRIOR_CSV = prior_grid.DATA_DIR / "prior-zfs2.3.csv"
# What is compared is the effect, 8K against the 128K baseline measured in the same run, not
# absolute IOPS: under TCG emulation on a shared 2-core host the absolute numbers follow the
# host's load (the same cell measured 3,448 / 1,829 IOPS on an idle host and 887 / 596 with a
# load average of 7, docs/prior.md), while the ratio within a run held (1.89x and 1.49x).  The
# effect's interval is the worst and best pairing of the repeats, [min(8K) / max(128K),
# max(8K) / min(128K)] (what the probe reported until its Student-t intervals, 2026-11-27; kept
# here because HOST_FACTOR was measured against it).  Two repeats on one host do not
# span what another host gives: CI's host measured 2.38x [2.28, 2.48] against the stored 1.88x
# [1.68, 2.14] (faster emulation, 4,454 / 1,796 IOPS), the loaded host above 1.49x, and the slower
# 2-core host of 2026-11-26 3.76x [3.38, 4.19] against the stored 2.35x [2.26, 2.43] (1,225-1,312 /
# 313-363 IOPS, against 1,965-2,078 / 853-869) in a full lab tier, then 2.34x [2.22, 2.47] (885-894
# / 362-398 IOPS) alone an hour later: the size of the effect moves with the host and its load.
# So the new run's interval must overlap the stored one widened by HOST_FACTOR each way (the
# largest gap seen between a new interval and the stored one: 1.39x, in that full tier), and the
# ranking must hold where the stored repeats do not overlap: that ranking is what the model takes
# from the prior, whose local probes set the size of the effect.
HOST_FACTOR = 1.6


def _prior_iops(rows: list[dict]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for r in rows:
        if r["parameter"] == "recordsize" and r["value"] in PRIOR_SAMPLE:
            out.setdefault(str(r["value"]), []).append(float(r["iops"]))
    return out


def _effect_interval(iops: dict[str, list[float]]) -> tuple[float, float]:
    return min(iops["8K"]) / max(iops["128K"]), max(iops["8K"]) / min(iops["128K"])


@pytest.mark.parametrize("lab_vm", LAYOUT, indirect=True, scope="session")
def test_a_sample_of_the_prior_reproduces(lab_vm, probed):
    _, output, _, _, _ = probed
    settings, facts = output["settings"], output["facts"]
    layout = "ssd-mirror2x2"
    cell = [r for r in prior_grid.read_rows(PRIOR_CSV) if r["layout"] == layout and r["workload"] == "postgres"
            and int(r["working_set_bytes"]) == settings.working_set]
    runs = {r["run_id"] for r in cell if r["parameter"] == "recordsize" and r["value"] == PRIOR_SAMPLE[0]}
    stored = _prior_iops([r for r in cell if r["run_id"] in runs])  # 8K and the baseline of its run
    assert set(stored) == set(PRIOR_SAMPLE), f"{PRIOR_CSV} lacks postgres on {layout}: run tests/lab/prior-grid"
    assert output["run"]["status"] == "completed", output["run"]
    fresh = _prior_iops(prior_grid.rows_of(output, zfs_version=facts["zfs_version"], layout=layout,
                                           profile=facts["profiles"]["postgres"], arc_min=facts["arc_c_min"],
                                           s=settings))
    old_lo, old_hi = _effect_interval(stored)
    new_lo, new_hi = _effect_interval(fresh)
    iops = {v: (statistics.fmean(stored[v]), statistics.fmean(fresh[v])) for v in PRIOR_SAMPLE}
    print(f"stored: {stored}; again: {fresh}\n"
          f"8K vs 128K: stored {iops['8K'][0] / iops['128K'][0]:.2f}x [{old_lo:.2f}, {old_hi:.2f}], "
          f"again {iops['8K'][1] / iops['128K'][1]:.2f}x [{new_lo:.2f}, {new_hi:.2f}]")
    assert new_lo <= old_hi * HOST_FACTOR and old_lo / HOST_FACTOR <= new_hi, \
        f"the effect moved by more than {HOST_FACTOR}x between hosts"
    if max(stored["128K"]) < min(stored["8K"]):
        assert iops["8K"][1] > iops["128K"][1]
    elif max(stored["8K"]) < min(stored["128K"]):
        assert iops["128K"][1] > iops["8K"][1]


@pytest.mark.parametrize("lab_vm", LAYOUT, indirect=True, scope="session")
def test_foreground_writes_abort_the_probe_within_two_seconds(lab_vm):
    last, started, first = abort_by_a_writer(
        lab_vm, f"--pool tank --workload postgres --param recordsize=8K,128K --budget 150s {SMALL}",
        "/tank/home/foreground", "conv=notrunc")
    vm = lab_vm
    print(f"abort: {last['status']} {last['reason']!r}, fio gone {last['stopped_at'] - first:.2f} s after the "
          f"foreground writer's first write returned ({first - started:.2f} s after it started)")
    assert last["status"] == "aborted" and "foreground I/O" in last["reason"]
    # one poll (0.2 s), the watch's reading and fio's SIGKILL and reaping: 0.24-0.80 s on an idle
    # host (docs/probes.md), 1.25 s on a loaded CI host (2026-11-28)
    assert 0 < last["stopped_at"] - first <= 2.0
    # the layout of the aborted repeat at least (48 MiB a job file) counts in the daily byte
    # budget, though no result of that repeat was stored
    assert last["written_bytes"] >= 48 << 20, last
    assert vm.exec("zfs list -H tank/zfs-advisor-probe").rc != 0
    vm.exec("rm -f /tank/home/foreground")


@pytest.mark.parametrize("lab_vm", BOTH_LINES, indirect=True, scope="session")
def test_sigkill_mid_probe_then_recovery_restores_everything(lab_vm):
    vm = lab_vm
    names = ("zfs_arc_min", "zfs_arc_max", "zfs_txg_timeout")
    before = params(vm, *names)
    vm.exec(f"nohup sh -c 'exec {PROBE} --pool tank --workload postgres --param zfs_txg_timeout=1,5 --budget 150s "
            f"{SMALL} > /tmp/probe.log 2>&1' >/dev/null 2>&1 & echo $! > /tmp/probe.pid", check=True)
    wait_for(vm, f"grep -qx 1 {PARAMS}/zfs_txg_timeout && grep -q '1/2.*laying out' /tmp/probe.log", 300,
              "the first candidate (zfs_txg_timeout=1) laying out")
    vm.exec("kill -KILL $(cat /tmp/probe.pid)", check=True)
    time.sleep(2)
    crashed = params(vm, *names)
    assert crashed["zfs_txg_timeout"] == "1" and crashed != before  # the kill left changes behind
    assert vm.exec("zfs list -H tank/zfs-advisor-probe").rc == 0
    assert vm.exec("pgrep -x fio").rc != 0  # fio died with its parent (pdeathsig)
    report = vm.exec(f"{PROBE} --recover --pool tank", check=True).stdout
    after = params(vm, *names)
    print(f"before {before}; after SIGKILL {crashed}; after recovery {after}; {report}")
    assert after == before
    assert vm.exec("zfs list -H tank/zfs-advisor-probe").rc != 0
    runs = json.loads(vm.exec(f"{PROBE} --list --json", check=True).stdout)
    assert runs[0]["status"] == "failed" and "interrupted" in runs[0]["reason"]
