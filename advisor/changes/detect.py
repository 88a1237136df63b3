"""Which tracked settings differ between two collections: a pure diff of two `Host`s.

Tracked are the settings a rule names (rules/*.yaml): the dataset properties `zfs get` reads and
the module parameters. A property set on a parent and inherited by its children is one change, on
the dataset it was set on; the probe's own scratch datasets are not the user's and are left out.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from advisor.engine.loader import RuleBook
from advisor.hostmodel.facts import Host, Property
from advisor.hostmodel.names import SCRATCH_DATASET
from advisor.hostmodel.tunables import TUNING_PROPERTIES

MAX_PER_COLLECTION = 100  # a `zfs set` on a pool's root with thousands of local children is logged, not stored


@dataclass(frozen=True)
class Tracked:
    dataset_properties: frozenset[str]
    module_params: frozenset[str]


def tracked(book: RuleBook) -> Tracked:
    settings = book.rules  # settings and warnings alike: zfs_arc_max is named by warnings
    return Tracked(
        frozenset(r.parameter for r in settings if r.scope == "dataset" and r.parameter in TUNING_PROPERTIES),
        frozenset(r.parameter for r in settings if r.scope == "module"))


@dataclass(frozen=True)
class Change:
    scope: Literal["dataset", "module"]
    parameter: str
    old: str
    new: str
    pool: str | None = None
    dataset: str | None = None
    source: str | None = None  # the new value's source as zfs get says it (local, inherited from X, ...)


def _scratch(name: str) -> bool:
    parts = name.split("/")
    return len(parts) > 1 and parts[1] == SCRATCH_DATASET


@dataclass(frozen=True)
class Values:
    """The tracked settings of one collection (what the next one is compared with): small, so the
    service need not keep a whole `Host` from one collection to the next. None: the source failed."""

    module_params: dict[str, str] | None
    # each dataset's properties as zfs get gave them (the parse's own dict: a dataset whose rows did
    # not change keeps the same one, advisor/host/zfs_props.py), of which `properties` are compared
    datasets: dict[str, dict[str, Property]] | None
    properties: frozenset[str] = frozenset()


def values(host: Host, what: Tracked) -> Values:
    params = ({n: v for n in what.module_params if (v := host.module_params.get(n)) is not None}
              if _ok(host, "module_params") else None)
    datasets = None
    if _ok(host, "zfs_get"):
        datasets = {d.name: d.properties for d in host.datasets if not _scratch(d.name)}
    return Values(params, datasets, what.dataset_properties)


def detect(before: Values, after: Values) -> list[Change]:
    """The tracked settings whose value differs from `before` to `after`; none for a source that
    failed in either (its values are the last good ones, or missing)."""
    changes: list[Change] = []
    if before.module_params is not None and after.module_params is not None:
        for name in sorted(after.module_params):
            old, new = before.module_params.get(name), after.module_params[name]
            if old is not None and old != new:
                changes.append(Change("module", name, old, new))
    if before.datasets is None or after.datasets is None:
        return changes
    found: list[Change] = []
    tracked_props = sorted(after.properties)
    for name, props in after.datasets.items():
        previous = before.datasets.get(name)
        if previous is None or previous is props:
            continue
        for prop in tracked_props:
            was, now = previous.get(prop), props.get(prop)
            if was is not None and now is not None and was is not now and was.value != now.value:
                found.append(Change("dataset", prop, was.value, now.value, name.split("/", 1)[0], name, now.source))
    changed = {(c.dataset, c.parameter) for c in found}
    for c in found:
        parent = (c.source or "").removeprefix("inherited from ")
        if parent != c.source and (parent, c.parameter) in changed:
            continue  # inherited from a dataset whose own change is recorded
        changes.append(c)
    return changes


def _ok(host: Host, source: str) -> bool:
    status = host.sources.get(source)
    return status is None or status.ok
