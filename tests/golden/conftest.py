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
