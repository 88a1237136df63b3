"""The wheel `pip wheel .` builds (what `pip install`/`pipx install` of a checkout install, and
what the Debian package ships): installed on its own, away from the checkout, its `zfs-advisor`
command runs and finds its rules, workload profiles and model fit."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SNAPSHOT = REPO / "tests" / "fixtures" / "hosts" / "2.3.2" / "ssd-mirror2x2" / "idle"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    src = out / "src"  # a copy: setuptools writes build/ and *.egg-info beside the sources
    subprocess.run(f"tar -c --exclude=__pycache__ pyproject.toml README.md LICENSE advisor exporters rules "
                   f"| (mkdir {src} && tar -x -C {src})", shell=True, cwd=REPO, check=True)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "-w", str(out), str(src)], check=True, timeout=300)
    return next(out.glob("zfs_advisor-*.whl"))


def test_the_wheel_holds_one_package_its_data_and_the_command(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names if not n.startswith("zfs_advisor-")} == {"advisor"}
    assert "advisor/rules/recordsize.yaml" in names and "advisor/rules/workloads/postgres.yaml" in names
    assert any(n.startswith("advisor/model/data/") and n.endswith(".gp.json") for n in names)
    assert "advisor/model/data/app-findings.json" in names  # the application lab's findings: answers hold on them
    assert "advisor/exporters/__init__.py" in names
    entry_points = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "zfs-advisor = advisor.cli:main" in entry_points


def test_the_installed_command_runs_away_from_the_checkout(wheel, tmp_path):
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check",
                    "--target", str(target), str(wheel)], check=True, timeout=300)
    env = {**os.environ, "PYTHONPATH": str(target), "ZFS_ADVISOR_MODEL": "true"}
    env.pop("ZFS_ADVISOR_CONFIG", None)
    run = lambda *args: subprocess.run([str(target / "bin" / "zfs-advisor"), *args], cwd=tmp_path, env=env,  # noqa: E731 - a one-line helper, read where it is used
                                       capture_output=True, text=True, timeout=120)
    version = run("--version")
    from advisor import __version__
    assert (version.returncode, version.stdout.strip()) == (0, f"zfs-advisor {__version__}"), version.stderr
    where = subprocess.run([sys.executable, "-c", "import advisor; print(advisor.__file__)"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, check=True).stdout
    assert where.startswith(str(target)), where  # the installed copy, not the checkout
    (tmp_path / "config.toml").write_text("")  # the defaults, whatever this host's /etc holds
    answer = run("recommend", "--root", str(SNAPSHOT), "--workload", "postgres", "--json",
                 "--config", str(tmp_path / "config.toml"))
    assert answer.returncode == 0, answer.stderr
    document = json.loads(answer.stdout)
    assert document["facts"]["zfs_present"] and document["target"]["pool"] == "tank", document["facts"]
    assert document["recommendations"]
    assert document["model"]["available"], document["model"]
