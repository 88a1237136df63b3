"""Probe measurements as the decision reads them (advisor/engine/decide.py): the measured best, a
candidate by value, how a candidate's numbers are shown, and the commands that set a value.

The measured best is the candidate with the most IOPS whose write p99 is no worse than 1.5x the
ZFS default's (read-modify-write shows in the write tail first).  Whether two candidates differ is
the probe's call: the 90 % interval of their IOPS ratio, from the repeats of the run pooled
(advisor/evidence/interval.py), must exclude 1.
"""
from __future__ import annotations

from advisor.engine.models import Recommendation
from advisor.engine.units import parse_size
from advisor.evidence.parameters import CandidateEvidence, ParameterEvidence
from advisor.hostmodel.facts import PARAMS_DIR

WRITE_P99_TOLERANCE = 1.5


def same_value(a: str | None, b: str | None) -> bool:
    if a is None or b is None:
        return False
    try:
        return parse_size(a) == parse_size(b)
    except ValueError:
        return a.strip().lower() == b.strip().lower()


def measured_best(ev: ParameterEvidence) -> CandidateEvidence:
    base = next((c for c in ev.candidates if c.baseline), None)
    limit = (base.write_p99_seconds * WRITE_P99_TOLERANCE
             if base is not None and base.write_p99_seconds else None)
    for c in ev.candidates:  # ranked by IOPS
        if limit is None or c.write_p99_seconds is None or c.write_p99_seconds <= limit:
            return c
    return ev.candidates[0]


def find(ev: ParameterEvidence, value: str | None) -> CandidateEvidence | None:
    return next((c for c in ev.candidates if same_value(c.value, value)), None)


def candidate_display(c: CandidateEvidence) -> str:
    p99 = f", write p99 {c.write_p99_seconds * 1000:.1f} ms" if c.write_p99_seconds is not None else ""
    spread = f"{c.repeats} repeats {c.iops_min:,.0f}..{c.iops_max:,.0f}"
    if c.run_interval is not None:
        spread += f", a run 90 % within {c.run_interval[0]:,.0f}..{c.run_interval[1]:,.0f}"
    return f"{c.iops:,.0f} IOPS ({spread}){p99}"


def dataset_command(rec: Recommendation, value: str, new_datasets: frozenset[str]) -> list[str] | None:
    """`zfs set`, or `zfs create -o` for a proposed dataset that does not exist yet."""
    if rec.dataset is None:
        return None
    if rec.dataset in new_datasets:
        return ["zfs", "create", "-o", f"{rec.parameter}={value}", rec.dataset]
    return ["zfs", "set", f"{rec.parameter}={value}", rec.dataset]


def module_command(rec: Recommendation, value: str) -> str:
    """The sysfs write (a shell line: the redirection is the point)."""
    return f"echo {value} > {PARAMS_DIR}/{rec.parameter}"


def latest_module_evidence(measured: dict[str, list[ParameterEvidence]]) -> dict[str, tuple[str, ParameterEvidence]]:
    """A module parameter is host-wide, a probe is of one pool: per parameter, the latest run that
    measured it on any of the pools the answer is about, and that pool's name."""
    latest: dict[str, tuple[str, ParameterEvidence]] = {}
    for pool, evidence in sorted(measured.items()):
        for ev in evidence:
            if ev.candidates and (ev.parameter not in latest or ev.run_id > latest[ev.parameter][1].run_id):
                latest[ev.parameter] = (pool, ev)
    for pool, evidence in sorted(measured.items()):  # runs all set aside: said, where nothing was measured
        for ev in evidence:
            if not ev.candidates and ev.parameter not in latest:
                latest[ev.parameter] = (pool, ev)
    return latest
