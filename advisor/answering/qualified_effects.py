"""An answer's expected effects qualified in the application's terms: where the pool's disks' busy
share over the daemon's window is known, each storage gain carries the most it can move the
application (advisor/evidence/application_bound.py, Amdahl's bound).  The bound qualifies the stated
effect only: a CHANGE's direction is the storage evidence's to decide."""
from __future__ import annotations

from collections.abc import Mapping

from advisor.engine.models import ApplicationBound, Recommendation, RecommendResponse
from advisor.evidence.application_bound import PoolBusy, amdahl_bound, bound_text


def application_bound(gain: float, busy: PoolBusy) -> ApplicationBound | None:
    lower, upper, mean, verdict = busy.busiest, busy.busiest_upper, busy.mean, busy.verdict
    if lower is None or upper is None or mean is None or verdict == "unknown" or gain <= 1:  # a gain's "at most"
        return None
    ratio = round(amdahl_bound(gain, upper[1]), 3)  # the upper end: "at most" holds whichever end is right
    return ApplicationBound(disks_busy=lower[1], disks_busy_upper=upper[1], disks_busy_mean=round(mean, 2),
                            bound_ratio=ratio, window_seconds=busy.window_seconds, verdict=verdict,
                            text=bound_text(busy, ratio))


def _qualified(rec: Recommendation, pool: str | None, pools: Mapping[str, PoolBusy]) -> Recommendation:
    effect, busy = rec.expected_effect, pools.get(rec.pool or pool or "")
    if effect is None or busy is None:
        return rec
    bound = application_bound(effect.change_ratio, busy)
    if bound is None:
        return rec
    return rec.model_copy(update={"expected_effect": effect.model_copy(update={"application_bound": bound})})


def qualified(response: RecommendResponse, pools: Mapping[str, PoolBusy]) -> RecommendResponse:
    """`response` with each expected effect on a pool in `pools` bounded; unchanged without one."""
    if not pools or not any(r.expected_effect for r in response.recommendations):
        return response
    pool = response.target.pool
    return response.model_copy(update={"recommendations": [_qualified(r, pool, pools)
                                                           for r in response.recommendations]})
