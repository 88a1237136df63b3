"""A large body kept compressed at rest: raw deflate segments, inflated a slice at a time when sent.

The /v1/facts document is about 20 MB at 10,000 datasets, the /metrics text about 16 MB, and
each is cached for as long as its collection is the newest. Kept as plain bytes the document
was a tenth of the service's resident memory, twice that while a new collection's document was
built beside the one still being sent (docs/reliability.md). Kept as deflate it is a few
megabytes.

Each segment is compressed on its own and ends on a full flush (zlib's Z_FULL_FLUSH): it refers
to nothing before it and ends on a byte boundary, so segments can be built, reused and inflated
one by one, and their concatenation, closed by an empty final block, is one valid deflate
stream (RFC 1951). Wrapped in a gzip header and trailer (RFC 1952) it is the gzip body too,
with no second compression: a client that accepts gzip is sent the stored segments as they are.
"""
from __future__ import annotations

import struct
import zlib
from typing import Iterable, Iterator

LEVEL = 1  # zlib's fastest: the document is built again after each `zfs get` that a client asks for
RAW_DEFLATE = -zlib.MAX_WBITS  # raw deflate: no zlib header or checksum per segment
_FINAL_EMPTY_BLOCK = b"\x03\x00"  # what a raw compressor that was given nothing ends with
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"  # deflate, no name, no mtime, OS unknown


def deflate_segment(data: bytes | memoryview) -> bytes:
    """`data` as a self-contained raw deflate segment (no final block)."""
    compressor = zlib.compressobj(LEVEL, zlib.DEFLATED, RAW_DEFLATE)
    return compressor.compress(data) + compressor.flush(zlib.Z_FULL_FLUSH)


def inflate(segment: bytes) -> bytes:
    """The bytes `segment` holds (zlib.decompress() would want a final block)."""
    inflater = zlib.decompressobj(RAW_DEFLATE)
    return inflater.decompress(segment) + inflater.flush()


class Deflated:
    """A body as raw deflate segments, with its inflated size (the Content-Length when sent
    as it is)."""

    __slots__ = ("segments", "size")

    def __init__(self, segments: Iterable[bytes], size: int) -> None:
        self.segments = tuple(segments)
        self.size = size

    @classmethod
    def of(cls, parts: Iterable[bytes | memoryview]) -> Deflated:
        """Each of `parts` deflated as a segment of its own."""
        parts = list(parts)
        return cls(map(deflate_segment, parts), sum(map(len, parts)))

    @classmethod
    def of_stream(cls, parts: Iterable[bytes | memoryview], target: int = 256 * 1024,
                  whole_parts: bool = False) -> Deflated:
        """`parts` deflated as they come (they need not be held all at once), in segments of
        `target` bytes inflated; with `whole_parts` a segment closes only after the part that
        brings it to `target`, so no part is split (a part of the /metrics text is whole
        families, and a segment of them can be rewritten as OpenMetrics alone)."""
        segments: list[bytes] = []
        pending: list[bytes] = []
        compressor = zlib.compressobj(LEVEL, zlib.DEFLATED, RAW_DEFLATE)
        size = in_segment = 0

        def close() -> None:
            nonlocal pending, in_segment
            segments.append(b"".join([*pending, compressor.flush(zlib.Z_FULL_FLUSH)]))
            pending, in_segment = [], 0

        for part in parts:
            view = memoryview(part)
            size += len(view)
            while view:
                take = len(view) if whole_parts else min(len(view), target - in_segment)
                pending.append(compressor.compress(view[:take]))
                in_segment += take
                view = view[take:]
                if in_segment >= target:
                    close()
        if in_segment:
            close()
        return cls(segments, size)

    @property
    def stored(self) -> int:
        """Bytes held."""
        return sum(map(len, self.segments))

    def inflated(self) -> Iterator[bytes]:
        """The body a segment at a time."""
        return map(inflate, self.segments)

    def inflate(self) -> bytes:
        return b"".join(self.inflated())

    def gzip_parts(self) -> tuple[bytes, ...]:
        """The gzip member of the body: the stored segments between a header and a trailer.
        The trailer's CRC-32 needs the inflated bytes once (a segment at a time)."""
        crc = 0
        for piece in self.inflated():
            crc = zlib.crc32(piece, crc)
        trailer = _FINAL_EMPTY_BLOCK + struct.pack("<II", crc, self.size & 0xFFFFFFFF)
        return (_GZIP_HEADER, *self.segments, trailer)
