"""The answer's last steps: each setting decided on the ladder of evidence (advisor/engine/decide.py),
with the commands that apply or measure it, and one `zfs create` for a proposed dataset."""
from __future__ import annotations

import shlex
from collections.abc import Callable

from advisor.engine.decide import Ladder, Steps, decide, predicted_here, raw_value
from advisor.engine.measured import dataset_command, latest_module_evidence, module_command
from advisor.engine.models import Recommendation, Target
from advisor.engine.predicted import PredictionLookup
from advisor.engine.schema import Workload
from advisor.engine.volblocksize_measure import volblocksize_steps
from advisor.evidence.app_findings import AppFinding
from advisor.evidence.lab_grid import LabMeasurement
from advisor.evidence.parameters import ParameterEvidence
from advisor.hostmodel.tunables import PROBED_PARAMETERS


def decide_all(recs: list[Recommendation], workload: Workload | None, params: dict[str, str], pools: list[str],
               new_datasets: frozenset[str], measured: dict[str, list[ParameterEvidence]],
               predicted: PredictionLookup | None,
               lab: Callable[[str], LabMeasurement | None] | None = None,
               finding: Callable[[str], AppFinding | None] | None = None) -> list[Recommendation]:
    """`measured`: pool -> the probe evidence of this workload there; `predicted`: the model's lookup;
    `lab`: a module parameter -> the lab's grid of this workload on a pool of this answer's medium;
    `finding`: a dataset parameter -> what the application lab found of the prior's evidence there;
    `workload` None: the general answer, whose probe commands name the workload as a placeholder."""
    role = params.get("role")
    role_args = ["--role", role] if workload is not None and role and role != workload.roles[0].name else []
    module_evidence = latest_module_evidence(measured)
    job = probe_job(workload, role)

    def measurer(rec: Recommendation, values: list[str]) -> list[str] | str | Steps | None:
        pool = rec.pool or (pools[0] if pools else None)
        if rec.parameter == "volblocksize" and pool is not None and rec.dataset and workload is not None:
            return volblocksize_steps(pool, rec.dataset, rec.dataset in new_datasets, values, workload, role, params,
                                      _shown(rec, "dataset.compression"), job)
        if not probed(rec.parameter):
            return None  # no command the probe would refuse
        if rec.scope == "module":  # sysfs takes plain numbers, not 391.3M
            values = [raw_value(rec, v) for v in values]
        argv = ["zfs-advisor", "probe", "--pool", pool or "POOL", "--workload", workload.name if workload else "WORKLOAD",
                *role_args, "--param", f"{rec.parameter}={','.join(values)}"]
        # a placeholder (no workload asked for, a host without a pool yet): text, not a runnable argv
        return argv if workload is not None and pool is not None else shlex.join(argv)

    def setter(rec: Recommendation, value: str) -> list[str] | str | None:
        # sysfs takes plain numbers: the exact one behind a shown "64M"
        return module_command(rec, raw_value(rec, value)) if rec.scope == "module" \
            else dataset_command(rec, value, new_datasets)

    out = []
    for rec in recs:
        if rec.scope == "module":
            pool, ev = module_evidence.get(rec.parameter, (None, None))
            ladder = Ladder(probe=ev, probe_where=f"pool {pool} (set only while the probe ran)",
                            lab=lab(rec.parameter) if lab is not None and rec.parameter else None, job=job)
        elif rec.scope == "dataset":
            ev = next((e for e in measured.get(rec.pool or "", []) if e.parameter == rec.parameter), None)
            prediction = None
            if predicted is not None and workload is not None and predicted_here(rec):
                extra = [v for v in (rec.current, rec.recommended) if v]
                prediction = predicted(rec.pool or "", workload.name, rec.parameter, extra)
            ladder = Ladder(probe=ev, prediction=prediction, new_dataset=rec.dataset in new_datasets, job=job,
                            finding=finding(rec.parameter) if finding is not None and rec.parameter else None)
        else:
            ladder = Ladder()
        out.append(decide(rec, ladder, setter, measurer))
    return out


def probe_job(workload: Workload | None, role: str | None) -> str:
    """The load an expected effect is measured on, as the answer names it."""
    if workload is None:
        return "the probe's fio job"
    role = role or workload.roles[0].name
    return f"the {workload.name} probe's fio job ({role} role)" if len(workload.roles) > 1 else \
        f"the {workload.name} probe's fio job"


def one_create(target: Target, recs: list[Recommendation], new_datasets: frozenset[str]
               ) -> tuple[Target, list[Recommendation]]:
    """A proposed dataset is created once with every property the answer changes: each of its
    changes carries that one command (run twice, the second `zfs create` would fail)."""
    if target.dataset is None or target.dataset not in new_datasets:
        return target, recs
    changes = [r for r in recs if r.status == "change" and r.scope == "dataset" and r.dataset == target.dataset
               and r.recommended is not None]
    if not changes:
        argv = ["zfs", "create", target.dataset]
    else:
        argv = ["zfs", "create", *(a for r in changes for a in ("-o", f"{r.parameter}={r.recommended}")),
                target.dataset]
    command = shlex.join(argv)
    changed = {id(r) for r in changes}
    recs = [r.model_copy(update={"apply": command, "apply_argv": argv}) if id(r) in changed else r for r in recs]
    return target.model_copy(update={"create": command, "create_argv": argv}), recs


def _shown(rec: Recommendation, fact: str) -> str | None:
    """A fact of the rule's evidence as ZFS prints it, when the rule cites it."""
    return next((e.display for e in rec.evidence if e.fact == fact), None)


def probed(parameter: str | None) -> bool:
    """Whether `zfs-advisor probe --param` can measure this parameter (rules/tunables.yaml `probed`)."""
    return parameter in PROBED_PARAMETERS
