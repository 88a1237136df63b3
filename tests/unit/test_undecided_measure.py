"""An undecided zvol volblocksize says how to decide although no probe can measure it: the steps
of a test on new zvols (made, fio on each, destroyed: advisor/engine/volblocksize_measure.py).

The zvol at 4K is a recorded lab host with one property changed (support.recorded): no recording
holds one, the lab made every zvol at 16K. It goes through the real app, as the goldens do.
"""
from __future__ import annotations

import copy
import html
import json
import shlex
import shutil
import subprocess

import pytest

from advisor.config.settings import Settings
from advisor.engine import volblocksize_measure as zvol_measure
from advisor.engine.loader import load_rulebook
from advisor.engine.service import recommend
from advisor.probe.fio_job import Hygiene
from advisor.service.app import create_app
from support import HOSTS
from support.answer_promises import check_promises
from support.contract import mismatches
from support.hosts import synthetic_host
from support.recorded import snapshot_with_property

RAIDZ = HOSTS / "2.3.2" / "hdd-raidz1x4" / "idle"  # recorded with tank/vm at volblocksize 16K
FIO = shutil.which("fio")
NEEDS_FIO = pytest.mark.skipif(FIO is None, reason="fio (Debian: fio; tests/run installs it)")


@pytest.fixture(scope="module")
def zvol_at_4k(tmp_path_factory):
    return snapshot_with_property(RAIDZ, tmp_path_factory.mktemp("host") / "idle", "tank/vm", "volblocksize", "4096")


async def _answer(http_client, root, fmt: str = "json"):
    client = await http_client(create_app(Settings(root=str(root))))
    resp = await client.get("/recommend", params={"workload": "vm", "dataset": "tank/vm", "format": fmt})
    assert resp.status == 200, await resp.text()
    body = await resp.read()
    if fmt != "json":
        return body.decode()
    doc = await (await client.get("/openapi.json")).json()
    assert mismatches(doc, "GET", "/recommend", 200, resp.headers["Content-Type"], body) == []
    return json.loads(body)


def _volblocksize(answer: dict) -> dict:
    return next(r for r in answer["recommendations"] if r["parameter"] == "volblocksize")


async def test_a_zvol_at_4k_is_undecided_with_the_steps_that_measure_it(http_client, zvol_at_4k):
    answer = await _answer(http_client, zvol_at_4k)
    check_promises(answer)
    rec = _volblocksize(answer)
    assert (rec["status"], rec["current"], rec["recommended"], rec["apply"]) == ("undecided", "4K", "4K", None)
    steps = rec["measure_steps"]
    assert steps[:3] == [
        ["zfs", "create", "-V", "1G", "-o", "volblocksize=4K", "-o", "compression=lz4", "-o",
         "primarycache=metadata", "tank/zfs-advisor-volblocksize-4K"],
        ["zfs", "create", "-V", "1G", "-o", "volblocksize=16K", "-o", "compression=lz4", "-o",
         "primarycache=metadata", "tank/zfs-advisor-volblocksize-16K"],
        ["udevadm", "settle"]]
    assert steps[4:] == [["zfs", "destroy", "tank/zfs-advisor-volblocksize-4K"],
                         ["zfs", "destroy", "tank/zfs-advisor-volblocksize-16K"]]
    assert rec["measure"] == " && ".join(map(shlex.join, steps)) and rec["measure_argv"] is None
    assert not any("tank/vm" in arg for step in steps for arg in step)  # never the user's zvol
    fio = steps[3]
    names = [a.removeprefix("--name=") for a in fio if a.startswith("--name=")]
    assert names == ["fill-4K", "fill-16K", "4K-pass1", "16K-pass1", "16K-pass2", "4K-pass2"]
    assert {"--rw=randrw", "--rwmixread=60", "--bs=4K", "--iodepth=16", "--direct=1"} <= set(fio)  # the vm job
    said = rec["explanation"]
    assert "No probe measures volblocksize" in said and "never on tank/vm" in said
    assert "a new zvol and a copy of the guest disk" in said and "compression=lz4 as tank/vm has" in said
    assert {e["fact"]: e["display"] for e in rec["evidence"]}["dataset.compression"] == "lz4"

    text = await _answer(http_client, zvol_at_4k, "text")
    assert "MEASURE [dataset] volblocksize on tank/vm: keep 4K until measured" in text
    assert "measure, each step once the one before has succeeded:" in text
    assert "          6. zfs destroy tank/zfs-advisor-volblocksize-16K" in text


async def test_the_recorded_zvol_at_16k_passes_without_steps(http_client):
    rec = _volblocksize(await _answer(http_client, RAIDZ))
    assert (rec["status"], rec["current"]) == ("passed", "16K") and "measure_steps" not in rec


async def test_the_promise_check_refuses_an_undecided_item_that_says_not_how(http_client, zvol_at_4k):
    """The answer before this change: undecided, measure null. The invariant over the goldens fails on it."""
    answer = copy.deepcopy(await _answer(http_client, zvol_at_4k))
    rec = _volblocksize(answer)
    del rec["measure_steps"]
    rec["measure"] = None
    with pytest.raises(AssertionError, match="nothing says how to decide"):
        check_promises(answer)
    rec["measure"] = "zfs-advisor probe --pool tank --workload vm --param volblocksize=4K,16K"
    with pytest.raises(AssertionError, match="no placeholder"):
        check_promises(answer)


@NEEDS_FIO
async def test_fio_takes_the_measure_as_written(http_client, zvol_at_4k):
    fio = _volblocksize(await _answer(http_client, zvol_at_4k))["measure_steps"][3]
    done = subprocess.run([FIO, "--parse-only", *fio[1:]], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


@NEEDS_FIO
def test_the_fio_job_fills_each_test_zvol_then_runs_the_passes_in_order(tmp_path):
    """The same argv on two files instead of the zvols' devices, shortened (16 MiB, 1 s a pass,
    no O_DIRECT, which tmpfs refuses): fio runs the jobs one after another, each test zvol written
    in full before any pass, then the passes in the stated order, each reading and writing."""
    book = load_rulebook()
    argv = zvol_measure.fio_argv("tank", ["4K", "16K"], book.workloads["vm"], None, {})
    short = {"--size=1073741824": "--size=16777216", "--runtime=30": "--runtime=1", "--ramp_time=5": "--ramp_time=0",
             "--direct=1": "--direct=0"}
    files = {f"--filename=/dev/zvol/tank/zfs-advisor-volblocksize-{v}": f"--filename={tmp_path / v}" for v in ("4K", "16K")}
    run = [FIO, "--output-format=json", *[short.get(a, files.get(a, a)) for a in argv[1:]]]
    done = subprocess.run(run, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    jobs = json.loads(done.stdout)["jobs"]
    assert [j["jobname"] for j in jobs] == ["fill-4K", "fill-16K", "4K-pass1", "16K-pass1", "16K-pass2", "4K-pass2"]
    assert [j["groupid"] for j in jobs] == list(range(6))  # one after another
    assert [j["write"]["io_bytes"] for j in jobs[:2]] == [16 << 20] * 2 and all(j["read"]["io_bytes"] == 0 for j in jobs[:2])
    assert all(j["read"]["iops"] > 0 and j["write"]["iops"] > 0 for j in jobs[2:])
    assert all(j["job options"]["bs"] == "4K" and j["job options"]["rw"] == "randrw" for j in jobs[2:])


def test_the_test_zvols_are_measured_as_a_probe_measures():
    assert Hygiene() == Hygiene(runtime_seconds=zvol_measure.RUNTIME_SECONDS, ramp_seconds=zvol_measure.RAMP_SECONDS,
                                max_file_bytes=zvol_measure.TEST_ZVOL_BYTES,
                                compress_percentage=zvol_measure.COMPRESS_PERCENTAGE)


def test_a_new_zvol_on_2_1_is_undecided_with_steps_that_create_no_dataset_of_the_answer():
    """OpenZFS 2.1 made zvols at 8K: a new tank/vm there is judged by that default (docs/recommendations.md)."""
    host = synthetic_host(version="2.1.11-1")
    host.datasets = [d for d in host.datasets if d.name != "tank/vm"]
    response = recommend(host, load_rulebook(), "vm")
    rec = next(r for r in response.recommendations if r.parameter == "volblocksize")
    assert (rec.current, rec.status, response.target.new_dataset) == ("8K", "undecided", True)
    assert [s[-1] for s in rec.measure_steps if s[:2] == ["zfs", "create"]] == [
        "tank/zfs-advisor-volblocksize-8K", "tank/zfs-advisor-volblocksize-16K"]
    assert "Create tank/vm with the value that wins" in rec.explanation
    assert "compression=off as tank/vm would inherit" in rec.explanation
    check_promises(json.loads(response.model_dump_json()))


async def test_the_page_lists_the_steps_in_order(http_client, zvol_at_4k, tmp_path):
    settings = Settings(root=str(zvol_at_4k), state_dir=str(tmp_path), workloads={"tank/vm": "vm"})
    client = await http_client(create_app(settings))
    steps = _volblocksize(await _answer(http_client, zvol_at_4k))["measure_steps"]
    resp = await client.get("/pool/tank")
    text = await resp.text()
    assert resp.status == 200, text[:500]
    items = "".join(f"<li><code>{html.escape(shlex.join(step))}</code></li>" for step in steps)
    assert f"<p>Measure, each step once the one before has succeeded:</p><ol>{items}</ol>" in text
