"""The catalogue of facts a rule may name: a flat registry of dotted names computed from `Host`.

Rules never see Python objects. They name facts from this catalogue
(`pool.ashift_min`, `dataset.recordsize`, `workload.sync`, `module.zfs_txg_timeout`)
and the loader refuses a rule that names anything else. Each fact has a type
(how rule constants are coerced and how values are printed) and a one-line
description (used in evidence and in docs/rules.md). A fact the host did not
report is None; a rule that needs it is reported as skipped, never guessed.

The derived_* modules add their facts here with `@fact(...)`;
advisor.engine.derived_catalogue imports all of them once, so that whoever
imports it sees the whole catalogue.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

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
    compute: Callable[[Any], Any]  # called with the advisor.engine.context.Context being evaluated
    needs: tuple[str, ...] = ()  # facts a derived fact is computed from (to explain why it is unknown)


CATALOGUE: dict[str, FactDef] = {}


def fact(name: str, type_: FactType, description: str, needs: tuple[str, ...] = ()):
    def register(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
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


def _module_param(param: str) -> Callable[[Any], Any]:
    return lambda ctx: ctx.host.module_param_int(param)


def coerce(type_: FactType, value: Any) -> Any:
    """A rule constant converted to a fact's type ('32K' for bytes -> 32768); ValueError if it cannot be."""
    if value is None:
        return None
    convert = _COERCIONS.get(type_)
    if convert is None:
        raise ValueError(f"unknown fact type {type_}")  # pragma: no cover
    return convert(value)


def _integer(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):  # a bool is an int to Python, not to a rule
        raise ValueError(f"expected an integer, got {value!r}")
    return value


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"expected a number, got {value!r}")
    return float(value)


def _exactly(kind: type, what: str) -> Callable[[Any], Any]:
    """The value itself when it is a `kind`, else a ValueError that it is not `what`."""
    def check(value: Any) -> Any:
        if not isinstance(value, kind):
            raise ValueError(f"expected {what}, got {value!r}")
        return value
    return check


_COERCIONS: dict[str, Callable[[Any], Any]] = {
    "bytes": parse_size, "int": _integer, "float": _number, "ratio": _number, "seconds": _number,
    "bool": _exactly(bool, "true or false"), "str": _exactly(str, "a string"), "list": _exactly(list, "a list"),
}


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
