"""Host identity and size: hostname, kernel, memory, CPUs (from /proc and /sys)."""
from __future__ import annotations

from advisor.host import domains
from advisor.host.domains import NR_CPUS_MAX
from advisor.host.files import HostFiles
from advisor.host.parsing import ParseError, shown, to_int


def parse_meminfo_total(text: str) -> int:
    """MemTotal in bytes: one `MemTotal: <n> kB` line, n above 0 (a host has memory)."""
    lines = [line for line in text.splitlines() if line.startswith("MemTotal:")]
    if not lines:
        raise ParseError("/proc/meminfo has no MemTotal line")
    if len(lines) > 1:
        raise ParseError(f"/proc/meminfo: {len(lines)} MemTotal lines")
    parts = lines[0].split()
    if len(parts) != 3 or parts[2] != "kB":
        raise ParseError(f"/proc/meminfo: {shown(lines[0])} is not `MemTotal: <n> kB`")
    kib = to_int(parts[1], "/proc/meminfo MemTotal")
    if kib <= 0:
        raise ParseError(f"/proc/meminfo: MemTotal {kib} kB: a host has memory")
    return kib * 1024


def parse_cpu_list(text: str) -> int:
    """'0-3,6,8-9' (sysfs cpu list) -> 7. The kernel prints ascending, disjoint ranges of CPU
    numbers below NR_CPUS (cpulist_parse(), bitmap_print_to_pagebuf())."""
    count, after = 0, -1
    for part in text.strip().split(","):
        if not part:
            continue
        lo, dash, hi = part.partition("-")
        first = to_int(lo, "cpu list")
        last = to_int(hi, "cpu list") if dash else first
        if first <= after or last < first or last >= NR_CPUS_MAX:
            raise ParseError(f"cpu list {shown(text.strip())}: {shown(part)} is not an ascending range of CPUs "
                             f"from 0 to {NR_CPUS_MAX - 1} after the ones before it")
        count, after = count + last - first + 1, last
    if count == 0:
        raise ParseError(f"cpu list {shown(text)} names no CPU")
    return count


MEMINFO = "/proc/meminfo"
CPUS_ONLINE = "/sys/devices/system/cpu/online"
HOSTNAME = "/proc/sys/kernel/hostname"
OSRELEASE = "/proc/sys/kernel/osrelease"
UNSET = "(none)"  # the kernel's hostname before one is set (UTS_NODENAME)


def _read(files: HostFiles, path: str) -> str | None:
    try:
        return files.read_text(path)
    except OSError:
        return None


def read_names(files: HostFiles, errors: list[str] | None = None) -> dict[str, str | None]:
    """Hostname and kernel release; one that is not a name (a newline, a blank, a control
    character in it, a file without even the newline the kernel prints) is left out and its
    reason added to `errors`."""
    names: dict[str, str | None] = {}
    for key, path, check in (("hostname", HOSTNAME, domains.hostname), ("kernel", OSRELEASE, domains.kernel_release)):
        raw = _read(files, path)
        value = raw.removesuffix("\n") if raw else None
        try:
            if raw == "":
                raise ParseError("the file is empty")
            names[key] = check(value) if value and value != UNSET else None
        except ParseError as exc:
            names[key] = None
            if errors is not None:
                errors.append(f"{path}: {exc}")
    return names


def read_memory_bytes(files: HostFiles) -> int:
    return parse_meminfo_total(files.read_text(MEMINFO))


def read_cpu_count(files: HostFiles) -> int:
    return parse_cpu_list(files.read_text(CPUS_ONLINE))
