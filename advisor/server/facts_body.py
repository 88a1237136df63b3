"""The /v1/facts body: a Host's JSON built in chunks, kept deflated, reusing the chunks of unchanged datasets."""
from __future__ import annotations

import weakref

from pydantic import TypeAdapter

from advisor.hostmodel.facts import Dataset, Host
from advisor.server.deflated import Deflated, deflate_segment

_DATASETS = TypeAdapter(list[Dataset])
CHUNK = 50  # about 105 KB of JSON: what each response sending it holds inflated at a time


class FactsJson:
    """`Host` -> its JSON as deflate segments (advisor/server/deflated.py), reusing the segments of
    datasets unchanged since the last build. It holds no dataset alive (weak references): the
    segments of the last build, which the shared bodies hold anyway, and no more."""

    def __init__(self) -> None:
        # (ids of a chunk's datasets) -> (weak references to them, their JSON deflated, its length)
        self._chunks: dict[tuple[int, ...], tuple[tuple[weakref.ref, ...], bytes, int]] = {}
        self.serialised = 0  # chunks serialised (tests: an unchanged chunk is not serialised again)

    def body(self, host: Host) -> Deflated:
        """`host` as JSON (datasets last), in chunks of CHUNK datasets: one model_dump_json() of
        10,000 datasets is one C call that holds the GIL for a quarter of a second, and the
        event loop (answering /healthz) cannot run meanwhile. Each chunk is deflated as soon as
        it is serialised, so the plain JSON of one chunk at a time exists."""
        head = host.model_dump_json(exclude={"datasets"}).encode()[:-1] + b',"datasets":['
        segments, size = [deflate_segment(head)], len(head)
        last, kept = self._chunks, {}
        replaced = list(last)  # the last build's keys, in order (a dict keeps its insertion order)
        for n, start in enumerate(range(0, len(host.datasets), CHUNK)):
            group = host.datasets[start:start + CHUNK]
            key = tuple(map(id, group))
            known = last.pop(key, None)
            if known is not None and all(ref() is d for ref, d in zip(known[0], group, strict=True)):
                segment, length = known[1], known[2]
            else:
                text = (b"," if start else b"") + _DATASETS.dump_json(group)[1:-1]
                segment, length = deflate_segment(text), len(text)
                self.serialised += 1
            kept[key] = (tuple(map(weakref.ref, group)), segment, length)
            segments.append(segment)
            size += length
            # The last build's chunk at this place goes now, not at the end: with the previous
            # body no longer cached, only responses still sending it hold it, so a rebuild of
            # every chunk (after each `zfs get`, which makes every dataset anew) does not hold
            # two bodies at its end.
            if n < len(replaced):
                last.pop(replaced[n], None)
        segments.append(deflate_segment(b"]}"))
        self._chunks = kept  # one assignment: a build in another thread sees the old or the new
        return Deflated(segments, size + 2)
