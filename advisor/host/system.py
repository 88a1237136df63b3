"""Host identity and size: hostname, kernel, memory, CPUs (from /proc and /sys)."""
from __future__ import annotations

from advisor.host.files import HostFiles


def parse_meminfo_total(text: str) -> int | None:
    for line in text.splitlines():
        if line.startswith("MemTotal:"):
            parts = line.split()
            return int(parts[1]) * 1024 if len(parts) >= 2 else None
    return None


def parse_cpu_list(text: str) -> int:
    """'0-3,6,8-9' (sysfs cpu list) -> 7."""
    count = 0
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        count += int(hi) - int(lo) + 1 if hi else 1
    return count


def _read(files: HostFiles, path: str) -> str | None:
    try:
        return files.read_text(path).strip()
    except OSError:
        return None


def read_identity(files: HostFiles) -> dict[str, object]:
    meminfo = _read(files, "/proc/meminfo")
    cpus = _read(files, "/sys/devices/system/cpu/online")
    return {
        "hostname": _read(files, "/proc/sys/kernel/hostname"),
        "kernel": _read(files, "/proc/sys/kernel/osrelease"),
        "memory_bytes": parse_meminfo_total(meminfo) if meminfo else None,
        "cpu_count": parse_cpu_list(cpus) if cpus else None,
    }
