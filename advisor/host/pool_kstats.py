"""Per-pool kstats under /proc/spl/kstat/zfs/<pool>/: state, txgs, iostats, objset-*.

`iostats` exists from OpenZFS 2.1 (trim, ARC and direct I/O counters);
each `objset-0x<id>` is one dataset's logical I/O counters (reads, nread,
writes, nwritten, nunlinks, nunlinked) with its name in `dataset_name`.
"""
from __future__ import annotations

from advisor.facts import KStat
from advisor.host.files import HostFiles
from advisor.host.kstat import KSTAT_DIR, parse_named_kstat


def read_state(files: HostFiles, pool: str) -> str | None:
    try:
        return files.read_text(f"{KSTAT_DIR}/{pool}/state").strip() or None
    except OSError:
        return None


def read_iostats(files: HostFiles, pool: str) -> KStat | None:
    try:
        return parse_named_kstat(files.read_text(f"{KSTAT_DIR}/{pool}/iostats"))
    except (OSError, ValueError):
        return None  # OpenZFS < 2.1 has no iostats kstat


def read_objsets(files: HostFiles, pool: str) -> dict[str, KStat]:
    """-> {dataset name: its objset I/O kstat}."""
    found: dict[str, KStat] = {}
    try:
        names = files.listdir(f"{KSTAT_DIR}/{pool}")
    except OSError:
        return found
    for entry in names:
        if not entry.startswith("objset-"):
            continue
        try:
            kstat = parse_named_kstat(files.read_text(f"{KSTAT_DIR}/{pool}/{entry}"))
        except (OSError, ValueError):
            continue
        name = kstat.values.pop("dataset_name", None)
        if isinstance(name, str) and name:
            found[name] = kstat
    return found
