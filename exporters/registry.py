"""The exporter's collectors, each registered by its own module: `@collector(name, after=...)` on
its `collect(scrape)` function. `registered()` imports every module of this package once and
gives the collectors in order, so adding a metric source is one module that registers itself (as
node_exporter's `registerCollector`), with no list to edit.

`after` names the collector whose families come just before its own (None: the first), which keeps
the families of the exposition in a stable order beside their neighbours (the /metrics goldens are
compared line by line) without a number: a new collector follows the one it belongs beside, and
the one that followed that one before now follows it (two that follow one are refused, so the
order never depends on import order).
"""
from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass

from advisor.exporters.base import Collect, Scrape


@dataclass(frozen=True)
class Registered:
    name: str  # its `collector` label in zfs_advisor_scrape_collector_*
    collect: Collect
    after: str | None  # the collector just before it; None for the first
    # Built from zpool/zfs output alone (and module parameters, read with it, and the advice
    # computed from it once per command run): its text changes only when the commands run again
    # (every commands_interval_seconds), so the exporter reuses it between runs. At 10,000
    # datasets that is most of a scrape's series.
    command_output_only: bool = False
    # What its text depends on, when that is cheap to say: while it is equal, the text is too
    # (the objset kstats of 10,000 datasets, most of them idle, are a third of the exposition).
    source: Callable[[Scrape], Hashable] | None = None


_REGISTERED: dict[str, Registered] = {}


def collector(name: str, *, after: str | None, command_output_only: bool = False,
              source: Callable[[Scrape], Hashable] | None = None) -> Callable[[Collect], Collect]:
    """Register the decorated `collect(scrape)` under `name`, just after the collector `after`."""
    def register(collect: Collect) -> Collect:
        # a module imported again (importlib.reload) registers itself again
        _REGISTERED[name] = Registered(name, collect, after, command_output_only, source)
        return collect
    return register


def in_order(entries: Iterable[Registered]) -> tuple[Registered, ...]:
    """The collectors as their `after` links chain them, from the one that follows none."""
    follower: dict[str | None, Registered] = {}
    for entry in sorted(entries, key=lambda r: r.name):
        if entry.after in follower:
            raise ValueError(f"collectors {follower[entry.after].name!r} and {entry.name!r} both follow "
                             f"{entry.after or 'none'}: one of them follows the other")
        follower[entry.after] = entry
    chain: list[Registered] = []
    following = follower.pop(None, None)
    while following is not None:
        chain.append(following)
        following = follower.pop(following.name, None)
    if follower:
        raise ValueError(f"collectors {sorted(r.name for r in follower.values())} are not in the chain from the "
                         "first: each follows an unknown collector, or they follow one another in a loop")
    return tuple(chain)


def registered() -> tuple[Registered, ...]:
    """Every collector of the package, in order (each module imported once, which registers it)."""
    package = importlib.import_module(__package__ or "advisor.exporters")
    for module in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{package.__name__}.{module.name}")
    return in_order(_REGISTERED.values())
