"""The Context one rule is evaluated in: the host, one pool, one dataset, one workload.

Facts are computed on demand from the catalogue (advisor.engine.catalogue) and
cached for the evaluation; helpers here are what the derived_* modules share.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from advisor.engine.catalogue import fact_def, render
from advisor.engine.schema import Workload
from advisor.hostmodel.facts import Dataset, Disk, Host, Pool, Vdev


@dataclass
class Context:
    """What one evaluation looks at: the host, one pool, one dataset, one workload."""

    host: Host
    workload: Workload | None = None
    params: dict[str, str] = field(default_factory=dict)
    pool: Pool | None = None
    dataset: Dataset | None = None
    new_dataset: str | None = None  # the name proposed when no dataset was given
    _cache: dict[str, Any] = field(default_factory=dict)

    def get(self, name: str) -> Any:
        if name not in self._cache:
            definition = fact_def(name)
            if definition is None:
                raise KeyError(f"unknown fact {name!r} (the catalogue is complete once advisor.engine.derived_catalogue is imported)")
            try:
                self._cache[name] = definition.compute(self)
            except (ValueError, ZeroDivisionError, TypeError):
                self._cache[name] = None
        return self._cache[name]

    def unknown_inputs(self, name: str) -> list[str]:
        """`name` and, for a derived fact, the unknown facts it is computed from."""
        definition = fact_def(name)
        names = [name]
        for need in definition.needs if definition else ():
            if self.get(need) is None:
                names += self.unknown_inputs(need)
        return names

    def rendered(self, name: str) -> str:
        definition = fact_def(name)
        return render(definition.type if definition else "str", self.get(name))

    # helpers for the fact functions
    def data_leaves(self) -> list[Vdev]:
        if not self.pool:
            return []
        return [leaf for top in self.pool.top_level_vdevs("data") for leaf in top.leaves()]

    def data_disks(self) -> list[Disk]:
        disks = [self.host.disk(leaf.disk) for leaf in self.data_leaves() if leaf.disk]
        unique = {d.name: d for d in disks if d is not None}
        return list(unique.values())

    def prop(self, name: str) -> str | None:
        return self.dataset.value(name) if self.dataset else None

