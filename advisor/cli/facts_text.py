"""The host model as text, for `zfs-advisor facts` (advisor/cli/facts.py)."""
from __future__ import annotations

from advisor.engine.units import format_size
from advisor.hostmodel.facts import Disk, Host, Pool, Vdev

# The dataset properties worth a glance in a summary.
SUMMARY_PROPERTIES = ("recordsize", "volblocksize", "compression", "atime", "sync", "logbias", "primarycache", "xattr")


def _percent(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio * 100:.0f}%"


def _disk_line(disk: Disk | None) -> str:
    if disk is None:
        return ""
    sectors = f"{disk.logical_block_size or '?'}/{disk.physical_block_size or '?'}B sectors"
    return f"  [{disk.name}: {disk.media}, {sectors}, {disk.model or 'unknown model'}]"


def _vdev_lines(host: Host, vdev: Vdev, depth: int) -> list[str]:
    label = vdev.name if vdev.group == "data" or depth > 1 else f"{vdev.name} ({vdev.group})"
    extra = f" ashift={vdev.ashift}" if vdev.ashift is not None else ""
    errors = vdev.read_errors + vdev.write_errors + vdev.checksum_errors
    err = f" errors r/w/c={vdev.read_errors}/{vdev.write_errors}/{vdev.checksum_errors}" if errors else ""
    disk = _disk_line(host.disk(vdev.disk)) if vdev.disk else ""
    lines = [f"{'  ' * depth}{label} {vdev.state or ''}{extra}{err}{disk}".rstrip()]
    for child in vdev.children:
        lines += _vdev_lines(host, child, depth + 1)
    return lines


def _pool_lines(host: Host, pool: Pool) -> list[str]:
    lines = [
        f"pool {pool.name}: {pool.health}, size {format_size(pool.size_bytes)}, "
        f"allocated {format_size(pool.allocated_bytes)} ({_percent(pool.capacity_ratio)}), "
        f"fragmentation {_percent(pool.fragmentation_ratio)}, ashift property {pool.ashift}"
    ]
    if pool.scan.function != "none":
        lines.append(f"  scan: {pool.scan.function} {pool.scan.state}, {pool.scan.errors} errors")
    if pool.root:
        lines += ["  " + line for line in _vdev_lines(host, pool.root, 0)[1:]]
    return lines


def facts_text(host: Host) -> str:
    lines = [
        f"host {host.hostname or '?'}, kernel {host.kernel or '?'}, "
        f"{host.cpu_count or '?'} CPUs, {format_size(host.memory_bytes)} RAM"
    ]
    if not host.zfs.present:
        lines.append(f"ZFS: absent ({host.zfs.reason})")
    else:
        lines.append(f"ZFS: kernel module {host.zfs.kmod_version or '?'}, userland {host.zfs.userland_version or '?'}")
        if host.arc:
            lines.append(
                f"ARC: size {format_size(host.arc.int('size'))} of max {format_size(host.arc.int('c_max'))}, "
                f"hits {host.arc.int('hits')}, misses {host.arc.int('misses')}"
            )
    lines.append("")
    for pool in host.pools:
        lines += _pool_lines(host, pool) + [""]
    if host.zfs.present and not host.pools:
        lines += ["no pools imported", ""]
    if host.datasets:
        lines.append("datasets:")
        for ds in host.datasets:
            props = " ".join(f"{p}={ds.value(p)}" for p in SUMMARY_PROPERTIES if ds.value(p) not in (None, "-"))
            lines.append(f"  {ds.name} ({ds.type}) {props}")
        lines.append("")
    lines.append("disks:")
    for disk in host.disks:
        lines.append(
            f"  {disk.name}: {disk.media}, {format_size(disk.size_bytes)}, logical {disk.logical_block_size}B, "
            f"physical {disk.physical_block_size}B, scheduler {disk.scheduler or '-'}, {disk.model or 'unknown model'}"
        )
    failed = {n: s.reason for n, s in host.sources.items() if not s.ok}
    if failed:
        lines += ["", "sources without data:"] + [f"  {n}: {r}" for n, r in sorted(failed.items())]
    return "\n".join(lines).rstrip() + "\n"
