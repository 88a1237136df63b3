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
Bodies that know the CRC-32 of their bytes can be joined (`Deflated.joined`) and still be sent
as one gzip member without inflating anything: the /metrics body is the command-built families'
segments, kept between scrapes, followed by those rendered for this scrape. One member, not
several gzip members concatenated: curl --compressed stops reading after the first.
"""
from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Iterator

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


# CRC-32 arithmetic modulo its polynomial (zlib's crc32.c, reflected bit order), for
# crc32_combine, which Python's zlib does not offer.
_CRC_POLY = 0xEDB88320


def _multmodp(a: int, b: int) -> int:
    """a * b modulo the CRC-32 polynomial."""
    m, p = 1 << 31, 0
    while True:
        if a & m:
            p ^= b
            if not a & (m - 1):
                return p
        m >>= 1
        b = (b >> 1) ^ _CRC_POLY if b & 1 else b >> 1


def _x2n_table() -> list[int]:
    table, p = [], 1 << 30  # x^1
    for _ in range(32):
        table.append(p)
        p = _multmodp(p, p)
    return table


_X2N = _x2n_table()  # x^(2^n) modulo the polynomial


def crc32_combine(crc1: int, crc2: int, len2: int) -> int:
    """The CRC-32 of a + b from crc32(a), crc32(b) and len(b) (zlib's crc32_combine): a few
    microseconds, where crc32(a + b) reads every byte again."""
    p, k = 1 << 31, 3  # x^0; a byte is 2^3 bits
    while len2:
        if len2 & 1:
            p = _multmodp(_X2N[k & 31], p)
        len2 >>= 1
        k += 1
    return _multmodp(p, crc1) ^ crc2


class Deflated:
    """A body as raw deflate segments, with its inflated size (the Content-Length when sent
    as it is) and, when known, the CRC-32 of the inflated bytes (the gzip trailer's)."""

    __slots__ = ("segments", "size", "crc")

    def __init__(self, segments: Iterable[bytes], size: int, crc: int | None = None) -> None:
        self.segments = tuple(segments)
        self.size = size
        self.crc = crc

    @classmethod
    def of(cls, parts: Iterable[bytes | memoryview]) -> Deflated:
        """Each of `parts` deflated as a segment of its own."""
        parts = list(parts)
        crc = 0
        for part in parts:
            crc = zlib.crc32(part, crc)
        return cls(map(deflate_segment, parts), sum(map(len, parts)), crc)

    @classmethod
    def joined(cls, bodies: Iterable[Deflated]) -> Deflated:
        """The bodies one after the other: their segments, never inflated or compressed again."""
        segments: list[bytes] = []
        size = 0
        crc: int | None = 0
        for body in bodies:
            segments += body.segments
            crc = None if crc is None or body.crc is None else crc32_combine(crc, body.crc, body.size)
            size += body.size
        return cls(segments, size, crc)

    @classmethod
    def of_stream(cls, parts: Iterable[bytes | memoryview], target: int = 256 * 1024,
                  whole_parts: bool = False, level: int = LEVEL) -> Deflated:
        """`parts` deflated as they come (they need not be held all at once), in segments of
        `target` bytes inflated; with `whole_parts` a segment closes only after the part that
        brings it to `target`, so no part is split (a part of the /metrics text is whole
        families, and a segment of them can be rewritten as OpenMetrics alone)."""
        segments: list[bytes] = []
        pending: list[bytes] = []
        compressor = zlib.compressobj(level, zlib.DEFLATED, RAW_DEFLATE)
        size = in_segment = crc = 0

        def close() -> None:
            nonlocal pending, in_segment
            segments.append(b"".join([*pending, compressor.flush(zlib.Z_FULL_FLUSH)]))
            pending, in_segment = [], 0

        for part in parts:
            view = memoryview(part)
            size += len(view)
            crc = zlib.crc32(view, crc)
            while view:
                take = len(view) if whole_parts else min(len(view), target - in_segment)
                pending.append(compressor.compress(view[:take]))
                in_segment += take
                view = view[take:]
                if in_segment >= target:
                    close()
        if in_segment:
            close()
        return cls(segments, size, crc)

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
        The trailer's CRC-32, unless known, needs the inflated bytes once (a segment at a time)."""
        crc = self.crc
        if crc is None:
            crc = 0
            for piece in self.inflated():
                crc = zlib.crc32(piece, crc)
        trailer = _FINAL_EMPTY_BLOCK + struct.pack("<II", crc, self.size & 0xFFFFFFFF)
        return (_GZIP_HEADER, *self.segments, trailer)
