"""Match a dataset's observed traits against every profile role's signature.

Each trait's distance from the signature (outside its range; sizes in powers of two, syncs per
write on a log scale) gives a fit exp(-d²/2σ²); a role's fit is the product. The confidence is
the best fit less the runner-up's: a window that fits two profiles alike (media and backup both
write 1 MiB) is not claimed by either. Below MIN_CONFIDENCE, or with too little I/O to go by, the
answer is `unknown`: never a guess when nothing fits.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from advisor.recognise.signature import Signature
from advisor.recognise.traits import Traits

UNKNOWN = "unknown"
MIN_CONFIDENCE = 0.5
MIN_OPERATIONS = 50  # fewer reads and writes in a window: not busy enough to say anything
MIN_SHARE = 0.05  # a direction with fewer of the operations: its mean size is not compared
SIZE_SIGMA = 0.5  # powers of two: 8K vs 16K is two sigmas apart
FRACTION_SIGMA = 0.1
SYNC_SIGMA = 0.3  # decades of (syncs per write + SYNC_FLOOR)
SYNC_FLOOR = 0.01
ABSENT = 0.1  # a direction every one of the role's sections does is (next to) missing


@dataclass(frozen=True, slots=True)
class Recognition:
    workload: str  # a profile's name, or `unknown`
    role: str | None
    confidence: float  # 0..1
    traits: Traits | None
    fits: dict[str, float] = field(default_factory=dict)  # workload/role -> fit, best first
    reason: str = ""

    @property
    def known(self) -> bool:
        return self.workload != UNKNOWN

    def shown(self) -> dict:
        return {
            "workload": self.workload,
            "role": self.role,
            "confidence": round(self.confidence, 3),
            "observed": None if self.traits is None else self.traits.shown(),
            "fits": {k: round(v, 3) for k, v in list(self.fits.items())[:3]},
            "reason": self.reason,
        }


def _outside(value: float, low: float, high: float) -> float:
    return low - value if value < low else value - high if value > high else 0.0


def _fit(distance: float, sigma: float) -> float:
    return math.exp(-0.5 * (distance / sigma) ** 2)


def _size_fit(mean: float | None, share: float, sizes: tuple[int, int] | None) -> float:
    if mean is None or share < MIN_SHARE or sizes is None:
        return 1.0  # the mix says whether this direction should be there
    # reads at end of file return 0 bytes: a mean of 0 is as small as a byte, not a math error
    return _fit(_outside(math.log2(max(mean, 1.0)), math.log2(sizes[0]), math.log2(sizes[1])), SIZE_SIGMA)


def fit(traits: Traits, sig: Signature) -> float:
    f = _fit(_outside(traits.read_fraction, *sig.read_fraction), FRACTION_SIGMA)
    if sig.read_fraction[0] > 0 and traits.read_fraction < MIN_SHARE:
        f *= ABSENT
    if sig.read_fraction[1] < 1 and 1 - traits.read_fraction < MIN_SHARE:
        f *= ABSENT
    f *= _size_fit(traits.mean_read_bytes, traits.read_fraction, sig.read_sizes)
    f *= _size_fit(traits.mean_write_bytes, 1 - traits.read_fraction, sig.write_sizes)
    if traits.syncs_per_write is not None and 1 - traits.read_fraction >= MIN_SHARE:
        low, high = (math.log10(s + SYNC_FLOOR) for s in sig.syncs_per_write)
        f *= _fit(_outside(math.log10(traits.syncs_per_write + SYNC_FLOOR), low, high), SYNC_SIGMA)
    return f


def classify(traits: Traits | None, sigs: list[Signature]) -> Recognition:
    if traits is None:
        return Recognition(UNKNOWN, None, 0.0, None, reason="no window of I/O observed yet")
    if traits.operations < MIN_OPERATIONS:
        return Recognition(UNKNOWN, None, 0.0, traits,
                           reason=f"{traits.operations} reads and writes in the window: too few to recognise")
    fits = sorted(((fit(traits, s), s) for s in sigs), key=lambda p: -p[0])
    shown = {s.label: f for f, s in fits}
    if not fits:
        return Recognition(UNKNOWN, None, 0.0, traits, reason="no workload profile to compare with")
    best_fit, best = fits[0]
    # the runner-up is the best other answer: a role alone and the same role sharing its dataset
    # (postgres/data and postgres/data+wal) are one answer, not two that fit alike
    others = [(f, s) for f, s in fits[1:] if s.answer != best.answer]
    runner_up = others[0][0] if others else 0.0
    confidence = best_fit - runner_up
    if confidence < MIN_CONFIDENCE:
        why = (f"fits no profile well (best {best.label}: {best_fit:.2f})" if best_fit < MIN_CONFIDENCE else
               f"fits {best.label} and {others[0][1].label} alike ({best_fit:.2f}, {runner_up:.2f})")
        return Recognition(UNKNOWN, None, confidence, traits, shown, why)
    return Recognition(best.workload, best.role, confidence, traits, shown,
                       f"fits {best.label} ({best_fit:.2f}; next {runner_up:.2f})")
