"""An inline SVG chart of one probed parameter's candidates: mean IOPS with the range of the
repeats, and the worst write p99, each bar labelled with its value (the numbers are text in the
SVG and in the table beside it, so the chart is readable without the picture)."""
from __future__ import annotations

from advisor.evidence.parameters import CandidateEvidence, ParameterEvidence
from advisor.page.markup import esc

ROW = 26  # px per candidate
LABEL = 130  # px for the candidate's value on the left
BAR = 300  # px of the longest bar
PANEL = LABEL + BAR + 110  # label, bar, the value's text
TOP = 22  # the panel's title


def _milliseconds(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.2f} ms"


def _panel(x0: int, title: str, candidates: list[CandidateEvidence], values: list[float | None],
           texts: list[str], ranges: list[tuple[float, float] | None]) -> str:
    present = [v for v in values if v is not None] + [hi for r in ranges if r for hi in (r[1],)]
    top = max(present, default=0.0) or 1.0
    parts = [f'<text x="{x0}" y="15" font-weight="600">{esc(title)}</text>']
    for i, (cand, value, text, span) in enumerate(zip(candidates, values, texts, ranges, strict=True)):
        y = TOP + i * ROW
        name = cand.value + (" (baseline)" if cand.baseline else "")
        parts.append(f'<text x="{x0 + LABEL - 6}" y="{y + 16}" text-anchor="end">{esc(name)}</text>')
        width = 0.0 if value is None else max(1.0, BAR * value / top)
        fill = "#6b7280" if cand.baseline else "#2563eb"
        parts.append(f'<rect x="{x0 + LABEL}" y="{y + 4}" width="{width:.1f}" height="{ROW - 8}" fill="{fill}">'
                     f"<title>{esc(name)}: {esc(text)}</title></rect>")
        if span is not None:  # the repeats' range, a line across the bar's end
            lo, hi = (x0 + LABEL + BAR * v / top for v in span)
            parts.append(f'<line x1="{lo:.1f}" x2="{hi:.1f}" y1="{y + ROW / 2}" y2="{y + ROW / 2}" stroke="#111" '
                         'stroke-width="2"/>')
        end = x0 + LABEL + max(width, BAR * span[1] / top if span else 0.0)
        parts.append(f'<text x="{end + 6:.1f}" y="{y + 16}">{esc(text)}</text>')
    return "".join(parts)


def candidates_svg(ev: ParameterEvidence) -> str:
    cands = ev.candidates
    height = TOP + ROW * len(cands) + 6
    iops = _panel(0, "IOPS (mean; line: range of the repeats)", cands, [c.iops for c in cands],
                  [f"{c.iops:,.0f}" for c in cands],
                  [(c.iops_min, c.iops_max) if c.repeats > 1 else None for c in cands])
    p99 = _panel(PANEL + 20, "write p99 (worst repeat; shorter is better)", cands,
                 [c.write_p99_seconds for c in cands], [_milliseconds(c.write_p99_seconds) for c in cands],
                 [None] * len(cands))
    label = f"{ev.parameter}: IOPS and write p99 of each candidate, probe run {ev.run_id}"
    return (f'<svg class="chart" role="img" aria-label="{esc(label)}" xmlns="http://www.w3.org/2000/svg" '
            f'width="{2 * PANEL + 20}" height="{height}" viewBox="0 0 {2 * PANEL + 20} {height}" '
            'font-family="system-ui,sans-serif" font-size="12">'
            f"<title>{esc(label)}</title>{iops}{p99}</svg>")
