"""rules/tunables.yaml: every tunable's default, values, probe, model and reference in one file,
validated at load; its defaults are what the lab's hosts read; a new tunable is one entry and its rule."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from advisor.engine.units import parse_size
from advisor.hostmodel.tunables import (
    DATASET_DEFAULTS,
    PREDICTED_PARAMETERS,
    PROBED_MODULE_PARAMETERS,
    TUNABLES,
    TUNABLES_FILE,
    TUNING_PROPERTIES,
    TunablesError,
    load_tunables,
)
from advisor.probe.candidates import CandidateError, make_candidate
from support import RECORDING, REPO, recorded_snapshots, snapshot_id
from support.recorded import recorded_host


def test_the_views_are_the_entries():
    assert TUNING_PROPERTIES[:2] == ("type", "recordsize") and "mountpoint" in TUNING_PROPERTIES
    assert set(DATASET_DEFAULTS) == {n for n, t in TUNABLES.dataset.items() if t.probed}
    assert PREDICTED_PARAMETERS == ("recordsize", "compression")
    assert set(PREDICTED_PARAMETERS) <= set(DATASET_DEFAULTS)
    assert set(TUNABLES.module) == PROBED_MODULE_PARAMETERS


@pytest.mark.parametrize("snap", recorded_snapshots("idle"), ids=snapshot_id)
def test_the_module_defaults_are_what_the_lab_hosts_read(snap):
    """The lab's hosts run OpenZFS as installed: every module parameter at its default."""
    params = recorded_host(snap).module_params
    defaults = {n: t.default for n, t in TUNABLES.module.items() if t.default is not None}
    assert defaults and {n: params[n] for n in defaults} == defaults


# zfsprops(7): compression=on is lz4 where the pool has the lz4_compress feature (from OpenZFS 2.2, the default)
_SAME = {("compression", "on"): "lz4"}


@pytest.mark.parametrize("snap", recorded_snapshots("idle")[-1:], ids=snapshot_id)
def test_the_dataset_defaults_are_what_openzfs_2_3_reports_as_default(snap):
    host = recorded_host(snap)
    assert host.zfs.version_tuple >= (2, 3, 0)
    seen = {}
    for dataset in host.datasets:
        for name, prop in dataset.properties.items():
            if name in DATASET_DEFAULTS and prop.source == "default":
                seen[name] = _SAME.get((name, prop.value), prop.value)
    assert seen.keys() == DATASET_DEFAULTS.keys()
    assert parse_size(seen.pop("recordsize")) == parse_size(DATASET_DEFAULTS["recordsize"])
    assert seen == {k: v for k, v in DATASET_DEFAULTS.items() if k != "recordsize"}


def _with(tmp_path: Path, edit) -> Path:
    data = yaml.safe_load(TUNABLES_FILE.read_text())
    edit(data)
    path = tmp_path / "tunables.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["dataset"]["recordsize"].update(default="100K", values="^(64K|128K)$"),
     r"dataset\.recordsize: .*default '100K' is not one of its values"),
    (lambda d: d["dataset"]["logbias"].update(reference="https://example.com/logbias"),
     r"dataset\.logbias: reference https://example.com/logbias must be https on one of openzfs.github.io"),
    (lambda d: d["module"]["zfs_txg_timeout"].update(default=5), r"module\.zfs_txg_timeout\.default: .*string"),
    (lambda d: d["module"]["zfs_txg_timeout"].pop("values"), r"module\.zfs_txg_timeout: .*needs `values`"),
    (lambda d: d["dataset"]["sync"].update(predicted=True, probed=False), r"dataset\.sync: .*must be probed too"),
    (lambda d: d["dataset"]["atime"].pop("default"), r"dataset\.atime: a probed dataset property needs its default"),
    (lambda d: d["dataset"]["xattr"].update(valus="^(sa|on)$"), r"dataset\.xattr\.valus: Extra inputs"),
    (lambda d: d["module"].update(txg_timeout=d["module"]["zfs_txg_timeout"]), r"module\.txg_timeout: not a module"),
])
def test_a_bad_entry_stops_the_load_naming_the_entry(tmp_path, edit, message):
    with pytest.raises(TunablesError, match=message):
        load_tunables(_with(tmp_path, edit))


def test_the_shipped_file_loads_as_its_own_copy(tmp_path):
    assert load_tunables(_with(tmp_path, lambda d: None)) == TUNABLES


# A tunable the advisor does not know today: the lab's hosts read it (zfs(4): default 1 MiB).
NEW = "zfs_vdev_aggregation_limit"
ENTRY = f"""
  {NEW}:
    default: '1048576'
    values: '^[0-9]{{1,19}}$'
    probed: true
    reference: https://openzfs.github.io/openzfs-docs/man/master/4/zfs.4.html#{NEW}
"""
RULE = f"""rules:
  - id: aggregation-limit
    title: Keep {NEW} at its default unless measured otherwise
    parameter: {NEW}
    scope: module
    current: {{fact: module.{NEW}}}
    recommended: 1048576
    compare: equal
    confidence: 0.3
    explanation:
      change: "{NEW}={{current}}: zfs(4) aggregates adjacent I/O up to 1 MiB by default."
      ok: "{NEW}={{current}}, the zfs(4) default."
    apply: [echo, "{{recommended:raw}}", ">", /sys/module/zfs/parameters/{NEW}]
    apply_shell: true
    effect: runtime
    reversible: "yes: write the old value back"
    references:
      - https://openzfs.github.io/openzfs-docs/man/master/4/zfs.4.html#{NEW}
"""
# Run in the copy: the probe takes the new tunable, the answer has its rule and offers its probe.
SCRIPT = f"""
import asyncio, json, sys
from advisor.engine.answer import probed
from advisor.engine.loader import load_rulebook
from advisor.engine.service import recommend
from advisor.host.snapshot import collect_from_root
from advisor.probe.candidates import CandidateError, make_candidate
host = asyncio.run(collect_from_root(sys.argv[1])).host
rec = next(r for r in recommend(host, load_rulebook(), "postgres").recommendations if r.parameter == "{NEW}")
try:
    make_candidate("{NEW}", "64K")
    refused = False
except CandidateError:
    refused = True
print(json.dumps({{"scope": make_candidate("{NEW}", "262144").scope, "refused": refused, "probed": probed("{NEW}"),
                  "status": rec.status, "current": rec.current}}))
"""


def test_a_new_tunable_is_one_entry_and_its_rule(tmp_path):
    """In a copy of the tree, rules/tunables.yaml gains one entry and rules/ one rule file; nothing
    else changes, and the probe sets the tunable and the answer recommends it."""
    with pytest.raises(CandidateError, match="is not probed"):
        make_candidate(NEW, "262144")  # unknown to the shipped tree
    for tree in ("advisor", "exporters", "rules"):
        shutil.copytree(REPO / tree, tmp_path / tree, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    with (tmp_path / "rules" / "tunables.yaml").open("a") as tunables:
        tunables.write(ENTRY)
    (tmp_path / "rules" / "aggregation.yaml").write_text(RULE)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("ZFS_ADVISOR_")}, "PYTHONPATH": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(SCRIPT), str(RECORDING)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"scope": "module", "refused": True, "probed": True, "status": "passed",
                                      "current": "1M"}
