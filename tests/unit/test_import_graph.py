"""The modules import one another in one direction: no cycle, the engine below the CLI and the API.

Read from the source (tests/support/imports.py), imports inside functions
included, so a cycle cannot hide in a function body.
"""
from __future__ import annotations

import ast
from pathlib import Path

from support import REPO
import pytest

from support.imports import closure, cycles, import_graph, outside_imports, package_pairs, python_files, reaches

GRAPH = import_graph()

# What a part of the package must not reach, directly or through the modules it imports: a
# project module (or package) by its dotted name, anything else by its top-level name.
# The prober's stack (it creates datasets, runs fio, writes module parameters: root's work).
RUNNER_STACK = ("advisor.probe.service", "advisor.probe.profiler", "advisor.probe.runner", "advisor.probe.foreground",
                "advisor.probe.scratch", "advisor.probe.safety", "advisor.probe.modparams")
# advisor/api/ less what its handlers read from the app: its typed keys and what a reload replaces.
API_HANDLERS = tuple(m for m in GRAPH if m.startswith("advisor.api.")
                     and m not in ("advisor.api.appkeys", "advisor.api.runtime"))
LAYERS = {
    "advisor.engine": (("advisor.store", "advisor.probe", "sqlite3"),
                       "the engine decides over plain data: the app reads the store and hands the evidence in"),
    "advisor.evidence": (("advisor.store", "advisor.probe", "advisor.engine", "sqlite3"),
                         "measurements as plain data, below the engine and the store"),
    "advisor.hostmodel.facts": (("advisor.host",), "the host's sources produce the facts; the facts know no source"),
    "advisor.exporters": (("advisor.host",), "exporters see the host through the facts alone"),
    "advisor.config": (("advisor.probe",), "the configuration is read by every part; it names no part's code"),
    "advisor.model.provider": (("advisor.store", "sqlite3", "advisor.probe.candidates", "advisor.probe.fio_job",
                                "advisor.probe.pooldesc"),
                               "the model is handed a store reader and a description of what a probe would run"),
    "advisor.server": (("advisor.api", "advisor.service"),
                       "the server's plumbing serves any handler; advisor/api/ holds the handlers"),
    "advisor.api.appkeys": (API_HANDLERS, "the app's typed keys name resources, not handlers"),
    "advisor.api": (RUNNER_STACK, "the unprivileged API queues probes in the store; the prober runs them"),
    "advisor.service": (RUNNER_STACK, "the unprivileged API queues probes in the store; the prober runs them"),
}
ENGINE = sorted(m for m in GRAPH if m == "advisor.engine" or m.startswith("advisor.engine."))


def test_the_graph_covers_the_whole_package():
    assert {"advisor.service.app", "advisor.cli", "advisor.engine.service", "advisor.exporters.collector",
            "advisor.rules"} <= GRAPH.keys()
    assert "advisor.engine.catalogue" in GRAPH["advisor.engine.facts_pool"]


def test_no_import_cycles():
    found = cycles(GRAPH)
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


@pytest.mark.parametrize("part", sorted(LAYERS))
def test_a_layer_reaches_nothing_above_it(part):
    forbidden, why = LAYERS[part]
    reached = closure(GRAPH, part)
    found = {m for m in reached for f in forbidden if m == f or m.startswith(f + ".")}
    found |= outside_imports(reached) & set(forbidden)
    assert not found, f"{part} reaches {sorted(found)}: {why}"


def test_the_layer_check_names_what_a_layer_reaches(tmp_path):
    """The check above can fail: a store import two modules down is found, and sqlite3 with it."""
    package = tmp_path / "advisor"
    (package / "store").mkdir(parents=True)
    for name, text in {"__init__.py": "", "engine.py": "from advisor import helper\n",
                       "helper.py": "import advisor.store.db\n", "store/__init__.py": "",
                       "store/db.py": "import sqlite3\n"}.items():
        (package / name).write_text(text)
    graph = import_graph(tmp_path)
    reached = closure(graph, "advisor.engine")
    assert {"advisor.helper", "advisor.store.db"} <= reached
    assert "sqlite3" in outside_imports(reached, tmp_path)


# docs/architecture.md's floors, top down: a part imports only parts of a floor below its own
# (within the top floor, only parts after it). Parts not drawn there are not checked here.
FLOORS = [["cli", "service", "api"],
          ["page", "model", "probe", "exporters", "changes", "recognise"],
          ["engine", "host", "config", "layout", "server"], ["hostmodel", "evidence", "store"]]


def _part(module: str) -> str | None:
    return module.split(".")[1] if module.count(".") else None


def _rank(part: str) -> tuple[int, int]:
    """(floor from the top, place within the top floor): lower ranks are higher up."""
    floor = next(i for i, parts in enumerate(FLOORS) if part in parts)
    return floor, FLOORS[0].index(part) if floor == 0 else 0


def test_each_floor_imports_only_the_floors_below():
    drawn = {p for parts in FLOORS for p in parts}
    upward = sorted((a, b) for a, targets in GRAPH.items() for b in targets
                    if _part(a) in drawn and _part(b) in drawn and _part(a) != _part(b)
                    and _rank(_part(b)) < _rank(_part(a)))
    assert not upward, upward


def test_no_two_parts_import_each_other():
    """A part is a subpackage (advisor.engine) or a module at the top (advisor.hostmodel.facts)."""
    assert package_pairs(GRAPH) == []


def test_the_pair_finder_names_two_parts_that_import_each_other(tmp_path):
    package = tmp_path / "advisor"
    (package / "api").mkdir(parents=True)
    for name, text in {"__init__.py": "", "api/__init__.py": "", "api/shared.py": "",
                       "api/health.py": "from advisor.keys import X\n",
                       "keys.py": "from advisor.api.shared import Y\n"}.items():
        (package / name).write_text(text)
    assert package_pairs(import_graph(tmp_path)) == [("advisor.api", "advisor.keys")]


def test_the_cycle_finder_names_a_cycle_through_a_function_body(tmp_path):
    """The check above can fail: a cycle made by an import inside a function is found."""
    package = tmp_path / "advisor"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from advisor import b\n")
    (package / "b.py").write_text("def later():\n    from advisor.a import x\n")
    (package / "c.py").write_text("import advisor.a\n")
    assert cycles(import_graph(tmp_path)) == [["advisor.a", "advisor.b"]]


def test_the_engine_imports_neither_the_cli_nor_the_api_nor_aiohttp():
    below = {m for e in ENGINE for m in reaches(GRAPH, e)}
    assert not {m for m in below if m.startswith(("advisor.cli", "advisor.api", "advisor.service"))}
    imported = {
        name
        for path in python_files()
        if "/engine/" in str(path)
        for node in ast.walk(ast.parse(path.read_text()))
        for name in ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
    }
    assert not [n for n in imported if n.split(".")[0] in ("aiohttp", "argparse")], sorted(imported)


def test_tests_import_helpers_from_support_not_from_other_test_modules():
    test_modules = {p.stem for p in Path(REPO, "tests").rglob("*.py") if p.stem.startswith("test_")} | {"conftest"}
    offenders = []
    for path in sorted(Path(REPO, "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                if node.module.split(".")[-1] in test_modules:
                    offenders.append(f"{path.relative_to(REPO)}: from {node.module}")
    assert not offenders


def test_the_api_reads_the_host_through_the_facts_provider_alone():
    """The handlers ask the facts provider (advisor/host/provider.py) for a collection, a scrape's
    fallback and the host a command output makes; how a collection is assembled
    (advisor/host/collect.py) and each source's parser stay behind it."""
    direct = {(m, t) for m in GRAPH if m == "advisor.api" or m.startswith("advisor.api.")
              for t in GRAPH[m] if t.startswith("advisor.host.") and t != "advisor.host.provider"}
    assert not direct, sorted(direct)
