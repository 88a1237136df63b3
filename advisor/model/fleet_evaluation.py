"""What a fleet adds at 0 local probes, on the lab prior (`zfs-advisor evaluate --fleet`).

For each cell held out (with its twins, advisor/model/evaluation.py): the model is fitted on the
other cells; two sibling pools of the same layout probe it first, each as its own profiler would
(the baseline, then expected improvement, SIBLING_BUDGET candidates), the second with the first's
probes as siblings; then this pool, which has probed nothing, picks with both siblings' probes
(advisor/model/siblings.py, between-host variance BETWEEN_HOST_VARIANCE) and, for comparison,
without them.  The siblings' measurements are the cell's own: the runs of the cell when the lab
measured it in several, else each repeat of its one run as one sibling.  Scored as `evaluate`
scores a pick (pick / the grid's oracle), with harm: a pick the grid measured worse than the
default beyond the noise of its repeats (the 90 % interval of the ratio lies below 1).

What it cannot tell: the lab's siblings are one pool measured twice, so they agree more than
two hosts of a fleet would; the between-host variance is what keeps the model from believing
them as its own probes, and its value is a lower bound (docs/fleet.md).
"""
from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace

from advisor.engine.measured import WRITE_P99_TOLERANCE
from advisor.model.answers import Grid
from advisor.model.dataset import Sample, cells
from advisor.model.evaluation import _fit, _label, _worst_p99_ratio, twins
from advisor.model.features import settings_key
from advisor.model.select import next_candidates, pick
from advisor.model.siblings import BETWEEN_HOST_VARIANCE, SiblingSample, WithSiblings

SIBLINGS = 2
SIBLING_BUDGET = 2  # what each sibling probed: as many as today's 2-probe answer


@dataclass
class FleetCell:
    cell: str
    sibling_probes: list[list[str]]  # what each sibling probed, in order
    pick: str
    alone: str  # the pick at 0 probes without the siblings
    oracle: str
    pick_vs_oracle: float
    alone_vs_oracle: float
    pick_vs_default: float
    pick_p99_ok: bool
    harm: bool


def sibling_passes(cell: list[Sample]) -> list[list[Sample]]:
    """The cell's measurements as sibling pools: one per run when it was measured in several, else
    one per repeat of its run; each with its targets against its own baseline."""
    runs = {s.obs.run for s in cell}
    key: Callable[[Sample], str | int] = (lambda s: s.obs.run) if len(runs) > 1 else (lambda s: s.obs.repeat)
    by: dict[str | int, list[Sample]] = defaultdict(list)
    for s in cell:
        by[key(s)].append(s)
    passes = []
    for group in (by[k] for k in sorted(by)):
        base = [s.obs for s in group if s.obs.baseline and s.obs.perf]
        if not base:
            continue
        perf = statistics.fmean(o.perf for o in base if o.perf)
        p99s = [o.write_p99 for o in base if o.write_p99]
        p99 = statistics.fmean(p99s) if p99s else None
        passes.append([Sample(s.obs, math.log(s.obs.perf / perf) if s.obs.perf else s.y_perf,
                              math.log(s.obs.write_p99 / p99) if s.obs.write_p99 and p99 else None) for s in group])
    return passes


def _probe_sibling(model, grid_of_pass: dict[tuple, list[Sample]], queries, budget: int, host: str,
                   earlier: list[SiblingSample]) -> tuple[list[SiblingSample], list[str]]:
    """One sibling's probe of `budget` candidates, in the order its own profiler asks for them with
    the earlier siblings' probes beside its own."""
    aware = WithSiblings(model, earlier)
    local: list[Sample] = []
    labels: list[str] = []
    while len(labels) < budget:
        nxt = next_candidates(aware, local, queries, 1)
        if not nxt or settings_key(nxt[0]) not in grid_of_pass:
            break
        local += grid_of_pass[settings_key(nxt[0])]
        labels.append(_label(nxt[0]))
    return [SiblingSample(s, host) for s in local], labels


def evaluate_fleet_cell(model_factory, prior: list[Sample], held: str, cache: dict | None = None,
                        between: float = BETWEEN_HOST_VARIANCE) -> FleetCell:
    by_cell = cells(prior)
    model = _fit(model_factory, prior, twins(held, by_cell), cache)
    grid = Grid(by_cell[held])
    keys = list(grid.by_key)
    queries = [replace(grid.by_key[k][0].obs, perf=None, write_p99=None) for k in keys]
    siblings: list[SiblingSample] = []
    probes: list[list[str]] = []
    for i, passed in enumerate(sibling_passes(by_cell[held])[:SIBLINGS]):
        by_key: dict[tuple, list[Sample]] = defaultdict(list)
        for s in passed:
            by_key[settings_key(s.obs)].append(s)
        found, labels = _probe_sibling(model, by_key, queries, SIBLING_BUDGET, f"sibling-{i + 1}", siblings)
        siblings += found
        probes.append(labels)
    chosen, _ = pick(WithSiblings(model, siblings, between), [], queries)
    alone, _ = pick(model, [], queries)
    best = grid.mean[grid.best]
    pick_key = keys[chosen]
    ratio, interval = grid.ratio(pick_key, grid.base)
    base_p99, pick_p99 = _worst_p99_ratio(grid.by_key[grid.base]), _worst_p99_ratio(grid.by_key[pick_key])
    return FleetCell(
        cell=held, sibling_probes=probes, pick=_label(queries[chosen]), alone=_label(queries[alone]),
        oracle=_label(grid.by_key[grid.best][0].obs), pick_vs_oracle=grid.mean[pick_key] / best,
        alone_vs_oracle=grid.mean[keys[alone]] / best, pick_vs_default=ratio,
        pick_p99_ok=base_p99 is None or pick_p99 is None or pick_p99 <= WRITE_P99_TOLERANCE * base_p99,
        harm=pick_key != grid.base and interval is not None and interval[1] < 1.0)


def evaluate_fleet(model_factory, prior: list[Sample], only: str = "", cache: dict | None = None,
                   between: float = BETWEEN_HOST_VARIANCE) -> list[FleetCell]:
    return [evaluate_fleet_cell(model_factory, prior, held, cache, between)
            for held in sorted(cells(prior)) if only in held]


def table(results: list[FleetCell]) -> str:
    lines = [f"{'cell':34s} {'siblings probed':40s} {'pick':18s} {'alone':18s} {'oracle':18s} "
             f"{'pick/oracle':>11s} {'alone/oracle':>12s} {'p99 ok':>6s} harm"]
    for r in results:
        probed = "; ".join(" ".join(p) for p in r.sibling_probes)
        lines.append(f"{r.cell:34s} {probed:40s} {r.pick:18s} {r.alone:18s} {r.oracle:18s} {r.pick_vs_oracle:>11.1%} "
                     f"{r.alone_vs_oracle:>12.1%} {'yes' if r.pick_p99_ok else 'NO':>6s} {'HARM' if r.harm else ''}")
    return "\n".join(lines)


def _percent(value: float) -> str:
    return f"{100 * value:.1f} %"


def summary_line(results: list[FleetCell]) -> str:
    """The last lines of `evaluate --fleet`; fractions of the oracle capped at 1 as `evaluation.score`."""
    ratios = [min(r.pick_vs_oracle, 1.0) for r in results]
    alone = [min(r.alone_vs_oracle, 1.0) for r in results]
    return (f"without the fleet: 0 local probes median {_percent(statistics.median(alone))}, "
            f"worst {_percent(min(alone))}\n"
            f"fleet: {len(results)} cells, 0 local probes median {_percent(statistics.median(ratios))}, "
            f"worst {_percent(min(ratios))}; harm {sum(r.harm for r in results)}")
