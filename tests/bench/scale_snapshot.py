#!/usr/bin/env python3
"""Scale a recorded host snapshot up to N datasets, for exporter benchmarks.

    tests/bench/scale_snapshot.py SRC DST --datasets 10000 [--template tank/pg]

Copies the snapshot SRC to DST and adds datasets <pool>/scale/dsNNNNN that
are clones of a template dataset: its `zfs get` rows (the name replaced) and
its objset kstat (a new objset id, `dataset_name` replaced), listed in the
manifest like recorded files. Everything else (pools, vdevs, histograms,
kstats, disks) stays as recorded, so a scaled snapshot costs what the same
host with N more datasets would cost to parse and export. The manifest's
note says it was scaled, and from what.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from pathlib import Path

KSTAT_DIR = "/proc/spl/kstat/zfs"


def _zfs_get(manifest: dict) -> dict:
    for command in manifest["commands"]:
        if command["argv"][:2] == ["zfs", "get"]:
            return command
    raise SystemExit("the snapshot recorded no `zfs get` call")


def scale(src: Path, dst: Path, datasets: int, template: str | None = None) -> Path:
    if dst.exists():
        raise SystemExit(f"{dst} exists")
    shutil.copytree(src, dst)
    manifest = json.loads((dst / "manifest.json").read_text())
    command = _zfs_get(manifest)
    out = dst / command["stdout_file"]
    rows = out.read_text().splitlines()
    names = list(dict.fromkeys(r.split("\t", 1)[0] for r in rows if "\t" in r))
    template = template or next((n for n in names if "/" in n), names[0])
    pool = template.split("/", 1)[0]
    template_rows = [r.split("\t", 1)[1] for r in rows if r.split("\t", 1)[0] == template]
    if not template_rows:
        raise SystemExit(f"no dataset {template} in {out}")

    pool_dir = f"{KSTAT_DIR}/{pool}"
    objset_text = None
    for entry in manifest["listings"].get(pool_dir, []):
        path = dst / pool_dir.lstrip("/") / entry
        if entry.startswith("objset-") and path.is_file():
            text = path.read_text()
            if re.search(rf"^dataset_name\s+\d+\s+{re.escape(template)}$", text, re.MULTILINE):
                objset_text = text
                break

    parent = f"{pool}/scale"
    new_rows = [f"{parent}\t{r}" for r in template_rows]
    listing = manifest["listings"].setdefault(pool_dir, [])
    for i in range(datasets):
        name = f"{parent}/ds{i:05d}"
        new_rows.extend(f"{name}\t{r}" for r in template_rows)
        if objset_text is not None:
            entry = f"objset-0x{0x100000 + i:x}"
            text = re.sub(r"^(dataset_name\s+\d+\s+).*$", rf"\g<1>{name}", objset_text, count=1, flags=re.MULTILINE)
            (dst / pool_dir.lstrip("/") / entry).write_text(text)
            listing.append(entry)
            manifest["files"].append(f"{pool_dir}/{entry}")
    out.write_text("\n".join(rows + new_rows) + "\n")
    manifest["note"] = f"scaled by tests/bench/scale_snapshot.py: {datasets} clones of {template} added to {src}"
    (dst / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return dst


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("src", type=Path)
    parser.add_argument("dst", type=Path)
    parser.add_argument("--datasets", type=int, required=True)
    parser.add_argument("--template", help="dataset to clone (default: the first child dataset)")
    args = parser.parse_args(argv)
    print(scale(args.src, args.dst, args.datasets, args.template))
    return 0


if __name__ == "__main__":
    sys.exit(main())
