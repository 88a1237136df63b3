"""Each collector module registers itself (advisor/exporters/registry.py): the exporter runs every
module's collector in the order they give, with no list to edit."""
from __future__ import annotations

import ast
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
    orders = [r.order for r in registry.registered()]
    assert orders == sorted(orders) and len(set(orders)) == len(orders)


def test_what_a_collector_registers_with_is_what_the_exporter_reuses_by():
    assert {"vdevs", "histograms", "datasets", "module", "recommendations"} == COMMAND_OUTPUT_ONLY
    assert {"dataset_io": io_source} == SOURCES


def test_an_order_taken_by_another_collector_is_refused(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTERED", dict(registry._REGISTERED))
    with pytest.raises(ValueError, match="order 10 is taken by 'arc'"):
        registry.collector("another", order=10)(lambda scrape: ())
    registry.collector("another", order=15)(lambda scrape: ())
    assert [r.name for r in sorted(registry._REGISTERED.values(), key=lambda r: r.order)][:3] == [
        "arc", "another", "kstats"]
