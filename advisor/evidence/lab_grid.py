"""What the lab measured of the module parameters the rules advise: per medium, workload and
parameter, the probe evidence of the lab's grid (advisor/model/data/module-grid-zfs2.3.csv,
written by tests/lab/prior-grid --module-param; docs/model.md, "Module parameters in the lab").

A module parameter is host-wide, and what it does depends on the disks behind it far more than
on the rest of the host: the lab measured each on one SSD and one HDD layout, and an answer for a
pool of that medium reads the layout's measurement as the evidence of the lab, weaker than a probe
of the pool itself (advisor/engine/decide.py).

Pure: `read_module_grid` takes the CSV's text (the caller reads the file once, at start-up).
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass, replace

from advisor.evidence.parameters import ParameterEvidence, summarize


@dataclass(frozen=True)
class GridRow:
    """One repeat of one candidate of the grid, in the shape of a stored probe result (MeasuredRow)."""
    run_id: int
    value: str
    baseline: bool
    iops: float
    read_p99: float | None
    write_p99: float | None
    sync_p99: float | None
    compress_ratio: float | None
    arc_hit_ratio: float | None
    pool: dict


@dataclass(frozen=True)
class LabMeasurement:
    """One module parameter as the lab measured it for one workload on one layout."""
    layout: str
    media: str
    zfs_version: str
    workload: str
    evidence: ParameterEvidence
    runs: int = 1  # grid runs pooled in `evidence`

    @property
    def where(self) -> str:
        runs = f", {self.runs} runs pooled" if self.runs > 1 else ""
        return (f"the lab's {self.layout} pool ({self.media.upper()}s, OpenZFS {self.zfs_version}, "
                f"workload {self.workload}{runs}; not this host: docs/model.md, \"Module parameters in the lab\")")


def _seconds(us: str) -> float | None:
    return float(us) / 1e6 if us not in ("", None) else None


def _number(text: str) -> float | None:
    return float(text) if text not in ("", None) else None


def read_module_grid(text: str) -> dict[tuple[str, str, str], LabMeasurement]:
    """(media, workload, parameter) -> the lab's measurement (the first layout of that medium in the
    file, every run of it pooled).

    A grid's run measures each parameter's baseline (its default) as a candidate of its own: the same
    settings, every module parameter at its default, measured once per parameter.  They are pooled
    as the baseline of every parameter: their spread is the run's drift between candidates (15 % on
    the SSD mirror's PostgreSQL cell, more than the repeats of one candidate show), and an effect
    must stand out of it.  Runs of the same cell are pooled the same way, so the drift between runs
    is noise too: an effect one run measured and the next did not (Kafka's +39 % with 64 MiB of
    dirty data on the HDD raidz, 2026-11-28, +2 % on 2026-11-29) does not stand out."""
    found: dict[tuple[str, str, str], list[tuple[str, GridRow]]] = {}
    runs: dict[tuple[str, str, str], set[str]] = {}
    versions: dict[tuple[str, str, str], str] = {}
    for r in csv.DictReader(io.StringIO(text)):
        cell = (r["media"], r["workload"], r["layout"])
        runs.setdefault(cell, set()).add(r["run_id"])
        row = GridRow(run_id=len(runs[cell]), value=r["value"], baseline=r["baseline"] == "1", iops=float(r["iops"]),
                      read_p99=_seconds(r["read_p99_us"]), write_p99=_seconds(r["write_p99_us"]),
                      sync_p99=_seconds(r.get("sync_p99_us", "")), compress_ratio=_number(r["compress_ratio"]),
                      arc_hit_ratio=_number(r.get("arc_hit_ratio", "")),
                      pool={"layout": r["layout"], "media": r["media"]})
        found.setdefault(cell, []).append((r["parameter"], row))
        versions[cell] = r["zfs_version"]
    out: dict[tuple[str, str, str], LabMeasurement] = {}
    for (media, workload, layout), rows in found.items():
        defaults = [row for _, row in rows if row.baseline]
        for parameter in dict.fromkeys(p for p, _ in rows):
            if (media, workload, parameter) in out:
                continue
            own = [row for p, row in rows if p == parameter]
            base = next((row.value for row in own if row.baseline), None)
            if base is None:
                continue
            pooled = [replace(row, value=base) for row in defaults]
            evidence = summarize(parameter, pooled + [row for row in own if not row.baseline])
            out[(media, workload, parameter)] = LabMeasurement(
                layout=layout, media=media, zfs_version=versions[(media, workload, layout)], workload=workload,
                evidence=evidence, runs=len(runs[(media, workload, layout)]))
    return out
