"""Lab: the Debian package (deploy/debian/build) under the VM's real systemd, in the order an admin
meets it: install, upgrade to a newer build, a failed upgrade, remove, purge (docs/deploy.md).

Three packages of this checkout: its version (the one tests/run built, when ZFS_ADVISOR_DEB names
it; else built here), the same at <version>+test1, and <version>+test2 whose service stops at
start (a rule file that does not load: `build --broken-for-test`). The VM has no network: a
package carries every wheel it installs. Each step prints one line with its time.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from labparams import lab_params
from labservice import FIND_NAMED, REPO, SERVICE, existing, journal, now, port_closed, show, tunnel, wait_running

from advisor import __version__

pytestmark = [
    pytest.mark.lab,
    pytest.mark.parametrize("lab_vm", lab_params(["ssd-mirror2x2"], lines=["2.3"]), indirect=True,
                            scope="session"),
]

GUEST_DEBS = "/root/lab-debs"
UNITS = (SERVICE, "zfs-advisor-probe.service", "zfs-advisor-probe.timer", "zfs-advisor-probe.path")
CONFIG = "/etc/zfs-advisor/config.toml"
EDIT = "# edited by an admin: kept by upgrades and by remove"
STATE_MARK = "/var/lib/zfs-advisor/lab-probe-results"  # stands for the probe database
# Everything the package and its postinst write, and what systemd makes for the units.
PATHS = ("/opt/zfs-advisor", "/etc/zfs-advisor", "/var/lib/zfs-advisor", "/var/lib/private/zfs-advisor",
         "/usr/lib/zfs-advisor", "/usr/share/zfs-advisor", "/usr/share/doc/zfs-advisor", "/usr/bin/zfs-advisor",
         *(f"/lib/systemd/system/{u}" for u in UNITS), f"/etc/systemd/system/multi-user.target.wants/{SERVICE}",
         "/etc/systemd/system/timers.target.wants/zfs-advisor-probe.timer",
         "/etc/systemd/system/paths.target.wants/zfs-advisor-probe.path")
# Every path below these, before the install and after the purge (dpkg's own database aside).
TREES = "find /etc /opt /usr /var/lib -xdev -path /var/lib/dpkg -prune -o -path /var/lib/apt -prune -o -print"
# systemd's: the parent of every DynamicUser= state directory, made with the first (0700 root)
SYSTEMD_MADE = {"/var/lib/private"}
BEFORE: dict[str, set[str]] = {}
UPGRADE, BROKEN = f"{__version__}+test1", f"{__version__}+test2"


def build(out: Path, *args: str) -> Path:
    """deploy/debian/build with these arguments: the package it wrote."""
    done = subprocess.run([REPO / "deploy" / "debian" / "build", "--out", str(out), *args], check=True, timeout=600,
                          capture_output=True, text=True, env={**os.environ, "PYTHON": sys.executable})
    return Path(done.stdout.split()[-1])


class Steps:
    """One log line per step: what, how long, what came of it."""

    def __init__(self):
        self.t0 = time.monotonic()

    def log(self, what: str, since: float) -> None:
        print(f"\ndeb lab [{time.monotonic() - self.t0:6.1f} s] {what} ({time.monotonic() - since:.1f} s)", flush=True)


@pytest.fixture(scope="module")
def lab(lab_vm):
    vm, steps = lab_vm, Steps()
    t = time.monotonic()
    out = REPO / "dist" / "lab"  # the VM reads the checkout at /project: nothing to copy
    base = Path(os.environ["ZFS_ADVISOR_DEB"]) if os.environ.get("ZFS_ADVISOR_DEB") else build(out)
    debs = {__version__: base, UPGRADE: build(out, "--version", UPGRADE),
            BROKEN: build(out, "--version", BROKEN, "--broken-for-test")}
    guest = {v: guest_path(vm, deb) for v, deb in debs.items()}
    steps.log(f"built {', '.join(d.name for d in debs.values())} ({base.stat().st_size / 1e6:.0f} MB each)", t)
    BEFORE["named"] = set(vm.exec(FIND_NAMED, timeout=180).stdout.split())
    BEFORE["trees"] = set(vm.exec(TREES, timeout=300, check=True).stdout.split())
    try:
        with tunnel(vm) as http:
            yield vm, http, guest, steps
    finally:
        vm.exec(f"dpkg -P zfs-advisor; rm -rf {GUEST_DEBS}", timeout=300)
        for deb in debs.values():
            if deb.parent == out:
                deb.unlink()


def guest_path(vm, deb: Path) -> str:
    """Where the VM reads a package: in /project when it lies in the checkout, else copied in."""
    deb = deb.resolve()
    if deb.is_relative_to(REPO):
        return f"/project/{deb.relative_to(REPO)}"
    return f"{vm.copy_in(deb, GUEST_DEBS)}"


def dpkg(lab, *args: str):
    vm, steps = lab[0], lab[3]
    t = time.monotonic()
    result = vm.exec(["dpkg", *args], timeout=900)
    # its last word, or the postinst's (zfs-advisor: ...) when it failed
    said = [l for l in (result.stderr + result.stdout).splitlines() if l.startswith("zfs-advisor: ")]
    last = said[-1:] or (result.stderr.strip() or result.stdout.strip()).splitlines()[-1:]
    steps.log(f"dpkg {' '.join(args)}: rc {result.rc}; {last[0] if last else ''}", t)
    return result


def upgrade(lab, version: str):
    """`dpkg -i` of that version over the running one: (the unit and release before, dpkg's result,
    the clock)."""
    vm, http, debs = lab[:3]
    before = {**running_version(vm, http)[1], "release": release(vm)}
    return before, dpkg(lab, "-i", debs[version]), time.monotonic()


def status(vm) -> str:
    return vm.exec("dpkg-query -W -f '${Status} ${Version}' zfs-advisor").stdout


def running_version(vm, http) -> tuple[str, dict[str, str]]:
    state = wait_running(vm, http)
    return json.loads(http.get("/healthz")[1])["version"], state


def release(vm) -> str:
    return vm.exec("readlink /opt/zfs-advisor/venv", check=True).stdout.strip()


def serving(vm, http, version: str) -> dict[str, str]:
    """The package installed at `version`, its release the running one, answering with it."""
    assert status(vm) == f"install ok installed {version}"
    assert release(vm) == f"/opt/zfs-advisor/releases/{version}"
    running, state = running_version(vm, http)
    assert running == version
    return state


def test_install(lab):
    vm, http, debs, steps = lab
    result = dpkg(lab, "-i", debs[__version__])
    assert result.rc == 0, result.stdout + result.stderr
    t = time.monotonic()
    state = serving(vm, http, __version__)
    code, body = http.get("/metrics")
    assert code == 200 and b"zfs_advisor_source_up" in body
    enabled = vm.exec(["systemctl", "is-enabled", SERVICE, "zfs-advisor-probe.timer", "zfs-advisor-probe.path"]).stdout
    active = vm.exec(["systemctl", "is-active", SERVICE, "zfs-advisor-probe.timer", "zfs-advisor-probe.path"]).stdout
    assert enabled.split() == ["enabled"] * 3 and active.split() == ["active"] * 3, (enabled, active)
    assert vm.exec("dpkg-query -W -f '${Conffiles}' zfs-advisor", check=True).stdout.split()[0] == CONFIG
    assert vm.exec("zfs-advisor --version", check=True).stdout.strip() == f"zfs-advisor {__version__}"
    # what an admin and the service add: an edit of the config, a probe result
    vm.exec(f"echo '{EDIT}' >> {CONFIG} && touch {STATE_MARK}", check=True)
    steps.log(f"installed: {SERVICE} active (MainPID {state['MainPID']}), /healthz says {__version__}, /metrics "
              f"{len(body) // 1024} KiB, units enabled, {CONFIG} a conffile", t)


def test_upgrade_installs_beside_and_switches(lab):
    before, result, t = upgrade(lab, UPGRADE)
    assert result.rc == 0, result.stdout + result.stderr
    after = serving(lab[0], lab[1], UPGRADE)
    assert after["MainPID"] != before["MainPID"]
    assert set(lab[0].exec("ls /opt/zfs-advisor/releases", check=True).stdout.split()) == {__version__, UPGRADE}
    assert EDIT in lab[0].exec(f"cat {CONFIG}", check=True).stdout
    lab[3].log(f"upgraded: {before['release']} -> {release(lab[0])} beside it, MainPID {before['MainPID']} -> {after['MainPID']}, "
              f"/healthz says {UPGRADE}, the config edit kept", t)


def test_a_failed_upgrade_leaves_the_old_version_running(lab):
    vm, http, debs, steps = lab
    since = now(vm)
    before, result, t = upgrade(lab, BROKEN)
    assert result.rc != 0
    assert "rolled back to the one before" in result.stderr, result.stdout + result.stderr
    assert "installed zfs-advisor package post-installation script subprocess returned error exit status 1" \
        in result.stderr, result.stderr
    assert status(vm) == f"install ok half-configured {BROKEN}"
    version, after = running_version(vm, http)
    assert version == UPGRADE and release(vm) == f"/opt/zfs-advisor/releases/{UPGRADE}"
    assert "broken rules" in journal(vm, since)
    steps.log(f"failed upgrade: dpkg rc {result.rc}, package {status(vm)!r}; still {release(vm)}, /healthz says "
              f"{version} (MainPID {before['MainPID']} -> {after['MainPID']}: the old one restarted)", t)


def test_remove_keeps_config_and_probe_data(lab):
    vm, http, debs, steps = lab
    result = dpkg(lab, "-r", "zfs-advisor")
    assert result.rc == 0, result.stdout + result.stderr
    t = time.monotonic()
    assert status(vm) == f"deinstall ok config-files {BROKEN}"
    assert {u: show(vm, "LoadState", unit=u)["LoadState"] for u in UNITS} == dict.fromkeys(UNITS, "not-found")
    assert port_closed(vm)
    kept = existing(vm, PATHS)
    # /var/lib/zfs-advisor is systemd's symlink to the private state directory (DynamicUser=)
    assert kept == {"/etc/zfs-advisor", "/var/lib/zfs-advisor", "/var/lib/private/zfs-advisor"}, kept
    assert EDIT in vm.exec(f"cat {CONFIG}", check=True).stdout
    assert vm.exec(f"test -e {STATE_MARK}").rc == 0
    steps.log(f"removed: units not-found, port closed; kept {sorted(kept)} with the config edit and the probe data", t)


def test_purge_leaves_nothing(lab):
    vm, http, debs, steps = lab
    result = dpkg(lab, "-P", "zfs-advisor")
    assert result.rc == 0, result.stdout + result.stderr
    t = time.monotonic()
    assert vm.exec("dpkg-query -W zfs-advisor").rc != 0  # not even known to dpkg
    left = existing(vm, PATHS)
    stray = set(vm.exec(FIND_NAMED, timeout=180).stdout.split()) - BEFORE["named"]
    added = set(vm.exec(TREES, timeout=300, check=True).stdout.split()) - BEFORE["trees"]
    steps.log(f"purged: unknown to dpkg; left of its paths: {sorted(left) or 'nothing'}; named zfs-advisor "
              f"anywhere and new since before the install: {sorted(stray) or 'nothing'}; new under /etc /opt /usr "
              f"/var/lib: {sorted(added) or 'nothing'}", t)
    assert left == set() and stray == set(), (left, stray)
    assert added <= SYSTEMD_MADE, added
    assert vm.exec("getent passwd zfs-advisor").rc != 0
