"""tests/bench/speed.py's own parts: the kstats it moves between scrapes, and how it judges a
target (the timings themselves are the benchmark's, never a unit test's)."""
from __future__ import annotations

import argparse
import re
import sys

from support import RECORDING, REPO

sys.path.insert(0, str(REPO / "tests" / "bench"))
import scale_snapshot  # noqa: E402 - after the sys.path line above
import speed  # noqa: E402 - after the sys.path line above


def _nwritten(text: str) -> int:
    return int(re.search(r"^nwritten\s+4\s+(\d+)$", text, re.MULTILINE).group(1))


def test_a_tenth_of_the_objsets_move_and_only_their_nwritten(tmp_path):
    root = scale_snapshot.scale(RECORDING, tmp_path / "n40", 40)
    files = speed.objsets(root)
    before = {p: p.read_text() for p in files}
    speed.move_a_tenth(files, 3)
    moved = [p for p in files if p.read_text() != before[p]]
    assert moved == files[3::10] and len(files) // 10 <= len(moved) <= len(files) // 10 + 1
    for p in moved:
        assert _nwritten(p.read_text()) == _nwritten(before[p]) + 4096
        assert re.sub(r"^nwritten.*$", "", p.read_text(), flags=re.M) == re.sub(r"^nwritten.*$", "", before[p],
                                                                                 flags=re.M)


def _column(cold_s: float, rss: float) -> dict:
    return {"cold": speed.Runs([cold_s, 9.0, 0.1], [0.8, 0.9, 0.7]), "cli": speed.Runs([0.5], [0.4]), "rss": rss,
            "dataset": {"p50": 2.0}}


def test_a_target_is_judged_only_where_its_count_was_measured():
    args = argparse.Namespace(clients=[1])
    verdicts = {v.target: v for v in speed.targets({6: _column(1.5, 120), 100: _column(2.0, 250)}, args)}
    cold = verdicts["cold first /recommend <= 1 s at 6 datasets"]
    assert (cold.met, cold.cpu_met) == (False, True)  # the median wall time, 1.5 s; its CPU 0.8 s
    assert cold.measured == "1.50 (min 0.10; CPU 0.80)"
    assert verdicts["cold first /recommend <= 3 s at 10,000 datasets"].met is None
    assert verdicts["CLI recommend <= 1 s at 6 datasets"].met is True
    assert verdicts["RSS <= 200 MB (peak, at 100 datasets)"][1:3] == ("250 MB", False)
