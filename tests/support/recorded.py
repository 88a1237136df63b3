"""Recorded lab hosts as `Host` facts, and copies of them with one thing changed.

A modified copy is no longer what the lab recorded: a test that uses one says so, and says
what it changed, so that nobody mistakes its verdict for one on a real host.
"""
from __future__ import annotations

import asyncio
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
