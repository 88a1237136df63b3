"""The per-pool dmu_tx_assign kstat (advisor/host/tx_assign.py) and its histogram
(advisor/exporters/tx_assign.py), on a lab recording with the write throttle engaged
(tests/fixtures/tx_assign/PROVENANCE.md)."""
from __future__ import annotations

import asyncio

import pytest

from advisor.exporters.base import Scrape
from advisor.exporters.collector import MetricsRenderer
from advisor.host.kstat import parse_named_kstat
from advisor.host.parsing import ParseError
from advisor.host.snapshot import collect_from_root
from advisor.host.tx_assign import parse_tx_assign
from advisor.hostmodel.facts import TX_ASSIGN_SERIES as SERIES
from support import FIXTURES, HOSTS

HERE = FIXTURES / "tx_assign"
AFTER = (HERE / "2.3.2-ssd-mirror2x2.dmu_tx_assign.after").read_text()
THROTTLED = HERE / "2.3.2-ssd-mirror2x2-throttled"


def test_the_buckets_are_powers_of_two_nanoseconds_with_their_counts():
    h = parse_tx_assign(AFTER)
    assert h.unit == "seconds" and len(h.bounds) == 30  # 1 ns .. 2^29 ns, the empty top buckets left out
    assert h.bounds[0] == pytest.approx(1e-9) and h.bounds[-1] == pytest.approx((1 << 29) * 1e-9)
    counts = h.counts[SERIES]
    assert sum(counts) == 720 and counts[13] == 5 and counts[-1] == 13  # 8192 ns, 536870912 ns
    # each count is an assigned transaction: no more than the global counter (one pool on this host)
    dmu_tx = parse_named_kstat((HERE / "2.3.2-ssd-mirror2x2.dmu_tx.after").read_text()).values
    assert sum(counts) <= dmu_tx["dmu_tx_assigned"] and dmu_tx["dmu_tx_dirty_delay"] > 0


def test_a_pool_no_write_waited_on_prints_nothing_and_has_no_buckets():
    h = parse_tx_assign((HERE / "2.3.2-ssd-mirror2x2.dmu_tx_assign.imported").read_text())
    assert h.bounds == [] and h.counts == {SERIES: []}


def test_rows_that_are_not_the_power_of_two_buckets_are_refused():
    # the recorded file with its fourth row renamed (made up: no kernel prints this)
    broken = AFTER.replace("8 ns ", "9 ns ", 1)
    with pytest.raises(ParseError, match="expected a count named '8 ns'"):
        parse_tx_assign(broken)
    with pytest.raises(ParseError, match="cut short"):  # the recorded file less its last two rows
        parse_tx_assign(AFTER.rstrip("\n").rsplit("\n", 2)[0])


def test_the_throttled_recording_exports_how_long_writes_waited():
    host = asyncio.run(collect_from_root(THROTTLED)).host
    pool = host.pool("tank")
    assert host.sources["tx_assign:tank"].ok and pool.tx_assign == parse_tx_assign(AFTER)
    text = MetricsRenderer().render(Scrape(host)).decode()
    lines = {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
             if line.startswith("zfs_pool_tx_assign_seconds")}
    assert lines['zfs_pool_tx_assign_seconds_count{pool="tank"}'] == 720
    assert lines['zfs_pool_tx_assign_seconds_bucket{le="+Inf",pool="tank"}'] == 720
    # buckets under 1 us are folded into the first exported, 1,024 ns; 617 writes waited over 0.5 ms
    assert lines['zfs_pool_tx_assign_seconds_bucket{le="1.024e-06",pool="tank"}'] == 0
    assert 720 - lines['zfs_pool_tx_assign_seconds_bucket{le="0.000524288",pool="tank"}'] == 617


def test_a_recording_made_before_the_advisor_read_the_file_has_none():
    host = asyncio.run(collect_from_root(HOSTS / "2.3.2" / "ssd-mirror2x2" / "idle")).host
    assert host.sources["tx_assign:tank"].ok and host.pool("tank").tx_assign is None
