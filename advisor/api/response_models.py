"""Pydantic models of the JSON that /healthz, /v1/probes, /v1/probes/{id} and /v1/changes answer.

Those handlers build their answers from the store's rows and the change tracker's records; these
models describe what they send, for the OpenAPI document (advisor/api/openapi.py), and
tests/unit/test_api_contract.py checks every route's real answer against the document.
"""
from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from advisor.engine.models import ExpectedEffect, Out
from advisor.evidence.bound import RunBound
from advisor.evidence.parameters import ParameterEvidence
from advisor.store.probes import ResultRow, RunRow


class StoreCheck(Out):
    ok: bool = Field(description="the probe store reads (or there is none yet)")
    reason: str | None = Field(description="why it does not")
    rows_skipped: dict[str, int] = Field(description="damaged rows the readers skipped since start, by table")


class HealthChecks(Out):
    store: StoreCheck


class ZfsSeen(Out):
    present: bool
    reason: str | None
    version: str | None = Field(description="the kernel module's version")


class Health(Out):
    status: Literal["ok", "degraded"] = Field(description="degraded: the probe store cannot be read")
    version: str = Field(description="zfs-advisor's version")
    root: str = Field(description="the root the facts are read under (/ on a host)")
    checks: HealthChecks
    zfs: ZfsSeen | None = Field(None, description="what the last collection saw; absent before the first one")
    sources_failed: list[str] | None = Field(None, description="sources the last collection could not read; "
                                                               "absent before the first one")


class ProbeRunList(Out):
    runs: list[RunRow] = Field(description="newest first")
    store_error: str | None = Field(None, description="why the probe database cannot be read (runs is empty "
                                                      "then); absent when it was read")


class ProbeRunDetail(Out):
    run: RunRow
    results: list[ResultRow] = Field(description="one per candidate value and repeat, each with `bound`: what set "
                                                 "its pace (storage, cpu, unclear; docs/probes.md)")
    bound: RunBound = Field(description="what set the run's pace: `cpu` when a repeat was CPU-bound, and the "
                                        "parameters whose measurement was set aside as evidence")
    evidence: list[ParameterEvidence] = Field(description="what the run's results say per parameter (completed "
                                                          "runs only)")


class WindowSummary(Out):
    mean: float
    spread: float = Field(description="sample standard deviation of the per-interval values")
    intervals: int


class ChangeEffect(Out):
    pool: str
    dataset: str | None
    metric: str
    of: Literal["pool", "dataset"]
    better_when: Literal["higher", "lower"]
    before: WindowSummary
    after: WindowSummary
    ratio: float | None = Field(description="after / before mean")
    interval: list[float] | None = Field(description="95 % interval of the ratio", min_length=2, max_length=2)
    noise_floor: float = Field(description="the before window's coefficient of variation")
    verdict: Literal["better", "worse", "no measurable effect", "not enough load"]


class FollowedRecommendation(Out):
    workload: str
    rule: str
    recommended: str | None
    confidence: float
    source: str
    expected_effect: ExpectedEffect | None


class ChangeRecord(Out):
    id: int | None = Field(description="null while the record is kept in memory only (no writable store)")
    detected_at: datetime
    detected_at_epoch: float
    changed_between: list[datetime] = Field(min_length=2, max_length=2)
    scope: Literal["dataset", "module"]
    pool: str | None
    dataset: str | None
    parameter: str
    old: str
    new: str
    source: str | None = Field(None, description="the new value's source as `zfs get` shows it")
    followed_recommendation: FollowedRecommendation | None = None
    workload: str | None = Field(None, description="the dataset's workload in the `workloads` setting")
    window_seconds: float
    before_window: list[datetime] | None = Field(None, min_length=2, max_length=2)
    after_window: list[datetime] | None = Field(None, min_length=2, max_length=2)
    status: Literal["measuring", "done"]
    verdict: Literal["measuring", "better", "worse", "mixed", "no measurable effect", "not enough load"]
    reason: str
    notes: list[str]
    effects: list[ChangeEffect]


class ChangeList(Out):
    window_seconds: float
    samples: int = Field(description="collections held in memory")
    changes: list[ChangeRecord] = Field(description="newest first")
