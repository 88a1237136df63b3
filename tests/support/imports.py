"""The project's import graph, read from the source (no module is imported).

Every `import` and `from ... import` counts, also those inside functions: an
import moved into a function still ties the two modules together, it only
hides the knot from the interpreter. `from a import b` counts as an import of
`a.b` when that is a module of the project, else of `a`.
"""
from __future__ import annotations

import ast
import os
from collections.abc import Collection
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = "advisor"  # exporters/ and rules/ are advisor.exporters and advisor.rules (symlinks)


def python_files(root: Path = REPO) -> list[Path]:
    """The package's Python files, through the advisor/exporters and advisor/rules symlinks."""
    return sorted(
        Path(d) / f for d, _, files in os.walk(root / PACKAGE, followlinks=True) for f in files if f.endswith(".py")
    )


def project_modules(root: Path = REPO) -> dict[str, Path]:
    """Dotted module name -> file, for every Python file of the installed package."""
    modules: dict[str, Path] = {}
    for path in python_files(root):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _imported(node: ast.AST, module: str, is_package: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            anchor = module.split(".") if is_package else module.split(".")[:-1]
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join(anchor + ([base] if base else []))
        return [base] + [f"{base}.{a.name}" for a in node.names]
    return []


def _with_parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def import_graph(root: Path = REPO) -> dict[str, set[str]]:
    """Module -> the project modules it imports (anywhere in its body)."""
    modules = project_modules(root)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets: set[str] = set()
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            for target in _imported(node, name, is_package):
                targets |= {t for t in _with_parents(target) if t in modules}
        # importing a.b.c runs a/__init__ and a/b/__init__ first; the importer's own
        # packages have run already
        graph[name] = targets - set(_with_parents(name))
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def reaches(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every module `start` imports, directly or through others."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for w in graph.get(todo.pop(), ()):
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


def closure(graph: dict[str, set[str]], package: str) -> set[str]:
    """The modules of `package` (a module or a package) and every module they import, directly or not."""
    own = {m for m in graph if m == package or m.startswith(package + ".")}
    return own.union(*(reaches(graph, m) for m in own))


def outside_imports(modules: set[str], root: Path = REPO) -> set[str]:
    """The top-level names of what `modules` import from outside the project (sqlite3, aiohttp, ...)."""
    paths = project_modules(root)
    found: set[str] = set()
    for module in modules:
        for node in ast.walk(ast.parse(paths[module].read_text())):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                found.add(node.module.split(".")[0])
    return found - {PACKAGE}


def part(module: str) -> str:
    """The part of the package a module belongs to: the subpackage or top module under advisor/
    (advisor.engine.service -> engine, advisor.exporters.arc -> exporters, advisor.__main__ ->
    __main__); the package's own advisor/__init__.py is the part "__init__"."""
    names = module.split(".")
    return names[1] if len(names) > 1 else "__init__"


def unplaced(graph: dict[str, set[str]], floors: list[list[str]]) -> list[str]:
    """The parts of the graph's modules that no floor names."""
    placed = {p for parts in floors for p in parts}
    return sorted({part(m) for m in graph} - placed)


def floor_violations(graph: dict[str, set[str]], floors: list[list[str]],
                     same_floor: Collection[tuple[str, str]]) -> list[tuple[str, str]]:
    """The imports (importer, imported) that break the floors (listed top down): an import between
    two parts goes down to a lower floor, or to a part of its own floor only when `same_floor`
    names the pair (importing part, imported part). An import from or to a part on no floor
    breaks them too, so a new part cannot slip past unplaced. Within a part, anything goes."""
    floor_of = {p: i for i, parts in enumerate(floors) for p in parts}
    found = []
    for importer, targets in graph.items():
        for imported in targets:
            a, b = part(importer), part(imported)
            if a == b:
                continue
            if a not in floor_of or b not in floor_of or floor_of[b] < floor_of[a] or (
                    floor_of[b] == floor_of[a] and (a, b) not in same_floor):
                found.append((importer, imported))
    return sorted(found)


def package_pairs(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Pairs of the package's parts (a subpackage, or a module at its top) that import each other."""
    edges = {(part(a), part(b)) for a, targets in graph.items() for b in targets if part(a) != part(b)}
    return sorted((f"{PACKAGE}.{a}", f"{PACKAGE}.{b}") for a, b in edges if (b, a) in edges and a < b)


def importers_of(module: str, name: str, root: Path = REPO) -> list[str]:
    """The modules that take `name` from `module`: `from module import name` (also relative), or
    the module itself imported (`import module`, `from parent import module`) and `.name` read."""
    parent, _, last = module.rpartition(".")
    found = []
    for importer, path in project_modules(root).items():
        tree = ast.parse(path.read_text())
        by_name = whole = False
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                whole |= any(a.name == module for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = _imported(node, importer, path.name == "__init__.py")[0]
                by_name |= base == module and any(a.name == name for a in node.names)
                whole |= base == parent and any(a.name == last for a in node.names)
        reads = whole and any(isinstance(n, ast.Attribute) and n.attr == name for n in ast.walk(tree))
        if (by_name or reads) and importer != module:
            found.append(importer)
    return sorted(found)


def callers_of(name: str, root: Path = REPO) -> list[str]:
    """The modules that call something named `name` (`name(...)` or `x.name(...)`)."""
    def called(node: ast.AST) -> bool:
        return isinstance(node, ast.Call) and name in (getattr(node.func, "id", None), getattr(node.func, "attr", None))

    return sorted(m for m, path in project_modules(root).items()
                  if any(map(called, ast.walk(ast.parse(path.read_text())))))
