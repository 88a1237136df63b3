"""Pool properties: `zpool get -Hp all` (zpoolprops(7)).

Scripted output is one `name<TAB>property<TAB>value<TAB>source` row per
property; -p gives exact numbers (bytes, percent without '%').
"""
from __future__ import annotations

from advisor.facts import Pool

ZPOOL_GET_ARGV = ("zpool", "get", "-Hp", "all")


def parse_zpool_get(stdout: str) -> dict[str, dict[str, str]]:
    """-> {pool: {property: value}}."""
    pools: dict[str, dict[str, str]] = {}
    for line in stdout.splitlines():
        parts = line.split("\t")
        if len(parts) < 3:
            continue
        pools.setdefault(parts[0], {})[parts[1]] = parts[2]
    return pools


def _int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value.rstrip("%"))
    except ValueError:
        return None


def _ratio(value: str | None, percent: bool) -> float | None:
    """'12' (percent) -> 0.12; '1.50x' or '1.50' -> 1.5; '-' -> None."""
    if value is None or value in ("-", ""):
        return None
    try:
        number = float(value.rstrip("%x"))
    except ValueError:
        return None
    return number / 100 if percent else number


def pool_from_properties(name: str, props: dict[str, str]) -> Pool:
    return Pool(
        name=name,
        health=props.get("health", "UNKNOWN"),
        guid=props.get("guid"),
        size_bytes=_int(props.get("size")),
        allocated_bytes=_int(props.get("allocated")),
        free_bytes=_int(props.get("free")),
        fragmentation_ratio=_ratio(props.get("fragmentation"), percent=True),
        capacity_ratio=_ratio(props.get("capacity"), percent=True),
        dedup_ratio=_ratio(props.get("dedupratio"), percent=False),
        readonly=props.get("readonly") == "on",
        ashift=_int(props.get("ashift")),
        # feature@ flags are many and rarely matter for tuning; keep the rest.
        properties={k: v for k, v in props.items() if not k.startswith("feature@")},
    )
