"""What a scrape asked for: the text format (0.0.4 or OpenMetrics 1.0.0) and gzip.

The collectors render the Prometheus text format 0.0.4 (and cache parts of it). A client whose
Accept prefers OpenMetrics, as Prometheus does by default, gets that text rewritten: counter
families named without `_total` in HELP/TYPE (the samples keep it), `_info` gauges as the
`info` type, double quotes escaped in HELP, `# EOF` at the end. `Accept-Encoding: gzip` gets
the body gzipped, as node_exporter and client_golang do (exporters/collector.py keeps the text
compressed: the gzip body is its segments in one member). Runs in a worker thread with render.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

TEXT_0_0_4 = "text/plain; version=0.0.4; charset=utf-8"
OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"
GZIP_LEVEL = 6  # zlib's default: 183 KB -> 19 KB for a lab host (docs/metrics.md); the command-built text is kept
# compressed at it (once per command run); what a scrape renders anew at zlib's fastest
# (advisor/server/deflated.py LEVEL)


def _media_ranges(accept: str) -> list[tuple[str, dict[str, str]]]:
    ranges = []
    for part in accept.split(","):
        media, *params = (p.strip() for p in part.split(";"))
        ranges.append((media.lower(), dict(p.split("=", 1) for p in params if "=" in p)))
    return ranges


def wants_openmetrics(accept: str | None) -> bool:
    """True when Accept ranks OpenMetrics 1.0.0 (or unversioned) above the 0.0.4 text format."""
    best = {"om": -1.0, "text": -1.0}
    for media, params in _media_ranges(accept or ""):
        try:
            q = float(params.get("q", "1"))
        except ValueError:
            continue
        if media == "application/openmetrics-text" and params.get("version", "1.0.0") == "1.0.0":
            best["om"] = max(best["om"], q)
        elif media in ("text/plain", "*/*", "text/*"):
            best["text"] = max(best["text"], q)
    return best["om"] > 0 and best["om"] >= best["text"]


def _family(name: bytes, kind: bytes) -> tuple[bytes, bytes]:
    """OpenMetrics family name and type of a 0.0.4 family."""
    if kind == b"counter" and name.endswith(b"_total"):
        return name[: -len(b"_total")], kind
    if kind == b"gauge" and name.endswith(b"_info"):
        return name[: -len(b"_info")], b"info"
    return name, kind


def _comment_lines(text: bytes) -> list[tuple[int, int]]:
    """(start, end) of every `#` line: found with bytes.find, as a regex over megabytes is slow."""
    starts = [0] if text.startswith(b"#") else []
    i = text.find(b"\n#")
    while i >= 0:
        starts.append(i + 1)
        i = text.find(b"\n#", i + 1)
    return [(s, e if (e := text.find(b"\n", s)) >= 0 else len(text)) for s in starts]


def to_openmetrics(text: bytes) -> bytes:
    """The 0.0.4 exposition as OpenMetrics 1.0.0 (same series, same values)."""
    return b"".join(openmetrics_stream([text]))


def _rewritten(text: bytes) -> list[bytes | memoryview]:
    """`text` (whole families) with its HELP and TYPE lines in OpenMetrics form: the samples
    between two rewritten comment lines are views of `text`, not copies."""
    view = memoryview(text)
    lines = [(start, end, text[start:end].split(b" ", 3)) for start, end in _comment_lines(text)]
    kinds = {f[2]: f[3] for _, _, f in lines if len(f) == 4 and f[1] == b"TYPE"}
    out: list[bytes | memoryview] = []
    done = 0
    for start, end, fields in lines:
        if len(fields) < 3 or fields[1] not in (b"HELP", b"TYPE"):
            continue
        name, kind = _family(fields[2], kinds.get(fields[2], b"untyped"))
        rest = fields[3] if len(fields) == 4 else b""
        rest = kind if fields[1] == b"TYPE" else rest.replace(b'"', b'\\"')
        out += [view[done:start], b"# " + fields[1] + b" " + name + b" " + rest]
        done = end
    out.append(view[done:])
    return out


def openmetrics_parts(parts: Iterable[bytes]) -> Iterator[bytes | memoryview]:
    """The parts with their HELP and TYPE lines in OpenMetrics form, a part at a time; each part
    must hold whole families (a HELP line, its TYPE line and their samples together)."""
    for part in parts:
        if part:
            yield from _rewritten(part)


def openmetrics_end(last: bytes) -> bytes:
    """What closes an OpenMetrics exposition whose last non-empty part is `last`."""
    return (b"" if last.endswith(b"\n") or not last else b"\n") + b"# EOF\n"


def openmetrics_stream(parts: Iterable[bytes]) -> Iterator[bytes | memoryview]:
    """`to_openmetrics` of the parts' concatenation, a part at a time; each part must hold
    whole families (a HELP line, its TYPE line and their samples together)."""
    last = b""
    for part in parts:
        if part:
            yield from _rewritten(part)
            last = part
    yield openmetrics_end(last)


def accepts_gzip(accept_encoding: str | None) -> bool:
    for coding, params in _media_ranges(accept_encoding or ""):
        if coding == "gzip":
            try:
                return float(params.get("q", "1")) > 0
            except ValueError:
                return False
    return False


def variant(headers: Mapping[str, str]) -> tuple[bool, bool]:
    """(OpenMetrics?, gzip?) for a scrape with these request headers."""
    return wants_openmetrics(headers.get("Accept")), accepts_gzip(headers.get("Accept-Encoding"))


def response_headers(openmetrics: bool, gzip_it: bool) -> dict[str, str]:
    out = {"Content-Type": OPENMETRICS if openmetrics else TEXT_0_0_4, "Vary": "Accept, Accept-Encoding"}
    if gzip_it:
        out["Content-Encoding"] = "gzip"
    return out
