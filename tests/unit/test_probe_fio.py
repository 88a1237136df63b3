"""The fio job builder and the fio JSON parser, on real recorded fio output (tests/fixtures/fio)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.engine.loader import load_rulebook
from advisor.probe.fio_job import Hygiene, JobError, build_job, probe_sections
from advisor.probe.fio_result import FioParseError, parse_fio_json

FIO = Path(__file__).parent.parent / "fixtures" / "fio"
RECORDED = sorted(FIO.glob("*/*.json"))


@pytest.fixture(scope="module")
def workloads():
    return load_rulebook().workloads


def _options(text: str, section: str) -> dict[str, str]:
    out, current = {}, None
    for line in text.splitlines():
        if line.startswith("["):
            current = line.strip("[]")
        elif "=" in line and current == section:
            k, v = line.split("=", 1)
            out[k] = v
    return out


def test_postgres_data_role_runs_the_data_section_with_hygiene(workloads):
    job = build_job(workloads["postgres"], "/tank/zfs-advisor-probe/recordsize-8K",
                    Hygiene(runtime_seconds=20, ramp_seconds=4, max_file_bytes=128 << 20))
    assert job.sections == ("data",)  # the wal section belongs on the WAL dataset
    g = _options(job.text, "global")
    assert g["directory"] == "/tank/zfs-advisor-probe/recordsize-8K"
    assert (g["runtime"], g["ramp_time"], g["time_based"]) == ("20", "4", "1")
    assert g["buffer_compress_percentage"] == "50" and g["refill_buffers"] == "1"
    assert g["fallocate"] == "none" and g["randrepeat"] == "0" and g["thread"] == "1"
    assert g["percentile_list"] == "50:99:99.9"
    assert "size" not in g
    d = _options(job.text, "data")
    assert d["bs"] == "8K" and d["size"] == str(128 << 20) and d["numjobs"] == "4"
    assert job.working_set_bytes == 4 * (128 << 20)
    assert job.layout_text.startswith("[global]\ncreate_only=1\n")


def test_wal_role_and_parameters(workloads):
    job = build_job(workloads["postgres"], "/p", role="wal", params={"page_size": "16K"})
    assert job.sections == ("wal",)
    assert _options(job.text, "wal")["bs"] == "16K"
    assert _options(job.text, "wal")["size"] == str(256 << 20)  # below the cap: the profile's own


def test_profile_compressibility_is_kept_and_stated(workloads):
    job = build_job(workloads["backup"], "/p")
    assert job.compress_percentage == 50 and _options(job.text, "global")["buffer_compress_percentage"] == "50"


def test_single_role_workload_runs_every_section(workloads):
    assert probe_sections(workloads["media"], None) == ["stream-read", "stream-write"]
    with pytest.raises(JobError, match="no role"):
        probe_sections(workloads["postgres"], "nope")


def test_directory_must_be_safe(workloads):
    for bad in ("relative", "/a\n[evil]", "/a:b"):
        with pytest.raises(JobError):
            build_job(workloads["postgres"], bad)


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_recorded_output_parses_to_the_same_numbers(path):
    raw = json.loads(path.read_text())
    job = raw["jobs"][0]
    m = parse_fio_json(path.read_text())
    assert m.fio_version == raw["fio version"]
    assert m.read.iops == pytest.approx(job["read"]["iops"])
    assert m.write.iops == pytest.approx(job["write"]["iops"])
    assert m.iops == pytest.approx(job["read"]["iops"] + job["write"]["iops"])
    for direction, parsed in (("read", m.read), ("write", m.write)):
        if job[direction]["total_ios"]:
            pct = job[direction]["clat_ns"]["percentile"]
            assert parsed.latency.p50_seconds == pytest.approx(pct["50.000000"] / 1e9)
            assert parsed.latency.p99_seconds == pytest.approx(pct["99.000000"] / 1e9)
            assert parsed.latency.p999_seconds == pytest.approx(pct["99.900000"] / 1e9)
            assert parsed.latency.p50_seconds <= parsed.latency.p99_seconds <= parsed.latency.p999_seconds
        else:
            assert parsed.latency.p99_seconds is None
    assert m.cpu_system_ratio == pytest.approx(job["sys_cpu"] / 100)
    assert m.runtime_seconds == pytest.approx(job["job_runtime"] / 1000)


def test_sync_latency_comes_from_fsync_calls():
    m = parse_fio_json((FIO / "host-ext4" / "sqlite.json").read_text())
    assert m.sync_latency.p99_seconds is not None and m.sync_latency.p99_seconds > 0
    assert parse_fio_json((FIO / "host-ext4" / "media.json").read_text()).sync_latency.p99_seconds is None


def test_notes_before_the_json_are_skipped():
    text = "fio: note: something\n" + (FIO / "host-ext4" / "postgres.json").read_text()
    assert parse_fio_json(text).iops > 0


def test_errors():
    with pytest.raises(FioParseError):
        parse_fio_json("not json")
    with pytest.raises(FioParseError):
        parse_fio_json('{"jobs": []}')
    raw = json.loads((FIO / "host-ext4" / "postgres.json").read_text())
    raw["jobs"][0]["error"] = 28
    with pytest.raises(FioParseError, match="error 28"):
        parse_fio_json(json.dumps(raw))
