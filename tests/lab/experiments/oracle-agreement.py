#!/usr/bin/env python3
"""Does a cell's measured best survive a second measurement of the same grid?

    .venv/bin/python tests/lab/experiments/oracle-agreement.py OLD.csv NEW.csv
    (e.g. OLD = `git show <commit>:advisor/model/data/prior-zfs2.3.csv`)

For every cell (layout x workload) whose grid both files measured, with different probe runs:
the best of each grid under the evaluation's rule (advisor/model/evaluation.py `oracle`: most
IOPS, or bandwidth for fileserver, whose write p99 is within 1.5x the default's), and how the
first grid's best does in the second grid, as a fraction of the second grid's best (above 100 %
where it breaks the write-p99 limit there, which the last column says).  That
fraction is what a perfect pick scores against a re-measured oracle: a ceiling for
`zfs-advisor evaluate`'s pick/oracle (docs/model.md).
"""
from __future__ import annotations

import statistics
import sys

from advisor.engine.measured import WRITE_P99_TOLERANCE
from advisor.model.dataset import cells, load_csv, samples
from advisor.model.evaluation import _grid, _mean_ratio, _worst_p99_ratio, oracle


def grids(path: str) -> dict[str, dict]:
    return {cell: _grid(rows) for cell, rows in cells(samples(load_csv(path))).items()}


def label(key: tuple) -> str:
    return ",".join(f"{k}={v}" for k, v in key if v not in ("128K", "lz4", "latency", "all", "standard", "on")) \
        or "default"


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    old, new = grids(argv[0]), grids(argv[1])
    fractions = []
    print("| cell | best, first grid | best, second grid | first's best in the second grid, of its best "
          "| its write p99 within the limit there |")
    print("| --- | --- | --- | --- | --- |")
    for cell in sorted(old.keys() & new.keys()):
        a, b = old[cell], new[cell]
        runs = lambda g: {s.obs.run for rows in g.values() for s in rows}  # noqa: E731 - a one-line helper, read where it is used
        if runs(a) == runs(b) or oracle(a) not in b:
            continue
        best_a, best_b = oracle(a), oracle(b)
        fraction = _mean_ratio(b[best_a]) / _mean_ratio(b[best_b])
        fractions.append(fraction)
        base = next(rows for rows in b.values() if rows[0].obs.baseline)
        p99, limit = _worst_p99_ratio(b[best_a]), _worst_p99_ratio(base)
        ok = "yes" if p99 is None or limit is None or p99 <= limit * WRITE_P99_TOLERANCE else "no"
        print(f"| {cell} | {label(best_a)} | {label(best_b)} | {fraction:.1%} | {ok} |")
    if fractions:
        print(f"\n{len(fractions)} cells: median {statistics.median(fractions):.1%}, worst {min(fractions):.1%}, "
              f"at least 90 % in {sum(f >= 0.9 for f in fractions)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
