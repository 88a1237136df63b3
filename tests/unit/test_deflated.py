"""Bodies kept deflated (advisor/api/deflated.py): the same bytes out, as plain or as gzip, in bounded slices."""
from __future__ import annotations

import gzip
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.api.deflated import Deflated, deflate_segment, inflate_segment
from advisor.api.shared import SLICE, SlicedBody

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


@pytest.mark.parametrize("piece", [1, 7, 4096])
def test_a_segment_inflates_in_pieces_no_bigger_than_asked(piece):
    data = bytes(range(256)) * 40 + b"x" * 10_000
    pieces = list(inflate_segment(deflate_segment(data), piece))
    assert b"".join(pieces) == data and max(map(len, pieces)) <= piece


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
