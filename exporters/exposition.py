"""Text exposition (format 0.0.4) of metric families: the bytes generate_latest() writes, faster.

prometheus_client's generate_latest() re-validates every label name of every
sample (regexes per label, per sample); at 10,000 datasets (~170,000
samples) that alone takes seconds. This writer produces byte-for-byte the
same output (tests/unit/test_exporter_exposition.py compares them) but checks
each distinct name once and formats each distinct label set and value once,
so rendering costs a few microseconds per sample.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache

from prometheus_client.core import Metric
from prometheus_client.openmetrics.exposition import escape_label_name, escape_metric_name
from prometheus_client.samples import Sample

from advisor.exporters.base import SAMPLE_SUFFIX, go_float

_TYPES = {"counter": "counter", "info": "gauge", "stateset": "gauge", "gaugehistogram": "histogram", "unknown": "untyped"}
_OPENMETRICS_ONLY = ("_created", "_gsum", "_gcount")


@lru_cache(maxsize=4096)
def _name(name: str) -> str:
    return escape_metric_name(name)


@lru_cache(maxsize=4096)
def _label(name: str) -> str:
    return escape_label_name(name)


# Values that recur (0, 1, a recordsize) keep their text; at 10,000 datasets with counters of
# their own most values are seen once, and a cache of 65,536 held about 4 MB of them at a 50 %
# hit rate, the same rate as this size (docs/reliability.md).
@lru_cache(maxsize=4096)
def _value(value: float) -> str:
    return go_float(value)


_EXACT = 2 ** 53  # integers below it are exact as floats: their text is their digits


def int_value(value: int) -> str:
    """go_float(value) of an integer (a kstat counter), from its digits, without a float's repr."""
    if 0 <= value < 1_000_000:
        return f"{value}.0"
    if value < 0 or value >= _EXACT:
        return go_float(value)
    whole = str(value)
    digits = whole.rstrip("0")
    return f"{digits[0]}.{digits[1:]}e+{len(whole) - 1:02d}" if len(digits) > 1 else f"{digits}e+{len(whole) - 1:02d}"


def _label_value(value: str) -> str:
    if "\\" in value or "\n" in value or '"' in value:
        return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")
    return value


def _labels(labels: dict[str, str]) -> str:
    return ",".join(f'{_label(k)}="{_label_value(v)}"' for k, v in sorted(labels.items()))


def _line(name: str, labels: dict[str, str], value: float, timestamp, cache: dict[tuple, str]) -> str:
    if labels:
        key = tuple(labels.items())  # the same label set recurs across families (a dataset's 13 series)
        inner = cache.get(key)
        if inner is None:
            inner = cache[key] = _labels(labels)
        text = f"{_name(name)}{{{inner}}} {_value(value)}"
    else:
        text = f"{_name(name)} {_value(value)}"
    if timestamp is not None:
        text += f" {int(float(timestamp) * 1000):d}"
    return text + "\n"


class RowsFamily(Metric):
    """A gauge or counter family kept as rows of (label values, value), not Sample objects.

    Thousands of datasets give tens of thousands of kstat samples a scrape;
    text() writes rows straight, reusing each label set's text from earlier
    scrapes. `samples` builds the Sample list on demand, so prometheus_client
    (generate_latest, a registry) sees an ordinary family.
    """

    def __init__(self, name: str, documentation: str, typ: str, labelnames: Sequence[str],
                 keep_label_text: bool = True):
        super().__init__(name, documentation, typ)
        self.labelnames = tuple(labelnames)
        self.rows: list[tuple[tuple[str, ...], float]] = []
        # The text of each row, when the collector kept it from an earlier scrape (row_line)
        self.lines: list[str] | None = None
        # A label set's text is kept between scrapes when other families and later scrapes
        # write it again (a dataset's name, pool and type); not for one family's own long
        # label sets (a dataset's 20 properties as info labels, 4 MB at 10,000 datasets).
        self.keep_label_text = keep_label_text

    @classmethod
    def unchecked(cls, name: str, documentation: str, typ: str, labelnames: Sequence[str]) -> RowsFamily:
        """A family whose name and type were validated before (KStatFamilies makes ~300 a scrape)."""
        family = cls.__new__(cls)
        family.name, family.documentation, family.unit, family.type = name, documentation, "", typ
        family.labelnames, family.rows, family.keep_label_text = tuple(labelnames), [], True
        family.lines = None
        return family

    def add(self, labelvalues: tuple[str, ...], value: float) -> None:
        self.rows.append((labelvalues, value))

    @property
    def samples(self) -> list[Sample]:
        name = self.name + SAMPLE_SUFFIX.get(self.type, "")
        return [Sample(name, dict(zip(self.labelnames, values, strict=True)), value) for values, value in self.rows]

    @samples.setter
    def samples(self, value: list[Sample]) -> None:
        if value:  # Metric.__init__ sets an empty list
            raise AttributeError("a RowsFamily takes rows (add), not samples")


def has_samples(metric: Metric) -> bool:
    """Whether a family has anything to write (without building a RowsFamily's samples)."""
    return bool(metric.rows) if isinstance(metric, RowsFamily) else bool(metric.samples)


# (label names, label values) -> the text between the braces; label sets recur
# every scrape (a dataset's), so their text is kept, up to a bound.
_ROW_LABELS: dict[tuple[tuple[str, ...], tuple[str, ...]], str] = {}
_ROW_LABELS_MAX = 500_000


def _row_labels(names: tuple[str, ...], values: tuple[str, ...]) -> str:
    key = (names, values)
    inner = _ROW_LABELS.get(key)
    if inner is None:
        if len(_ROW_LABELS) >= _ROW_LABELS_MAX:
            _ROW_LABELS.clear()
        inner = _ROW_LABELS[key] = _labels(dict(zip(names, values, strict=True)))
    return inner


def row_line(metric: RowsFamily, labelvalues: tuple[str, ...], value: float) -> str:
    """The line `_rows` writes for a row of `metric` (a family with label names, keeping label
    text), for a collector that keeps it while the row stays the same."""
    name = _name(metric.name + SAMPLE_SUFFIX.get(metric.type, ""))
    value_text = int_value(value) if type(value) is int else _value(value)
    if not metric.labelnames:
        return f"{name} {value_text}\n"
    return f"{name}{{{_row_labels(metric.labelnames, labelvalues)}}} {value_text}\n"


def _rows(metric: RowsFamily) -> list[str]:
    if metric.lines is not None and len(metric.lines) == len(metric.rows):
        return metric.lines
    name = _name(metric.name + SAMPLE_SUFFIX.get(metric.type, ""))
    names = metric.labelnames
    if not names:
        return [f"{name} {_value(value)}\n" for _, value in metric.rows]
    if not metric.keep_label_text:
        return [f"{name}{{{_labels(dict(zip(names, values, strict=True)))}}} {_value(value)}\n" for values, value in metric.rows]
    return [f"{name}{{{_row_labels(names, values)}}} {_value(value)}\n" for values, value in metric.rows]


@lru_cache(maxsize=8192)
def _header(name: str, documentation: str, mtype: str) -> str:
    doc = documentation.replace("\\", r"\\").replace("\n", r"\n")
    return f"# HELP {_name(name)} {doc}\n# TYPE {_name(name)} {mtype}\n"


def _family_lines(metric: Metric, cache: dict[tuple, str]) -> list[str]:
    """The lines of one family: header, samples, and the OpenMetrics-only series as gauges."""
    output = [_header(metric.name + SAMPLE_SUFFIX.get(metric.type, ""), metric.documentation,
                      _TYPES.get(metric.type, metric.type))]
    if isinstance(metric, RowsFamily):
        output.extend(_rows(metric))
        return output
    extra: dict[str, list[str]] = {}
    base = metric.name
    for s in metric.samples:
        line = _line(s.name, s.labels, s.value, s.timestamp, cache)
        suffix = s.name[len(base):]
        if suffix in _OPENMETRICS_ONLY and s.name.startswith(base):
            extra.setdefault(suffix, []).append(line)
        else:
            output.append(line)
    for suffix, lines in sorted(extra.items()):
        output.append(_header(metric.name + suffix, metric.documentation, "gauge"))
        output.extend(lines)
    return output


def text_parts(families: Iterable[Metric]) -> Iterator[bytes]:
    """The exposition a family at a time: the lines of one family are joined and encoded
    alone, so a scrape never holds every line of every family at once (at 10,000 datasets that
    was 20 MB of line strings beside the 16 MB they joined into, docs/reliability.md)."""
    cache: dict[tuple, str] = {}
    for metric in families:
        yield "".join(_family_lines(metric, cache)).encode("utf-8")


def text(families: Iterable[Metric]) -> bytes:
    return b"".join(text_parts(families))
