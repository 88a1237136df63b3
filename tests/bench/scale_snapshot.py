#!/usr/bin/env python3
"""Scale a recorded host snapshot up to N datasets, for exporter benchmarks.

    tests/bench/scale_snapshot.py SRC DST --datasets 10000 [--template tank/pg]

Copies the snapshot SRC to DST and adds datasets <pool>/scale/dsNNNNN that
are clones of a template dataset: its `zfs get` rows (the name replaced) and
its objset kstat (a new objset id, `dataset_name` replaced), listed in the
manifest like recorded files. Unless `--same-values`, each clone's space
properties (used, available, ...) and I/O counters are the template's times
a factor of its own (seeded), as on a real host where no two datasets hold the
same bytes: identical clones compress 85-fold, which flatters any body kept
compressed. Everything else (pools, vdevs, histograms,
kstats, disks) stays as recorded, so a scaled snapshot costs what the same
host with N more datasets would cost to parse and export. The manifest's
note says it was scaled, and from what.
"""
from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import sys
from pathlib import Path

KSTAT_DIR = "/proc/spl/kstat/zfs"
VARIED_PROPERTIES = {"used", "referenced", "logicalused"}  # not `available`: the pool's free space, shared
_COUNTER = re.compile(r"^(\w+\s+4\s+)(\d+)$", re.MULTILINE)  # kstat type 4: uint64


def _varied_rows(rows: list[str], rng: random.Random) -> list[str]:
    out = []
    for row in rows:
        prop, value, *rest = row.split("\t")
        if prop in VARIED_PROPERTIES and value.isdigit():
            value = str(int(int(value) * rng.uniform(0.01, 100)))
        out.append("\t".join([prop, value, *rest]))
    return out


def _varied_counters(text: str, rng: random.Random) -> str:
    """Counters times a factor; zeros (an idle template) become counts of up to 10 digits."""
    def vary(value: int) -> int:
        return int(value * rng.uniform(0.01, 100)) if value else rng.randrange(10 ** rng.randint(1, 10))
    return _COUNTER.sub(lambda m: f"{m.group(1)}{vary(int(m.group(2)))}", text)


def _zfs_get(manifest: dict) -> dict:
    for command in manifest["commands"]:
        if command["argv"][:2] == ["zfs", "get"]:
            return command
    raise SystemExit("the snapshot recorded no `zfs get` call")


def scale(src: Path, dst: Path, datasets: int, template: str | None = None, vary: bool = True) -> Path:
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
    rng = random.Random(0)
    for i in range(datasets):
        name = f"{parent}/ds{i:05d}"
        new_rows.extend(f"{name}\t{r}" for r in (_varied_rows(template_rows, rng) if vary else template_rows))
        if objset_text is not None:
            entry = f"objset-0x{0x100000 + i:x}"
            text = _varied_counters(objset_text, rng) if vary else objset_text
            text = re.sub(r"^(dataset_name\s+\d+\s+).*$", rf"\g<1>{name}", text, count=1, flags=re.MULTILINE)
            (dst / pool_dir.lstrip("/") / entry).write_text(text)
            listing.append(entry)
            manifest["files"].append(f"{pool_dir}/{entry}")
    out.write_text("\n".join(rows + new_rows) + "\n")
    manifest["note"] = (f"scaled by tests/bench/scale_snapshot.py: {datasets} clones of {template} added to {src}"
                        + ("" if vary else ", all with the template's values"))
    (dst / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return dst


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("src", type=Path)
    parser.add_argument("dst", type=Path)
    parser.add_argument("--datasets", type=int, required=True)
    parser.add_argument("--template", help="dataset to clone (default: the first child dataset)")
    parser.add_argument("--same-values", action="store_true", help="clones keep the template's space and counters")
    args = parser.parse_args(argv)
    print(scale(args.src, args.dst, args.datasets, args.template, vary=not args.same_values))
    return 0


if __name__ == "__main__":
    sys.exit(main())
