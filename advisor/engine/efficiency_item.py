"""A pool's stored efficiency measurement as an item of the answer: information, not a change.

`zfs-advisor probe --pool P --efficiency` measures what the pool gives against what its layout
should give from its disks' own (read-only) rate, and says where the rest went
(docs/probes.md, "Pool efficiency").  The answer cites the latest such report of each pool it is
about, with its date and the command that measures it again, as an item of status `info`: it sets
nothing, and it is no verdict on a rule.  A pool never measured gets no item.

Pure: the caller reads the store and hands the report in (advisor/store/efficiency_reports.py).
"""
from __future__ import annotations

import re
import shlex
from datetime import UTC, datetime

from advisor.engine.models import Evidence, Recommendation
from advisor.evidence.efficiency import PoolEfficiency, ResultView, measure_argv

RULE = "pool-efficiency"
# How firmly the public sources support the expectation each ratio is taken against (the layout
# arithmetic of the OpenZFS documentation's "Pool Geometry", docs/recommendations.md's scale).
CONFIDENCE = 0.8
REFERENCES = [
    "https://openzfs.github.io/openzfs-docs/Performance%20and%20Tuning/Workload%20Tuning.html#pool-geometry",
    "https://openzfs.github.io/openzfs-docs/man/master/7/zpoolconcepts.7.html",
]
_PATTERN = {"seq": "sequential", "rand": "random"}
_DIRECTION = {"read": "reads", "write": "writes"}
_SIZE = re.compile(r"\d+[kmgt]", re.IGNORECASE)


def words_of_test(name: str) -> str:
    """'seq-write' -> 'sequential writes', 'rand-write-4k-sync' -> 'random writes (4K, sync)'; a test
    of another form is named as it is."""
    parts = name.split("-")
    if len(parts) < 2 or parts[0] not in _PATTERN or parts[1] not in _DIRECTION:
        return f"test {name}"
    extra = [p.upper() if _SIZE.fullmatch(p) else p for p in parts[2:]]
    return f"{_PATTERN[parts[0]]} {_DIRECTION[parts[1]]}" + (f" ({', '.join(extra)})" if extra else "")


def _rate(value: float, unit: str) -> str:
    if unit == "bytes/s":
        return f"{value / 1e6:,.1f} MB/s"
    return f"{value:,.0f} {unit}"


def _sentence(result: ResultView, latest: float) -> str:
    """E.g. 'sequential writes reach 0.62 of what 2 x mirror of 2 should give (1 disk each = 2 disks;
    12.0 MB/s of 19.8 MB/s): <diagnosis>.'; with its day when an earlier run than the `latest`
    measured it."""
    rule = result.expectation or ""
    layout, detail = "its layout", rule
    if rule.count(":") == 1:  # one kind of vdev: "2 x mirror of 2: 1 disk each = 2 disks"
        layout, detail = (part.strip() for part in rule.split(":"))
    if result.measured is not None and result.expected:
        detail = "; ".join(filter(None, [detail, f"{_rate(result.measured, result.unit)} of "
                                                 f"{_rate(result.expected, result.unit)}"]))
    said = f" ({detail})" if detail else ""
    why = f": {'; '.join(result.diagnosis)}" if result.diagnosis else ""
    earlier = ""
    if result.measured_at is not None and result.measured_at < latest:
        earlier = f" (measured {datetime.fromtimestamp(result.measured_at, UTC):%Y-%m-%d}, by an earlier run)"
    return f"{words_of_test(result.test)}{earlier} reach {result.ratio:.2f} of what {layout} should give{said}{why}."


def efficiency_item(found: PoolEfficiency) -> Recommendation | None:
    """The item citing `found`, or None when none of its results could be read."""
    if not found.results:
        return None
    when = datetime.fromtimestamp(found.measured_at, UTC)
    argv = measure_argv(found.pool)
    command = shlex.join(argv)
    day = when.strftime("%Y-%m-%d")
    head = (f"Pool {found.pool}, measured {day} by `{command}` (the pool's rate over what its layout should give "
            "from its disks' own rate, read-only): ")
    body = " ".join(f"{s[0].upper()}{s[1:]}" for s in (_sentence(r, found.measured_at) for r in found.results))
    evidence = [Evidence(fact=f"efficiency.{r.test}.ratio", value=round(r.ratio, 4), display=f"{r.ratio:.0%}",
                         description=f"{words_of_test(r.test)}: the pool's rate over its layout's"
                         + (f" ({r.expectation})" if r.expectation else ""))
                for r in found.results]
    evidence.append(Evidence(fact="efficiency.measured_at", value=found.measured_at,
                             display=when.isoformat(timespec="seconds"), description="when it was measured (UTC)"))
    return Recommendation(
        parameter="efficiency", scope="pool", current=", ".join(f"{r.test} {r.ratio:.0%}" for r in found.results),
        recommended=None, change=False, status="info", kind="warning", confidence=CONFIDENCE, source="probe",
        rule=RULE, title="What the pool gives against what its layout should (measured)",
        explanation=head + body, evidence=evidence, apply=None, effect="runtime",
        reversible="nothing to undo: a measurement, not a change", references=REFERENCES, pool=found.pool,
        measure=command, measure_argv=argv)
