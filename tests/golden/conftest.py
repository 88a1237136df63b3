"""Golden-file tier options: `--update-golden` (or ZFS_ADVISOR_UPDATE_GOLDEN=1) rewrites the goldens."""
from __future__ import annotations

import os

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite tests/golden/metrics/*.prom from the recorded snapshots instead of comparing",
    )


@pytest.fixture(scope="session")
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden")) or os.environ.get("ZFS_ADVISOR_UPDATE_GOLDEN") == "1"


@pytest.fixture(autouse=True)
def no_host_state(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """Goldens are of the recorded snapshots alone: a probe database this host's own service keeps
    under the default state_dir (/var/lib/zfs-advisor) must not change them."""
    monkeypatch.setenv("ZFS_ADVISOR_STATE_DIR", str(tmp_path / "state"))
