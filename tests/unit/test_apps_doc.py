"""docs/apps.md's fidelity table is the one the committed application grids give
(advisor/model/probe_fidelity.py's `markdown`), so the page cannot drift from the data."""
from __future__ import annotations

import re
from pathlib import Path

from advisor.model.app_grids import load_grids
from advisor.model.probe_fidelity import fidelity, markdown

ROOT = Path(__file__).resolve().parents[2]


def test_the_fidelity_table_in_docs_is_the_committed_grids_one():
    doc = (ROOT / "docs" / "apps.md").read_text()
    found = re.search(r"<!-- fidelity:begin -->\n(.*?)\n<!-- fidelity:end -->", doc, re.S)
    assert found, "docs/apps.md lost its fidelity table's markers"
    grids = load_grids(ROOT / "tests" / "lab" / "apps-data")
    assert found.group(1) == markdown(fidelity(grids), grids), \
        "docs/apps.md's fidelity table is stale: regenerate it with `python -m advisor.model.probe_fidelity`"


def test_the_table_has_a_row_per_application_cell_with_its_fio_job_beside():
    grids = load_grids(ROOT / "tests" / "lab" / "apps-data")
    rows = fidelity(grids)
    table = markdown(rows, grids).splitlines()
    assert len(table) == 2 + len(rows) and rows
    for line, row in zip(table[2:], rows, strict=True):
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[4] == row.fio_best and cells[5] == row.app_best
