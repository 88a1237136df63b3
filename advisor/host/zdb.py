"""Per-vdev ashift from the pool configuration: `zdb -C <pool>`.

`zpool get ashift` reports the pool *property* (0 = auto-detected), not what
each top-level vdev was created with; the cached config printed by zdb -C
has the real `ashift` of every top-level vdev (see the lab notes).
"""
from __future__ import annotations

import re


def zdb_config_argv(pool: str) -> tuple[str, ...]:
    return ("zdb", "-C", pool)


def parse_zdb_ashift(stdout: str) -> dict[str, int]:
    """-> {top-level vdev name as zpool status shows it (mirror-0, /dev/sdb1): ashift}."""
    result: dict[str, int] = {}
    in_tree = False
    tree_indent = None
    current: dict[str, str] | None = None
    current_indent = None

    def flush() -> None:
        if current and "ashift" in current:
            kind = current.get("type", "")
            vid = current.get("id", "")
            if kind in ("mirror", "raidz", "draid"):
                if kind == "raidz":
                    kind = f"raidz{current.get('nparity', '1')}"
                elif kind == "draid":
                    kind = f"draid{current.get('nparity', '1')}"
                name = f"{kind}-{vid}"
            else:
                name = current.get("path", f"{kind}-{vid}")
            result[name] = int(current["ashift"])

    for line in stdout.splitlines():
        indent = len(line) - len(line.lstrip())
        text = line.strip()
        if text == "vdev_tree:":
            in_tree, tree_indent = True, indent
            continue
        if not in_tree:
            continue
        if text and indent <= tree_indent:
            break
        if re.fullmatch(r"children\[\d+\]:", text):
            if current_indent is None or indent == current_indent:
                flush()
                current, current_indent = {}, indent
            continue
        if current is not None and current_indent is not None and indent == current_indent + 4:
            key, _, value = text.partition(": ")
            current[key] = value.strip("'")
    flush()
    return result
