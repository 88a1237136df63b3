"""What the engine answers: the JSON contract of /recommend (docs/architecture.md, "The /recommend contract").

Field names here are the contract; add fields, never rename. The OpenAPI
document (/openapi.json) is generated from these models.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, SerializerFunctionWrapHandler, model_serializer

# "undecided": the evidence does not separate the current value from a candidate that may be better
# (the model cannot tell them apart, or the sources disagree and nothing was measured): the answer
# keeps the current value and `measure` says how to decide. Not a change: nothing to apply yet.
# "info": a measurement of the pool to know about (its efficiency against its layout), cited with its
# date and the command that measures it again (`measure`); it sets nothing and judges no rule.
Status = Literal["change", "passed", "undecided", "skipped", "info"]
# The `workload` of the answer for no workload in particular, and the name that asks for it: not a
# workload profile (the loader refuses one of that name), only the rules that hold for every workload.
GENERAL = "general"
# Where a setting lives, and when a change to it takes effect (rules declare both; schema.Rule).
Scope = Literal["pool-create", "pool", "dataset", "module"]
Effect = Literal["runtime", "new-writes", "dataset-recreate", "pool-recreate", "pool-change"]
EFFECT_TEXT: dict[str, str] = {  # "takes effect ..." in the text answer and in docs/rules.md
    "runtime": "immediately",
    "new-writes": "for newly written data only",
    "dataset-recreate": "only on a newly created dataset",
    "pool-recreate": "only when the pool is re-created",
    "pool-change": "when the pool's vdevs are changed",
}


class Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Evidence(Out):
    fact: str = Field(description="catalogue name of the fact, e.g. pool.ashift_min")
    value: Any = Field(description="the value in base units (bytes, seconds, ratio 0..1)")
    display: str = Field(description="the value as a person reads it, e.g. 4K, 91%")
    description: str


class ApplicationBound(Out):
    """How far the storage gain can reach the application, from the pool's disks' busy share over the
    daemon's window (advisor/evidence/application_bound.py: Amdahl's bound at the busy share's upper end)."""

    disks_busy: float = Field(description="the lower end of the pool's busiest member disk's share of the window "
                              "with I/O in flight: io_ticks of /proc/diskstats, which under-counts with several "
                              "I/Os in flight (Linux 5.0 and later)")
    disks_busy_upper: float = Field(description="the upper end: the busiest disk's summed I/O time (the weighted "
                                    "time of /proc/diskstats) over the window, at most 1; busy time never exceeds it")
    disks_busy_mean: float = Field(description="the mean of the pool's member disks' lower ends")
    bound_ratio: float = Field(description="the most the application's metric can move: 1 / ((1 - b) + b / "
                               "change_ratio) with b = disks_busy_upper, an upper bound assuming its time is the "
                               "disks' busy time plus other work")
    window_seconds: float
    verdict: Literal["storage-bound", "not storage-bound", "undetermined"] = Field(
        description="storage-bound when disks_busy reaches 0.8, not storage-bound when disks_busy_upper stays "
                    "below it, undetermined between (the disks may have set the pace)")
    text: str


class ExpectedEffect(Out):
    metric: str = Field(description="what the ratio is of: iops or bandwidth, of the job named in measured_on")
    change_ratio: float
    interval: tuple[float, float]
    measured_on: str = Field(description="the load the ratio was measured or predicted on: the workload's probe job "
                             "(fio, the advisor's imitation of the application's I/O), not the application's own "
                             "metric, which moves only as far as the application waits on the storage (its own metric "
                             "before and after a change tells)")
    application_bound: ApplicationBound | None = Field(
        None, description="the daemon's answers: how far the gain can reach the application, from the pool's "
        "disks' busy time over its window; left out where there is no window (the CLI, the first minutes)")

    @model_serializer(mode="wrap")
    def _without_bound_unless_known(self, handler: SerializerFunctionWrapHandler):
        """`application_bound` only where it is known: the others stay as they were (no return
        type: the JSON schema stays the fields')."""
        return _without_null(handler(self), "application_bound")


def _without_null(out: dict[str, Any], name: str) -> dict[str, Any]:
    """A field added for few answers left out where it is null, so the other answers read as before."""
    if out.get(name, ()) is None:
        del out[name]
    return out


class Recommendation(Out):
    parameter: str
    scope: Scope
    current: str | None = Field(description="current value as ZFS prints it; null when unknown")
    recommended: str | None
    requirement: str | None = Field(None, description="what passes, e.g. '>= 12' or '= lz4 (or zstd)'")
    change: bool = Field(description="true when the current value should change")
    status: Status = Field(description="change (evidence of a gain), passed (already right), undecided (keep the "
                           "current value until `measure` tells the options apart), skipped (facts missing) or "
                           "info (a measurement of the pool, cited; `measure` measures it again)")
    kind: Literal["setting", "warning"] = "setting"
    confidence: float = Field(ge=0, le=1)
    source: Literal["rule", "probe", "model", "rule+model", "lab", "rule+lab"] = "rule"
    rule: str = Field(description="id of the rule that produced this")
    title: str
    explanation: str
    sources_disagree: str | None = None
    evidence: list[Evidence] = Field(default_factory=list)
    expected_effect: ExpectedEffect | None = Field(None, description="null until a probe or model measured it")
    apply: str | None = Field(description="the exact command, or null for advisories without one")
    apply_argv: list[str] | None = Field(None, description="the same command as an argv list (no shell)")
    apply_note: str | None = None
    effect: Effect
    reversible: str
    references: list[str]
    pool: str | None = None
    dataset: str | None = None
    skipped_reason: str | None = None
    measure: str | None = Field(None, description="for `undecided`: the command whose measurement decides (the "
                                "steps of `measure_steps` joined with &&, where given); for `info`: the command "
                                "that measures it again")
    measure_argv: list[str] | None = Field(None, description="the same command as an argv list (no shell)")
    measure_steps: list[list[str]] | None = Field(
        None, description="for `undecided`, where measuring takes several commands (a zvol's volblocksize: test "
        "zvols made, fio run on them, the test zvols destroyed): each command as an argv, to run in order, each "
        "only once the one before has succeeded (`measure` is them joined with &&); left out otherwise")
    # The rule's `at_least` (shown value, what it is): the decision proposes nothing below it; not
    # part of the document
    _at_least: tuple[str, str] | None = PrivateAttr(None)

    @model_serializer(mode="wrap")
    def _without_steps_unless_any(self, handler: SerializerFunctionWrapHandler):
        """`measure_steps` only where a measurement takes several commands (no return type: the
        JSON schema stays the fields')."""
        return _without_null(handler(self), "measure_steps")


class Target(Out):
    pool: str | None = None
    dataset: str | None = None
    new_dataset: bool = Field(False, description="true when advice is for a dataset still to be created")
    create: str | None = Field(None, description="for a new dataset: the one command that creates it with every "
                               "property the answer changes")
    create_argv: list[str] | None = Field(None, description="the same command as an argv list (no shell)")


class Summary(Out):
    change: int
    passed: int
    skipped: int
    undecided: int = 0


class ModelStatus(Out):
    available: bool
    version: str | None = Field(None, description="the regression model's version (features, targets, prior data)")
    lab_runs: int = Field(0, description="lab fio runs (repeats) the model was fitted on")
    reason: str | None = Field(None, description="why the model made no predictions")


class RecognisedWorkload(Out):
    """What a dataset's observed I/O looked like (advisor/recognise/, docs/recognition.md)."""

    dataset: str
    workload: str = Field(description="the workload profile its I/O fits, or `unknown`")
    role: str | None = None
    confidence: float = Field(description="0..1: the best profile's fit less the runner-up's")
    observed: dict[str, Any] | None = Field(None, description="the traits seen in the window: seconds, operations "
                                            "per second, read fraction, mean read and write bytes, syncs per write")
    fits: dict[str, float] = Field(default_factory=dict, description="the best-fitting profile roles, 0..1")
    reason: str
    used: bool = Field(description="true when this answer's workload is the recognised one; false: pool-level "
                       "advice only, as for no workload")


class RecommendResponse(Out):
    workload: str = Field(
        description="the workload asked for, or `general` when none was: then only the advice that holds for any "
        "workload (pool layout, ashift, health, free space, module parameters), no dataset"
    )
    parameters: dict[str, str] = Field(default_factory=dict)
    target: Target
    recommendations: list[Recommendation]
    summary: Summary
    generated_at: datetime
    facts: dict[str, Any] = Field(description="host facts the answer was computed from (summary)")
    model: ModelStatus | None = Field(None, description="the regression model behind `source: model` and "
                                      "`rule+model` answers; null when the caller did not consult one")
    recognised: list[RecognisedWorkload] | None = Field(
        None, description="with `workload=auto` (or a dataset and no workload): what each dataset's I/O was "
        "recognised as; left out when a workload was named")
    probe_store: str | None = Field(
        None, description="why this host's stored probe results could not be read: the answer has no probe "
        "evidence from them (no `source: probe`, the model not conditioned on them); left out when they were read")

    @model_serializer(mode="wrap")
    def _without_recognised_unless_asked(self, handler: SerializerFunctionWrapHandler):
        """`recognised` only in answers that recognised, `probe_store` only when the store could not be
        read: the others stay as they were. No return type: with one, the JSON schema would be that
        type's instead of the fields' (GET /openapi.json)."""
        out = handler(self)
        for optional in ("recognised", "probe_store"):
            if out.get(optional, ()) is None:
                del out[optional]
        return out


class WorkloadParameter(Out):
    description: str
    default: str
    values: list[str]


class WorkloadInfo(Out):
    name: str
    title: str
    description: str
    io: dict[str, Any]
    roles: list[dict[str, Any]]  # a profile's roles as it declares them (name, description, dataset_type, ...)
    parameters: dict[str, WorkloadParameter]
    fio_job: str
    references: list[str]


class WorkloadList(Out):
    workloads: list[WorkloadInfo]


class PoolInfo(Out):
    name: str
    health: str
    media: str | None
    layout: str | None
    ashift_min: int | None
    size_bytes: int | None
    capacity_ratio: float | None
    fragmentation_ratio: float | None
    datasets: list[str]


class PoolList(Out):
    pools: list[PoolInfo]


class ErrorDetail(Out):
    status: int
    reason: str
    valid: list[str] | None = None


class ErrorResponse(Out):
    error: ErrorDetail
