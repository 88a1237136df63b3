"""Per-vdev ashift from the pool configuration: `zdb -C <pool>`.

`zpool get ashift` reports the pool *property* (0 = auto-detected), not what
each top-level vdev was created with; the config printed by zdb -C has the
real `ashift` of every top-level vdev. zdb names disks by the path they were
added with (often /dev/disk/by-id/...), not as `zpool status -L` does, so
top-level vdevs are matched by allocation class and order (vdev id), which
is also the order zpool status lists them in within each class.
"""
from __future__ import annotations

import re

from advisor.host.domains import ASHIFT_MAX, ASHIFT_MIN
from advisor.host.parsing import ParseError, shown
from advisor.hostmodel.facts import Pool, VdevGroup

MIN_TIMEOUT_SECONDS = 60.0


def zdb_config_argv(pool: str) -> tuple[str, ...]:
    return ("zdb", "-C", pool)


def parse_zdb_top_level(stdout: str) -> list[dict[str, str]]:
    """The top-level children of vdev_tree, in id order, as {key: value} (quotes stripped)."""
    children: list[dict[str, str]] = []
    tree_indent: int | None = None
    child_indent: int | None = None
    for line in stdout.splitlines():
        indent = len(line) - len(line.lstrip())
        text = line.strip()
        if tree_indent is None:
            if text == "vdev_tree:":
                tree_indent = indent
            continue
        if text and indent <= tree_indent:
            break  # left the vdev_tree block
        if re.fullmatch(r"children\[\d+\]:", text):
            if child_indent is None:
                child_indent = indent
            if indent == child_indent:
                children.append({})
            continue
        if children and child_indent is not None and indent > child_indent:
            _add_key(children[-1], indent, text)
    if tree_indent is None:
        raise ParseError("no vdev_tree in zdb -C output")
    if not children:
        raise ParseError("no top-level vdev (children[N]) under vdev_tree in zdb -C output")
    for child in children:
        child.pop("key_indent", None)
    return children


def _add_key(child: dict[str, str], indent: int, text: str) -> None:
    """A line below a top-level child's `children[i]:`: its own keys sit one level deeper (the
    first line sets it), deeper levels belong to its leaves and are passed over."""
    if "key_indent" not in child:
        child["key_indent"] = str(indent)
    if str(indent) == child["key_indent"]:
        key, _, value = text.partition(": ")
        child[key] = value.strip("'")


# alloc_bias of a vdev that is not a data vdev (log devices say is_log instead)
_BIASES: dict[str, VdevGroup] = {"special": "special", "dedup": "dedup"}


def _group(child: dict[str, str]) -> VdevGroup:
    if child.get("is_log") == "1":
        return "log"
    return _BIASES.get(child.get("alloc_bias", ""), "data")


def parse_zdb_ashift(stdout: str) -> dict[VdevGroup, list[int | None]]:
    """-> {allocation class: [ashift of each top-level vdev, in id order]}."""
    by_group: dict[VdevGroup, list[int | None]] = {}
    for child in parse_zdb_top_level(stdout):
        if child.get("type") in ("hole", "indirect", "missing"):
            continue
        by_group.setdefault(_group(child), []).append(_ashift(child.get("ashift")))
    if by_group and all(a is None for ashifts in by_group.values() for a in ashifts):
        raise ParseError("no ashift on any top-level vdev in zdb -C output")
    return by_group


def _ashift(text: str | None) -> int | None:
    """A top-level vdev's ashift, from ASHIFT_MIN to ASHIFT_MAX; None when zdb printed none."""
    if not text:
        return None
    if not (text.isascii() and text.isdigit() and ASHIFT_MIN <= int(text[:4]) <= ASHIFT_MAX):
        raise ParseError(f"ashift {shown(text)} is not from {ASHIFT_MIN} to {ASHIFT_MAX}")
    return int(text)


def attach_ashift(pool: Pool, by_group: dict[VdevGroup, list[int | None]]) -> None:
    """Put each ashift on its top-level vdev; ParseError when zdb and zpool status disagree."""
    if pool.root is None:
        return  # no vdev tree (zpool status failed): nothing to attach to
    for group, ashifts in by_group.items():
        vdevs = pool.top_level_vdevs(group)
        if len(vdevs) != len(ashifts):
            # a vdev being removed, or output cut short: attach nothing rather than guess, and say so
            raise ParseError(f"zdb -C lists {len(ashifts)} top-level {group} vdev(s), zpool status {len(vdevs)}")
    for group, ashifts in by_group.items():
        for vdev, ashift in zip(pool.top_level_vdevs(group), ashifts, strict=True):
            vdev.ashift = ashift
