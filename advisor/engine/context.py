"""The facts a rule may name: a flat catalogue of dotted names computed from `Host`.

Rules never see Python objects. They name facts from this catalogue
(`pool.ashift_min`, `dataset.recordsize`, `workload.sync`, `module.zfs_txg_timeout`)
and the loader refuses a rule that names anything else. Each fact has a type
(how rule constants are coerced and how values are printed) and a one-line
description (used in evidence and in docs/rules.md). A fact the host did not
report is None; a rule that needs it is reported as skipped, never guessed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

from advisor.facts import Dataset, Disk, Host, Pool, Vdev
from advisor.engine.units import format_size, parse_size

FactType = Literal["bytes", "int", "float", "ratio", "seconds", "bool", "str", "list"]
MODULE_PREFIX = "module."
_MODULE_PARAM = re.compile(r"^[a-z][a-z0-9_]{1,63}$")
# Module parameters measured in bytes (zfs(4)); the rest are counts, seconds or flags.
_BYTE_PARAMS = frozenset(
    {"zfs_dirty_data_max", "zfs_dirty_data_max_max", "zfs_arc_max", "zfs_arc_min", "zfs_arc_meta_limit",
     "zfs_vdev_aggregation_limit", "zfs_vdev_aggregation_limit_non_rotating", "zfs_vdev_mirror_rotating_seek_offset",
     "zfs_max_recordsize", "zil_slog_bulk", "zfs_immediate_write_sz"}
)


@dataclass(frozen=True)
class FactDef:
    name: str
    type: FactType
    description: str
    compute: Callable[["Context"], Any]
    needs: tuple[str, ...] = ()  # facts a derived fact is computed from (to explain why it is unknown)


CATALOGUE: dict[str, FactDef] = {}


def fact(name: str, type_: FactType, description: str, needs: tuple[str, ...] = ()):
    def register(fn: Callable[["Context"], Any]) -> Callable[["Context"], Any]:
        CATALOGUE[name] = FactDef(name, type_, description, fn, needs)
        return fn

    return register


def fact_def(name: str) -> FactDef | None:
    """The definition of a fact name; `module.<param>` names any zfs module parameter."""
    if name in CATALOGUE:
        return CATALOGUE[name]
    if name.startswith(MODULE_PREFIX) and _MODULE_PARAM.match(name[len(MODULE_PREFIX) :]):
        param = name[len(MODULE_PREFIX) :]
        type_: FactType = "bytes" if param in _BYTE_PARAMS or param.endswith("_bytes") else "int"
        return FactDef(
            name, type_, f"zfs module parameter {param} (/sys/module/zfs/parameters/{param})", _module_param(param)
        )
    return None


def _module_param(param: str) -> Callable[["Context"], Any]:
    return lambda ctx: ctx.host.module_param_int(param)


def coerce(type_: FactType, value: Any) -> Any:
    """A rule constant converted to a fact's type ('32K' for bytes -> 32768); ValueError if it cannot be."""
    if value is None:
        return None
    if type_ == "bytes":
        return parse_size(value)
    if type_ == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"expected an integer, got {value!r}")
        return value
    if type_ in ("float", "ratio", "seconds"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"expected a number, got {value!r}")
        return float(value)
    if type_ == "bool":
        if not isinstance(value, bool):
            raise ValueError(f"expected true or false, got {value!r}")
        return value
    if type_ == "str":
        if not isinstance(value, str):
            raise ValueError(f"expected a string, got {value!r}")
        return value
    if type_ == "list":
        if not isinstance(value, list):
            raise ValueError(f"expected a list, got {value!r}")
        return value
    raise ValueError(f"unknown fact type {type_}")  # pragma: no cover


def render(type_: FactType, value: Any) -> str:
    """A fact value as a person reads it (and as ZFS spells sizes)."""
    if value is None:
        return "unknown"
    if type_ == "bytes":
        return format_size(value)
    if type_ == "ratio":
        return f"{value * 100:.0f}%"
    if type_ == "seconds":
        return f"{value * 1000:.1f} ms" if value < 1 else f"{value:.1f} s"
    if type_ == "float":
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
    if type_ == "bool":
        return "yes" if value else "no"
    if type_ == "list":
        return " ".join(map(str, value))
    return str(value)


@dataclass
class Context:
    """What one evaluation looks at: the host, one pool, one dataset, one workload."""

    host: Host
    workload: Any = None  # advisor.engine.schema.Workload (loose: schema imports this module)
    params: dict[str, str] = field(default_factory=dict)
    pool: Pool | None = None
    dataset: Dataset | None = None
    new_dataset: str | None = None  # the name proposed when no dataset was given
    _cache: dict[str, Any] = field(default_factory=dict)

    def get(self, name: str) -> Any:
        if name not in self._cache:
            definition = fact_def(name)
            if definition is None:
                raise KeyError(f"unknown fact {name!r}")
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


# The fact definitions register themselves in CATALOGUE when imported.
from advisor.engine import facts_dataset, facts_host, facts_measured, facts_pool  # noqa: E402,F401
