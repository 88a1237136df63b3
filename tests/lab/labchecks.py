"""Checks the lab tests share about what the advisor answered."""
from __future__ import annotations


def check_decided_from_the_probe(rec: dict, ev: dict, run_id: int) -> None:
    """/recommend's recordsize after a probe of the pool: the measurement cited, and a change only to
    a value that measured at least as well as the current one (advisor/engine/decide.py: a
    measured loss vetoes any prediction); `source: probe` when the probe measured both."""
    assert f"probe run {run_id}" in rec["explanation"]
    assert rec["status"] in ("change", "passed", "undecided"), rec
    if rec["status"] != "change":
        assert rec["recommended"] == rec["current"] and rec["apply"] is None, rec
        return
    assert rec["expected_effect"]["metric"] == "iops" and rec["expected_effect"]["change_ratio"] > 1, rec
    measured = {c["value"]: c["iops"] for c in ev["candidates"]}
    if rec["recommended"] in measured and rec["current"] in measured:
        assert rec["source"] == "probe", rec
        assert measured[rec["recommended"]] >= measured[rec["current"]], rec

