"""Host identity and size: hostname, kernel, memory, CPUs (from /proc and /sys)."""
from __future__ import annotations

from advisor.host.files import HostFiles
from advisor.host.parsing import ParseError, shown, to_int


def parse_meminfo_total(text: str) -> int:
    for line in text.splitlines():
        if line.startswith("MemTotal:"):
            parts = line.split()
            if len(parts) < 2:
                raise ParseError(f"/proc/meminfo: {shown(line)} has no value")
            return to_int(parts[1], "/proc/meminfo MemTotal") * 1024
    raise ParseError("/proc/meminfo has no MemTotal line")


def parse_cpu_list(text: str) -> int:
    """'0-3,6,8-9' (sysfs cpu list) -> 7."""
    count = 0
    for part in text.strip().split(","):
        if not part:
            continue
        lo, dash, hi = part.partition("-")
        first, last = to_int(lo, "cpu list"), to_int(hi, "cpu list") if dash else None
        if last is not None and last < first:
            raise ParseError(f"cpu list: range {shown(part)} ends before it starts")
        count += last - first + 1 if last is not None else 1
    if count == 0:
        raise ParseError(f"cpu list {shown(text)} names no CPU")
    return count


MEMINFO = "/proc/meminfo"
CPUS_ONLINE = "/sys/devices/system/cpu/online"


def _read(files: HostFiles, path: str) -> str | None:
    try:
        return files.read_text(path).strip()
    except OSError:
        return None


def read_names(files: HostFiles) -> dict[str, str | None]:
    """Hostname and kernel release: plain text, nothing to parse."""
    return {"hostname": _read(files, "/proc/sys/kernel/hostname"), "kernel": _read(files, "/proc/sys/kernel/osrelease")}


def read_memory_bytes(files: HostFiles) -> int:
    return parse_meminfo_total(files.read_text(MEMINFO))


def read_cpu_count(files: HostFiles) -> int:
    return parse_cpu_list(files.read_text(CPUS_ONLINE))
