"""The recorded setting changes on a page (docs/changes.md): when, where, old -> new, the advice it
followed, the verdict and the headline ratios with their intervals. All text escaped here."""
from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from advisor.engine.units import shown_value
from advisor.page.markup import dataset_href, esc, link, table, when

SHOWN = 20
COLUMNS = ("iops", "bandwidth", "write_latency_p99")


def _effect(record: dict[str, Any], metric: str) -> str:
    found = [e for e in record.get("effects", []) if e.get("metric") == metric]
    if not found:
        return "-"
    cells = []
    for e in found:  # one per pool for a module parameter
        ratio, interval = e.get("ratio"), e.get("interval")
        text = "-" if ratio is None else f"×{ratio:.2f}"
        if interval:
            text += f" ({interval[0]:.2f} to {interval[1]:.2f})"
        where = f"{e.get('pool')}: " if record.get("scope") == "module" else ""
        cells.append(esc(f"{where}{text}, {e.get('verdict')}"))
    return "<br>".join(cells)


def _followed(record: dict[str, Any]) -> str:
    f = record.get("followed_recommendation")
    return esc(f"yes: {f.get('workload')}, rule {f.get('rule')}") if isinstance(f, dict) else "-"


def changes_section(records: list[dict[str, Any]], pool: str | None = None) -> str:
    if not records:
        return ("<p>No change of a tracked setting was seen" + (" on this pool" if pool else "")
                + " since the records began (<a href=\"/v1/changes\">/v1/changes</a>).</p>")
    rows = []
    for r in records[:SHOWN]:
        where = link(dataset_href(r["dataset"]), r["dataset"]) if r.get("dataset") else "module parameter"
        param = r["parameter"]
        rows.append([esc(when(r.get("detected_at_epoch"))), where, esc(param),
                     esc(f"{shown_value(param, r['old'])} -> {shown_value(param, r['new'])}"), _followed(r),
                     esc(r.get("verdict")), *(_effect(r, m) for m in COLUMNS)])
    query = "?" + urlencode({"pool": pool}) if pool else ""
    return (table(["Seen", "Where", "Setting", "Old -> new", "Followed advice", "Verdict", "IOPS after/before",
                   "Bandwidth after/before", "Write p99 after/before (pool)"], rows)
            + f'<p class="muted">The newest {SHOWN}; every record with its windows, spread and notes: '
            + link("/v1/changes" + query, "/v1/changes" + query) + " (docs/changes.md says what a verdict "
            "can and cannot tell).</p>")
