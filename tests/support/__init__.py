"""What the test tiers share: where the recorded host snapshots are, and how they are named.

Tests import helpers from here (`support`, `support.hosts`, `support.imports`),
never from one another's test modules.
"""
from __future__ import annotations

import asyncio
import difflib
import os
from pathlib import Path

import pytest

from advisor.host.runner import ReplayRunner

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
HOSTS = Path(os.environ.get("ZFS_ADVISOR_TEST_HOSTS", FIXTURES / "hosts"))
# One recording the tests that need a single real host copy and edit.
RECORDING = HOSTS / "2.3.2" / "ssd-mirror2x2" / "idle"


def recorded_snapshots(state: str = "*") -> list[Path]:
    """Every host snapshot recorded by the lab: hosts/<zfs version>/<layout>/<state>/."""
    return sorted(p.parent for p in HOSTS.glob(f"*/*/{state}/manifest.json"))


def snapshot_id(path: Path) -> str:
    return "/".join(path.relative_to(HOSTS).parts)


class HangingRunner(ReplayRunner):
    """A zpool that never answers (a hung pool, an overloaded host): a fake, because a real
    hung pool cannot be made on demand."""

    def __init__(self):
        super().__init__([])

    async def run(self, argv, timeout_seconds=None):
        await asyncio.sleep(3600)  # never answering is what it is for


def check_golden(golden: Path, text: str, update: bool, what: str) -> None:
    """`text` must equal the golden file; with `update` (--update-golden) it is written instead."""
    if update:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text)
        return
    assert golden.is_file(), f"no golden file {golden}: run with --update-golden"
    expected = golden.read_text()
    if text != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), text.splitlines(True), str(golden), "now", n=1))
        pytest.fail(f"{what} differs from {golden} (--update-golden if intended):\n" + diff[:6000])
