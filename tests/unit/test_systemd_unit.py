"""The shipped systemd units pass `systemd-analyze verify` and `security --offline=true` (exposure <= 3.0;
the prober, root with CAP_SYS_ADMIN and no mount namespace by design, <= 4.5: docs/security.md).

Static checks on this machine: the units are not started here (that needs the lab VM, which runs
systemd). ExecStart names the installed path (/opt/zfs-advisor/venv/bin/zfs-advisor); verify wants
an executable there, so the copy checked points at this checkout's zfs-advisor instead.
"""
from __future__ import annotations

import datetime as dt
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.cli import manpage

REPO = Path(__file__).resolve().parents[2]
UNITS = sorted((REPO / "deploy" / "systemd").glob("*.service"))
ALL_UNITS = sorted(p for p in (REPO / "deploy" / "systemd").iterdir() if p.suffix in (".service", ".timer", ".path"))
INSTALLED = "/opt/zfs-advisor/venv/bin/zfs-advisor"
MAX_EXPOSURE = 3.0
MAX_EXPOSURE_OF = {"zfs-advisor-probe.service": 4.5}
ANALYZE = shutil.which("systemd-analyze")


def checkout_copy(unit: Path, tmp_path: Path) -> Path:
    here = Path(sys.executable).parent / "zfs-advisor"
    if not here.exists():
        pytest.skip(f"{here} missing: install the project into the venv (pip install -e .)")
    copy = tmp_path / unit.name
    if not copy.exists():
        copy.write_text(unit.read_text().replace(INSTALLED, str(here)))
    return copy


@pytest.fixture(scope="module")
def manpath(tmp_path_factory) -> str:
    """The units' Documentation=man:zfs-advisor(1) as the package installs it: verify runs man(1) on
    it (man-db; tests/run installs it), which finds the page rendered from the parser here."""
    root = tmp_path_factory.mktemp("man")
    (root / "man1").mkdir()
    (root / "man1" / "zfs-advisor.1").write_text(manpage.render(dt.date(2026, 12, 7)))
    return str(root)


def analyze(*args: str, manpath: str | None = None) -> subprocess.CompletedProcess[str]:
    if ANALYZE is None:
        pytest.skip("systemd-analyze not installed (Debian: apt-get install systemd)")
    env = {**os.environ, "MANPATH": manpath} if manpath else None
    return subprocess.run([ANALYZE, *args], capture_output=True, text=True, timeout=60, env=env)


def test_the_service_unit_is_shipped():
    assert [u.name for u in UNITS if u.name == "zfs-advisor.service"]
    assert INSTALLED in (REPO / "deploy" / "systemd" / "zfs-advisor.service").read_text()


@pytest.mark.parametrize("unit", UNITS, ids=lambda u: u.name)
def test_unit_verifies_clean(unit, tmp_path, manpath):
    result = analyze("verify", str(checkout_copy(unit, tmp_path)), manpath=manpath)
    assert (result.returncode, result.stdout + result.stderr) == (0, "")


def test_the_probe_timer_and_path_start_the_probe_unit_and_verify_clean(tmp_path, manpath):
    copies = [checkout_copy(u, tmp_path) for u in ALL_UNITS if u.name.startswith("zfs-advisor-probe.")]
    assert sorted(c.suffix for c in copies) == [".path", ".service", ".timer"]
    result = analyze("verify", *map(str, copies), manpath=manpath)
    assert (result.returncode, result.stdout + result.stderr) == (0, "")
    path_unit = next(c for c in copies if c.suffix == ".path").read_text()
    assert "PathModified=/var/lib/zfs-advisor/probe-queue" in path_unit  # advisor.store.probes.QUEUE_SIGNAL


@pytest.mark.parametrize("unit", UNITS, ids=lambda u: u.name)
def test_unit_exposure_is_at_most_3(unit, tmp_path):
    result = analyze("security", "--offline=true", "--no-pager", str(checkout_copy(unit, tmp_path)))
    if "--offline" in result.stderr and result.returncode != 0:
        pytest.skip(f"this systemd-analyze cannot check offline (systemd >= 252 can): {result.stderr.strip()}")
    match = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", result.stdout)
    assert match, result.stdout + result.stderr
    exposure = float(match.group(1))
    print(f"{unit.name}: systemd-analyze security exposure {exposure}")
    assert exposure <= MAX_EXPOSURE_OF.get(unit.name, MAX_EXPOSURE)
