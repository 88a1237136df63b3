"""The pool descriptor stored with every probe result: layout, per-vdev ashift, media, disks.

Read cheaply (zpool status, zdb -C, /sys/block) so a probe does not pay for a full facts
collection.  `describe_pool` is pure; `read_pool_descriptor` runs the commands.
"""
from __future__ import annotations

from typing import Any

from advisor.host import zdb
from advisor.host.disks import disk_of_device, read_disks
from advisor.host.files import HostFiles
from advisor.host.runner import CommandRunner
from advisor.host.zpool_status import STATUS_TEXT_ARGV, parse_status_text
from advisor.hostmodel.facts import Disk, Pool


class PoolUnavailable(Exception):
    """The pool cannot be described (absent, or zpool failed); the message says why."""


def describe_pool(pool: Pool, disks: list[Disk]) -> dict[str, Any]:
    by_name = {d.name: d for d in disks}
    vdevs: list[dict[str, Any]] = []
    for top in pool.top_level_vdevs("data"):
        leaves = top.leaves() or [top]
        vdevs.append({
            "type": top.type, "width": len(leaves), "ashift": top.ashift, "nparity": top.nparity,
            "disks": [leaf.disk for leaf in leaves],
        })
    # the separate intent log devices (SLOG): where sync writes go first, if any
    logs = [{"type": top.type, "width": len(top.leaves() or [top])} for top in pool.top_level_vdevs("log")]
    members = [by_name[n] for v in vdevs for n in v["disks"] if n in by_name]
    media = {d.media for d in members} or {"unknown"}
    kinds = sorted({(v["type"], v["width"]) for v in vdevs})
    layout = ", ".join(f"{sum(1 for v in vdevs if (v['type'], v['width']) == k)} x {k[0]}"
                       + (f" of {k[1]}" if k[0] != "disk" else "") for k in kinds)
    ashifts = [v["ashift"] for v in vdevs if v["ashift"] is not None]
    return {
        "pool": pool.name,
        "layout": layout or "unknown",
        "vdevs": vdevs,
        "logs": logs,
        "ashift": min(ashifts) if ashifts else None,
        "media": media.pop() if len(media) == 1 else "mixed",
        "disks": [{"name": d.name, "media": d.media, "logical_block_size": d.logical_block_size,
                   "physical_block_size": d.physical_block_size, "size_bytes": d.size_bytes} for d in members],
    }


async def read_pool_descriptor(pool_name: str, runner: CommandRunner, files: HostFiles) -> tuple[Pool, dict[str, Any]]:
    status = await runner.run([*STATUS_TEXT_ARGV, pool_name])
    if not status.ok:
        raise PoolUnavailable(status.error())
    parsed = [p for p in parse_status_text(status.stdout) if p.name == pool_name]
    if not parsed:
        raise PoolUnavailable(f"zpool status did not list pool {pool_name!r}")
    st = parsed[0]
    pool = Pool(name=pool_name, health=st.state, root=st.root, scan=st.scan, errors=st.errors, status=st.status)
    config = await runner.run(list(zdb.zdb_config_argv(pool_name)), max(runner.timeout_seconds, zdb.MIN_TIMEOUT_SECONDS))
    if config.ok:
        zdb.attach_ashift(pool, zdb.parse_zdb_ashift(config.stdout))
    disks = read_disks(files)
    for leaf in pool.leaves():
        if leaf.path and leaf.type == "disk":
            leaf.disk = disk_of_device(files.realpath(leaf.path), disks)
    return pool, describe_pool(pool, disks)
