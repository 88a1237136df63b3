"""Facts at 10,000 datasets stay small: names shared, no per-instance copies, replayed output not held."""
from __future__ import annotations

import json
import shutil
import sys

import pytest

from advisor.host import kstat, zfs_props
from advisor.host.parsing import compact_dict, lines_in_blocks
from advisor.host.snapshot import collect_from_root, open_snapshot
from advisor.hostmodel.tunables import TUNING_PROPERTIES
from support import REPO, recorded_snapshots

SNAPSHOTS = recorded_snapshots("idle")


@pytest.mark.parametrize("text", [
    "", "\n", "a", "a\nb", "a\nb\n", "a\r\nb\rc\n\nd", "x" * 50 + "\n" + "y" * 3 + "\n\n" + "z" * 70,
    "\n".join(f"row {i}\tvalue" for i in range(200)),
])
@pytest.mark.parametrize("block", [1, 7, 64, 1 << 20])
def test_lines_in_blocks_are_splitlines(text, block):
    assert list(lines_in_blocks(text, block)) == text.splitlines()


def _zfs_get(datasets: int) -> str:
    rows = []
    for i in range(datasets):
        name = f"tank/ds{i}"
        rows += [f"{name}\ttype\tfilesystem\t-", f"{name}\trecordsize\t131072\tdefault",
                 f"{name}\tused\t{1000 + i}\t-", f"{name}\tcompression\tlz4\tinherited from tank"]
    return "\n".join(rows) + "\n"


def test_a_parse_reuses_the_objects_of_the_last_one_where_rows_are_as_they_were():
    first = zfs_props.parse_zfs_get(_zfs_get(3))
    again = zfs_props.parse_zfs_get(_zfs_get(3), first)
    assert all(a is b for a, b in zip(first, again, strict=True))  # nothing changed: the same datasets
    changed = _zfs_get(3).replace("tank/ds1\tused\t1001\t-", "tank/ds1\tused\t5\t-").replace(
        "tank/ds2\tcompression\tlz4\tinherited from tank", "tank/ds2\tcompression\tlz4\tlocal")
    third = zfs_props.parse_zfs_get(changed, again)
    assert third[0] is first[0] and third[1] is not first[1] and third[2] is not first[2]
    assert third[1].value("used") == "5" and third[1].properties["recordsize"] is first[1].properties["recordsize"]
    assert third[2].properties["compression"].source == "local"
    assert [d.name for d in third] == ["tank/ds0", "tank/ds1", "tank/ds2"]
    assert zfs_props.parse_zfs_get(_zfs_get(2), third) == first[:2]  # a dataset gone is gone


def test_datasets_share_property_names_values_and_field_sets():
    a, b = zfs_props.parse_zfs_get(_zfs_get(2))
    assert a.value("used") == "1000" and b.value("used") == "1001"
    for key_a, key_b in zip(a.properties, b.properties, strict=True):
        assert key_a == key_b and key_a is key_b  # one string per property name
    assert a.properties["compression"] is b.properties["compression"]  # same (value, source): one Property
    assert a.model_fields_set == {"name", "type", "properties"}
    assert a.__pydantic_fields_set__ is b.__pydantic_fields_set__
    copy = a.model_copy(update={"name": "tank/other"})  # a copy with changes has a set of its own
    assert copy.model_fields_set == {"name", "type", "properties"} and a.name == "tank/ds0"


def test_kstat_counter_names_are_shared():
    text = "1 1 0x01 3 0 1 2\nname type data\ndataset_name 7 tank/{n}\nwrites 4 {n}\nnread 4 7\n"
    one, two = (kstat.parse_named_kstat(text.format(n=n)) for n in (1, 2))
    assert one.values == {"dataset_name": "tank/1", "writes": 1, "nread": 7}
    assert all(k1 is k2 for k1, k2 in zip(one.values, two.values, strict=True))


@pytest.mark.skipif(not SNAPSHOTS, reason="no recorded lab snapshot yet")
async def test_replay_reads_recorded_output_when_asked(tmp_path):
    snapshot = shutil.copytree(SNAPSHOTS[0], tmp_path / "snap")
    files, runner, manifest = open_snapshot(snapshot)
    zfs_get = next(c for c in manifest.commands if c.argv[:2] == ["zfs", "get"])
    first = await runner.run(zfs_get.argv)
    assert first.ok and first.stdout == (snapshot / zfs_get.stdout_file).read_text()
    again = await runner.run(zfs_get.argv)
    assert again == first and again.stdout is not first.stdout  # read again, not kept
    (snapshot / zfs_get.stdout_file).unlink()  # gone after opening: that command fails, with why
    gone = await runner.run(zfs_get.argv)
    assert not gone.ok and zfs_get.stdout_file in gone.error()
    facts = (await collect_from_root(SNAPSHOTS[0])).host
    assert facts.datasets and all(d.io is None or d.model_fields_set >= {"io"} for d in facts.datasets)


@pytest.mark.skipif(not SNAPSHOTS, reason="no recorded lab snapshot yet")
async def test_facts_json_in_chunks_reuses_unchanged_datasets(tmp_path, monkeypatch):
    import gzip

    from advisor.server import facts_body
    from advisor.server.facts_body import CHUNK, FactsJson

    sys.path.insert(0, str(REPO / "tests" / "bench"))
    import scale_snapshot

    host = (await collect_from_root(scale_snapshot.scale(SNAPSHOTS[0], tmp_path / "scaled", 3 * CHUNK))).host
    renderer = FactsJson()
    body = renderer.body(host)
    whole = body.inflate()
    assert len(whole) == body.size and body.stored < body.size / 5  # kept deflated
    assert json.loads(whole) == json.loads(host.model_dump_json())  # the same document as one dump
    built = renderer.serialised
    assert built == -(-len(host.datasets) // CHUNK)
    again = renderer.body(host.model_copy(update={"hostname": "other"}))
    # same datasets: nothing serialised, the very segments reused
    assert renderer.serialised == built and all(a is b for a, b in zip(again.segments[1:-1], body.segments[1:-1], strict=True))
    assert json.loads(again.inflate())["hostname"] == "other"
    changed = list(host.datasets)
    changed[CHUNK + 1] = changed[CHUNK + 1].model_copy(update={"io": None})
    third = renderer.body(host.model_copy(update={"datasets": changed}))
    assert renderer.serialised == built + 1  # only the chunk holding the changed dataset
    assert json.loads(third.inflate())["datasets"][CHUNK + 1]["io"] is None
    assert gzip.decompress(b"".join(third.gzip_parts())) == third.inflate()

    # Every dataset new (as after each `zfs get`): each old chunk is let go as its place is
    # rebuilt, so at no time does the renderer hold two bodies.
    stored = third.stored
    held: list[int] = []  # deflated bytes of the last build and of this one held, at each chunk deflated
    real_deflate = facts_body.deflate_segment

    def recording(text: bytes) -> bytes:
        held.append(sum(len(c[1]) for c in renderer._chunks.values()) + sum(map(len, built_now)))
        built_now.append(real_deflate(text))
        return built_now[-1]

    built_now: list[bytes] = []
    monkeypatch.setattr(facts_body, "deflate_segment", recording)
    fresh = host.model_copy(update={"datasets": [d.model_copy() for d in host.datasets]})
    fourth = renderer.body(fresh)
    assert len(held) == len(third.segments)  # every chunk rebuilt, and the head and tail
    biggest = max(map(len, third.segments))
    assert max(held) <= stored + biggest, f"{max(held)} bytes held while a {stored}-byte body was rebuilt"
    assert json.loads(fourth.inflate()) == json.loads(host.model_dump_json())


@pytest.mark.parametrize("items", [
    {"writes": 1, "nread": 7}, {"type": "a", "used": "1"}, {}, {"__class__": 1, "x": 2},
    {f"k{i}": i for i in range(40)},
])
def test_compact_dict_is_the_same_dict(items):
    compact = compact_dict(dict(items))
    assert type(compact) is dict and compact == items and list(compact) == list(items)
    assert json.dumps(compact) == json.dumps(items)
    compact["new"] = 1  # still a dict like any other
    assert compact["new"] == 1


def test_compact_dicts_of_the_same_names_are_smaller_than_plain_ones():
    names = [f"counter_{i}" for i in range(26)]
    plain = dict(zip(names, range(26), strict=True))
    compact = compact_dict(dict(plain))
    assert sys.getsizeof(compact) < sys.getsizeof(plain) / 2


# a value zfs get can print for each property but the sizes (advisor/host/property_domains.py)
_VALID = {"type": "filesystem", "recordsize": "131072", "volblocksize": "-", "compression": "lz4", "compressratio": "1.00",
          "logbias": "latency", "primarycache": "all", "secondarycache": "all", "sync": "standard", "atime": "on",
          "relatime": "on", "xattr": "sa", "dnodesize": "legacy", "redundant_metadata": "all", "dedup": "off",
          "checksum": "on", "copies": "1", "mountpoint": "/tank/ds", "special_small_blocks": "0"}


def test_parsed_datasets_and_counters_use_compact_dicts():
    rows = [f"tank/ds{i}\t{p}\t{_VALID.get(p, i)}\t-" for i in range(2) for p in TUNING_PROPERTIES]
    a, b = zfs_props.parse_zfs_get("\n".join(rows) + "\n")
    plain = dict(a.properties)
    assert a.properties == plain and sys.getsizeof(a.properties) < sys.getsizeof(plain) / 2
    text = "1 1 0x01 27 0 1 2\nname type data\ndataset_name 7 tank/a\n" + "".join(
        f"counter_{i} 4 {i}\n" for i in range(26))
    values = kstat.parse_named_kstat(text).values
    values.pop("dataset_name")
    assert sys.getsizeof(compact_dict(values)) < sys.getsizeof(dict(values)) / 2
