"""Recorded lab hosts as `Host` facts, and copies of them with one thing changed.

A modified copy is no longer what the lab recorded: a test that uses one says so, and says
what it changed, so that nobody mistakes its verdict for one on a real host.
"""
from __future__ import annotations

import asyncio
import json
import shutil
from functools import cache
from pathlib import Path

from advisor.host.snapshot import collect_from_root
from advisor.hostmodel.facts import Host, Property


@cache
def _recorded(path: Path) -> Host:
    return asyncio.run(collect_from_root(path)).host


def recorded_host(path: Path) -> Host:
    """The facts of a recorded snapshot (a private copy: callers may change it)."""
    return _recorded(path).model_copy(deep=True)


def with_dataset_properties(host: Host, dataset: str, **values: str) -> Host:
    """`host` with properties of one dataset set locally, as `zfs set` would."""
    ds = host.dataset(dataset)
    assert ds is not None, f"{dataset} is not in the recording"
    ds.properties = {**ds.properties, **{k: Property(value=v, source="local") for k, v in values.items()}}
    return host


def snapshot_with_property(snapshot: Path, to: Path, dataset: str, prop: str, value: str) -> Path:
    """A copy of a recorded snapshot at `to` whose `zfs get` answer gives one property of one
    dataset `value`, set locally (as `zfs create -o` or `zfs set` would): for a test through the
    app, which reads the snapshot's files. Its manifest's note says what was changed."""
    shutil.copytree(snapshot, to)
    manifest = json.loads((to / "manifest.json").read_text())
    command = next(c for c in manifest["commands"] if c["argv"][:2] == ["zfs", "get"])
    out = to / command["stdout_file"]
    lines = out.read_text().splitlines(keepends=True)
    found = [n for n, line in enumerate(lines) if line.split("\t")[:2] == [dataset, prop]]
    assert len(found) == 1, f"{dataset} {prop} is not in the recording's zfs get"
    lines[found[0]] = f"{dataset}\t{prop}\t{value}\tlocal\n"
    out.write_text("".join(lines))
    manifest["note"] += f"; derived by the tests from {snapshot}: {dataset} {prop}={value} (not recorded)"
    (to / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return to
