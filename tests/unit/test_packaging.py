"""What `pip install .` puts on a user's path: one `advisor` package, nothing else.

exporters/ and rules/ are top-level folders of the source tree but install as
advisor.exporters and advisor.rules (pyproject.toml); a top-level package
called `exporters` or `rules` would collide with anything else of that name.
The package list is read the way the build reads it (setuptools applying
pyproject.toml), which takes a fraction of a second, not a wheel build.
"""
from __future__ import annotations

import ast
import warnings
from pathlib import Path

from setuptools.config.pyprojecttoml import apply_configuration
from setuptools.dist import Distribution

REPO = Path(__file__).resolve().parents[2]


def _distribution() -> Distribution:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # older setuptools call [tool.setuptools] "beta"
        return apply_configuration(Distribution(), REPO / "pyproject.toml")


def test_only_the_advisor_namespace_is_installed():
    packages = set(_distribution().packages)
    assert {p.split(".")[0] for p in packages} == {"advisor"}, sorted(packages)
    assert {"advisor.exporters", "advisor.rules", "advisor.rules.workloads"} <= packages


def test_rules_data_ships_with_the_package():
    data = _distribution().package_data["advisor.rules"]
    assert "*.yaml" in data and "workloads/*.yaml" in data


def test_scikit_learn_is_not_a_base_dependency():
    dist = _distribution()
    assert not [r for r in dist.install_requires if r.lower().startswith("scikit-learn")]
    assert any(r.startswith("scikit-learn") for r in dist.extras_require["model"])
    assert any(r.startswith("numpy") for r in dist.install_requires)  # the shipped fit predicts with it


def test_the_model_fit_ships_beside_the_prior():
    assert {"model/data/*.csv", "model/data/*.gp.json"} <= set(_distribution().package_data["advisor"])
    from advisor.model.dataset import prior_path
    from advisor.model.fitted import fitted_path

    assert fitted_path(prior_path()).is_file()


def test_no_module_imports_the_top_level_names():
    """From a checkout `import exporters` would still work (the folder is there),
    but installed it does not: every import goes through `advisor.`."""
    offenders = []
    for path in sorted([*REPO.glob("advisor/**/*.py"), *REPO.glob("tests/**/*.py"), REPO / "tests/bench/run"]):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            offenders += [f"{path.relative_to(REPO)}: {n}" for n in names if n.split(".")[0] in ("exporters", "rules")]
    assert not offenders


def test_the_pinned_versions_satisfy_the_declared_ranges():
    """deploy/constraints.txt (what install.sh and the tests install) pins every dependency of
    pyproject.toml, the model extra's too, inside the range declared there."""
    import tomllib

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    pins = {}
    for line in (REPO / "deploy" / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[canonicalize_name(name)] = version.strip()
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    declared = [Requirement(d) for d in project["dependencies"] + project["optional-dependencies"]["model"]]
    pinned = {r.name: pins.get(canonicalize_name(r.name)) for r in declared}
    outside = {r.name: pinned[r.name] for r in declared
               if pinned[r.name] is None or not r.specifier.contains(pinned[r.name])}
    assert outside == {}, f"not pinned, or pinned outside the declared range: {outside}"


def test_the_debian_package_ships_the_pinned_versions_with_hashes():
    """deploy/debian/requirements.txt (what the .deb carries and its postinst installs with
    --require-hashes) holds every runtime dependency at deploy/constraints.txt's version, each with
    a sha256, and not the model extra: rewrite it with `deploy/debian/build --lock` after a pin changes."""
    import re
    import tomllib

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    def pins(path):
        found = {}
        for line in (REPO / path).read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                name, _, rest = line.partition("==")
                found[canonicalize_name(name)] = rest.split()[0]
        return found

    lock, constraints = pins("deploy/debian/requirements.txt"), pins("deploy/constraints.txt")
    assert {name: version for name, version in lock.items() if constraints.get(name) != version} == {}
    runtime = {canonicalize_name(Requirement(d).name)
               for d in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]}
    assert runtime <= set(lock) and "scikit-learn" not in lock and "scipy" not in lock
    lines = [l for l in (REPO / "deploy/debian/requirements.txt").read_text().splitlines() if not l.startswith("#")]
    assert all(re.fullmatch(r"\S+==\S+( --hash=sha256:[0-9a-f]{64})+", l) for l in lines), lines
    # a compiled dependency has a wheel, and so a hash, for each Python the package supports
    pythons = re.search(r"^PYTHONS=\((.*)\)$", (REPO / "deploy/debian/build").read_text(), re.M).group(1).split()
    assert pythons == ["3.11", "3.12", "3.13"]
    hashes = {canonicalize_name(l.partition("==")[0]): l.count("--hash=") for l in lines}
    assert {hashes[name] for name in ("numpy", "pydantic-core", "aiohttp", "pyyaml")} == {len(pythons)}, hashes
