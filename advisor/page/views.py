"""The pages: the overview at `/`, one pool (`/pool/<name>`), one probe run (`/probes/<id>`) and
the error page. Each is a function of what advisor.page.gather read; all text is escaped here."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from advisor.engine.models import PoolInfo
from advisor.evidence.parameters import ParameterEvidence
from advisor.hostmodel.facts import Host, Pool
from advisor.page.changes import changes_section
from advisor.page.chart import candidates_svg
from advisor.page.gather import Answer, DatasetAnswer, ProbeRun, Stored
from advisor.page.markup import (
    dataset_anchor,
    dataset_href,
    document,
    esc,
    link,
    percent,
    pool_href,
    probe_href,
    recommend_href,
    size,
    table,
    when,
)
from advisor.page.recommendations import answer_section
from advisor.store.probes import RunRow


def _health(health: str) -> str:
    return f'<span class="{"health-ONLINE" if health == "ONLINE" else "health-bad"}">{esc(health)}</span>'


def _host_line(host: Host) -> str:
    zfs = host.zfs
    version = zfs.kmod_version or zfs.userland_version or "unknown"
    line = (f"<p>OpenZFS {esc(version)}, kernel {esc(host.kernel or 'unknown')}, facts collected "
            f"{esc(when(host.collected_at))}.</p>")
    if not zfs.present:
        line += f'<p class="health-bad">ZFS is not present: {esc(zfs.reason or "no reason given")}</p>'
    return line


def _open_count(answer: Answer) -> str:
    return esc(len(answer.open())) if answer.response else f'<span class="muted">{esc(answer.error)}</span>'


def _runs(runs: list[RunRow], host: Host) -> str:
    rows = [[link(probe_href(r.id), r.id), _pool_link(r.pool, host), esc(r.workload), esc(r.status),
             esc(when(r.started_at)), esc(when(r.ended_at)), esc(r.reason or "")] for r in runs]
    return table(["Run", "Pool", "Workload", "Status", "Started", "Ended", "Reason"], rows)


def _pool_link(pool: str, host: Host) -> str:
    """A link to the pool's page when the pool is on this host (a run may outlive its pool)."""
    return link(pool_href(pool), pool) if host.pool(pool) is not None else esc(pool)


def _probes_section(stored: Stored, host: Host, pool: str | None = None) -> str:
    if stored.error:
        return f'<p class="health-bad">{esc(stored.error)}</p>'
    if not stored.runs:
        return f"<p>No probe run is stored{' for this pool' if pool else ''}.</p>"
    return _runs(stored.runs, host)


def overview(host: Host, pools: list[PoolInfo], general: dict[str, Answer], datasets: list[DatasetAnswer],
             missing: list[tuple[str, str]], stored: Stored, changes: Sequence[dict[str, Any]] = ()) -> str:
    rows = [[link(pool_href(p.name), p.name), _health(p.health), esc(size(p.size_bytes)), esc(percent(p.capacity_ratio)),
             esc(percent(p.fragmentation_ratio)), esc(p.media or "-"), esc(p.layout or "-"), esc(len(p.datasets)),
             _open_count(general[p.name]), "yes" if p.name in stored.efficiency else "-"] for p in pools]
    body = [f"<h1>zfs-advisor on {esc(host.hostname or 'this host')}</h1>", _host_line(host), "<h2>Pools</h2>",
            table(["Pool", "Health", "Size", "Capacity", "Fragmentation", "Media", "Layout", "Datasets",
                   "Open advice (any workload)", "Efficiency report"], rows) if pools
            else "<p>No pool is imported.</p>", "<h2>Datasets with a workload (named, or recognised from their I/O)</h2>"]
    if datasets:
        body.append(table(["Dataset", "Workload", "Pool", "Open advice"],
                          [[link(dataset_href(d.dataset), d.dataset), esc(d.label),
                            link(pool_href(d.dataset.split("/", 1)[0]), d.dataset.split("/", 1)[0]),
                            _open_count(d.answer)] for d in datasets]))
    else:
        body.append("<p>The <code>workloads</code> setting names no dataset on this host and no dataset's I/O was "
                    "recognised as a workload yet, so the advice here is for any workload. <code>/recommend?workload=NAME&amp;dataset=POOL/DATASET</code> gives one "
                    "dataset's.</p>")
    if missing:
        body.append("<p>Named in the <code>workloads</code> setting but not on this host: "
                    + ", ".join(f"{esc(d)} ({esc(w)})" for d, w in missing) + ".</p>")
    body += ["<h2>Probe runs</h2>", _probes_section(stored, host),
             "<h2>Setting changes and their effect</h2>", changes_section(list(changes))]
    return document(host.hostname or "zfs-advisor", "".join(body))


def _pool_facts(pool: Pool, info: PoolInfo) -> str:
    scan = pool.scan
    rows = [("Health", _health(pool.health)), ("Size", esc(size(pool.size_bytes))),
            ("Allocated", esc(size(pool.allocated_bytes))), ("Free", esc(size(pool.free_bytes))),
            ("Capacity", esc(percent(pool.capacity_ratio))), ("Fragmentation", esc(percent(pool.fragmentation_ratio))),
            ("Dedup ratio", esc("-" if pool.dedup_ratio is None else f"{pool.dedup_ratio:.2f}")),
            ("Media", esc(info.media or "-")), ("Layout", esc(info.layout or "-")),
            ("Smallest ashift", esc(info.ashift_min if info.ashift_min is not None else "-")),
            ("Last scan", esc(f"{scan.function} {scan.state}, {scan.errors} errors" if scan.function != "none"
                              else "none")),
            ("Errors", esc(pool.errors or "-"))]
    if pool.status:
        rows.append(("Status", esc(pool.status)))
    return table(["Fact", "Value"], rows)


def _dataset_rows(host: Host, pool: str, workloads: dict[str, str], answers: dict[str, DatasetAnswer]) -> list[list[str]]:
    rows = []
    for ds in host.datasets:
        if ds.pool != pool:
            continue
        answer = answers.get(ds.name)
        workload = answer.label if answer else workloads.get(ds.name, "-")
        rows.append([link("#" + dataset_anchor(ds.name), ds.name) if answer else esc(ds.name), esc(ds.type),
                     esc(workload), esc(_block_size(ds.value("recordsize"))),
                     esc(ds.value("compression") or "-"), esc(size(ds.bytes_value("used"))),
                     _open_count(answer.answer) if answer else "-"])
    return rows


def _block_size(value: str | None) -> str:
    """zfs get -p prints bytes: 131072 reads as 128K."""
    return size(int(value)) if value and value.isdigit() else value or "-"


def _efficiency(report: Any) -> str:
    """The stored report's results as they are: direction (or test), ratio, diagnosis."""
    if not report:
        return ("<p>No efficiency report is stored for this pool (<code>zfs-advisor probe --pool NAME --efficiency"
                "</code> measures one).</p>")
    parts = []
    lists = [report.get(key) for key in ("results", "random_results")] if isinstance(report, dict) else []
    for result in [r for results in lists if isinstance(results, list) for r in results]:
        if not isinstance(result, dict):
            continue  # stored by another version: shown as far as it has the fields read here
        ratio = result.get("ratio")
        name = result.get("test") or result.get("direction") or "result"
        iops = result.get("unit") == "IOPS"
        measured = result.get("measured", result.get("measured_bytes_per_second"))
        expected = result.get("expected", result.get("expected_bytes_per_second"))
        parts.append(f"<h3>{esc(name)}: {esc(percent(ratio) if isinstance(ratio, (int, float)) else '-')} "
                     "of what the layout should give</h3>")
        if isinstance(measured, (int, float)) and isinstance(expected, (int, float)):
            rate = (lambda v: f"{v:,.0f} IOPS") if iops else (lambda v: f"{size(v)}/s")
            parts.append(f"<p>measured {esc(rate(measured))}, the layout's {esc(rate(expected))}"
                         + (f" ({esc(result['expectation'])})" if result.get("expectation") else "") + "</p>")
        sentences = [s for s in result.get("diagnosis") or [] if isinstance(s, str)]
        if sentences:
            parts.append("<ul>" + "".join(f"<li>{esc(s)}</li>" for s in sentences) + "</ul>")
    if isinstance(report, dict) and report.get("note"):
        parts.append(f'<p class="muted">{esc(report["note"])}</p>')
    return "".join(parts) or "<p>The stored efficiency report has no results.</p>"


def pool_page(host: Host, pool: Pool, info: PoolInfo, general: Answer, datasets: list[DatasetAnswer],
              workloads: dict[str, str], stored: Stored, changes: Sequence[dict[str, Any]] = ()) -> str:
    shown: set[tuple] = set()
    answers = {d.dataset: d for d in datasets}
    body = [f"<h1>Pool {esc(pool.name)}</h1>", _host_line(host), _pool_facts(pool, info),
            "<h2>Advice for the pool (any workload)</h2>", answer_section(general, shown),
            f"<h2>Datasets ({len(info.datasets)})</h2>",
            table(["Dataset", "Type", "Workload", "recordsize", "compression", "Used", "Open advice"],
                  _dataset_rows(host, pool.name, workloads, answers))]
    for d in datasets:
        body += [f'<h3 id="{esc(dataset_anchor(d.dataset))}">{esc(d.dataset)}: workload {esc(d.label)}</h3>',
                 answer_section(d.answer, shown, recommend_href(d.workload, d.dataset))]
    body += ["<h2>Efficiency</h2>", _efficiency(stored.efficiency.get(pool.name) if not stored.error else None),
             "<h2>Probe runs</h2>", _probes_section(stored, host, pool.name),
             "<h2>Setting changes and their effect</h2>", changes_section(list(changes), pool.name)]
    return document(f"pool {pool.name}", "".join(body))


def _ratio(c) -> str:
    if c.effect_ratio is None:
        return "-"
    interval = f" ({c.effect_interval[0]:.2f} to {c.effect_interval[1]:.2f})" if c.effect_interval else ""
    return f"&times;{c.effect_ratio:.2f}{esc(interval)}"


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.2f} ms"


def _parameter(ev: ParameterEvidence) -> str:
    rows = [[esc(c.value) + (" (baseline)" if c.baseline else ""), esc(c.rank), esc(c.repeats), esc(f"{c.iops:,.0f}"),
             esc(f"{c.iops_min:,.0f} to {c.iops_max:,.0f}"), _ratio(c), "yes" if c.distinguishable else "no",
             esc(_ms(c.write_p99_seconds)), esc(_ms(c.read_p99_seconds))] for c in ev.candidates]
    return (f"<h2>{esc(ev.parameter)}</h2><p>Baseline {esc(ev.baseline or 'none')}, most IOPS: {esc(ev.best)}.</p>"
            + candidates_svg(ev)
            + table(["Candidate", "Rank", "Repeats", "IOPS (mean)", "IOPS (range)", "IOPS vs baseline (90% interval)",
                     "Told apart", "write p99 (worst)", "read p99 (worst)"], rows))


def probe_page(host: Host, found: ProbeRun) -> str:
    run = found.run
    facts = [("Pool", _pool_link(run.pool, host)), ("Workload", esc(run.workload)), ("Role", esc(run.role or "-")),
             ("Status", esc(run.status)), ("Reason", esc(run.reason or "-")), ("Started", esc(when(run.started_at))),
             ("Ended", esc(when(run.ended_at))), ("Host", esc(run.host or "-")),
             ("Written", esc(size(run.written_bytes) if run.written_bytes is not None else "-")),
             ("Budget", esc(", ".join(f"{k} {v}" for k, v in sorted(run.budget.items())) or "-")),
             ("Pace set by", esc(found.bound.verdict or "not judged"))]
    body = [f"<h1>Probe run {esc(run.id)}</h1>", table(["", ""], facts)]
    body += [f"<p>Set aside as evidence about the storage ({esc(a.parameter)}, {esc(a.repeats)} repeats CPU-bound): "
             f"{esc(a.reason)}. No answer goes by this run's {esc(a.parameter)}.</p>" for a in found.bound.set_aside]
    body += [_parameter(ev) for ev in found.parameters] or ["<p>No results are stored for this run.</p>"]
    body += [f"<details><summary>fio job</summary><pre>{esc(job)}</pre></details>" for job in found.jobs]
    return document(f"probe run {run.id}", "".join(body))


def error_page(status: int, reason: str, valid: Sequence[tuple[str, str]] = ()) -> str:
    """`valid`: (href, text) of the pages that do exist."""
    items = "".join(f"<li>{link(href, text)}</li>" for href, text in valid)
    return document(f"{status}", f"<h1>{esc(status)}</h1><p>{esc(reason)}</p>"
                    + (f"<p>Valid:</p><ul>{items}</ul>" if items else ""))
