"""Lab, the Debian 13 line: the Debian package on trixie as it comes (its kernel, its OpenZFS 2.3
from contrib, its Python 3.13; no lab venv), installed with apt as docs/deploy.md says.

One install per module, then, in order: the service is active under systemd and answers
/recommend?workload=postgres about the VM's real pool (ssd-mirror2x2); apt upgrades it to
<version>+test1, which is then the one running; `apt-get purge` leaves nothing. The rest of the
package's behaviour (sandbox, Prometheus, prober units, watchdog, failed upgrade, remove) does not
depend on the distribution and runs on the 2.3 line (test_systemd.py). Each package step prints one
line with its time (tests/lab/labdeb.py).
"""
from __future__ import annotations

import json
import time

import pytest

from advisor import __version__
from labdeb import SYSTEMD_MADE, UPGRADE, Steps, apt_get, footprint, left_after_purge, packages, release, serving
from labimage import DEBIAN13
from labparams import lab_params
from labservice import REPO, SERVICE, port_closed, tunnel

pytestmark = [
    pytest.mark.lab,
    pytest.mark.parametrize("lab_vm", lab_params(["ssd-mirror2x2"], lines=[DEBIAN13]), indirect=True,
                            scope="session"),
]


@pytest.fixture(scope="module")
def installed(lab_vm):
    """The package installed with `apt-get install ./zfs-advisor_<version>_amd64.deb` (what
    docs/deploy.md says; apt resolves its dependencies from the image, the VM has no network)."""
    vm, steps = lab_vm, Steps()
    t = time.monotonic()
    debs, built = packages(vm, REPO / "dist" / "lab-debian13", broken=False)
    steps.log(f"packages {', '.join(debs)}", t)
    before = footprint(vm)
    with tunnel(vm) as http:
        try:
            install = apt_get(vm, steps, "install", debs[__version__])
            assert install.rc == 0, install.stdout + install.stderr
            yield vm, http, debs, before, steps
        finally:
            vm.exec("dpkg -P zfs-advisor", timeout=300)
            for deb in built:
                deb.unlink()


def test_installed_with_apt_and_answers_about_the_pool(installed):
    vm, http, _, _, steps = installed
    t = time.monotonic()
    state = serving(vm, http, __version__)
    assert vm.exec(["systemctl", "is-active", SERVICE]).stdout.strip() == "active"
    facts = vm.exec("cat /etc/debian_version; uname -r; cat /sys/module/zfs/version; "
                    "/opt/zfs-advisor/venv/bin/python -c 'import sys; print(*sys.version_info[:2], sep=\".\")'; "
                    "test -e /opt/zfs-advisor-venv && echo lab-venv || echo no-lab-venv", check=True).stdout.split()
    debian, kernel, zfs, python, venv = facts
    assert debian.startswith("13.") and kernel.startswith("6.12.") and zfs.startswith("2.3."), facts
    assert (python, venv) == ("3.13", "no-lab-venv"), facts  # the package's venv on trixie's python3
    status, body = http.get("/recommend?workload=postgres", timeout=120)
    assert status == 200, body
    advice = json.loads(body)
    assert advice["target"]["pool"] == "tank", advice["target"]
    by_parameter = {r["parameter"]: r for r in advice["recommendations"]}
    # the layout forces ashift=12 (layouts.toml): read from the real pool by the sandboxed service
    assert (by_parameter["ashift"]["current"], by_parameter["ashift"]["status"]) == ("12", "passed")
    assert advice["model"]["available"], advice["model"]
    steps.log(f"installed on Debian {debian} (kernel {kernel}, OpenZFS {zfs}, Python {python}): {SERVICE} "
              f"active (MainPID {state['MainPID']}), /recommend?workload=postgres: "
              f"{len(advice['recommendations'])} recommendations for pool tank", t)


def test_apt_upgrades_to_a_higher_version(installed):
    vm, http, debs, _, steps = installed
    old = release(vm)
    result = apt_get(vm, steps, "install", debs[UPGRADE])
    assert result.rc == 0, result.stdout + result.stderr
    t = time.monotonic()
    serving(vm, http, UPGRADE)
    assert set(vm.exec("ls /opt/zfs-advisor/releases", check=True).stdout.split()) == {__version__, UPGRADE}
    steps.log(f"upgraded with apt: {old} -> {release(vm)}, /healthz says {UPGRADE}", t)


def test_apt_purge_leaves_nothing(installed):
    vm, _, _, before, steps = installed
    result = apt_get(vm, steps, "purge", "zfs-advisor")
    assert result.rc == 0, result.stdout + result.stderr
    t = time.monotonic()
    assert vm.exec("dpkg-query -W zfs-advisor").rc != 0  # not even known to dpkg
    assert port_closed(vm)
    left, stray, added = left_after_purge(vm, before)
    steps.log(f"purged with apt: left of its paths: {sorted(left) or 'nothing'}; named zfs-advisor and new: "
              f"{sorted(stray) or 'nothing'}; new under /etc /opt /usr /var/lib: {sorted(added) or 'nothing'}", t)
    assert left == set() and stray == set(), (left, stray)
    assert added <= SYSTEMD_MADE, added
    assert vm.exec("getent passwd zfs-advisor").rc != 0
