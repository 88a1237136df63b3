"""Impossible host values: one value of a recorded lab snapshot made into what its kernel file or
command cannot print (advisor/host/domains.py, advisor/host/property_domains.py): `MemTotal` 0,
a recordsize of 999K, a pool WEIRD, 150 % full, an ashift of 99, a negative counter, a second row
for one key, a hostname with a newline. Each is applied to a copy, the rest left as recorded.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from tests.fault.breaks import COMMAND_SOURCES


@dataclass(frozen=True)
class Impossible:
    source: str  # the source that reads the value
    where: str  # a file relative to the snapshot, or "cmd:<source>" for that source's command output
    find: str  # a regular expression (multi-line) matching the recorded value, once
    put: str  # its replacement
    what: str  # a name for the case

    @property
    def name(self) -> str:
        return f"{self.source}/{self.what}"


def _file(source: str, path: str, cases: dict[str, tuple[str, str]]) -> list[Impossible]:
    return [Impossible(source, path, find, put, what) for what, (find, put) in cases.items()]


def _zfs(prop: str, *values: str, dataset: str = "tank/pg") -> list[Impossible]:
    """`prop` of `dataset` in the `zfs get` output made each of `values`."""
    return [Impossible("zfs_get", "cmd:zfs_get", rf"^({re.escape(dataset)}\t{prop}\t)[^\t]*", rf"\g<1>{v}",
                       f"{prop}={v}") for v in values]


def _zpool(prop: str, *values: str) -> list[Impossible]:
    return [Impossible("zpool_get", "cmd:zpool_get", rf"^(tank\t{prop}\t)[^\t]*", rf"\g<1>{v}", f"{prop}={v}")
            for v in values]


_KSTAT = "proc/spl/kstat/zfs"
_OBJSET = f"{_KSTAT}/tank/objset-0x39"  # tank/logs
_NAME = r"^(dataset_name\s+7\s+)\S+$"

CASES: list[Impossible] = [
    *_file("meminfo", "proc/meminfo", {
        "MemTotal=0": (r"^(MemTotal:\s+)\d+", r"\g<1>0"),
        "MemTotal=-1": (r"^(MemTotal:\s+)\d+", r"\g<1>-1"),
        "MemTotal=-4007116": (r"^(MemTotal:\s+)\d+", r"\g<1>-4007116"),
        "MemTotal-in-MB": (r"^(MemTotal:\s+\d+) kB", r"\1 MB"),
        "MemTotal-twice": (r"^(MemFree:.*)$", r"\1\nMemTotal:       99999999 kB")}),
    *_file("cpus_online", "sys/devices/system/cpu/online", {
        "0-1000000": (r"^.*$", "0-1000000"), "8192": (r"^.*$", "8192"), "0-1,1": (r"^.*$", "0-1,1"),
        "0,0": (r"^.*$", "0,0"), "1,0": (r"^.*$", "1,0"), "0-8192": (r"^.*$", "0-8192")}),
    *_file("hostname", "proc/sys/kernel/hostname", {
        "newline": (r"^zfslab$", "zfs\nlab"), "space": (r"^zfslab$", "zfs lab"), "tab": (r"^zfslab$", "zfslab\t"),
        "65-characters": (r"^zfslab$", "z" * 65), "escape": (r"^zfslab$", "\x1b[31mzfslab")}),
    *_file("hostname", "proc/sys/kernel/osrelease", {"kernel-with-space": (r"^6\.1\.0-", "6.1.0 -")}),
    *_file("kstat:arcstats", f"{_KSTAT}/arcstats", {
        "hits=-7982": (r"^(hits\s+4\s+)\d+", r"\g<1>-7982"), "c_max=-1": (r"^(c_max\s+4\s+)\d+", r"\g<1>-1"),
        "hits-twice": (r"^misses(\s+4)", r"hits\1")}),
    *_file("kstat:zil", f"{_KSTAT}/zil", {"zil_commit_count=-2": (r"^(zil_commit_count\s+4\s+)\d+", r"\g<1>-2")}),
    *_file("kstat:dmu_tx", f"{_KSTAT}/dmu_tx", {
        "dmu_tx_assigned=-1": (r"^(dmu_tx_assigned\s+4\s+)\d+", r"\g<1>-1"),
        "dmu_tx_assigned-twice": (r"^dmu_tx_delay(\s+4)", r"dmu_tx_assigned\1")}),
    *_file("pool_kstats:tank", f"{_KSTAT}/tank/state", {"WEIRD": (r"^ONLINE$", "WEIRD"),
                                                          "online": (r"^ONLINE$", "online")}),
    *_file("pool_kstats:tank", _OBJSET, {
        "dataset_name-control-character": (_NAME, "\\g<1>tank/lo\x01gs"),
        "dataset_name-of-another-pool": (_NAME, r"\g<1>other/logs"),
        "dataset_name-empty-component": (_NAME, r"\g<1>tank//logs"),
        "dataset_name-dot-dot": (_NAME, r"\g<1>tank/../logs"),
        "dataset_name-trailing-slash": (_NAME, r"\g<1>tank/logs/"),
        "nwritten=-1": (r"^(nwritten\s+4\s+)\d+", r"\g<1>-1"),
        "reads-twice": (r"^nread(\s+4)", r"reads\1")}),
    *_file("pool_kstats:tank", f"{_KSTAT}/tank/objset-0x41", {"two-objsets-one-dataset": (_NAME, r"\g<1>tank/logs")}),
    *_zpool("health", "WEIRD", "online"),
    *_zpool("capacity", "150", "-1"),
    *_zpool("fragmentation", "101"),
    *_zpool("ashift", "99", "8", "-1"),
    *_zpool("size", "-1"),
    *_zpool("allocated", "-272465920"),
    *_zpool("free", "-1"),
    *_zpool("dedupratio", "0.50"),
    Impossible("zpool_get", "cmd:zpool_get", r"^(tank\thealth\tONLINE\t-)$", r"\1\ntank\thealth\tDEGRADED\t-",
               "health-twice"),
    Impossible("zpool_get", "cmd:zpool_get", r"^tank\t", "mirror0\t", "pool-named-mirror0"),
    *_zfs("recordsize", "0", "-1", "999K", "1000", "33554432", "256"),
    *_zfs("volblocksize", "3000", "0", "33554432", dataset="tank/vm"),
    *_zfs("compression", "bogus", "zstd-20", "gzip-10", "zstd-fast-11"),
    *_zfs("checksum", "sha1"),
    *_zfs("dedup", "edonr"),
    *_zfs("sync", "sometimes"),
    *_zfs("logbias", "fast"),
    *_zfs("primarycache", "some"),
    *_zfs("secondarycache", "everything"),
    *_zfs("atime", "yes"),
    *_zfs("relatime", "1"),
    *_zfs("xattr", "posix"),
    *_zfs("dnodesize", "3k"),
    *_zfs("redundant_metadata", "half"),
    *_zfs("copies", "0", "4"),
    *_zfs("special_small_blocks", "3000"),
    *_zfs("used", "-1"),
    *_zfs("available", "-5"),
    *_zfs("referenced", "1.5"),
    *_zfs("logicalused", "lots"),
    *_zfs("quota", "-1"),
    *_zfs("compressratio", "0.50", "-1.00"),
    *_zfs("mountpoint", "relative/path"),
    *_zfs("type", "snapshot"),
    Impossible("zfs_get", "cmd:zfs_get", r"^(tank/pg\trecordsize\t\d+\tlocal)$", r"\1\ntank/pg\trecordsize\t131072\tlocal",
               "recordsize-twice"),
    Impossible("zfs_get", "cmd:zfs_get", r"^tank/pg\ttype\t", "tank/p*g\ttype\t", "dataset-name-with-star"),
    Impossible("zpool_status", "cmd:zpool_status", r"(/dev/sda1\s+)ONLINE", r"\1WEIRD", "vdev-state-WEIRD"),
    Impossible("zpool_status", "cmd:zpool_status", r"(\ttank\s+)ONLINE", r"\1BROKEN", "pool-state-BROKEN"),
    Impossible("zpool_status", "cmd:zpool_status", r"(/dev/sdb1\s+ONLINE\s+)0", r"\g<1>-3", "read-errors=-3"),
    Impossible("zpool_iostat", "cmd:zpool_iostat", r"^tank\t\d+", "tank\t-272465920", "allocated=-272465920"),
    Impossible("zpool_iostat", "cmd:zpool_iostat", r"^(tank(?:\t[^\t]*){6})\t[^\t]*", r"\1\t-3571712",
               "total_wait_read=-3571712"),
    Impossible("zpool_iostat", "cmd:zpool_iostat", r"^(tank\t.*)\t0$", r"\1\t-1", "queue=-1"),
    Impossible("zpool_iostat_size", "cmd:zpool_iostat_size", r"^(512\t)0", r"\1-1", "count=-1"),
    Impossible("zpool_iostat_latency", "cmd:zpool_iostat_latency", r"^(1\t)0", r"\1-4", "count=-4"),
    Impossible("zdb:tank", "cmd:zdb:tank", r"(ashift: )12", r"\g<1>99", "ashift=99"),
    Impossible("zdb:tank", "cmd:zdb:tank", r"(ashift: )12", r"\g<1>8", "ashift=8"),
    *_file("txgs:tank", f"{_KSTAT}/tank/txgs", {
        "ndirty=-688128": (r"^(5\s+\d+\s+C\s+)688128", r"\g<1>-688128"),
        "otime=-1": (r"^(6(?:\s+\S+){7}\s+)\d+", r"\g<1>-1")}),
    *_file("diskstats", "proc/diskstats", {
        "reads=-420": (r"^(\s+8\s+0 sda )420", r"\g<1>-420"),
        "sda-twice": (r"^(\s+8\s+0 sda .*)$", r"\1\n\1")}),
    *_file("module_params", "sys/module/zfs/parameters/zfs_arc_max", {"zfs_arc_max=-1": (r"^\d+$", "-1")}),
    *_file("module_params", "sys/module/zfs/parameters/zfs_dirty_data_max", {
        "zfs_dirty_data_max=4.5": (r"^\d+$", "4.5")}),
]


def make_impossible(root: Path, case: Impossible) -> Path:
    """Put `case` into the snapshot copy at `root`; the file changed (to restore it)."""
    if case.where.startswith("cmd:"):
        test = COMMAND_SOURCES[case.where.removeprefix("cmd:")]
        manifest = json.loads((root / "manifest.json").read_text())
        path = root / next(c["stdout_file"] for c in manifest["commands"] if test(c["argv"]))
    else:
        path = root / case.where
    text = path.read_text()
    damaged, n = re.subn(case.find, case.put, text, count=1, flags=re.M)
    assert n == 1 and damaged != text, f"{case.name}: {case.find!r} matched nothing in {path}"
    path.write_text(damaged)
    return path
