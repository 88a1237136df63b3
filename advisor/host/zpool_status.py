"""The vdev tree, vdev states and error counters: `zpool status` (zpool-status(8)).

Text output (every OpenZFS) is parsed by indentation of the config section;
OpenZFS >= 2.3 also prints JSON with `-j`, parsed by `parse_status_json`.
Both give the same `PoolStatus` so the rest of the advisor never cares which.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

from advisor.host.domains import VDEV_STATES, count, one_of
from advisor.host.parsing import ParseError, shown
from advisor.hostmodel.facts import ScanStatus, Vdev, VdevGroup

# -p exact numbers, -P full device paths, -L symlinks resolved (so /dev/sda1,
# which maps to /sys/block); the same flags as our `zpool iostat` call.
STATUS_TEXT_ARGV = ("zpool", "status", "-pPL")
STATUS_JSON_ARGV = ("zpool", "status", "-pP", "-j", "--json-int")

_GROUP_HEADERS: dict[str, VdevGroup] = {
    "logs": "log",
    "cache": "cache",
    "spares": "spare",
    "special": "special",
    "dedup": "dedup",
}
_KEY_LINE = re.compile(r"^\s*([a-z]+): ?(.*)$")
_SIZE = re.compile(r"([\d.]+)\s*([KMGTPE]?)B?", re.I)
_SIZE_SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50, "E": 1 << 60}
_DATE = "%a %b %d %H:%M:%S %Y"


@dataclass
class PoolStatus:
    name: str
    state: str
    root: Vdev
    scan: ScanStatus = field(default_factory=ScanStatus)
    errors: str | None = None
    status: str | None = None


def vdev_type(name: str) -> str:
    """'mirror-0' -> 'mirror', 'raidz2-1' -> 'raidz2', 'draid1:2d:4c:0s-0' -> 'draid1',
    '/dev/sda1' or 'sda' -> 'disk', '/tmp/file' -> 'file'."""
    m = re.match(r"^(mirror|raidz[123]?|draid[123]?|replacing|spare|indirect|hole)(?:[:-]|$)", name)
    if m:
        kind = m.group(1)
        return "raidz1" if kind == "raidz" else kind
    if name.startswith("/") and not name.startswith("/dev/"):
        return "file"
    return "disk"


def _nparity(kind: str) -> int | None:
    m = re.match(r"^(?:raidz|draid)([123])$", kind)
    return int(m.group(1)) if m else None


def _count(word: str) -> int:
    """Error counters: exact with -p; '1.2K' style without it."""
    if word.isdigit():
        return count(word, "error counter")
    return parse_size(word) or 0


def parse_size(text: str) -> int | None:
    """'1.23G' -> 1320702443 (zfs_nicenum, powers of 1024); '512' -> 512."""
    m = _SIZE.fullmatch(text.strip())
    if not m:
        return None
    try:
        return int(float(m.group(1)) * _SIZE_SUFFIX[m.group(2).upper()])
    except (ValueError, OverflowError):  # '1.2.3', or beyond float range
        return None


def _date(text: str) -> datetime | None:
    try:
        return datetime.strptime(text.strip(), _DATE)
    except ValueError:
        return None


def parse_scan(text: str) -> ScanStatus:
    """The `scan:` paragraph of zpool status (first line plus progress lines)."""
    first, *rest = text.strip().splitlines() or [""]
    first = first.strip()
    if not first or first.startswith("none requested"):
        return ScanStatus()
    function = "resilver" if first.startswith("resilver") else "scrub"
    scan = ScanStatus(function=function)
    if m := re.search(r"with (\d+) errors on (.+)$", first):
        scan.state, scan.errors, scan.ended = "finished", count(m.group(1), "scan errors"), _date(m.group(2))
    elif m := re.search(r"in progress since (.+)$", first):
        scan.state, scan.started = "scanning", _date(m.group(1))
    elif m := re.search(r"paused since (.+)$", first):
        scan.state, scan.started = "paused", _date(m.group(1))
    elif m := re.search(r"canceled on (.+)$", first):
        scan.state, scan.ended = "canceled", _date(m.group(1))
    progress = " ".join(line.strip() for line in rest)
    if m := re.search(r"(\S+) scanned", progress):
        scan.examined_bytes = parse_size(m.group(1))
    if m := re.search(r"(\S+) issued", progress):
        scan.issued_bytes = parse_size(m.group(1))
    if m := re.search(r"(\S+) total", progress):
        scan.to_examine_bytes = parse_size(m.group(1))
    return scan


def _parse_config(lines: list[str], pool_name: str) -> Vdev:
    root: Vdev | None = None
    group: VdevGroup = "data"
    stack: list[tuple[int, Vdev]] = []
    for line in lines:
        if not line.strip():
            continue
        body = line.lstrip("\t")
        depth = (len(body) - len(body.lstrip(" "))) // 2
        words = body.split()
        if words[:2] == ["NAME", "STATE"]:
            continue
        name = words[0]
        if depth == 0:
            if name == pool_name and root is None:
                root = Vdev(name=name, type="root", state=words[1] if len(words) > 1 else None)
                _counts(root, words)
                stack = [(0, root)]
                group = "data"
                continue
            if name in _GROUP_HEADERS and len(words) == 1:
                group = _GROUP_HEADERS[name]
                stack = [(0, root)] if root else []
                continue
        if root is None:
            continue
        kind = vdev_type(name)
        vdev = Vdev(
            name=name,
            type=kind,
            group=group,
            state=words[1] if len(words) > 1 else None,
            nparity=_nparity(kind),
            path=name if kind in ("disk", "file") else None,
        )
        _counts(vdev, words)
        while stack and stack[-1][0] >= depth:
            stack.pop()
        parent = stack[-1][1] if stack else root
        parent.children.append(vdev)
        stack.append((depth, vdev))
    if root is None:
        raise ParseError(f"pool {shown(pool_name)}: no vdev tree in the config section")
    return root


def _counts(vdev: Vdev, words: list[str]) -> None:
    """The state and the READ WRITE CKSUM counters of a config line, each of its domain."""
    if vdev.state is not None:
        one_of(vdev.state, VDEV_STATES, f"state of {vdev.name}")
    if len(words) >= 5 and all(re.fullmatch(r"-?[\d.]+[KMGTPE]?", w) for w in words[2:5]):
        if any(w.startswith("-") for w in words[2:5]):
            raise ParseError(f"{vdev.name}: error counters {' '.join(words[2:5])} below 0")
        vdev.read_errors, vdev.write_errors, vdev.checksum_errors = (_count(w) for w in words[2:5])


def parse_status_text(stdout: str) -> list[PoolStatus]:
    """-> one PoolStatus per `pool:` block; empty output is no pools.

    Each block must hold a vdev tree and end with its `errors:` line (printed
    after the config by every OpenZFS): a block without one was cut short.
    """
    pools: list[PoolStatus] = []
    # Split into per-pool blocks at each "pool:" line.
    blocks: list[list[str]] = []
    for line in stdout.splitlines():
        if re.match(r"^\s*pool: ", line):
            blocks.append([])
        if blocks:
            blocks[-1].append(line)
    for block in blocks:
        sections: dict[str, list[str]] = {}
        key = None
        for line in block:
            m = _KEY_LINE.match(line)
            if m and not line.startswith("\t"):
                key = m.group(1)
                sections[key] = [m.group(2)]
            elif key:
                sections[key].append(line)
        name = (sections.get("pool") or [""])[0].strip()
        if not name:
            raise ParseError("a `pool:` line without a name")
        if "errors" not in sections:
            raise ParseError(f"pool {shown(name)}: no `errors:` line after the config (output cut short?)")
        root = _parse_config(sections.get("config", []), name)
        pools.append(
            PoolStatus(
                name=name,
                state=(sections.get("state") or [""])[0].strip(),
                root=root,
                scan=parse_scan("\n".join(sections.get("scan", []))),
                errors=" ".join(s.strip() for s in sections.get("errors", [])).strip() or None,
                status=" ".join(s.strip() for s in sections.get("status", [])).strip() or None,
            )
        )
    if not pools and stdout.strip():
        raise ParseError(f"no `pool:` block in zpool status output starting {shown(stdout.strip())}")
    return pools


# JSON (OpenZFS >= 2.3). Note: 2.3.2 drops vdev_type, state and path of leaf
# vdevs when -L is given (seen in the lab), so the JSON call uses -P without
# -L and the collector resolves each leaf's by-id path to its device itself.
_JSON_GROUPS: dict[str, VdevGroup] = {
    "normal": "data",
    "log": "log",
    "logs": "log",
    "special": "special",
    "dedup": "dedup",
    "l2cache": "cache",
    "spares": "spare",
}
# the pool's keys that hold the vdevs of a group other than data
_JSON_POOL_GROUPS: tuple[tuple[str, VdevGroup], ...] = (
    ("logs", "log"), ("special", "special"), ("dedup", "dedup"), ("l2cache", "cache"), ("spares", "spare"))
_JSON_SCAN_STATES = {"SCANNING": "scanning", "FINISHED": "finished", "CANCELED": "canceled"}


def _json_vdev(node: dict, group: VdevGroup) -> Vdev:
    name = str(node["name"])
    kind = str(node.get("vdev_type") or vdev_type(name))
    if kind == "raidz":
        kind = f"raidz{node.get('nparity') or vdev_type(name).removeprefix('raidz') or 1}"
    group = _JSON_GROUPS.get(str(node.get("class", "")), group)
    vdev = Vdev(
        name=name,
        type=kind if kind != "raidz" else vdev_type(name),
        group=group,
        state=node.get("state"),
        read_errors=_json_int(node.get("read_errors", 0)),
        write_errors=_json_int(node.get("write_errors", 0)),
        checksum_errors=_json_int(node.get("checksum_errors", 0)),
        path=node.get("path") or (name if kind in ("disk", "file") else None),
    )
    vdev.nparity = _nparity(vdev.type)
    if vdev.state is not None:
        one_of(vdev.state, VDEV_STATES, f"state of {name}")
    for child in (node.get("vdevs") or {}).values():
        vdev.children.append(_json_vdev(child, group))
    return vdev


def _json_int(value) -> int:
    return count(str(value), "zpool status JSON")


def _json_scan(stats: dict | None) -> ScanStatus:
    if not stats:
        return ScanStatus()
    function = str(stats.get("function", "")).lower()
    if function not in ("scrub", "resilver"):
        return ScanStatus()
    state = _JSON_SCAN_STATES.get(str(stats.get("state", "")).upper(), "none")
    if state == "scanning" and int(stats.get("scrub_pause", 0) or 0):
        state = "paused"

    def when(key: str) -> datetime | None:
        value = int(stats.get(key, 0) or 0)
        return datetime.fromtimestamp(value, UTC) if value else None

    return ScanStatus(
        function=function,
        state=state,
        errors=_json_int(stats.get("errors", 0)),
        examined_bytes=_json_int(stats.get("examined", 0)),
        to_examine_bytes=_json_int(stats.get("to_examine", 0)),
        issued_bytes=_json_int(stats.get("issued", 0)),
        started=when("start_time"),
        ended=when("end_time") if state != "scanning" else None,
    )


def parse_status_json(stdout: str) -> list[PoolStatus]:
    """`zpool status -j --json-int` (OpenZFS >= 2.3) -> the same PoolStatus as text."""
    try:
        document = json.loads(stdout)
    except ValueError as exc:
        raise ParseError(f"zpool status JSON: {exc}") from None
    except RecursionError:  # deeply nested garbage
        raise ParseError("zpool status JSON nested too deeply") from None
    if not isinstance(document, dict) or not isinstance(document.get("pools", {}), dict):
        raise ParseError("zpool status JSON: no `pools` object")
    try:
        return _json_pools(document)
    except (AttributeError, TypeError, KeyError, ValueError, OverflowError, OSError, RecursionError) as exc:
        # a value of the wrong type somewhere in the tree
        raise ParseError(f"zpool status JSON not understood: {type(exc).__name__}: {exc}") from None


def _json_pools(document: dict) -> list[PoolStatus]:
    pools = []
    for name, pool in (document.get("pools") or {}).items():
        tree = (pool.get("vdevs") or {}).get(name)
        if tree is None:
            raise ParseError(f"pool {shown(name)}: no vdev tree in JSON")
        root = _json_vdev(tree, "data")
        root.type = "root"
        for key, group in _JSON_POOL_GROUPS:
            for child in (pool.get(key) or {}).values():
                root.children.append(_json_vdev(child, group))
        errors = pool.get("error_count")
        pools.append(
            PoolStatus(
                name=name,
                state=str(pool.get("state", "")),
                root=root,
                scan=_json_scan(pool.get("scan_stats")),
                errors="No known data errors" if str(errors) == "0" else (f"{errors} data errors" if errors else None),
                status=pool.get("status"),
            )
        )
    return pools
