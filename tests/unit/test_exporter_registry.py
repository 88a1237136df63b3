"""Each collector module registers itself (advisor/exporters/registry.py): the exporter runs every
module's collector in the order their `after` links give, with no list to edit and no number."""
from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from advisor.exporters import registry
from advisor.exporters.collector import COLLECTORS, COMMAND_OUTPUT_ONLY, SOURCES
from advisor.exporters.datasets import io_source
from support import REPO


def _registering_modules() -> set[str]:
    """The modules of exporters/ that call @collector(...), read from their source."""
    found = set()
    for path in (REPO / "exporters").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and any(
                    isinstance(d, ast.Call) and getattr(d.func, "id", None) == "collector" for d in node.decorator_list):
                found.add(Path(path).stem)
    return found


def test_every_module_that_registers_a_collector_is_run_in_its_order():
    names = {r.collect.__module__.rsplit(".", 1)[1] for r in registry.registered()}
    assert names == _registering_modules() and len(COLLECTORS) == len(registry.registered())
    assert list(COLLECTORS)[:3] == ["arc", "kstats", "pools"] and list(COLLECTORS)[-1] == "workloads"
    chain = registry.registered()
    assert chain[0].after is None and all(r.after == before.name for before, r in zip(chain, chain[1:], strict=False))


def test_what_a_collector_registers_with_is_what_the_exporter_reuses_by():
    assert {"vdevs", "histograms", "datasets", "module", "recommendations"} == COMMAND_OUTPUT_ONLY
    assert {"dataset_io": io_source} == SOURCES


def _entry(name: str, after: str | None) -> registry.Registered:
    return registry.Registered(name, lambda scrape: (), after)


def test_a_new_collector_is_placed_by_the_one_it_follows_with_no_number(monkeypatch):
    """One after `arc` and `kstats` moved to follow it: the new one between the two, the rest as before."""
    monkeypatch.setattr(registry, "_REGISTERED", dict(registry._REGISTERED))
    before = [r.name for r in registry.registered()]
    registry.collector("another", after="arc")(lambda scrape: ())
    registry._REGISTERED["kstats"] = dataclasses.replace(registry._REGISTERED["kstats"], after="another")
    assert [r.name for r in registry.registered()] == [before[0], "another", *before[1:]]


@pytest.mark.parametrize("entries, refused", [
    ([_entry("a", None), _entry("b", "a"), _entry("c", "a")], "'b' and 'c' both follow a"),
    ([_entry("a", None), _entry("b", None)], "'a' and 'b' both follow none"),
    ([_entry("a", None), _entry("b", "missing")], r"\['b'\] are not in the chain"),
    ([_entry("a", None), _entry("b", "c"), _entry("c", "b")], r"\['b', 'c'\] are not in the chain"),
])
def test_an_order_the_links_do_not_make_one_chain_is_refused(entries, refused):
    with pytest.raises(ValueError, match=refused):
        registry.in_order(entries)
