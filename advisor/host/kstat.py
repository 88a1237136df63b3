"""SPL kstats under /proc/spl/kstat/zfs: the named-value format.

A named kstat file is a header line (`ks_kid ks_type ks_flags ks_ndata
ks_data_size ks_crtime ks_snaptime`), a column line `name type data`, then one
`name type value` row per statistic. Types (spl kstat.h): 0 char, 1 int32,
2 uint32, 3 int64, 4 uint64, 5 long, 6 ulong, 7 string. An unsigned statistic below 0, or two
rows for one statistic, is a kstat not understood (advisor/host/domains.py).
"""
from __future__ import annotations

import re

from advisor.host.domains import unique
from advisor.host.files import HostFiles
from advisor.host.parsing import INT_MAX, INT_MIN, ParseError, interned, shown
from advisor.hostmodel.facts import KStat, fields_set

KSTAT_DIR = "/proc/spl/kstat/zfs"
_STRING_TYPES = {"0", "7"}
_UNSIGNED_TYPES = {"2", "4", "6"}  # uint32, uint64, ulong
# The global kstats the advisor reads besides arcstats.
GLOBAL_KSTATS = ("zil", "dmu_tx", "zfetchstats", "abdstats", "dbufstats", "vdev_mirror_stats")


class KStatFormatError(ParseError):
    pass


_KSTAT_FIELDS = fields_set("values")

# A row: name, type, and the rest of the line (a string value may contain blanks).
_ROW = re.compile(r"^(\S+)[ \t]+(\d+)[ \t]*(.*?)[ \t]*$", re.M)


def parse_named_kstat(text: str) -> KStat:
    # One regex pass over the file: thousands of objset kstats are read on every scrape.
    header, sep, rest = text.partition("\n")
    columns, sep, body = rest.partition("\n")
    if columns.split()[:3] != ["name", "type", "data"]:
        raise KStatFormatError("not a named kstat (no 'name type data' header)")
    rows = _ROW.findall(body)
    if not rows:
        raise KStatFormatError("a named kstat without any row")
    # one row per line is the usual case (cheap to see); otherwise count the non-blank lines
    lines = len(rows) if body.endswith("\n") and body.count("\n") == len(rows) else \
        sum(1 for line in body.split("\n") if line.strip())
    if lines != len(rows):  # a line that is no `name type value` row: not understood
        bad = next((line for line in body.split("\n") if line.strip() and not _ROW.fullmatch(line)), "?")
        raise KStatFormatError(f"not a `name type value` row: {shown(bad)}")
    try:
        values = {interned(name): raw if kind in _STRING_TYPES else int(raw) for name, kind, raw in rows}
    except ValueError:
        not_int = next((n, r) for n, k, r in rows if k not in _STRING_TYPES and not _is_int(r))
        raise KStatFormatError(f"{not_int[0]}: value {shown(not_int[1])} is not an integer") from None
    if len(values) != len(rows):  # which of two rows for one statistic is true cannot be told
        unique((name for name, _, _ in rows), "kstat")
    numbers = [v for v in values.values() if type(v) is int]
    if numbers and (min(numbers) < INT_MIN or max(numbers) > INT_MAX):
        too_big = next((n, v) for n, v in values.items() if type(v) is int and not INT_MIN <= v <= INT_MAX)
        raise KStatFormatError(f"{too_big[0]}: value {too_big[1]} is out of the 64-bit range of a kstat")
    if numbers and min(numbers) < 0:  # rare: only a signed statistic may be below 0
        below = next(((n, r) for n, k, r in rows if k in _UNSIGNED_TYPES and r.startswith("-")), None)
        if below is not None:
            raise KStatFormatError(f"{below[0]}: value {below[1]} is below 0 for an unsigned statistic")
    declared = header.split()[3:4]  # ks_ndata: how many rows follow
    if not declared or not declared[0].isdigit() or int(declared[0]) != len(rows):
        raise KStatFormatError(f"header {shown(header)} does not announce the {len(rows)} rows that follow (cut short?)")
    return KStat.model_construct(_KSTAT_FIELDS, values=values)  # the types are settled above


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def read_named_kstat(files: HostFiles, path: str) -> KStat:
    return parse_named_kstat(files.read_text(path))
