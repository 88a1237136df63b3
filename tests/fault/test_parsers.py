"""Property tests for every parser in advisor/host: whatever text comes in, the parser
returns what it understood or raises ParseError (advisor/host/parsing.py), nothing else;
and text without the format's landmarks is "no data, because ...", never an empty success.

Inputs: arbitrary text, arbitrary bytes decoded as the readers decode them (UTF-8 with
replacement), and real lab output (tests/fixtures) mutated: a slice replaced by noise,
cut anywhere, lines dropped or repeated, numbers blown past 64 bits.
"""
from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.host import (
    disks,
    kstat,
    modparams,
    pool_kstats,
    system,
    txgs,
    versions,
    zdb,
    zfs_props,
    zpool_iostat,
    zpool_status,
)
from advisor.host.collect import _pools_from_properties
from advisor.host.parsing import ParseError
from advisor.hostmodel.facts import parse_version
from support import FIXTURES, HOSTS
from tests.fault.tally import FULL, Tally

EXAMPLES = int(os.environ.get("PARSER_EXAMPLES", 0)) or (150 if FULL else 25)
SNAP = HOSTS / "2.1.11" / "ssd-mirror2x2" / "idle"
RAW = FIXTURES / "raw" / "2.3.2-ssd-mirror2x2"


def _command_output(argv_start: tuple[str, ...]) -> str:
    import json

    manifest = json.loads((SNAP / "manifest.json").read_text())
    command = next(c for c in manifest["commands"] if tuple(c["argv"][: len(argv_start)]) == argv_start)
    return (SNAP / command["stdout_file"]).read_text()


def _file(path: str) -> str:
    return (SNAP / path).read_text()


def _blank(text: str) -> bool:
    return not text.strip()


# name -> (parser, a real input, "this text cannot hold anything the parser could understand")
PARSERS: dict[str, tuple[Callable[[str], Any], Callable[[], str], Callable[[str], bool]]] = {
    "diskstats": (disks.parse_diskstats, lambda: _file("proc/diskstats"),
                  lambda t: not _blank(t) and all(len(line.split()) < 14 for line in t.splitlines() if line.strip())),
    "scheduler": (disks.parse_scheduler, lambda: "mq-deadline kyber [bfq] none", lambda t: False),
    "named_kstat": (kstat.parse_named_kstat, lambda: _file("proc/spl/kstat/zfs/arcstats"),
                    lambda t: "name" not in t),
    "meminfo": (system.parse_meminfo_total, lambda: _file("proc/meminfo"), lambda t: "MemTotal:" not in t),
    "cpu_list": (system.parse_cpu_list, lambda: "0-3,6,8-9\n", lambda t: not re.search(r"\d", t)),
    "txgs": (txgs.parse_txgs, lambda: _file("proc/spl/kstat/zfs/tank/txgs"), lambda t: "txg" not in t),
    "version": (parse_version, lambda: "zfs-2.1.11-1", lambda t: False),
    "zfs_version": (versions.parse_zfs_version_command, lambda: "zfs-2.1.11-1\nzfs-kmod-2.1.11-1\n", lambda t: False),
    "zdb_ashift": (zdb.parse_zdb_ashift, lambda: _command_output(("zdb",)), lambda t: "vdev_tree:" not in t),
    "zfs_get": (zfs_props.parse_zfs_get, lambda: _command_output(("zfs", "get")),
                lambda t: not _blank(t) and "\t" not in t),
    "zpool_get": (_pools_from_properties, lambda: _command_output(("zpool", "get")),
                  lambda t: not _blank(t) and "\t" not in t),
    "zpool_status_text": (zpool_status.parse_status_text, lambda: _command_output(("zpool", "status")),
                          lambda t: not _blank(t) and "pool:" not in t),
    "zpool_status_json": (zpool_status.parse_status_json, lambda: (RAW / "zpool-status-j-p-json-int.txt").read_text(),
                          lambda t: "{" not in t),
    "zpool_scan": (zpool_status.parse_scan, lambda: "scrub repaired 0B in 00:00:01 with 0 errors on Sun Nov 22 03:17:01 2026",
                   lambda t: False),
    "zpool_iostat": (zpool_iostat.parse_vdev_iostat, lambda: _command_output(("zpool", "iostat", "-vlq")),
                     lambda t: not _blank(t) and "\t" not in t),
    "latency_histograms": (zpool_iostat.parse_latency_histograms, lambda: _command_output(("zpool", "iostat", "-vw")),
                           lambda t: not _blank(t) and "\t" not in t),
    "pool_state": (pool_kstats.parse_state, lambda: _file("proc/spl/kstat/zfs/tank/state"),
                   lambda t: t.strip() not in pool_kstats.POOL_STATES),
    "module_param_u64": (lambda t: modparams.parse_module_param("zfs_arc_max", t),
                         lambda: _file("sys/module/zfs/parameters/zfs_arc_max"),
                         lambda t: not re.fullmatch(r"\s*[0-9]+\s*", t)),
    "module_param_text": (lambda t: modparams.parse_module_param("zfs_vdev_raidz_impl", t),
                          lambda: _file("sys/module/zfs/parameters/zfs_vdev_raidz_impl"),
                          lambda t: not t or not t.strip().isprintable()),
    "size_histograms": (zpool_iostat.parse_size_histograms, lambda: _command_output(("zpool", "iostat", "-vr")),
                        lambda t: not _blank(t) and "\t" not in t),
}

NOISE = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=80) | st.sampled_from(
    ["\t", "\n", " ", "-", "0", "18446744073709551616", "1e999", "nan", "-1", "pool: ", "errors:", "txg", "{", "}",
     "vdev_tree:", "children[0]:", "name type data", "\x00", "\ufffd", "4", "7"])


@st.composite
def mutated(draw, seed: str) -> str:
    """Real output, damaged the way a broken host or a cut pipe would damage it."""
    text = seed
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["replace", "insert", "cut", "drop_line", "repeat_line", "huge"]))
        i = draw(st.integers(0, len(text)))
        j = draw(st.integers(i, min(len(text), i + 40)))
        lines = text.split("\n")
        k = draw(st.integers(0, max(0, len(lines) - 1)))
        if kind == "replace":
            text = text[:i] + draw(NOISE) + text[j:]
        elif kind == "insert":
            text = text[:i] + draw(NOISE) + text[i:]
        elif kind == "cut":
            text = text[:i]
        elif kind == "drop_line":
            text = "\n".join(lines[:k] + lines[k + 1:])
        elif kind == "repeat_line":
            text = "\n".join(lines[: k + 1] + lines[k:])
        else:
            text = re.sub(r"\d+", "9" * draw(st.integers(19, 400)), text, count=draw(st.integers(1, 5)))
    return text


ANY_TEXT = st.text(max_size=400) | st.binary(max_size=400).map(lambda b: b.decode("utf-8", "replace"))


def _fits(value: Any) -> bool:
    """Everything a parser returns can be exported as a float sample: parsed integers are
    within 64 bits (a kB count times 1024 may exceed that, hence 2**80), floats finite."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return True
    if isinstance(value, int):
        return abs(value) <= 2**80
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_fits(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return all(_fits(v) for v in value)
    if hasattr(value, "model_dump"):
        return _fits(value.model_dump())
    if hasattr(value, "__dataclass_fields__"):
        return all(_fits(getattr(value, f)) for f in value.__dataclass_fields__)
    return True


def check(name: str, text: str) -> None:
    parser, _, understood_nothing = PARSERS[name]
    tally = Tally("parsers")
    tally.cases()
    try:
        result = parser(text)
    except ParseError as exc:
        reason = str(exc)
        tally.fault(survived=bool(reason) and "\n" not in reason)
        assert reason and "\n" not in reason, f"a reason is one line: {reason!r}"
        return
    except Exception:
        tally.fault(survived=False)
        raise
    ok = not understood_nothing(text) and _fits(result)
    tally.fault(survived=ok)
    assert not understood_nothing(text), f"{name} understood nothing of {text[:80]!r} but did not say so: {result!r}"
    assert _fits(result), f"{name} returned a value that cannot be exported (huge or not finite): {result!r}"


_SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=not FULL, database=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.mark.parametrize("name", list(PARSERS))
def test_arbitrary_text_is_parsed_or_refused_with_a_reason(name):
    @_SETTINGS
    @given(ANY_TEXT)
    def run(text):
        check(name, text)

    run()


@pytest.mark.parametrize("name", list(PARSERS))
def test_damaged_real_output_is_parsed_or_refused_with_a_reason(name):
    seed = PARSERS[name][1]()
    check(name, seed)  # the intact output is understood

    @_SETTINGS
    @given(mutated(seed))
    def run(text):
        check(name, text)

    run()


@pytest.mark.parametrize("name, text, reason", [
    ("zpool_status_text", "", None),  # no pools: nothing to say, nothing wrong
    ("zpool_status_text", "garbage\n", "no `pool:` block"),
    ("zdb_ashift", "garbage\n", "no vdev_tree"),
    ("txgs", "garbage\n", "no txgs header"),
    ("named_kstat", "1 1 0x01 1 0 0 0\nname type data\nhits 4 " + "9" * 400 + "\n", "out of the 64-bit range"),
    ("diskstats", "   8 0 sda 1 2 x 4 5 6 7 8 9 10 11\n", "not an integer"),
    ("pool_state", "\x00\ufffd garbage\n", "is not a pool state"),
    ("pool_state", "", "is not a pool state"),
    ("module_param_u64", "\x00\ufffd garbage\n", "is not printable text"),
    ("module_param_u64", "", "the file is empty"),
    ("module_param_u64", "1_000\n", "is not an integer"),
    ("module_param_u64", "-1\n", "below 0"),
    ("module_param_text", "", "the file is empty"),
    ("module_param_text", "fixed,1" + "0" * 400 + " null\n", "out of the 64-bit range"),
    ("zfs_get", "tank\ttype\tfilesystem\t-\ntank\trecordsize\t131072\tdefault\n"
                "tank/media\ttype\tfilesystem\t-\ntank/media\trecordsize\t13", "ends inside a line"),
    ("zfs_get", "tank\ttype\tfilesystem\t-\ntank\trecordsize\t131072\tdefault\n"
                "tank/media\ttype\tfilesystem\t-\n", "zfs get listed no recordsize for tank/media"),
    ("zfs_get", "tank\ttype\tfilesystem\t-\textra\n", "not a `name<TAB>property<TAB>value<TAB>source` row"),
    ("zpool_get", "tank\tsize\tbig\t-\n", "is not an integer"),
    ("zpool_get", "tank\tfragmentation\t1.2.3\t-\n", "is not a ratio"),
    ("zpool_get", "tank\tcapacity\t12\t-\ntank\tfree\t1", "ends inside a line"),
])
def test_what_the_issue_saw(name, text, reason):
    """The cases a fault hunt found reported as healthy (empty, half or garbage status
    text, garbage zdb -C and txgs, arcstats beyond float range, a bad diskstats line)."""
    parser = PARSERS[name][0]
    if reason is None:
        assert parser(text) == []
        return
    with pytest.raises(ParseError, match=re.escape(reason)):
        parser(text)


def test_half_a_zpool_status_is_refused():
    text = PARSERS["zpool_status_text"][1]()
    for cut in range(text.index("config:"), text.index("errors:")):
        with pytest.raises(ParseError):
            zpool_status.parse_status_text(text[:cut])


def test_seeds_are_real_recordings():
    assert Path(SNAP / "manifest.json").is_file() and RAW.is_dir()
