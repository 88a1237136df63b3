"""docs/metrics.md names every family the exporter writes (dynamic kstat families by their prefix)."""
from __future__ import annotations

import re
from pathlib import Path

from advisor.exporters.base import ExportOptions, Scrape
from advisor.exporters.collector import MetricsRenderer
from support.hosts import make_host

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "metrics.md"
# Families named after kstat fields or parameters, documented by prefix and rule.
DYNAMIC = re.compile(
    r"^(zfs_arc_|zfs_zil_|zfs_dmu_tx_|zfs_zfetch_|zfs_abd_|zfs_dbuf_|zfs_vdev_mirror_|zfs_param_"
    r"|zfs_dataset_zil_)"
)


def exposed_families() -> set[str]:
    texts = [p.read_text() for p in (REPO / "tests" / "golden" / "metrics").rglob("*.prom")]
    texts.append(MetricsRenderer().render(Scrape(make_host(), ExportOptions(per_vdev=True, per_dataset=True))).decode())
    return {m for text in texts for m in re.findall(r"^# TYPE (\S+) ", text, re.MULTILINE)}


def test_every_family_is_documented():
    doc = DOC.read_text()
    missing = sorted(f for f in exposed_families() if not DYNAMIC.match(f) and f"`{f}`" not in doc)
    assert not missing, f"families missing from docs/metrics.md: {missing}"
