"""The whole /metrics output for every recorded lab snapshot, compared with a golden file.

Each snapshot under tests/fixtures/hosts/<zfs version>/<layout>/<idle|load>/
is served by the real app (`root=` the snapshot, so zpool/zfs output and
kstats are replayed) and scraped over HTTP; the body must equal
tests/golden/metrics/<zfs version>/<layout>/<state>.prom (default detail)
and <state>.detail.prom (per-vdev, per-dataset and all-disk detail, diskstats on).
Only values that depend on this run, not on the snapshot, are normalised:
durations measured now, the facts' age and the advisor's version.

    python -m pytest tests/golden --update-golden    # or ZFS_ADVISOR_UPDATE_GOLDEN=1
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from advisor import __version__
from advisor.config.settings import Settings
from advisor.service.app import create_app
from support import HOSTS, check_golden, recorded_snapshots, snapshot_id

GOLDEN = Path(__file__).resolve().parent / "metrics"
SNAPSHOTS = recorded_snapshots()
VARIANTS = {
    "": {},
    ".detail": {"metrics_per_vdev": True, "metrics_per_dataset": True, "metrics_all_disks": True,
                "metrics_diskstats": True},
}
# Families whose values are measured by this run, not recorded in the snapshot.
VOLATILE = (
    "zfs_advisor_scrape_collector_duration_seconds",
    "zfs_advisor_source_duration_seconds",
    "zfs_advisor_facts_age_seconds",
)
_VOLATILE_SAMPLE = re.compile(rf"^((?:{'|'.join(VOLATILE)})(?:\{{[^}}]*\}})?) \S+$", re.MULTILINE)


def normalise(text: str) -> str:
    text = _VOLATILE_SAMPLE.sub(r"\1 0", text)
    return text.replace(f'version="{__version__}"', 'version="VERSION"')


def golden_path(snapshot: Path, variant: str) -> Path:
    version, layout, state = snapshot.relative_to(HOSTS).parts
    return GOLDEN / version / layout / f"{state}{variant}.prom"


@pytest.mark.parametrize("variant", list(VARIANTS), ids=lambda v: v.lstrip(".") or "default")
@pytest.mark.parametrize("snapshot", SNAPSHOTS, ids=snapshot_id)
async def test_metrics_output_matches_golden(http_client, snapshot, variant, update_golden):
    client = await http_client(create_app(Settings(root=str(snapshot), **VARIANTS[variant])))
    resp = await client.get("/metrics")
    assert resp.status == 200
    text = normalise(await resp.text())
    assert "zfs_advisor_facts_stale 0.0" in text
    check_golden(golden_path(snapshot, variant), text, update_golden, f"/metrics for {snapshot_id(snapshot)}")


GOLDEN_FILES = sorted(GOLDEN.rglob("*.prom"))


@pytest.mark.parametrize("golden", GOLDEN_FILES, ids=lambda p: str(p.relative_to(GOLDEN)))
def test_promtool_check_metrics_passes(golden):
    promtool = shutil.which("promtool")
    assert promtool, "promtool not found: install Debian's `prometheus` package (tests/run does)"
    result = subprocess.run([promtool, "check", "metrics"], input=golden.read_bytes(), capture_output=True, timeout=60)
    assert result.returncode == 0, (result.stdout + result.stderr).decode()


def test_every_golden_file_has_its_snapshot():
    expected = {golden_path(s, v) for s in SNAPSHOTS for v in VARIANTS}
    orphans = [str(p.relative_to(GOLDEN)) for p in GOLDEN_FILES if p not in expected]
    assert not orphans, f"golden files without a recorded snapshot: {orphans}"
