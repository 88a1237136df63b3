"""/metrics costs what changed (exporters/collector.py): a collector's text kept compressed while
its source is the same, rebuilt when it changes, and the body made of kept and fresh segments is
the text an exporter with nothing kept writes, as one gzip member any client reads whole."""
from __future__ import annotations

import asyncio
import re
import shutil
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.api.appkeys import EXPORTER
from advisor.config.settings import Settings
from advisor.exporters import datasets
from advisor.exporters.base import ExportOptions, Scrape, go_float
from advisor.exporters.collector import MetricsRenderer
from advisor.exporters.exposition import RowsFamily, int_value, row_line, text
from advisor.exporters.negotiation import to_openmetrics
from advisor.host.snapshot import collect_from_root
from advisor.hostmodel.facts import Property
from advisor.server.deflated import Deflated, crc32_combine
from advisor.service.app import create_app
from support import HOSTS
from support.reference import reference_text

RECORDINGS = [HOSTS / "2.1.11" / "hdd-raidz1x4" / "load", HOSTS / "2.3.2" / "ssd-mirror2x2" / "idle"]
SNAPSHOT = HOSTS / "2.3.2" / "ssd-mirror2x2" / "idle"
PROMETHEUS = {"Accept": "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.2,*/*;q=0.1",
              "Accept-Encoding": "gzip"}
DURATIONS = re.compile(rb"^zfs_advisor_scrape_collector_duration_seconds\{.*\n", re.M)


def without_durations(text: bytes) -> bytes:
    return DURATIONS.sub(b"", text)


def gunzip_one_member(body: bytes) -> bytes:
    """The body as curl --compressed reads it: the first gzip member, trailer checked; and there is
    nothing after it (a second member would be lost there)."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    text = inflater.decompress(body)
    assert inflater.eof and not inflater.unused_data
    return text


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: "/".join(p.parts[-3:]))
@pytest.mark.parametrize("options", [ExportOptions(), ExportOptions(per_vdev=True, per_dataset=True)],
                         ids=["default", "detail"])
def test_kept_and_fresh_segments_are_the_text_of_an_exporter_that_keeps_nothing(path, options):
    scrape = Scrape(host=asyncio.run(collect_from_root(path)).host, options=options, commands_generation=1.0)
    uncached = without_durations(MetricsRenderer().render(Scrape(host=scrape.host, options=options)))
    exporter = MetricsRenderer()
    exporter.warm(scrape)
    for _ in range(2):  # built, then from the kept segments
        for openmetrics in (False, True):
            body = exporter.encoded(scrape, openmetrics)
            expected = to_openmetrics(uncached) if openmetrics else uncached
            assert without_durations(body.inflate()) == expected
            assert without_durations(gunzip_one_member(b"".join(body.gzip_parts()))) == expected
    assert exporter.compressed["datasets"] == 2  # once per format, not per scrape


def zfs_lines(text: str) -> list[str]:
    """The ZFS series and their HELP/TYPE, in order (the service's own series carry times)."""
    return [line for line in text.splitlines() if "zfs_" in line and "zfs_advisor_" not in line]


def _objset_of(root, dataset: str):
    for path in root.glob("proc/spl/kstat/zfs/*/objset-*"):
        if re.search(rf"^dataset_name\s+7\s+{re.escape(dataset)}$", path.read_text(), re.M):
            return path
    raise AssertionError(f"no objset kstat of {dataset}")


def _series(text: str, name: str, dataset: str) -> float:
    match = re.search(rf'^{name}\{{name="{re.escape(dataset)}",.*\}} (\S+)$', text, re.M)
    assert match, f"no {name} of {dataset}"
    return float(match.group(1))


async def test_through_the_app_a_kept_part_is_reused_until_its_source_changes(http_client, tmp_path):
    root = shutil.copytree(SNAPSHOT, tmp_path / "host")
    app = create_app(Settings(root=str(root), facts_max_age_seconds=0, commands_interval_seconds=3600))
    client = await http_client(app, auto_decompress=False)
    exporter = app[EXPORTER]

    async def scrape() -> str:
        response = await client.get("/metrics", headers=PROMETHEUS)
        assert response.headers["Content-Encoding"] == "gzip"
        return gunzip_one_member(await response.read()).decode()

    first = await scrape()
    built = exporter.compressed.copy()
    assert built["datasets"] >= 1 and built["dataset_io"] == 1
    second = await scrape()
    assert exporter.compressed == built  # nothing changed: every kept part is sent again as it was
    assert zfs_lines(second) == zfs_lines(first)

    dataset = "tank/pg"
    objset = _objset_of(root, dataset)
    objset.write_text(re.sub(r"^(nread\s+4\s+)\d+$", r"\g<1>123456789", objset.read_text(), flags=re.M))
    third = await scrape()
    assert _series(third, "zfs_dataset_logical_read_bytes_total", dataset) == 123456789.0
    assert exporter.compressed["dataset_io"] == 2  # rebuilt: one kstat changed
    assert exporter.compressed["datasets"] == built["datasets"]  # zfs get did not run again
    # the whole body is what an exporter with nothing kept writes for the same files
    host = (await collect_from_root(root)).host
    uncached = to_openmetrics(MetricsRenderer().render(Scrape(host=host))).decode()
    assert zfs_lines(third) == zfs_lines(uncached) and third.endswith("# EOF\n")


def test_a_datasets_lines_are_written_again_only_when_its_kstat_changed():
    host = asyncio.run(collect_from_root(SNAPSHOT)).host
    exporter = MetricsRenderer()
    exporter.render(Scrape(host=host))
    before = dict(datasets._IO_WRITTEN)
    changed = next(d for d in host.datasets if d.io is not None)
    io = changed.io.model_copy(update={"values": {**changed.io.values, "reads": 77}})
    host = host.model_copy(update={"datasets": [d.model_copy(update={"io": io}) if d is changed else d
                                                for d in host.datasets]})
    scrape = Scrape(host=host)
    text = exporter.render(scrape)
    after = datasets._IO_WRITTEN
    key = changed.name
    assert after[key] is not before[key] and after[key][0] is io
    assert all(after[k] is before[k] for k in after if k != key)  # the others' lines as they were
    assert _series(text.decode(), "zfs_dataset_reads_total", changed.name) == 77.0
    # the kept lines and the rows prometheus_client's registry writes from agree
    assert without_durations(text) == without_durations(reference_text(scrape))


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.integers(-10 ** 20, 10 ** 20), st.integers(0, 2 ** 64), st.sampled_from(
    [0, 999_999, 1_000_000, 10 ** 7, 2 ** 53 - 1, 2 ** 53, 2 ** 53 + 1, 10 ** 16])))
def test_an_integer_is_written_as_go_writes_its_float(value):
    assert int_value(value) == go_float(value)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=5000), st.binary(max_size=5000))
def test_crc32_combine_is_the_crc_of_the_concatenation(a, b):
    assert crc32_combine(zlib.crc32(a), zlib.crc32(b), len(b)) == zlib.crc32(a + b)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.binary(max_size=2000), max_size=4), max_size=5))
def test_joined_bodies_are_one_gzip_member_of_their_concatenation(groups):
    body = Deflated.joined(Deflated.of_stream(parts) for parts in groups)
    whole = b"".join(b"".join(parts) for parts in groups)
    assert body.inflate() == whole and body.size == len(whole)
    assert gunzip_one_member(b"".join(body.gzip_parts())) == whole


def test_a_command_run_that_says_the_same_keeps_the_compressed_text_and_one_that_differs_rebuilds_it():
    host = asyncio.run(collect_from_root(SNAPSHOT)).host
    exporter = MetricsRenderer()
    first = exporter.encoded(Scrape(host=host, commands_generation=1.0), openmetrics=True)
    built = exporter.compressed.copy()
    again = exporter.encoded(Scrape(host=host, commands_generation=2.0), openmetrics=True)  # zfs get ran again
    assert exporter.compressed["datasets"] == built["datasets"] and exporter.compressed["vdevs"] == built["vdevs"]
    assert without_durations(again.inflate()) == without_durations(first.inflate())
    changed = host.model_copy(update={"datasets": [
        d.model_copy(update={"properties": {**d.properties, "recordsize": Property(value="4096", source="local")}})
        for d in host.datasets if d.type == "filesystem"]})
    third = exporter.encoded(Scrape(host=changed, commands_generation=3.0), openmetrics=True)
    assert exporter.compressed["datasets"] == built["datasets"] + 2  # the text, then its OpenMetrics
    assert exporter.compressed["vdevs"] == built["vdevs"]  # the pools said the same
    assert _series(third.inflate().decode(), "zfs_dataset_block_size_bytes", "tank") == 4096.0
    assert _series(first.inflate().decode(), "zfs_dataset_block_size_bytes", "tank") != 4096.0


@pytest.mark.parametrize("labelnames, labelvalues, value", [
    ((), (), 5), (("a",), ('q"\\\n',), 12345678), (("a", "b"), ("x", "y"), 0.25), (("a",), ("x",), 2 ** 64 - 1),
])
def test_a_kept_line_is_the_line_the_family_writes(labelnames, labelvalues, value):
    family = RowsFamily("zfs_x", "Doc.", "counter", labelnames)
    family.add(labelvalues, value)
    assert text([family]).endswith(row_line(family, labelvalues, value).encode())
