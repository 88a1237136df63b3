"""Bodies kept deflated (advisor/server/deflated.py): the same bytes out, as plain or as gzip, in bounded slices."""
from __future__ import annotations

import gzip
import zlib

from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.server.bodies import SLICE, SlicedBody
from advisor.server.deflated import Deflated

PARTS = st.lists(st.binary(max_size=3000), max_size=8)


@settings(max_examples=200, deadline=None)
@given(PARTS)
def test_deflated_parts_inflate_to_their_concatenation(parts):
    body = Deflated.of(parts)
    assert body.inflate() == b"".join(parts) and body.size == sum(map(len, parts))


@settings(max_examples=200, deadline=None)
@given(PARTS)
def test_the_gzip_of_deflated_parts_is_a_standard_gzip_member(parts):
    gz = b"".join(Deflated.of(parts).gzip_parts())
    assert gzip.decompress(gz) == b"".join(parts)
    # zlib, as curl and browsers read it, with the trailer checked
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    assert inflater.decompress(gz) == b"".join(parts) and inflater.eof and not inflater.unused_data


@settings(max_examples=200, deadline=None)
@given(PARTS, st.integers(1, 5000), st.booleans())
def test_a_stream_of_parts_deflates_into_bounded_segments(parts, target, whole_parts):
    body = Deflated.of_stream(iter(parts), target=target, whole_parts=whole_parts)
    assert body.inflate() == b"".join(parts) and body.size == sum(map(len, parts))
    segments = list(body.inflated())
    assert all(segments)  # no empty segment
    if whole_parts:  # every segment ends where a part ends, and closes once it reaches the target
        ends, at = set(), 0
        for part in parts:
            at += len(part)
            ends.add(at)
        at = 0
        for segment in segments:
            at += len(segment)
            assert at in ends
        assert all(len(s) < target + max(map(len, parts)) for s in segments)
    else:
        assert all(len(s) <= target for s in segments) and all(len(s) == target for s in segments[:-1])
    assert gzip.decompress(b"".join(body.gzip_parts())) == b"".join(parts)


async def test_a_sliced_deflated_body_sends_the_plain_bytes_a_slice_at_a_time():
    parts = [b'{"a":' + b"1" * (3 * SLICE), b"," + bytes(range(256)) * 100, b"}"]
    body = SlicedBody(Deflated.of(parts), "application/json")
    sent: list[bytes] = []

    class Writer:
        async def write(self, data):
            sent.append(bytes(data))

    assert body.size == sum(map(len, parts)) and await body.as_bytes() == b"".join(parts)
    await body.write_with_length(Writer(), None)
    assert b"".join(sent) == b"".join(parts) and max(map(len, sent)) <= SLICE and not body._unsent

    cut = SlicedBody(Deflated.of(parts), "application/json")
    sent.clear()
    await cut.write_with_length(Writer(), SLICE + 3)  # a shorter Content-Length is honoured
    assert b"".join(sent) == b"".join(parts)[:SLICE + 3]
