"""The Debian package in the lab VM: the three builds the lab installs, dpkg run in the VM with
its time logged, and where the package leaves the service (docs/deploy.md).

Three packages of this checkout: its version (the one tests/run built, when ZFS_ADVISOR_DEB names
it; else built here), the same at <version>+test1, and <version>+test2 whose service stops at
start (a rule file that does not load: `build --broken-for-test`). The VM has no network: a
package carries every wheel it installs."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from advisor import __version__
from labservice import FIND_NAMED, REPO, SERVICE, existing, wait_running

UPGRADE, BROKEN = f"{__version__}+test1", f"{__version__}+test2"
GUEST_DEBS = "/root/lab-debs"
UNITS = (SERVICE, "zfs-advisor-probe.service", "zfs-advisor-probe.timer", "zfs-advisor-probe.path")
UNIT_DIR = "/lib/systemd/system"  # the package's units; an admin's drop-ins go under /etc/systemd/system
CONFIG = "/etc/zfs-advisor/config.toml"
# Everything the package and its postinst write, what systemd makes for the units, and the drop-in
# directories an admin's `systemctl edit` (and a runtime drop-in) make: purge removes them all.
PATHS = ("/opt/zfs-advisor", "/etc/zfs-advisor", "/var/lib/zfs-advisor", "/var/lib/private/zfs-advisor",
         "/usr/lib/zfs-advisor", "/usr/share/zfs-advisor", "/usr/share/doc/zfs-advisor", "/usr/bin/zfs-advisor",
         *(f"{UNIT_DIR}/{u}" for u in UNITS), f"/etc/systemd/system/multi-user.target.wants/{SERVICE}",
         "/etc/systemd/system/timers.target.wants/zfs-advisor-probe.timer",
         "/etc/systemd/system/paths.target.wants/zfs-advisor-probe.path",
         f"/etc/systemd/system/{SERVICE}.d", f"/run/systemd/system/{SERVICE}.d")
# Every path below these, before the install and after the purge (dpkg's own database aside).
TREES = "find /etc /opt /usr /var/lib -xdev -path /var/lib/dpkg -prune -o -path /var/lib/apt -prune -o -print"
# systemd's: the parent of every DynamicUser= state directory, made with the first (0700 root)
SYSTEMD_MADE = {"/var/lib/private"}


class Steps:
    """One log line per step: what, how long, what came of it."""

    def __init__(self):
        self.t0 = time.monotonic()

    def log(self, what: str, since: float) -> None:
        print(f"\ndeb lab [{time.monotonic() - self.t0:6.1f} s] {what} ({time.monotonic() - since:.1f} s)", flush=True)


def build(out: Path, *args: str) -> Path:
    """deploy/debian/build with these arguments: the package it wrote."""
    done = subprocess.run([REPO / "deploy" / "debian" / "build", "--out", str(out), *args], check=True, timeout=600,
                          capture_output=True, text=True, env={**os.environ, "PYTHON": sys.executable})
    return Path(done.stdout.split()[-1])


def guest_path(vm, deb: Path) -> str:
    """Where the VM reads a package: in /project when it lies in the checkout, else copied in."""
    deb = deb.resolve()
    if deb.is_relative_to(REPO):
        return f"/project/{deb.relative_to(REPO)}"
    return f"{vm.copy_in(deb, GUEST_DEBS)}"


def packages(vm, out: Path, *, broken: bool = True) -> tuple[dict[str, str], list[Path]]:
    """({version: the package's path in the VM}, the files built here, to remove afterwards); the
    broken one only if asked for."""
    base = Path(os.environ["ZFS_ADVISOR_DEB"]) if os.environ.get("ZFS_ADVISOR_DEB") else build(out)
    debs = {__version__: base, UPGRADE: build(out, "--version", UPGRADE)}
    if broken:
        debs[BROKEN] = build(out, "--version", BROKEN, "--broken-for-test")
    return {v: guest_path(vm, deb) for v, deb in debs.items()}, [d for d in debs.values() if d.parent == out]


def footprint(vm) -> dict[str, set[str]]:
    """Before an install: what is named after the service anywhere, and every path under TREES."""
    return {"named": set(vm.exec(FIND_NAMED, timeout=180).stdout.split()),
            "trees": set(vm.exec(TREES, timeout=300, check=True).stdout.split())}


def left_after_purge(vm, before: dict[str, set[str]]) -> tuple[set[str], set[str], set[str]]:
    """(the package's PATHS still there, named after it and new since `before`, new under TREES)."""
    return (existing(vm, PATHS), set(vm.exec(FIND_NAMED, timeout=180).stdout.split()) - before["named"],
            set(vm.exec(TREES, timeout=300, check=True).stdout.split()) - before["trees"])


def dpkg(vm, steps: Steps, *args: str):
    return _logged(vm, steps, ["dpkg", *args])


def apt_get(vm, steps: Steps, *args: str):
    """apt-get -y as an admin runs it (a package's file as its argument: apt installs it, resolving its
    dependencies from what the VM has; the lab VM has no network)."""
    return _logged(vm, steps, ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "-y", "-q", *args])


def _logged(vm, steps: Steps, argv: list[str]):
    t = time.monotonic()
    result = vm.exec(argv, timeout=900)
    # its last word, or the postinst's (zfs-advisor: ...) when it failed
    said = [l for l in (result.stderr + result.stdout).splitlines() if l.startswith("zfs-advisor: ")]
    last = said[-1:] or (result.stderr.strip() or result.stdout.strip()).splitlines()[-1:]
    steps.log(f"{' '.join(a for a in argv if a != 'env' and '=' not in a)}: rc {result.rc}; {last[0] if last else ''}", t)
    for line in (result.stdout + result.stderr).splitlines():  # what an admin would see warned about
        if line.startswith(("W: ", "N: ")) or "warning" in line.lower():
            print(f"    {line}", flush=True)
    return result


def status(vm) -> str:
    return vm.exec("dpkg-query -W -f '${Status} ${Version}' zfs-advisor").stdout


def release(vm) -> str:
    return vm.exec("readlink /opt/zfs-advisor/venv", check=True).stdout.strip()


def running_version(vm, http) -> tuple[str, dict[str, str]]:
    state = wait_running(vm, http)
    return json.loads(http.get("/healthz")[1])["version"], state


def serving(vm, http, version: str) -> dict[str, str]:
    """The package installed at `version`, its release the running one, answering with it."""
    assert status(vm) == f"install ok installed {version}"
    assert release(vm) == f"/opt/zfs-advisor/releases/{version}"
    running, state = running_version(vm, http)
    assert running == version
    return state
