"""Named kstats as typed metric families: one family per field, counters or gauges.

SPL named kstats (/proc/spl/kstat/zfs/...) carry no type: a field is either a
count since module load (a counter) or a level (a gauge). A `KStatSpec` says
which is which for one kstat, which fields are in bytes, and gives curated
descriptions for the fields that matter most; every other numeric field is
still exported (typed by the spec's rules), so a new OpenZFS release adds
families instead of losing data. String fields are skipped.

Names (https://prometheus.io/docs/practices/naming/): `<prefix>_<field>` with the
kstat's own prefix dropped from the field (dmu_tx_assigned -> zfs_dmu_tx_assigned_total);
`_bytes` added to fields in bytes, `_total` to counters, the unit always last
(`KStatSpec.names` reorders a field such as cache_size_bytes_max); a counter ending in
`_count` drops it (zil_commit_count -> zfs_zil_commit_total: `_count` is the histograms');
a gauge ending in `_count` ends in `_entries` instead. A field with an index or a kind in its
name (scatter_order_3, trim_bytes_written) is one series of a family with that part as a
label (`KStatSpec.split`: zfs_abd_scatter_chunks{order="3"}).
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from prometheus_client.core import Metric

from advisor.exporters.exposition import RowsFamily, row_line
from advisor.hostmodel.facts import KStat


@dataclass(frozen=True)
class KStatSpec:
    prefix: str  # metric name prefix, e.g. "zfs_arc"
    path: str  # the source, named in HELP, e.g. "/proc/spl/kstat/zfs/arcstats"
    gauges: str = r"$^"  # regex (fullmatch) of fields that are levels; the rest are counters
    counters: str = r"$^"  # regex of fields that are counters even if `gauges` matches
    bytes: str = r"$^"  # regex of fields in bytes (gauges get a `_bytes` suffix)
    strip: str = ""  # field prefix dropped in the metric name, e.g. "dmu_tx_"
    names: dict[str, str] = field(default_factory=dict)  # field -> metric name (without prefix/suffix)
    # (regex with named groups, metric name): the fields it fullmatches are one family, the groups its labels
    split: tuple[tuple[str, str], ...] = ()
    help: dict[str, str] = field(default_factory=dict)  # field -> description
    scale: dict[str, float] = field(default_factory=dict)  # field -> factor to base units

    def compiled(self) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
        return re.compile(self.gauges), re.compile(self.counters), re.compile(self.bytes)


# What `KStatFamilies.written` gives: (fields, rows as (label values, value), their lines)
Written = tuple[tuple[str, ...], tuple[tuple[tuple[str, ...], float], ...], tuple[str, ...]]

# (metric name, HELP, type, extra label names, their values) of a field, worked out once per process
_DESCRIBED: dict[tuple[int, str, str], tuple[str, str, str, tuple[str, ...], tuple[str, ...]]] = {}


class KStatFamilies:
    """Families for one kstat kind, filled from one or more kstats (e.g. one per pool)."""

    def __init__(self, spec: KStatSpec, labelnames: Sequence[str] = (), source: str | None = None):
        self.spec = spec
        self.labelnames = list(labelnames)
        self.source = source or spec.path
        self._gauges, self._counters, self._bytes = _compiled(spec)
        self._families: dict[str, RowsFamily] = {}  # metric name -> family
        self._fields: dict[str, tuple[RowsFamily, tuple[str, ...]]] = {}  # field -> (family, split label values)
        self._lines_only: KStatFamilies | None = None  # what `written` describes its lines with

    def _field(self, name: str) -> tuple[RowsFamily, tuple[str, ...]]:
        metric, doc, typ, labelnames, values = self._describe(name)
        family = self._families.get(metric)
        if family is None:
            family = self._families[metric] = RowsFamily.unchecked(metric, doc, typ, [*self.labelnames, *labelnames])
        known = self._fields[name] = (family, values)
        return known

    def _describe(self, name: str) -> tuple[str, str, str, tuple[str, ...], tuple[str, ...]]:
        """What a field becomes: worked out once per process (a scrape asks ~300 times)."""
        key = (id(self.spec), self.source, name)  # specs are module constants
        known = _DESCRIBED.get(key)
        if known is not None:
            return known
        spec = self.spec
        is_gauge = bool(self._gauges.fullmatch(name)) and not self._counters.fullmatch(name)
        in_bytes = bool(self._bytes.fullmatch(name))
        base, labelnames, values, source = _split(spec, name)
        if base is None:
            stripped = name[len(spec.strip):] if spec.strip and name.startswith(spec.strip) else name
            base = spec.names.get(name) or stripped
        tokens = base.split("_")
        if in_bytes and "bytes" not in tokens:
            base += "_bytes"
        elif tokens[-1] == "count" and len(tokens) > 1:
            base = base[: -len("_count")] if not is_gauge else base[: -len("count")] + "entries"
        description = (spec.help.get(name) or spec.help.get(base)
                       or ("Bytes" if in_bytes else "Level" if is_gauge else "Count"))
        doc = f"{description}. Source: {self.source} {source}."
        RowsFamily(f"{spec.prefix}_{base}", doc, "gauge", ())  # validates the name, once
        described = _DESCRIBED[key] = (f"{spec.prefix}_{base}", doc, "gauge" if is_gauge else "counter",
                                       labelnames, values)
        return described

    def add(self, kstat: KStat, labelvalues: Sequence[str] = (), only: Iterable[str] | None = None) -> None:
        """One sample per integer field (only those in `only`, if given)."""
        labelvalues = tuple(labelvalues)
        scale = self.spec.scale
        values = kstat.values
        names = values if only is None else [n for n in only if n in values]
        fields = self._fields
        for name in names:
            value = values[name]
            if isinstance(value, int):
                family, extra = fields.get(name) or self._field(name)
                family.rows.append((labelvalues + extra if extra else labelvalues,
                                    value * scale[name] if name in scale else value))

    def written(self, kstat: KStat, labelvalues: tuple[str, ...], only: Iterable[str] | None = None) -> Written:
        """(fields, rows, their lines) that `add` would add for `kstat`: for a collector to keep
        while the kstat stays the same and hand back to `add_written`."""
        scale = self.spec.scale
        values = kstat.values
        names = values if only is None else [n for n in only if n in values]
        fields, rows, lines = [], [], []
        # families of their own, which nothing is added to: these must come into being in the
        # order add_written meets their fields, as add's would
        if self._lines_only is None:
            self._lines_only = KStatFamilies(self.spec, self.labelnames, self.source)
        describe = self._lines_only
        for name in names:
            value = values[name]
            if isinstance(value, int):
                family, extra = describe._fields.get(name) or describe._field(name)
                row = (labelvalues + extra if extra else labelvalues, value * scale[name] if name in scale else value)
                fields.append(name)
                rows.append(row)
                lines.append(row_line(family, *row))
        return tuple(fields), tuple(rows), tuple(lines)

    def add_written(self, kept: Sequence[Written]) -> None:
        """`add` for each kstat that `written` described, in order, on families not added to
        before: a family at a time when all have the same fields, each its own family (the usual
        case), else a row at a time."""
        if not kept:
            return
        first = kept[0][0]
        families = [(self._fields.get(name) or self._field(name))[0] for name in first]
        if (all(k[0] == first for k in kept) and len(set(map(id, families))) == len(families)
                and not any(f.rows for f in families)):
            for i, family in enumerate(families):
                family.rows = [k[1][i] for k in kept]
                family.lines = [k[2][i] for k in kept]
            return
        for fields, rows, lines in kept:
            for name, row, line in zip(fields, rows, lines, strict=True):
                family = (self._fields.get(name) or self._field(name))[0]
                family.rows.append(row)
                if family.lines is None:
                    family.lines = []
                family.lines.append(line)

    def __iter__(self) -> Iterator[Metric]:
        return iter(self._families.values())


def _split(spec: KStatSpec, name: str) -> tuple[str | None, tuple[str, ...], tuple[str, ...], str]:
    """(metric name, label names, label values, the field pattern for HELP) of a field `spec.split`
    makes a labelled series; (None, (), (), name) for any other field."""
    for pattern, base in spec.split:
        if match := re.fullmatch(pattern, name):
            labels = tuple(match.groupdict())
            source = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"<\1>", pattern)
            return base, labels, tuple(match.group(label) for label in labels), source
    return None, (), (), name


_COMPILED: dict[int, tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]] = {}


def _compiled(spec: KStatSpec) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    if (patterns := _COMPILED.get(id(spec))) is None:
        patterns = _COMPILED[id(spec)] = spec.compiled()
    return patterns


def kstat_families(spec: KStatSpec, kstat: KStat | None) -> Iterable[Metric]:
    if kstat is None:
        return ()
    families = KStatFamilies(spec)
    families.add(kstat)
    return families
