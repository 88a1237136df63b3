import pytest

from advisor.host.files import HostFiles, RecordingFiles


def test_paths_hang_off_the_root(tmp_path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "meminfo").write_text("MemTotal: 1 kB\n")
    files = HostFiles(tmp_path)
    assert files.read_text("/proc/meminfo") == "MemTotal: 1 kB\n"
    assert files.listdir("/proc") == ["meminfo"]
    assert files.exists("/proc/meminfo") and not files.exists("/proc/nope")
    with pytest.raises(FileNotFoundError):
        files.read_text("/proc/nope")
    with pytest.raises(ValueError):
        files.read_text("proc/meminfo")


def test_recorded_listings_win_over_the_directory(tmp_path):
    files = HostFiles(tmp_path, listings={"/sys/block": ["sda", "sdb"]})
    assert files.listdir("/sys/block") == ["sda", "sdb"]
    assert files.exists("/sys/block")


def test_recording_remembers_reads_listings_and_absences(tmp_path):
    (tmp_path / "a").write_text("x")
    files = RecordingFiles(tmp_path)
    assert files.read_text("/a") == "x"
    assert files.listdir("/") == ["a"]
    with pytest.raises(OSError):
        files.read_text("/b")
    assert files.reads == {"/a": "x"}
    assert files.listings == {"/": ["a"]}
    assert files.missing == {"/b"}
