"""Break one source of a recorded host snapshot, on a copy: the faults the fault suite injects.

Each source of facts (`Host.sources` names) maps to what it reads: a file under
proc/ or sys/, or a recorded command. A fault rewrites exactly that, the way a
broken host would: garbage bytes (not even UTF-8), output cut short in the
middle of a line, empty output, numbers beyond 64 bits, a command that fails
or times out, a file that vanished. Everything else in the copy is untouched,
so any other source that changes status is data lost to the fault.
"""
from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from advisor.host.runner import EXIT_TIMEOUT
from advisor.host.sources import POOL, SOURCES, source_of_command, source_of_path

# Bytes no parser can take for its format: binary noise, invalid UTF-8, a NUL.
GARBAGE = b"\x00\xff\xfe garbage \x80\x81 {\"pools\": [\n\tnot\tthis\n" * 3
HUGE = "1" + "0" * 400  # beyond uint64 and beyond float range

# Sources whose recorded file(s), relative to the snapshot.
FILE_SOURCES: dict[str, str] = {
    "diskstats": "proc/diskstats",
    "meminfo": "proc/meminfo",
    "cpus_online": "sys/devices/system/cpu/online",
    "kstat:arcstats": "proc/spl/kstat/zfs/arcstats",
    "kstat:zil": "proc/spl/kstat/zfs/zil",
    "kstat:dmu_tx": "proc/spl/kstat/zfs/dmu_tx",
    "kstat:dbufstats": "proc/spl/kstat/zfs/dbufstats",
    "txgs:tank": "proc/spl/kstat/zfs/tank/txgs",
    "pool_kstats:tank": "proc/spl/kstat/zfs/tank/objset-*",  # the first dataset's I/O counters
}
# Faults that are no fault for a source: a one-value sysfs file is read whole (no short
# read to cut), and an objset kstat vanishes whenever its dataset is destroyed.
NOT_FAULTS = {("cpus_online", "cut"), ("pool_kstats:tank", "deleted")}
# Sources that are a command, by a test on its argv: the sources' table's (advisor/host/sources.py),
# per-pool ones on the recorded pool.
COMMAND_SOURCES: dict[str, Callable[[list[str]], bool]] = {
    name: (lambda argv, name=name: source_of_command(argv) == name)
    for name in (n.replace(POOL, "tank") for s in SOURCES if s.commands for n in s.names())
}
# Directory sources: the tree vanished.
TREE_SOURCES: dict[str, str] = {"disks": "/sys/block", "module_params": "/sys/module/zfs/parameters"}

FILE_FAULTS = ("garbage", "cut", "empty", "huge", "deleted")
COMMAND_FAULTS = ("garbage", "cut", "empty", "huge", "failed", "timeout")


@dataclass(frozen=True)
class Fault:
    source: str
    kind: str

    @property
    def name(self) -> str:
        return f"{self.source}/{self.kind}"


def all_faults() -> list[Fault]:
    faults = [Fault(s, k) for s in FILE_SOURCES for k in FILE_FAULTS if (s, k) not in NOT_FAULTS]
    faults += [Fault(s, k) for s in COMMAND_SOURCES for k in COMMAND_FAULTS]
    faults += [Fault(s, "deleted") for s in TREE_SOURCES]
    return faults


def cut_mid_line(data: bytes) -> bytes:
    """The first half of `data`, ending inside a line, right after its first field: what a
    reader sees of a file or pipe cut short (the cut never falls on a line boundary)."""
    middle = len(data) // 2
    start = data.rfind(b"\n", 0, middle) + 1
    line_end = data.find(b"\n", start)
    line = data[start : line_end if line_end != -1 else len(data)]
    m = re.match(rb"\s*\S+\s", line)
    return data[: start + (m.end() if m else max(1, len(line) // 2))]


def huge_numbers(data: bytes) -> bytes:
    """Every free-standing number (not inside a name like sda1 or mirror-0) made 401 digits long."""
    return re.sub(rb"(?<![\w.-])\d+(?![\w.])", HUGE.encode(), data)


def _rewrite(path: Path, kind: str) -> None:
    data = path.read_bytes()
    path.write_bytes({"garbage": GARBAGE, "cut": cut_mid_line(data), "empty": b"", "huge": huge_numbers(data)}[kind])


def broken_copy(snapshot: Path, fault: Fault, into: Path) -> Path:
    """A copy of `snapshot` at `into` with `fault` injected; returns `into`."""
    shutil.copytree(snapshot, into)
    manifest_path = into / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    if fault.source in FILE_SOURCES:
        path = sorted(into.glob(FILE_SOURCES[fault.source]))[0]
        if fault.kind == "deleted":
            path.unlink()
            manifest["files"].remove("/" + str(path.relative_to(into)))
        else:
            _rewrite(path, fault.kind)
    elif fault.source in COMMAND_SOURCES:
        command = next(c for c in manifest["commands"] if COMMAND_SOURCES[fault.source](c["argv"]))
        if fault.kind == "failed":
            command["returncode"] = 1
            (into / command["stderr_file"]).write_text("cannot open 'tank': I/O error\n")
        elif fault.kind == "timeout":
            command["returncode"] = EXIT_TIMEOUT
            (into / command["stdout_file"]).write_text("")
        else:
            _rewrite(into / command["stdout_file"], fault.kind)
    elif fault.source in TREE_SOURCES:
        host_path = TREE_SOURCES[fault.source]
        shutil.rmtree(into / host_path.lstrip("/"))
        manifest["listings"] = {k: v for k, v in manifest["listings"].items() if not k.startswith(host_path)}
        manifest["files"] = [f for f in manifest["files"] if not f.startswith(host_path + "/")]
    else:
        raise KeyError(fault.source)
    manifest_path.write_text(json.dumps(manifest))
    return into


# --- every recorded file of a source, damaged alone ------------------------------------------

# What a damaged file can look like besides the faults above: cut inside the value of a line
# (`tank/media<TAB>mountpoint<TAB>/mnt/me`), the way a pipe or a short read cuts it.
FILE_DAMAGE = ("garbage", "cut", "cut_value", "empty", "huge")
# A one-value file (a sysfs attribute or module parameter, a pool's state kstat) is read
# whole in one read: a short read cannot cut it, so a cut is no fault for it (NOT_FAULTS).
ONE_VALUE_DAMAGE = ("garbage", "empty", "huge")


@dataclass(frozen=True)
class FileDamage:
    source: str  # the source whose reading the file is
    path: str  # relative to the snapshot
    kind: str

    @property
    def name(self) -> str:
        return f"{self.path}/{self.kind}"


def cut_in_value(data: bytes) -> bytes:
    """`data` cut in the middle of the last field of its middle line (a value cut short)."""
    middle = len(data) // 2
    start = data.rfind(b"\n", 0, middle) + 1
    end = data.find(b"\n", start)
    end = len(data) if end == -1 else end
    field_start = max(data.rfind(b"\t", start, end), data.rfind(b" ", start, end)) + 1 or start
    if field_start >= end - 1:
        return data[: max(start, end - 1)]
    return data[: field_start + (end - field_start) // 2]


def damage_file(path: Path, kind: str) -> None:
    data = path.read_bytes()
    path.write_bytes(cut_in_value(data) if kind == "cut_value" else
                     {"garbage": GARBAGE, "cut": cut_mid_line(data), "empty": b"", "huge": huge_numbers(data)}[kind])


def file_source(host_path: str) -> str | None:
    """The source that reads a recorded host file (None: a file no source reads, e.g. the hostname)."""
    parts = host_path.strip("/").split("/")
    if host_path.startswith("/sys/block/"):
        return "disks"
    if host_path.startswith("/sys/module/zfs/parameters/"):
        return "module_params"
    if host_path.startswith("/proc/spl/kstat/zfs/") and len(parts) == 6:  # a pool's own kstats
        return source_of_path(host_path)
    for source, pattern in FILE_SOURCES.items():
        if Path(host_path.lstrip("/")).match(pattern):
            return source
    return None


def all_file_damage(snapshot: Path, every_nth_param: int = 1) -> list[FileDamage]:
    """Each file a source reads and each command's output, with each kind of damage; of the
    hundreds of module parameters, every `every_nth_param`-th one."""
    manifest = json.loads((snapshot / "manifest.json").read_text())
    params = [f for f in manifest["files"] if f.startswith("/sys/module/zfs/parameters/")]
    keep = set(params[::every_nth_param])
    targets = [(source, f.lstrip("/")) for f in manifest["files"]
               if (source := file_source(f)) is not None and (f in keep or f not in params)]
    for command in manifest["commands"]:
        source = next((s for s, test in COMMAND_SOURCES.items() if test(command["argv"])), None)
        if source is not None:
            targets.append((source, command["stdout_file"]))
    return [FileDamage(source, path, kind) for source, path in targets
            for kind in (ONE_VALUE_DAMAGE if _one_value(source, path) else FILE_DAMAGE)]


def _one_value(source: str, path: str) -> bool:
    return source in ("disks", "module_params", "cpus_online") or path.endswith("/state")
