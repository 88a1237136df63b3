"""Small HTML helpers: every text and attribute value goes through `esc` (html.escape), every
link to a page of the daemon through `pool_href` / `probe_href` (names percent-encoded)."""
from __future__ import annotations

import html
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, urlencode

from advisor.engine.units import format_size


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def pool_href(pool: str) -> str:
    return "/pool/" + quote(pool, safe="")


def probe_href(run_id: int) -> str:
    return f"/probes/{int(run_id)}"


def dataset_anchor(dataset: str) -> str:
    """The id of a dataset's advice on its pool's page (percent-encoded: an id has no spaces)."""
    return "dataset-" + quote(dataset, safe="")


def dataset_href(dataset: str) -> str:
    return pool_href(dataset.split("/", 1)[0]) + "#" + dataset_anchor(dataset)


def recommend_href(workload: str, dataset: str) -> str:
    """/recommend's text answer for a dataset and its workload."""
    return "/recommend?" + urlencode({"workload": workload, "dataset": dataset, "format": "text"})


def link(href: str, text: Any) -> str:
    return f'<a href="{esc(href)}">{esc(text)}</a>'


def percent(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio * 100:.0f}%"


def size(n: int | float | None) -> str:
    return format_size(n)


def when(epoch: float | datetime | None) -> str:
    """A moment in UTC, to the second (absolute: a cached page does not go stale in its text)."""
    if epoch is None:
        return "-"
    moment = epoch if isinstance(epoch, datetime) else datetime.fromtimestamp(epoch, UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def table(headers: Iterable[str], rows: Iterable[Iterable[str]], css: str = "") -> str:
    """Cells are HTML already (escape them on the way in); headers are plain text (all empty: no
    header row)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    head = f"<thead><tr>{head}</tr></thead>" if head.replace("<th></th>", "") else ""
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f'<table class="{esc(css)}">{head}<tbody>{body}</tbody></table>'


STYLE = """
body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1200px;padding:0 1em 3em;color:#1d1d1f;background:#fff}
header{border-bottom:1px solid #ccc;margin-bottom:1em;padding:.6em 0}
header a{margin-right:1em}
h1{font-size:1.5em;margin:.4em 0}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #eee}
h3{font-size:1.05em;margin:1.2em 0 .4em}
table{border-collapse:collapse;margin:.4em 0 1em}th,td{border:1px solid #ddd;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f4f4f6}td.num,th.num{text-align:right}
code,pre{font:13px/1.4 ui-monospace,monospace;background:#f4f4f6;padding:0 .25em}
pre{padding:.6em;overflow:auto;white-space:pre-wrap}
.rec{border:1px solid #ddd;border-left:6px solid #999;padding:.3em .9em;margin:.6em 0}
.rec.change{border-left-color:#c2410c}.rec.undecided{border-left-color:#a16207}.rec.passed{border-left-color:#15803d}
.badge{display:inline-block;padding:0 .45em;border-radius:3px;color:#fff;background:#666;font-size:.85em}
.badge.change{background:#c2410c}.badge.undecided{background:#a16207}.badge.passed{background:#15803d}
.health-ONLINE{color:#15803d;font-weight:600}.health-bad{color:#b91c1c;font-weight:600}
.muted{color:#666}.chart{margin:.4em 0}
"""


def document(title: str, body: str) -> str:
    """A whole page: inline style, no script, no request beyond this one."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            "<link rel=\"icon\" href=\"data:,\">"  # no favicon request: the page is one request
            f"<title>{esc(title)} - zfs-advisor</title><style>{STYLE}</style></head><body>"
            f"<header><a href=\"/\">zfs-advisor</a><a href=\"/recommend?format=text\">/recommend</a>"
            f"<a href=\"/v1/pools\">/v1/pools</a><a href=\"/v1/probes\">/v1/probes</a>"
            f"<a href=\"/metrics\">/metrics</a></header><main>{body}</main></body></html>\n")
