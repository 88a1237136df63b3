"""The installed service in the lab VM, as its tests see it: systemd's view of the unit, its
journal, HTTP through an ssh tunnel, and what is left on the disk afterwards.  Used by
test_systemd.py (the Debian package) and test_install_sh.py (deploy/install.sh)."""
from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

import labimage
from advisor.config.settings import DEFAULT_PORT

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "golden"))
from promserver import free_port  # noqa: E402 - after the sys.path line above

REPO = labimage.REPO_ROOT
SERVICE = "zfs-advisor.service"
# Anything named after it on the root file system but the lab's own venv.
FIND_NAMED = ("find /etc /opt /var /run /tmp /srv /usr/local /root -path /opt/zfs-advisor-venv -prune "
              "-o -name '*zfs-advisor*' -print -o -name '*zfs_advisor*' -print")


def build_wheels(into: Path) -> Path:
    """What `install.sh --wheels DIR` takes and the Debian package ships: the dependencies (for
    Debian 12's Python, hash-checked, downloaded once into dist/.build) and this checkout's wheel,
    built here (building it in the emulated VM would cost a minute and more)."""
    subprocess.run([REPO / "deploy" / "debian" / "build", "--wheels", str(into)], check=True, timeout=600,
                   env={**os.environ, "PYTHON": sys.executable}, stdout=subprocess.DEVNULL)
    return into


def show(vm, *props: str, unit: str = SERVICE) -> dict[str, str]:
    out = vm.exec(["systemctl", "show", unit, *(f"--property={p}" for p in props)], check=True).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def now(vm) -> int:
    """The guest's clock, whole seconds: `journalctl --since @N` from here on."""
    return int(vm.exec("date +%s", check=True).stdout)


def journal(vm, since: int) -> str:
    return vm.exec(f"journalctl -q -o cat --no-pager -u {SERVICE} --since @{since}", check=True).stdout


class Http:
    """GETs from the host to the service in the VM, through an ssh tunnel to 127.0.0.1:PORT there
    (so the peer the unit sees is localhost, which IPAddressAllow admits)."""

    def __init__(self, local_port: int):
        self.address = f"127.0.0.1:{local_port}"

    def get(self, path: str, timeout: float = 30) -> tuple[int, bytes]:
        try:
            with urllib.request.urlopen(f"http://{self.address}{path}", timeout=timeout) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def post(self, path: str, body: dict, token: str, timeout: float = 30) -> tuple[int, bytes]:
        req = urllib.request.Request(f"http://{self.address}{path}", data=json.dumps(body).encode(), method="POST",
                                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def answers(self) -> bool:
        try:
            return self.get("/healthz", timeout=5)[0] == 200
        except OSError:
            return False


@contextlib.contextmanager
def tunnel(vm, port: int = DEFAULT_PORT):
    """An Http to 127.0.0.1:PORT in the VM for as long as the block runs."""
    ssh = vm._ssh_base()
    local = free_port()
    proc = subprocess.Popen([*ssh[:-1], "-N", "-L", f"127.0.0.1:{local}:127.0.0.1:{port}", ssh[-1]],
                            stdin=subprocess.DEVNULL)
    try:
        yield Http(local)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def wait_running(vm, http: Http, timeout: float = 90, **expect: str) -> dict[str, str]:
    """Until the unit is active (running), /healthz answers, and the properties in `expect` hold."""
    deadline = time.monotonic() + timeout
    while True:
        state = show(vm, "ActiveState", "SubState", "MainPID", "NRestarts", *expect)
        if (state["ActiveState"], state["SubState"]) == ("active", "running") and http.answers() and all(
                state[k] == v for k, v in expect.items()):
            return state
        if time.monotonic() > deadline:
            status = vm.exec(f"systemctl status --no-pager -l {SERVICE}; journalctl -q -n 40 -u {SERVICE}").stdout
            pytest.fail(f"not running within {timeout} s (want {expect}): {state}\n{status}")
        time.sleep(1)


def existing(vm, paths) -> set[str]:
    """Which of `paths` exist in the VM (a dangling symlink counts)."""
    out = vm.exec(" ; ".join(f"test -e {p} -o -L {p} && echo {p}" for p in paths) + " ; true").stdout
    return set(out.split())


def port_closed(vm, port: int = DEFAULT_PORT) -> bool:
    return vm.exec(["python3", "-c", f"import socket; socket.create_connection(('127.0.0.1', {port}))"]).rc != 0
