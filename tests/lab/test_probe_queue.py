"""The privilege split on a real lab pool: the API, an unprivileged process, queues a probe with
POST /v1/probes; the prober, the shipped zfs-advisor-probe.service (root, hardened) started by
systemd, runs it; GET shows it running, then completed with its results, through the database
the two share. Then the profiler skips the
pool while another program writes to it, and once the daily budget is spent (docs/lab.md: costs).
"""

from __future__ import annotations

import json
import time

import pytest

from labparams import lab_params

pytestmark = pytest.mark.lab

LAYOUT = lab_params(["ssd-mirror2x2"], lines=["2.3"])
STATE = "/var/lib/zfs-advisor-labqueue"
TOKEN = "lab-token-0123456789"
PORT = 21199
PY = "env PYTHONPATH=/project /opt/zfs-advisor-venv/bin/python -m advisor"
API_USER = "nobody"
# Small and short, as in test_probe.py: 4 fio jobs of 32 MiB, 2 s warm-up; layouts assumed at 4 MB/s,
# as in test_systemd.py, so a 150 s plan shares one layout a candidate with time to spare (at 8 MB/s
# it chose a layout per repeat and, in a full lab tier, the run was not completed).
PROFILER = """
[profiler]
enabled = {enabled}
pools = ["tank"]
workloads = ["postgres"]
idle_window_seconds = 3
max_file_bytes = 33554432
ramp_seconds = 2
layout_bytes_per_second = 4000000
probe_seconds = 150
daily_seconds = {daily}
"""


def _config(vm, name: str, enabled: bool = False, daily: int = 3600) -> str:
    path = f"/etc/zfs-advisor-lab-{name}.toml"
    text = (f'state_dir = "{STATE}"\napi_token = "{TOKEN}"\nport = {PORT}\nlog_format = "text"\n'
            + PROFILER.format(enabled=str(enabled).lower(), daily=daily))
    vm.exec(f"cat > {path}", input=text, check=True)
    vm.exec(f"chmod 0644 {path}", check=True)
    return path


# The guest has no curl: a few lines of urllib, printing {status, location, body}.
HTTP = """
import json, sys, urllib.request, urllib.error
method, path = sys.argv[1], sys.argv[2]
data = sys.argv[3].encode() if len(sys.argv) > 3 else None
req = urllib.request.Request(f"http://127.0.0.1:%d{path}", data=data, method=method,
                             headers={"Authorization": "Bearer %s", "Content-Type": "application/json"})
try:
    resp = urllib.request.urlopen(req, timeout=30)
except urllib.error.HTTPError as exc:
    resp = exc
print(json.dumps({"status": resp.status, "location": resp.headers.get("Location"), "body": json.loads(resp.read() or b"{}")}))
""" % (PORT, TOKEN)


def _http(vm, method: str, path: str, body: dict | None = None) -> tuple[int, dict, str | None]:
    args = [method, path] + ([json.dumps(body)] if body is not None else [])
    out = json.loads(vm.exec(["/opt/zfs-advisor-venv/bin/python", "/tmp/labhttp.py", *args], check=True).stdout)
    return out["status"], out["body"], out["location"]


def _profile(vm, config: str) -> list[dict]:
    out = vm.exec(f"{PY} profile --config {config}", check=True, timeout=400).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


@pytest.fixture(scope="module")
def api(request):
    """The API as user nobody (no capability, not root), owning the state directory."""
    vm = request.getfixturevalue("lab_vm")
    vm.exec(f"rm -rf {STATE} && install -d -m 0750 -o {API_USER} -g nogroup {STATE}", check=True)
    vm.exec("cat > /tmp/labhttp.py", input=HTTP, check=True)
    config = _config(vm, "api")
    vm.exec(f"nohup setpriv --reuid={API_USER} --regid=nogroup --clear-groups --inh-caps=-all "
            f"{PY} serve --config {config} > /tmp/api.log 2>&1 & echo $! > /tmp/api.pid", check=True)
    started = time.monotonic()
    waited = vm.exec(f"{PY.replace(' -m advisor', '')} -c 'import time, urllib.request as u\n"
                     f"for _ in range(240):\n"
                     f"    try: u.urlopen(\"http://127.0.0.1:{PORT}/healthz\").read(); break\n"
                     f"    except OSError: time.sleep(1)\n"
                     f"else: raise SystemExit(1)'", timeout=300)
    if waited.rc != 0:
        pytest.fail("the API did not answer: " + vm.exec("ps -ef | grep [a]dvisor; cat /tmp/api.log").stdout)
    print(f"API (user {API_USER}) answering after {time.monotonic() - started:.0f} s")
    vm.exec("sync; sleep 6", check=True)  # a txg commit: the pool is idle for the prober
    yield vm, config
    vm.exec("kill $(cat /tmp/api.pid)")
    # The prober unit and its drop-in (ExecStart at the checkout, this module's config) go too:
    # left in /etc/systemd/system they would override the unit deploy/install.sh installs for
    # test_systemd.py in the same VM, whose prober then ran with this module's config and state.
    vm.exec("rm -rf /etc/systemd/system/zfs-advisor-probe.service "
            "/etc/systemd/system/zfs-advisor-probe.service.d && systemctl daemon-reload", check=True)


@pytest.mark.parametrize("lab_vm", LAYOUT, indirect=True, scope="session")
def test_the_api_queues_and_the_privileged_prober_runs_it(lab_vm, api):
    vm, config = api
    assert vm.exec(f"ps -o user= -p $(cat /tmp/api.pid)", check=True).stdout.strip() == API_USER
    status, queued, location = _http(vm, "POST", "/v1/probes", {
        "pool": "tank", "workload": "postgres", "params": {"recordsize": ["8K", "128K"]}, "budget": {"seconds": 150}})
    assert status == 202, queued
    assert location == f"/v1/probes/{queued['id']}" and queued["status"] == "queued"
    assert _http(vm, "GET", location)[1]["run"]["status"] == "queued"
    # The shipped unit, run from the checkout instead of /opt/zfs-advisor/venv.
    vm.exec("install -m 0644 /project/deploy/systemd/zfs-advisor-probe.service /etc/systemd/system/ && "
            "mkdir -p /etc/systemd/system/zfs-advisor-probe.service.d && "
            "systemctl daemon-reload", check=True)
    vm.exec("cat > /etc/systemd/system/zfs-advisor-probe.service.d/lab.conf", check=True, input=(
        f"[Service]\nExecStart=\nExecStart=/usr/bin/env PYTHONPATH=/project /opt/zfs-advisor-venv/bin/python "
        f"-m advisor profile --config {config}\n"))
    vm.exec("systemctl daemon-reload && systemctl start --no-block zfs-advisor-probe.service", check=True)
    started = time.monotonic()
    seen = set()
    while (vm.exec("systemctl is-active -q zfs-advisor-probe.service || "
                   "systemctl show -p ActiveState zfs-advisor-probe.service | grep -q activating").rc == 0
           and time.monotonic() - started < 300):
        seen.add(_http(vm, "GET", location)[1]["run"]["status"])  # read by nobody while root writes
        time.sleep(2)
    took = time.monotonic() - started
    status, shown, _ = _http(vm, "GET", location)
    owners = vm.exec(f"stat -c '%U %n' {STATE}/advisor.sqlite3*", check=True).stdout
    journal = vm.exec("journalctl -u zfs-advisor-probe.service --no-pager -o cat | tail -40").stdout
    result = vm.exec("systemctl show -p Result -p ExecMainStatus zfs-advisor-probe.service").stdout
    print(f"statuses seen while the prober ran: {sorted(seen)}; took {took:.0f} s; files: {owners!r}; "
          f"unit: {result!r}; journal:\n{journal}")
    assert "Result=success" in result, journal
    assert status == 200 and shown["run"]["status"] == "completed", (shown["run"], journal)
    assert "running" in seen
    assert {r["value"] for r in shown["results"]} == {"8K", "128K"} and len(shown["results"]) == 4
    assert [e["parameter"] for e in shown["evidence"]] == ["recordsize"]
    assert all(line.startswith(API_USER) for line in owners.splitlines())  # the API can still write them
    assert vm.exec("zfs list -H tank/zfs-advisor-probe").rc != 0
    # the API writes again after root did: a second request queues
    status, again, _ = _http(vm, "POST", "/v1/probes", {"pool": "tank", "workload": "postgres",
                                                        "params": {"recordsize": ["16K", "128K"]}})
    assert status == 202, again


@pytest.mark.parametrize("lab_vm", LAYOUT, indirect=True, scope="session")
def test_the_profiler_skips_a_busy_pool_and_a_spent_budget(lab_vm, api):
    vm, _ = api
    busy = _config(vm, "busy", enabled=True)
    vm.exec("nohup sh -c 'while :; do dd if=/dev/urandom of=/tank/home/fg bs=64k count=64 conv=fsync "
            "status=none; done' >/dev/null 2>&1 & echo $! > /tmp/fg.pid", check=True)
    try:
        outcomes = _profile(vm, busy)
    finally:
        vm.exec("kill $(cat /tmp/fg.pid); sleep 1; rm -f /tank/home/fg; sync; sleep 6")
    print(f"busy: {outcomes}")
    assert outcomes and all(o["action"] == "skipped" and o["kind"] == "busy" for o in outcomes), outcomes
    spent = _config(vm, "spent", enabled=True, daily=60)  # the first test probed for longer than that
    outcomes = _profile(vm, spent)
    print(f"budget: {outcomes}")
    assert outcomes and all(o["action"] == "skipped" and o["kind"] == "budget" for o in outcomes), outcomes
    skips = vm.exec(f"{PY} profile --config {spent} --skips", check=True).stdout
    assert '"kind":"busy"' in skips and '"kind":"budget"' in skips
