"""The exporter's collectors, each registered by its own module: `@collector(name, order=...)` on
its `collect(scrape)` function. `registered()` imports every module of this package once and
gives the collectors in order, so adding a metric source is one module that registers itself (as
node_exporter's `registerCollector`), with no list to edit.

`order` keeps the families of the exposition in a stable order beside their neighbours (the
/metrics goldens are compared line by line): the collectors are ten apart, so a new one takes a
number between the two it belongs with.
"""
from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from advisor.exporters.base import Collect, Scrape


@dataclass(frozen=True)
class Registered:
    name: str  # its `collector` label in zfs_advisor_scrape_collector_*
    collect: Collect
    order: int
    # Built from zpool/zfs output alone (and module parameters, read with it, and the advice
    # computed from it once per command run): its text changes only when the commands run again
    # (every commands_interval_seconds), so the exporter reuses it between runs. At 10,000
    # datasets that is most of a scrape's series.
    command_output_only: bool = False
    # What its text depends on, when that is cheap to say: while it is equal, the text is too
    # (the objset kstats of 10,000 datasets, most of them idle, are a third of the exposition).
    source: Callable[[Scrape], Hashable] | None = None


_REGISTERED: dict[str, Registered] = {}


def collector(name: str, *, order: int, command_output_only: bool = False,
              source: Callable[[Scrape], Hashable] | None = None) -> Callable[[Collect], Collect]:
    """Register the decorated `collect(scrape)` under `name`, at `order` among the others."""
    def register(collect: Collect) -> Collect:
        entry = Registered(name, collect, order, command_output_only, source)
        taken = next((r.name for r in _REGISTERED.values() if r.order == order and r.name != name), None)
        if taken is not None:
            raise ValueError(f"collector {name!r}: order {order} is taken by {taken!r}")
        _REGISTERED[name] = entry  # a module imported again (importlib.reload) registers itself again
        return collect
    return register


def registered() -> tuple[Registered, ...]:
    """Every collector of the package, in order (each module imported once, which registers it)."""
    package = importlib.import_module(__package__ or "advisor.exporters")
    for module in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{package.__name__}.{module.name}")
    return tuple(sorted(_REGISTERED.values(), key=lambda r: r.order))
