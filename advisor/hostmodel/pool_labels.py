"""What tells a sibling pool from a stranger (docs/fleet.md): the pool's shape as the model
describes it, the count and model of its data disks and the OpenZFS version loaded.  The exporter
labels zfs_advisor_probe_pool_info with it and the fleet's reader matches pools by it, so both
write it the same way."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.hostmodel.facts import Host

# The labels that must be equal for two pools to be siblings (`pool` names the series, not the shape).
SIBLING_LABELS = ("media", "vdev_type", "top_vdevs", "vdev_width", "ashift", "disks", "disk_model", "openzfs")


def disk_model(host: Host, names: list[str]) -> str:
    models = {d.model.strip() for d in host.disks if d.name in names and d.model and d.model.strip()}
    return models.pop() if len(models) == 1 else ("mixed" if models else "unknown")


def openzfs_series(host: Host) -> str:
    """major.minor of the loaded module: a patch release does not make a pool a stranger."""
    version = host.zfs.version_tuple
    return ".".join(str(v) for v in version[:2]) if version else "unknown"


def pool_labels(pool: str, shape: Mapping[str, Any], disk_names: list[str], host: Host) -> dict[str, str]:
    """`shape`: advisor/evidence/pool_shape.py's; `disk_names`: the pool's data disks."""
    return {"pool": pool, "media": str(shape["media"]), "vdev_type": str(shape["vdev_type"]),
            "top_vdevs": str(shape["top_vdevs"]), "vdev_width": str(shape["vdev_width"]),
            "ashift": str(shape["ashift"] or "unknown"), "disks": str(len(disk_names)),
            "disk_model": disk_model(host, disk_names), "openzfs": openzfs_series(host)}
