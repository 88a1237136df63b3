"""The regression model's predictions as the engine reads them: per setting, each candidate's
predicted effect against the ZFS default and every pair's effect, with 90 % intervals.

Pure: the caller (advisor/answering/answerer.py) asks the model (advisor/model/provider.py) for
the predictions outside the engine and passes a lookup in, as it passes probe
evidence (`measured=`); advisor/engine/decide.py weighs them with the probe and the rule.
"""
from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, ConfigDict, Field

from advisor.engine.measured import same_value


class CandidatePrediction(BaseModel):
    value: str
    ratio: float = Field(description="predicted perf / the ZFS default's on this pool")
    interval: tuple[float, float] = Field(description="90 % interval of the ratio")
    write_p99_ratio: float | None = None
    feasible: bool = Field(True, description="write p99 within 1.5x the default's, its prediction's upper bound "
                           "(the pick's caution, advisor/model/select.py)")
    probes: int = Field(0, description="repeats of this value measured on this pool")
    baseline: bool = Field(False, description="the ZFS default, the others' reference (ratio 1)")


class PairEffect(BaseModel):
    from_value: str
    to_value: str
    ratio: float
    interval: tuple[float, float]


class SiblingsUsed(BaseModel):
    """The sibling pools' probes a prediction read (advisor/fleet/, docs/fleet.md)."""
    probes: int  # candidates they measured, summed over the pools
    pools: list[str]  # "instance pool" of each
    age_seconds: float  # of the fleet view they come from
    disagreeing: list[str] = []  # a sibling whose measurement lies outside the others' band, and what it measured


class ParameterPrediction(BaseModel):
    # pydantic < 2.10 reserves every model_* field name and warns about model_version
    model_config = ConfigDict(protected_namespaces=())

    parameter: str
    metric: str  # iops or bandwidth
    best: str
    candidates: list[CandidatePrediction]
    effects: list[PairEffect]
    local_probes: int
    lab_runs: int
    verified_changes: int = 0  # changes applied on this pool whose measured effect the model read
    siblings: SiblingsUsed | None = None  # sibling pools' probes read beside this pool's (None: no fleet)
    model_version: str

    def candidate(self, value: str | None) -> CandidatePrediction | None:
        return next((c for c in self.candidates if same_value(c.value, value)), None)

    def effect(self, from_value: str | None, to_value: str | None) -> PairEffect | None:
        return next((e for e in self.effects if same_value(e.from_value, from_value)
                     and same_value(e.to_value, to_value)), None)


# (pool, workload, parameter, values the answer needs besides the model's own grid) -> prediction
PredictionLookup = Callable[[str, str, str, list[str]], ParameterPrediction | None]


def pct(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.0f}%"


def span(interval: tuple[float, float]) -> str:
    return f"{pct(interval[0])}..{pct(interval[1])}"
