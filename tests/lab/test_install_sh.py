"""Lab (a long lab job, ZFS_ADVISOR_LAB_LONG=1): `deploy/install.sh`, the way to install without the
Debian package, under the VM's real systemd: install from a wheel directory (the VM has no network:
`--wheels`, docs/deploy.md "Offline"), an upgrade beside the running release and a failed one,
`--uninstall` and `--purge`.

Its release steps (build beside, switch in one rename, roll back) are deploy/release.sh, which the
package's postinst runs too and test_systemd.py tests in CI with the package; this job costs CI
an emulated install of the dependencies (3-5 minutes) for what only install.sh does: its
arguments, pip from a wheel directory under deploy/constraints.txt, the unit files it copies to
/etc/systemd/system, and what uninstall and purge remove.
"""
from __future__ import annotations

import os
import time

import pytest

from advisor.config.settings import DEFAULT_PORT
from labparams import lab_params
from labservice import FIND_NAMED, SERVICE, build_wheels, existing, port_closed, show, tunnel, wait_running

pytestmark = [
    pytest.mark.lab,
    pytest.mark.skipif(os.environ.get("ZFS_ADVISOR_LAB_LONG") != "1",
                       reason="a long lab job: set ZFS_ADVISOR_LAB_LONG=1 (docs/lab.md)"),
    pytest.mark.parametrize("lab_vm", lab_params(["ssd-mirror2x2"], lines=["2.3"]), indirect=True,
                            scope="session"),
]

UNIT_DIR = "/etc/systemd/system"
GUEST_WHEELS = "/root/lab-wheels"
CHECKOUT_BUILD = "ls -d /project/build /project/*.egg-info 2>/dev/null"
BEFORE: dict[str, set[str]] = {}  # filled by the `installed` fixture before it installs
# Everything install.sh writes (docs/deploy.md), and what systemd makes for the unit.
INSTALLED_PATHS = ("/opt/zfs-advisor", "/etc/zfs-advisor", "/var/lib/zfs-advisor", "/var/lib/private/zfs-advisor",
                   "/var/log/zfs-advisor.log", "/run/zfs-advisor.pid", f"{UNIT_DIR}/{SERVICE}",
                   f"{UNIT_DIR}/{SERVICE}.d", f"/run/systemd/system/{SERVICE}.d",
                   f"{UNIT_DIR}/multi-user.target.wants/{SERVICE}")


@pytest.fixture(scope="module")
def installed(lab_vm, tmp_path_factory):
    """`sudo deploy/install.sh --wheels DIR` as docs/deploy.md says, timed."""
    vm = lab_vm
    vm.exec(f"rm -rf {GUEST_WHEELS}", check=True)
    # What other lab tests of this VM left, and the host's own editable install (an egg-info in
    # the checkout): not the install's to remove.
    BEFORE["named"] = set(vm.exec(FIND_NAMED, timeout=180).stdout.split())
    BEFORE["checkout"] = set(vm.exec(CHECKOUT_BUILD).stdout.split())
    wheels = vm.copy_in(build_wheels(tmp_path_factory.mktemp("wheels") / "wheels"), GUEST_WHEELS)
    sudo = "sudo " if vm.exec("command -v sudo").rc == 0 else ""  # root's shell in the VM: no sudo needed
    t0 = time.monotonic()
    install = vm.exec(f"cd /project && {sudo}deploy/install.sh --wheels {wheels}", timeout=600)
    print(f"\ninstall.sh: {time.monotonic() - t0:.0f} s")
    with tunnel(vm) as http:
        try:
            assert install.rc == 0, install.stdout + install.stderr
            yield vm, http, wheels, install
        finally:
            vm.exec(f"test -e {UNIT_DIR}/{SERVICE} && cd /project && deploy/install.sh --purge; "
                    f"rm -rf {GUEST_WHEELS}", timeout=120)


def test_install_as_the_docs_say(installed):
    vm, http, _, install = installed
    assert f"answering on http://127.0.0.1:{DEFAULT_PORT}/" in install.stdout, install.stdout
    assert "/opt/zfs-advisor/share/prometheus/{scrape.yml,alerts.yml}" in install.stdout
    listing = vm.exec("ls /opt/zfs-advisor/share/prometheus /opt/zfs-advisor/share/grafana /etc/zfs-advisor",
                      check=True).stdout.split()
    assert {"scrape.yml", "alerts.yml", "zfs-advisor.json", "config.toml"} <= set(listing)
    assert vm.exec("systemctl is-enabled zfs-advisor.service", check=True).stdout.strip() == "enabled"
    wait_running(vm, http)
    # Built from a copy: the (read-only here) checkout is left as it was.
    assert set(vm.exec(CHECKOUT_BUILD).stdout.split()) == BEFORE["checkout"]


def test_an_upgrade_switches_in_one_rename_and_a_failed_one_leaves_the_old_running(installed):
    """install.sh again: a new release beside the old, $PREFIX/venv switched to it, the service
    restarted on it. Then an upgrade whose pip fails (a wheel directory without the dependencies):
    nothing changes, the running service is the one from before."""
    vm, http = installed[:2]
    wheels = installed[2]
    before = wait_running(vm, http)
    old_release = vm.exec("readlink /opt/zfs-advisor/venv", check=True).stdout.strip()
    upgrade = vm.exec(f"cd /project && deploy/install.sh --wheels {wheels}", timeout=600)
    assert upgrade.rc == 0, upgrade.stdout + upgrade.stderr
    after = wait_running(vm, http)
    new_release = vm.exec("readlink /opt/zfs-advisor/venv", check=True).stdout.strip()
    assert new_release != old_release and new_release.startswith("/opt/zfs-advisor/releases/")
    assert after["MainPID"] != before["MainPID"]
    releases = sorted(vm.exec("ls /opt/zfs-advisor/releases", check=True).stdout.split())
    assert [f"/opt/zfs-advisor/releases/{r}" for r in releases] == sorted([old_release, new_release])
    print(f"\nupgrade: {old_release} -> {new_release}, MainPID {before['MainPID']} -> {after['MainPID']}")

    failed = vm.exec("mkdir -p /root/no-wheels && cd /project && deploy/install.sh --wheels /root/no-wheels",
                     timeout=600)
    assert failed.rc != 0 and "nothing changed" in failed.stderr, failed.stdout + failed.stderr
    still = wait_running(vm, http)
    assert vm.exec("readlink /opt/zfs-advisor/venv", check=True).stdout.strip() == new_release
    assert (still["MainPID"], still["NRestarts"]) == (after["MainPID"], after["NRestarts"])
    assert sorted(vm.exec("ls /opt/zfs-advisor/releases", check=True).stdout.split()) == releases
    print(f"failed upgrade (pip): rc {failed.rc}, still {new_release}, MainPID {still['MainPID']}: "
          f"{failed.stderr.strip().splitlines()[-1]}")


def test_uninstall_keeps_settings_and_results_and_purge_leaves_nothing_behind(installed):
    vm = installed[0]
    # What an admin may have added: `systemctl edit` (override.conf) and a runtime drop-in.
    vm.write_file(f"{UNIT_DIR}/{SERVICE}.d/override.conf", "[Service]\nNice=5\n")
    vm.write_file(f"/run/systemd/system/{SERVICE}.d/50-runtime.conf", "[Service]\nNice=6\n")
    vm.exec("systemctl daemon-reload", check=True)
    vm.exec(f"rm -rf {GUEST_WHEELS} /root/no-wheels", check=True)  # this test's own files
    result = vm.exec("cd /project && deploy/install.sh --uninstall", timeout=120)
    assert result.rc == 0, result.stdout + result.stderr
    kept = existing(vm, INSTALLED_PATHS)
    # /var/lib/zfs-advisor is systemd's symlink to the private state directory (DynamicUser=)
    assert kept == {"/etc/zfs-advisor", "/var/lib/zfs-advisor", "/var/lib/private/zfs-advisor"}, kept
    assert vm.exec("test -s /etc/zfs-advisor/config.toml").rc == 0
    assert show(vm, "LoadState")["LoadState"] == "not-found"

    result = vm.exec("cd /project && deploy/install.sh --purge", timeout=120)
    assert result.rc == 0, result.stdout + result.stderr
    assert existing(vm, INSTALLED_PATHS) == set()
    # Anything else named after it, anywhere on the root file system but the lab's own venv.
    stray = set(vm.exec(FIND_NAMED, timeout=180).stdout.split()) - BEFORE["named"]
    assert stray == set()
    assert show(vm, "LoadState")["LoadState"] == "not-found"
    assert vm.exec("getent passwd zfs-advisor").rc != 0  # the dynamic user is gone with the unit
    assert port_closed(vm)
