"""A module's name says what it holds, once: two modules share a name only where they are the same
role in parallel packages (a host source and its exporter, a command and its HTTP resource, ...),
and each such name is listed here with the role that makes the packages parallel."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from support import REPO
from support.imports import python_files

_SOURCE_AND_EXPORTER = "a host source (host/) and the exporter module that publishes it, as node_exporter pairs them"
# name -> (the packages under advisor/ that each hold one, the parallel role)
ALLOWED = {
    "changes.py": ({"api", "exporters", "page", "store"},
                   "the recorded setting changes (docs/changes.md): HTTP resource, metrics, page section, table"),
    "disks.py": ({"exporters", "host"}, _SOURCE_AND_EXPORTER),
    "tx_assign.py": ({"exporters", "host"}, _SOURCE_AND_EXPORTER),
    "txgs.py": ({"exporters", "host"}, _SOURCE_AND_EXPORTER),
    "efficiency.py": ({"api", "evidence", "exporters"},
                      "a pool's stored efficiency report: HTTP resource, the plain data, metrics"),
    "probes.py": ({"api", "exporters", "store"}, "the probe runs: HTTP resource, metrics, table"),
    "pools.py": ({"api", "exporters"}, "the imported pools: HTTP resource (GET /v1/pools), metrics"),
    "workloads.py": ({"api", "exporters"}, "the workload profiles: HTTP resource (GET /v1/workloads), metrics"),
    "recommendations.py": ({"exporters", "page"}, "the answer's items: as metrics, as the page's section"),
    "facts.py": ({"api", "cli", "hostmodel"},
                 "the host model and its two doors: GET /v1/facts and the facts command"),
    "snapshot.py": ({"cli", "host"}, "a host snapshot (host/) and the snapshot command that takes it"),
    "plan.py": ({"api", "cli"}, "the planner's two doors: GET /v1/plan and the plan command"),
    "recommend.py": ({"api", "cli"}, "the answer's two doors: GET /recommend and the recommend command"),
}


def repeated_module_names(root: Path = REPO) -> dict[str, set[str]]:
    """Module name -> the packages (paths under advisor/) that hold a module of that name, for
    every name more than one package holds; `__init__.py` and `__main__.py` aside."""
    packages: dict[str, set[str]] = defaultdict(set)
    for path in python_files(root):
        if path.name not in ("__init__.py", "__main__.py"):
            packages[path.name].add(path.parent.relative_to(root / "advisor").as_posix())
    return {name: found for name, found in packages.items() if len(found) > 1}


def test_a_module_name_repeats_only_where_the_list_says():
    unlisted = {name: sorted(found) for name, found in repeated_module_names().items()
                if name not in ALLOWED or found != ALLOWED[name][0]}
    assert not unlisted, ("a module name two packages share: rename one, or list it in ALLOWED with the parallel "
                          f"role that makes them the same: {unlisted}")


def test_each_listed_repeat_is_still_made():
    """A listed name no package pair shares any longer is taken out, so the list says what the tree does."""
    assert set(ALLOWED) <= set(repeated_module_names()), set(ALLOWED) - set(repeated_module_names())


def test_a_new_repeated_name_is_found(tmp_path):
    """The check above can fail: a second `provider.py` in another package is named with both packages."""
    for name in ("advisor/__init__.py", "advisor/host/__init__.py", "advisor/host/provider.py",
                 "advisor/model/__init__.py", "advisor/model/provider.py", "advisor/model/gp.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    assert repeated_module_names(tmp_path) == {"provider.py": {"host", "model"}}
