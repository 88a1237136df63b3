"""Pool properties: `zpool get -Hp all` (zpoolprops(7)).

Scripted output is one `name<TAB>property<TAB>value<TAB>source` row per
property; -p gives exact numbers (bytes, percent without '%'). Each value the advisor reads is checked
against what zpool can print for it (advisor/host/property_domains.py).
"""
from __future__ import annotations

import math

from advisor.host import property_domains
from advisor.host.parsing import INT_MAX, INT_MIN, ParseError, shown, whole_lines
from advisor.hostmodel.facts import Pool
from advisor.hostmodel.names import InvalidName, check_pool_name

ZPOOL_GET_ARGV = ("zpool", "get", "-Hp", "all")


def parse_zpool_get(stdout: str) -> dict[str, dict[str, str]]:
    """-> {pool: {property: value}}; empty output is no pools. A line that is no row, a pool name
    zpool(8) does not allow, or a second row for a pool's property is a ParseError."""
    pools: dict[str, dict[str, str]] = {}
    for line in whole_lines(stdout, "zpool get").splitlines():
        parts = line.split("\t")
        if len(parts) < 4 or not parts[0] or not parts[1]:
            if not line.strip():
                continue
            raise ParseError(f"not a `pool<TAB>property<TAB>value<TAB>source` row: {shown(line)}")
        props = pools.get(parts[0])
        if props is None:
            props = pools[parts[0]] = {}
            try:
                check_pool_name(parts[0])
            except InvalidName as exc:
                raise ParseError(f"zpool get: {exc}") from None
        if parts[1] in props:
            raise ParseError(f"zpool get: two rows for {shown(parts[0])} {shown(parts[1])}")
        props[parts[1]] = "\t".join(parts[2:-1])  # a value may hold a tab
    return pools


def _int(value: str | None) -> int | None:
    if value is None or value == "-":  # "-": not applicable
        return None
    try:
        number = int(value.rstrip("%"))
    except ValueError:
        raise ParseError(f"zpool get: {shown(value)} is not an integer") from None
    if not INT_MIN <= number <= INT_MAX:
        raise ParseError(f"zpool get: {shown(value)} is out of the 64-bit range")
    return number


def _ratio(value: str | None, percent: bool) -> float | None:
    """'12' (percent) -> 0.12; '1.50x' or '1.50' -> 1.5; '-' -> None."""
    if value is None or value in ("-", ""):
        return None
    try:
        number = float(value.rstrip("%x"))
    except ValueError:
        raise ParseError(f"zpool get: {shown(value)} is not a ratio") from None
    if not math.isfinite(number):
        raise ParseError(f"zpool get: {shown(value)} is not a finite ratio")
    return number / 100 if percent else number


def pool_from_properties(name: str, props: dict[str, str], errors: list[str] | None = None) -> Pool:
    """The pool of `props`; a property whose value zpool cannot print is left out (health then
    UNKNOWN), its reason added to `errors` (without them, a ParseError)."""
    props = property_domains.checked(property_domains.POOL, name, props, errors)
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
