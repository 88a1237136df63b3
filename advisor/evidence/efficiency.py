"""A stored `probe --efficiency` report as the API, /metrics and /recommend read it: tolerant of
what it does not know.

Reports are kept as the probe wrote them (JSON in the store's efficiency_reports), and they
grow: a result may name its `test` ("seq-read", "seq-write", "rand-read-4k", ...), its `unit`
("bytes/s" or "IOPS") and the `measured` and `expected` rates its ratio is of.  A report stored
before those fields is sequential, in bytes/s: its test is "seq-<direction>" and its rates are
`pool_bytes_per_second` and `expected_bytes_per_second`.  Fields not named here are kept as they
are (the API serves the report whole) and otherwise ignored.

Results are in `results` (sequential) and `random_results` (small random I/O, when measured).
A result without a finite ratio or a usable name, or a second one of the same test, is left out
of /metrics and /recommend with a log line; a report that is not a JSON object with a list of
results raises ReportError (the caller skips it and logs why).  Pure: nothing here reads a store.
"""
from __future__ import annotations

import json
import logging
import math
import re
from typing import Any

from pydantic import BaseModel, Field

from advisor.process.logs import RateLimitedLog

log = logging.getLogger(__name__)
# a damaged stored report is read again on every request: each line once a minute (advisor/process/logs.py)
_repeated = RateLimitedLog(log, interval=60.0)

# a test name becomes a Prometheus label value and a word in /recommend's text: short and plain
TEST_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class ReportError(ValueError):
    """A stored report that cannot be read at all."""


class ResultView(BaseModel):
    """One result of a report: what was measured against what its layout should give."""
    test: str = Field(description='stable name: "seq-read", "seq-write", "rand-read-4k", ...')
    direction: str | None = None
    unit: str = Field("bytes/s", description='"bytes/s" or "IOPS"')
    ratio: float = Field(description="the pool's measured rate over what its layout should give")
    measured: float | None = None  # the rate `ratio` is of, in `unit`
    expected: float | None = None
    expectation: str | None = Field(None, description="how the expectation was formed")
    diagnosis: list[str] = Field(default_factory=list, description="where the rest went, as measured")
    measured_at: float | None = Field(None, description="Unix time of the run that measured it: an earlier run's "
                                      "when the pool's latest run measured another part (random I/O alone)")


class PoolEfficiency(BaseModel):
    """The latest report of a pool, with when it was measured; its results, and those of each
    test it did not measure from the pool's earlier reports (a run of one part, `--efficiency
    random`, does not make the other part unmeasured)."""
    pool: str
    measured_at: float  # Unix time of the latest report
    layout: str | None = None  # the pool's layout as the probe described it
    results: list[ResultView]
    report: dict[str, Any]  # the latest, as stored, each result's `test` filled in where it had none


def name_of_test(result: dict[str, Any]) -> str | None:
    """The result's `test`, or "seq-<direction>" for a result stored before results had one."""
    name = result.get("test")
    if name in (None, "") and result.get("direction") in ("read", "write"):
        name = f"seq-{result['direction']}"
    return name if isinstance(name, str) and TEST_NAME.fullmatch(name) else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _result(raw: dict[str, Any], name: str) -> ResultView | None:
    ratio = _number(raw.get("ratio"))
    if ratio is None or ratio < 0:
        return None
    diagnosis = raw.get("diagnosis")
    unit = raw.get("unit")
    expectation = raw.get("expectation")
    direction = raw.get("direction")
    return ResultView(
        test=name, direction=direction if isinstance(direction, str) else None,
        unit=unit if isinstance(unit, str) and unit else "bytes/s", ratio=ratio,
        measured=_number(raw.get("measured", raw.get("pool_bytes_per_second"))),
        expected=_number(raw.get("expected", raw.get("expected_bytes_per_second"))),
        expectation=expectation if isinstance(expectation, str) else None,
        diagnosis=[d for d in diagnosis if isinstance(d, str)] if isinstance(diagnosis, list) else [])


def parse_report(pool: str, measured_at: float, text: str) -> PoolEfficiency:
    """The report stored as `text` (JSON); ReportError when it is not a report at all."""
    try:
        report = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ReportError(f"not JSON: {str(exc)[:120]}") from None
    if not isinstance(report, dict) or not isinstance(report.get("results"), list):
        raise ReportError("not a report: no list of results")
    results: list[ResultView] = []
    # the sequential tests in `results`, the random ones (when the run measured them) in `random_results`
    random = report.get("random_results")
    for index, raw in enumerate([*report["results"], *(random if isinstance(random, list) else [])]):
        name = name_of_test(raw) if isinstance(raw, dict) else None
        parsed = _result(raw, name) if name is not None else None
        if parsed is None or any(r.test == parsed.test for r in results):
            _repeated.log(logging.WARNING, f"left out {pool} {measured_at} {index}", "efficiency report of pool %s "
                          "measured at %.0f: result %d left out (%s)", pool, measured_at, index,
                          "a second result of one test" if parsed else "no test name or no finite ratio")
            continue
        results.append(parsed.model_copy(update={"measured_at": measured_at}))
        raw["test"] = name
    described = report.get("pool")
    layout = described.get("layout") if isinstance(described, dict) else None
    return PoolEfficiency(pool=pool, measured_at=measured_at, layout=layout if isinstance(layout, str) else None,
                          results=results, report=report)


def parse_reports(rows: list[tuple[str, float, str]]) -> list[PoolEfficiency]:
    """(pool, measured_at, report JSON) rows, newest first within a pool: one PoolEfficiency per
    pool, its newest report with the results of the tests it lacks from the older ones (the newest
    of each); a row that is no report is skipped, logged."""
    found: dict[str, PoolEfficiency] = {}
    for pool, measured_at, text in rows:
        try:
            parsed = parse_report(pool, measured_at, text)
        except ReportError as exc:
            _repeated.log(logging.WARNING, f"skipped {pool} {measured_at}", "efficiency report of pool %s measured at %.0f skipped: %s",
                          pool, measured_at, exc)
            continue
        newer = found.get(pool)
        if newer is None:
            found[pool] = parsed
            continue
        known = {r.test for r in newer.results}
        newer.results.extend(r for r in parsed.results if r.test not in known)
    return list(found.values())


def measure_argv(pool: str) -> list[str]:
    """The command that measures (again) a pool's efficiency."""
    return ["zfs-advisor", "probe", "--pool", pool, "--efficiency"]
