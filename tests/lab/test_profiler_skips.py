"""The profiler on a real lab pool: it skips the pool while another program writes to it, and
when a plan would overrun the daily budget, and records both skips (docs/lab.md: costs).  Its
state directory belongs to an unprivileged user, as the API's does; the profiler runs as root.
The privilege split itself (the API queues, the root prober runs it, both share the database)
is shown by the installed units: test_systemd.py::test_a_queued_probe_starts_the_prober_through_the_path_unit.
"""

from __future__ import annotations

import json

import pytest
from labparams import lab_params

pytestmark = pytest.mark.lab

LAYOUT = lab_params(["ssd-mirror2x2"], lines=["2.3"])
STATE = "/var/lib/zfs-advisor-labskips"
PY = "env PYTHONPATH=/project /opt/zfs-advisor-venv/bin/python -m advisor"
OWNER = "nobody"
# Small and short, as in test_probe.py: 4 fio jobs of 32 MiB, 2 s warm-up; layouts assumed at 4 MB/s,
# as in test_systemd.py: a plan of about 150 s.
PROFILER = """
[profiler]
enabled = true
pools = ["tank"]
workloads = ["postgres"]
idle_window_seconds = 3
max_file_bytes = 33554432
ramp_seconds = 2
layout_bytes_per_second = 4000000
probe_seconds = 150
daily_seconds = {daily}
"""


def _config(vm, name: str, daily: int = 3600) -> str:
    path = f"/etc/zfs-advisor-lab-{name}.toml"
    text = f'state_dir = "{STATE}"\nlog_format = "text"\n' + PROFILER.format(daily=daily)
    vm.exec(f"cat > {path} && chmod 0644 {path}", input=text, check=True)
    return path


def _profile(vm, config: str) -> list[dict]:
    out = vm.exec(f"{PY} profile --config {config}", check=True, timeout=400).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


@pytest.mark.parametrize("lab_vm", LAYOUT, indirect=True, scope="session")
def test_the_profiler_skips_a_busy_pool_and_a_spent_budget(lab_vm):
    vm = lab_vm
    vm.exec(f"rm -rf {STATE} && install -d -m 0750 -o {OWNER} -g nogroup {STATE}", check=True)
    busy = _config(vm, "busy")
    vm.exec("nohup sh -c 'while :; do dd if=/dev/urandom of=/tank/home/fg bs=64k count=64 conv=fsync "
            "status=none; done' >/dev/null 2>&1 & echo $! > /tmp/fg.pid", check=True)
    try:
        outcomes = _profile(vm, busy)
    finally:
        vm.exec("kill $(cat /tmp/fg.pid); sleep 1; rm -f /tank/home/fg; sync; sleep 6")
    print(f"busy: {outcomes}")
    assert outcomes and all(o["action"] == "skipped" and o["kind"] == "busy" for o in outcomes), outcomes
    spent = _config(vm, "spent", daily=60)  # less than the plan's own estimate: nothing may start
    outcomes = _profile(vm, spent)
    print(f"budget: {outcomes}")
    assert outcomes and all(o["action"] == "skipped" and o["kind"] == "budget" for o in outcomes), outcomes
    skips = vm.exec(f"{PY} profile --config {spent} --skips", check=True).stdout
    assert '"kind":"busy"' in skips and '"kind":"budget"' in skips
    assert vm.exec("zfs list -H tank/zfs-advisor-probe").rc != 0  # no scratch dataset was left
