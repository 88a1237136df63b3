"""How to measure a zvol's volblocksize: the workload's fio job on new test zvols, one a candidate.

No probe can: `zfs-advisor probe` measures in a scratch *file system*, and volblocksize belongs to
a zvol, fixed when it is created (zfsprops(7), `volblocksize`). The OpenZFS guide asks users to
test their own case (Workload Tuning, "zvol volblocksize"), so an undecided answer gives that test
as commands, each an argv, run in order, each only once the one before has succeeded:

1. per candidate, a test zvol of TEST_ZVOL_BYTES in the same pool (never the user's zvol), not
   sparse: its refreservation holds the space, so on a pool without it `zfs create` fails and
   nothing is written, rather than the test filling the pool (zfsprops(7), `refreservation`),
   with the user's zvol's compression (larger blocks compress better: part of what is compared)
   and, for a random job, `primarycache=metadata` as a probe's scratch dataset has (reads reach
   the disks, docs/probes.md);
2. `udevadm settle`: udev makes /dev/zvol/POOL/NAME after `zfs create` has returned (udevadm(8));
3. one fio: each test zvol written once in full (a zvol's unwritten blocks read as zeros
   without reaching a disk), then the workload's job on each, in two passes in opposite order so
   that a drift of the pool over the run falls on both alike and the spread between a
   candidate's passes shows the noise;
4. per candidate, `zfs destroy` of its test zvol.

`zfs create` refuses a name that exists and nothing after a failed step runs, so the destroys at
the end remove only zvols the steps made.
"""
from __future__ import annotations

from advisor.engine.decide import Steps
from advisor.engine.schema import Workload

# As a probe's fio job (advisor/probe/fio_job.py, Hygiene; a unit test holds them equal).
RUNTIME_SECONDS = 30
RAMP_SECONDS = 5
TEST_ZVOL_BYTES = 1 << 30
COMPRESS_PERCENTAGE = 50  # the stated compressibility of written data, unless the profile says
PERCENTILES = "50:99:99.9"
TEST_ZVOL_PREFIX = "zfs-advisor-volblocksize-"
# The profile's options about files and the run's length: the steps set their own.
_OWN = frozenset({"directory", "filename", "size", "filesize", "nrfiles", "time_based", "runtime", "ramp_time"})
PASSES = 2


def candidate_zvol(pool: str, value: str) -> str:
    return f"{pool}/{TEST_ZVOL_PREFIX}{value}"


def volblocksize_steps(pool: str, zvol: str, new: bool, values: list[str], workload: Workload, role: str | None,
                       params: dict[str, str], compression: str | None, job: str) -> Steps:
    """`zvol`: the one advised on (`new`: still to be created); `values`: the candidates, the current
    one first; `compression`: the zvol's, or None to inherit the pool's; `job`: the fio job as the
    answer names it."""
    random = workload.io.pattern == "random"
    creates = [("zfs", "create", "-V", _size(TEST_ZVOL_BYTES), "-o", f"volblocksize={v}",
                *(("-o", f"compression={compression}") if compression else ()),
                *(("-o", "primarycache=metadata") if random else ()), candidate_zvol(pool, v)) for v in values]
    destroys = [("zfs", "destroy", candidate_zvol(pool, v)) for v in values]
    argvs = (*creates, ("udevadm", "settle"), tuple(fio_argv(pool, values, workload, role, params)), *destroys)
    first, order = values[0], ", ".join(values) + ", then " + ", ".join(reversed(values))
    made = [f"compression={compression} as {zvol} {'would inherit' if new else 'has'}"] if compression else []
    made += ["primarycache=metadata so that reads reach the disks, as in a probe"] if random else []
    about = (
        "No probe measures volblocksize: the probe writes files in a scratch file system, and a zvol's volblocksize "
        "is set when it is created (zfsprops(7)); the OpenZFS guide asks users to test their own case. `measure` "
        f"does that on new test zvols{'' if new else f', never on {zvol}'}: a zvol of {_size(TEST_ZVOL_BYTES)} "
        f"at each of {', '.join(values)} in pool {pool} (named {TEST_ZVOL_PREFIX}VALUE"
        + "".join(f", {m}" for m in made)
        + f"), each written once in full, then {job} on each for {RUNTIME_SECONDS} s in {PASSES} passes ({order}), "
        "then each destroyed. Each step runs only once the one before has succeeded, so the destroys remove only "
        "what the steps made; if a step fails, destroy any test zvol `zfs list` still shows. The test writes "
        f"{_size(TEST_ZVOL_BYTES * len(values))} to the pool, each test zvol reserving its size first (not sparse: "
        "without the space `zfs create` fails and nothing is written), then runs "
        f"{PASSES * len(values) * (RUNTIME_SECONDS + RAMP_SECONDS)} s of fio jobs, competing with the guests' I/O: "
        f"run it while the pool is otherwise idle. A candidate beats {first} when both its passes report more IOPS than both of "
        f"{first}'s: a claim about fio until the guests' own metrics confirm it. "
        + (f"Create {zvol} with the value that wins: volblocksize cannot change once a zvol is written." if new else
           "Acting on it means a new zvol and a copy of the guest disk: volblocksize cannot change once a zvol is "
           "written."))
    return Steps(argvs, about)


def fio_argv(pool: str, values: list[str], workload: Workload, role: str | None, params: dict[str, str]) -> list[str]:
    """One fio command: the global options, each test zvol written once, then the job's passes."""
    defaults = {name: params.get(name, p.default) for name, p in workload.parameters.items()}

    def render(options: dict[str, str | int]) -> dict[str, str]:
        return {k: str(v).format(**defaults) for k, v in options.items() if k not in _OWN}

    glob = render(workload.fio["global"])
    glob.setdefault("buffer_compress_percentage", str(COMPRESS_PERCENTAGE))
    glob |= {"randrepeat": "0", "refill_buffers": "1", "percentile_list": PERCENTILES,
             "size": str(TEST_ZVOL_BYTES), "group_reporting": "1"}
    argv = ["fio", *_options(glob)]
    for v in values:  # the fills one after another: a stonewall before each job after the first
        argv += [f"--name=fill-{v}", *(["--stonewall"] if v != values[0] else []),
                 *_options({"filename": f"/dev/zvol/{candidate_zvol(pool, v)}", "rw": "write", "bs": "1M"})]
    sections = workload.job_sections(role)
    for n in range(PASSES):
        for v in (values if n % 2 == 0 else list(reversed(values))):
            for section in sections:  # a job's sections run side by side, as in the probe
                argv += [f"--name={v}-pass{n + 1}" + (f"-{section}" if len(sections) > 1 else ""),
                         *(["--stonewall"] if section == sections[0] else []),
                         *_options({**render(workload.fio[section]), "filename": f"/dev/zvol/{candidate_zvol(pool, v)}",
                                    "time_based": "1", "runtime": str(RUNTIME_SECONDS),
                                    "ramp_time": str(RAMP_SECONDS)})]
    return argv


def _options(options: dict[str, str]) -> list[str]:
    return [f"--{k}={v}" for k, v in options.items()]


def _size(n: int) -> str:
    return f"{n >> 30}G" if n % (1 << 30) == 0 else f"{n >> 20}M"
