"""The pool part of a probe's pool descriptor (advisor/probe/pooldesc.py describe_pool) as the
model's features read it: media, vdev type, top-level vdevs, vdev width, ashift.

Here, below the probe and the model, because both need it: the model describes a pool by it
(advisor/model/features.py), and the exporter labels a probed pool with it so that a fleet can
tell a sibling pool from a stranger (advisor/store/probe_stats.py, docs/fleet.md).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def pool_shape(descriptor: Mapping[str, Any]) -> dict[str, Any]:
    vdevs = descriptor.get("vdevs") or []
    first = vdevs[0] if vdevs else {}
    kind = first.get("type", "") or "unknown"
    if kind == "disk":
        kind = "stripe"
    elif kind.startswith("raidz") and not kind[-1].isdigit():
        kind = f"raidz{first.get('nparity') or 1}"
    return {"media": descriptor.get("media") or "unknown", "vdev_type": kind, "top_vdevs": max(1, len(vdevs)),
            "vdev_width": first.get("width") or 1, "ashift": descriptor.get("ashift")}
