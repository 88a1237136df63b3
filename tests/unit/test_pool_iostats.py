"""The per-pool iostats kstat (advisor/host/pool_iostats.py): its counters and, from its header,
how long the pool has been imported, exported as zfs_pool_import_age_seconds
(advisor/exporters/import_age.py); on the lab's recordings."""
from __future__ import annotations

import asyncio
import json
import shutil

import pytest

from advisor.exporters.base import Scrape
from advisor.exporters.collector import MetricsRenderer
from advisor.host.parsing import ParseError
from advisor.host.pool_iostats import parse_header_age, parse_iostats
from advisor.host.snapshot import collect_from_root
from support import HOSTS

IDLE_23 = HOSTS / "2.3.2" / "ssd-mirror2x2" / "idle"
LOAD_23 = HOSTS / "2.3.2" / "ssd-mirror2x2" / "load"
LOAD_21 = HOSTS / "2.1.11" / "ssd-mirror2x2" / "load"
KSTAT = "proc/spl/kstat/zfs/tank/iostats"


def test_the_header_says_how_long_ago_the_kstat_was_created():
    # 2.3.2/ssd-mirror2x2/idle: created 96.83 s after boot, read at 217.47 s
    found = parse_iostats((IDLE_23 / KSTAT).read_text())
    assert found.import_age_seconds == pytest.approx(217.46904384 - 96.82730637)
    assert found.counters.values["arc_read_count"] >= 0 and len(found.counters.values) == 26
    # the load recording read the same kstat later: created at the same time, older by the time between
    later = parse_iostats((LOAD_23 / KSTAT).read_text())
    assert later.import_age_seconds - found.import_age_seconds == pytest.approx(455.27626923 - 217.46904384)
    assert len(parse_iostats((LOAD_21 / KSTAT).read_text()).counters.values) == 18  # 2.1: TRIM counters only


@pytest.mark.parametrize("header, reason", [
    ("30 1 0x01 26 7072 96827306370", "not a kstat's"),  # the recorded header cut short
    ("30 1 0x01 26 7072 96827306370 9682730637", "read before it was created"),
])
def test_a_header_that_is_not_a_kstats_is_refused(header, reason):
    with pytest.raises(ParseError, match=reason):
        parse_header_age(header)


def test_the_recorded_pools_export_their_import_age():
    host = asyncio.run(collect_from_root(LOAD_21)).host
    assert host.sources["pool_iostats:tank"].ok and host.pool("tank").import_age_seconds == pytest.approx(536.4781117)
    text = MetricsRenderer().render(Scrape(host)).decode()
    assert 'zfs_pool_import_age_seconds{pool="tank"} 536.47811172\n' in text
    assert 'zfs_advisor_scrape_collector_success{collector="import_age"} 1.0\n' in text


def test_a_pool_without_the_kstat_has_no_age_and_its_source_is_up(tmp_path):
    """OpenZFS before 2.1 has no iostats kstat: the recording without it (a copy, the file taken out)."""
    root = shutil.copytree(IDLE_23, tmp_path / "host")
    (root / KSTAT).unlink()
    manifest = json.loads((root / "manifest.json").read_text())
    manifest["files"].remove("/" + KSTAT)
    (root / "manifest.json").write_text(json.dumps(manifest))
    host = asyncio.run(collect_from_root(root)).host
    pool = host.pool("tank")
    assert host.sources["pool_iostats:tank"].ok and pool.iostats is None and pool.import_age_seconds is None
    assert host.sources["pool_kstats:tank"].ok and pool.kstat_state == "ONLINE"


def test_a_damaged_kstat_takes_only_its_own_source_down(tmp_path):
    root = shutil.copytree(IDLE_23, tmp_path / "host")
    (root / KSTAT).write_text((IDLE_23 / KSTAT).read_text().replace(" 217469043840", "", 1))
    host = asyncio.run(collect_from_root(root)).host
    assert not host.sources["pool_iostats:tank"].ok and "not a kstat's" in host.sources["pool_iostats:tank"].reason
    assert host.sources["pool_kstats:tank"].ok and host.sources["txgs:tank"].ok
