"""Record this machine (whatever it has) and replay it: the facts must be equal."""
import json

import pytest

from advisor.host.snapshot import SnapshotError, collect_from_root, load_manifest, record_snapshot


async def test_record_and_replay_this_host_gives_equal_facts(tmp_path):
    snap = tmp_path / "snap"
    manifest = await record_snapshot(snap, note="unit test")
    assert (snap / "manifest.json").is_file() and (snap / "facts.json").is_file()
    assert "/proc/meminfo" in manifest.files
    assert load_manifest(snap).note == "unit test"

    replayed = (await collect_from_root(snap)).host
    recorded = json.loads((snap / "facts.json").read_text())
    assert replayed.model_dump(mode="json") == recorded
    assert replayed.memory_bytes and replayed.memory_bytes > 0


async def test_a_snapshot_never_overwrites(tmp_path):
    (tmp_path / "x").write_text("keep me")
    with pytest.raises(SnapshotError, match="not empty"):
        await record_snapshot(tmp_path)
    assert (tmp_path / "x").read_text() == "keep me"


async def test_replaying_a_missing_root_is_a_clear_error(tmp_path):
    with pytest.raises(SnapshotError, match="no such directory"):
        await collect_from_root(tmp_path / "absent")


def test_a_directory_without_manifest_is_not_a_snapshot(tmp_path):
    with pytest.raises(SnapshotError, match="no manifest.json"):
        load_manifest(tmp_path)
