"""The modules import one another in one direction: every part on a floor of docs/architecture.md,
every import going down (or sideways where the contract says why), no cycle.

Read from the source (tests/support/imports.py), imports inside functions
included, so a cycle cannot hide in a function body.
"""
from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

import pytest

from support import REPO
from support.imports import (
    callers_of,
    closure,
    cycles,
    floor_violations,
    import_graph,
    importers_of,
    outside_imports,
    package_pairs,
    part,
    python_files,
    reaches,
    unplaced,
)

GRAPH = import_graph()

# The floors of docs/architecture.md, top down; a part is a subpackage of advisor/ (exporters/ and
# rules/ are advisor.exporters and advisor.rules) or a module at its top. Every part is on a floor,
# and an import between two parts goes down to a lower floor: to a part of its own floor only
# where SAME_FLOOR names the pair.
FLOORS = [
    ["__main__"],  # python -m advisor
    ["cli"],
    ["service"],  # the wiring (app.py) and SIGHUP's reload
    ["api"],  # the handlers, the app's typed keys they read
    ["fleet"],  # sibling pools' probes from Prometheus, for the model (docs/fleet.md)
    ["page", "model", "probe", "exporters", "changes", "recognise"],  # what the service offers
    ["answering"],  # the one way into the answer: the store's evidence, the model's predictions, the engine
    ["engine", "host", "layout", "server"],  # decisions, the host's sources, the planner, HTTP plumbing
    ["config"],  # settings and the web config file
    ["hostmodel", "store"],  # the host model, the database
    ["evidence"],  # measurements as plain data and what a probe run was bound by: the store keeps them
    ["process", "rules", "__init__"],  # logs, memory and systemd; the rule files; the version
]
# Same-floor imports, (importing part, imported part): each one the contract allows, and why.
SAME_FLOOR = {
    ("layout", "engine"): "the planner reads sizes with the engine's units (layout/planned_disks.py: engine/units.py)",
    ("model", "probe"): "the evaluation of the whole answer stores probe runs as a probe would "
                        "(model/answers.py: probe/description.py, fio_job.py, pooldesc.py)",
    ("page", "recognise"): "the page shows each dataset's recognised workload (page/gather.py: recognise/classify.py)",
    ("recognise", "probe"): "a workload's signature is the I/O of its probe job "
                            "(recognise/signature.py: probe/fio_job.py)",
}

# What the floors allow but a part must still not reach, directly or through the modules it
# imports: a project module (or package) by its dotted name, anything else by its top-level name.
# The prober's stack (it creates datasets, runs fio, writes module parameters: root's work).
RUNNER_STACK = ("advisor.probe.probe_service", "advisor.probe.profiler", "advisor.probe.plan_runner", "advisor.probe.foreground",
                "advisor.probe.scratch", "advisor.probe.safety", "advisor.probe.temporary_modparams")
# advisor/api/ less what its handlers read from the app: its typed keys and what a reload replaces.
API_HANDLERS = tuple(m for m in GRAPH if m.startswith("advisor.api.")
                     and m not in ("advisor.api.appkeys", "advisor.api.runtime"))
LAYERS = {
    "advisor.engine": (("advisor.store", "sqlite3"),
                       "the engine decides over plain data: the app reads the store and hands the evidence in"),
    "advisor.evidence": (("sqlite3",), "measurements as plain data: the store's readers build them"),
    "advisor.exporters": (("advisor.host",), "exporters see the host through the facts alone"),
    "advisor.model.provider": (("advisor.store", "sqlite3", "advisor.probe.candidates", "advisor.probe.fio_job",
                                "advisor.probe.pooldesc"),
                               "the model is handed a store reader and a description of what a probe would run"),
    "advisor.api.appkeys": (API_HANDLERS, "the app's typed keys name resources, not handlers"),
    "advisor.api": (RUNNER_STACK, "the unprivileged API queues probes in the store; the prober runs them"),
    "advisor.service": (RUNNER_STACK, "the unprivileged API queues probes in the store; the prober runs them"),
}
ENGINE = sorted(m for m in GRAPH if m == "advisor.engine" or m.startswith("advisor.engine."))


def test_the_graph_covers_the_whole_package():
    assert {"advisor.service.app", "advisor.cli", "advisor.engine.service", "advisor.exporters.collector",
            "advisor.rules"} <= GRAPH.keys()
    assert "advisor.engine.catalogue" in GRAPH["advisor.engine.derived_pool"]


def test_no_import_cycles():
    found = cycles(GRAPH)
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_a_layer_reaches_nothing_it_must_not(layer):
    forbidden, why = LAYERS[layer]
    reached = closure(GRAPH, layer)
    found = {m for m in reached for f in forbidden if m == f or m.startswith(f + ".")}
    found |= outside_imports(reached) & set(forbidden)
    assert not found, f"{layer} reaches {sorted(found)}: {why}"


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


def test_the_package_root_holds_packages_and_its_two_entry_points():
    """A module of advisor/ belongs to the package its floor and meaning say; the root keeps the
    version (__init__.py) and `python -m advisor` (__main__.py)."""
    assert sorted(p.name for p in (REPO / "advisor").glob("*.py")) == ["__init__.py", "__main__.py"]


def test_every_part_is_on_a_floor():
    assert unplaced(GRAPH, FLOORS) == [], "a new part of advisor/ needs its floor in FLOORS and docs/architecture.md"


def test_each_floor_imports_only_the_floors_below():
    found = floor_violations(GRAPH, FLOORS, SAME_FLOOR)
    assert not found, "imports up or sideways:\n" + "\n".join(f"{a} -> {b}" for a, b in found)


def test_each_same_floor_import_the_contract_allows_is_made():
    """An allowance no import uses any longer is taken out, so the list says what the code does."""
    made = {(part(a), part(b)) for a, targets in GRAPH.items() for b in targets}
    assert set(SAME_FLOOR) <= made, set(SAME_FLOOR) - made


def _drawn_floors() -> list[list[str]]:
    """docs/architecture.md's first picture: a row per part (` label  path  what it holds`), the
    floors between lines of ─."""
    picture = (REPO / "docs" / "architecture.md").read_text().split("```\n")[1]
    floors: list[list[str]] = [[]]
    for line in picture.splitlines():
        if set(line.strip()) == {"─"}:
            floors.append([])
        elif row := re.match(r" \S+ +(advisor/\S+|exporters/|rules/) ", line):
            floors[-1].append(row.group(1).removeprefix("advisor/").strip("/").removesuffix(".py"))
    return floors


def test_the_architecture_drawing_is_the_contract():
    """docs/architecture.md draws FLOORS (a part per row, top down) and lists SAME_FLOOR's pairs."""
    assert [sorted(parts) for parts in _drawn_floors()] == [sorted(parts) for parts in FLOORS]
    listed = re.findall(r"^- `(\w+) -> (\w+)`", (REPO / "docs" / "architecture.md").read_text(), re.M)
    assert sorted(listed) == sorted(SAME_FLOOR)


# Imports the floors forbid, each as it would be added to a module of the tree: an engine or the
# planner reading the host's sources, a source reading what a reload replaces, the logs the
# facts command's text, the host model the database, the database the planner.
FORBIDDEN = [("advisor/engine/evaluator.py", "advisor.host.collect"),
             ("advisor/layout/space.py", "advisor.host.collect"),
             ("advisor/host/kstat.py", "advisor.api.runtime"),
             ("advisor/process/logs.py", "advisor.cli.facts_text"),
             ("advisor/hostmodel/facts.py", "advisor.store.db"),
             ("advisor/store/db.py", "advisor.layout")]


def _copy_of_the_tree(to: Path) -> Path:
    """advisor/ with exporters/ and rules/ beside it (advisor/exporters and advisor/rules link to
    them), Python files only."""
    def not_python(folder: str, names: list[str]) -> list[str]:
        return [n for n in names if not n.endswith(".py") and not Path(folder, n).is_dir()]

    for tree in ("advisor", "exporters", "rules"):
        shutil.copytree(REPO / tree, to / tree, symlinks=True, ignore=not_python)
    return to


@pytest.mark.parametrize("path, target", FORBIDDEN)
def test_the_floor_check_refuses_an_import_up_or_sideways(tmp_path, path, target):
    """The check above, on a copy of the tree with one import added, names that import."""
    root = _copy_of_the_tree(tmp_path)
    module = root / path
    module.write_text(module.read_text() + f"\nimport {target}  # added by the test\n")
    importer = path.removesuffix(".py").replace("/", ".")
    graph = import_graph(root)
    assert graph.keys() == GRAPH.keys() and target in graph[importer]
    found = floor_violations(graph, FLOORS, SAME_FLOOR)
    # the module and the packages above it (importing a.b.c runs a/b/__init__ first), nothing else
    assert (importer, target) in found and {a for a, _ in found} == {importer}, found


def test_a_part_on_no_floor_is_named_and_so_are_its_imports(tmp_path):
    package = tmp_path / "advisor"
    (package / "store").mkdir(parents=True)
    for name, text in {"__init__.py": "", "store/__init__.py": "", "store/db.py": "",
                       "drawer.py": "import advisor.store.db\n"}.items():
        (package / name).write_text(text)
    graph = import_graph(tmp_path)
    assert unplaced(graph, FLOORS) == ["drawer"]
    assert floor_violations(graph, FLOORS, SAME_FLOOR) == [("advisor.drawer", "advisor.store"),
                                                           ("advisor.drawer", "advisor.store.db")]


def test_no_two_parts_import_each_other():
    """A part is a subpackage (advisor.engine) or a module at the top (advisor.__main__)."""
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
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[-1] in test_modules:
                offenders.append(f"{path.relative_to(REPO)}: from {node.module}")
    assert not offenders


def test_the_api_reads_the_host_through_the_facts_provider_alone():
    """The handlers ask the facts provider (advisor/host/facts_provider.py) for a collection, a scrape's
    fallback and the host a command output makes; how a collection is assembled
    (advisor/host/collect.py) and each source's parser stay behind it."""
    direct = {(m, t) for m in GRAPH if m == "advisor.api" or m.startswith("advisor.api.")
              for t in GRAPH[m] if t.startswith("advisor.host.") and t != "advisor.host.facts_provider"}
    assert not direct, sorted(direct)


def test_the_model_is_built_in_one_place():
    """The service and every command that consults the model build it with
    advisor/model/regression_model.py, the evaluation's held-out models too (`build_model(..., fitted=...)`)."""
    assert callers_of("ModelProvider") == ["advisor.model.regression_model"]


def test_a_second_place_that_builds_the_model_is_named(tmp_path):
    root = _copy_of_the_tree(tmp_path)
    module = root / "advisor/cli/plan.py"
    module.write_text(module.read_text() + "\nMODEL = ModelProvider(None, None, None)  # added by the test\n")
    assert callers_of("ModelProvider", root) == ["advisor.cli.plan", "advisor.model.regression_model"]


# The engine's entry point, and who may call it, each with the reason.
ENTRY = ("advisor.engine.service", "recommend")
MAY_CALL_THE_ENGINE = {
    "advisor.answering.answerer": "the one way into the answer: it hands the engine the store's evidence and "
                                  "reports and the model's predictions, so that no caller hands it less",
}


def test_the_answer_is_assembled_in_one_place():
    assert importers_of(*ENTRY) == sorted(MAY_CALL_THE_ENGINE)


@pytest.mark.parametrize("path, added", [
    ("advisor/cli/verify.py", "from advisor.engine.service import recommend"),
    ("advisor/page/build.py", "from advisor.engine import service\nANSWER = service.recommend"),
    ("advisor/engine/text.py", "from .service import recommend"),
])
def test_a_second_way_into_the_answer_is_refused(tmp_path, path, added):
    """The check above, on a copy of the tree with the engine called from one more module, names it."""
    root = _copy_of_the_tree(tmp_path)
    module = root / path
    module.write_text(module.read_text() + f"\n{added}  # added by the test\n")
    importer = path.removesuffix(".py").replace("/", ".")
    assert importers_of(*ENTRY, root) == sorted([*MAY_CALL_THE_ENGINE, importer])
