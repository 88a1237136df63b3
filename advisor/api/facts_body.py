"""The /v1/facts body: a Host's JSON built in chunks, reusing the chunks of unchanged datasets."""
from __future__ import annotations

import weakref

from pydantic import TypeAdapter

from advisor.facts import Dataset, Host

_DATASETS = TypeAdapter(list[Dataset])
CHUNK = 100


class FactsJson:
    """`Host` -> its JSON as a tuple of chunks, reusing the chunks of datasets unchanged since
    the last build. It holds no dataset alive (weak references): the chunks of the last build,
    which the shared bodies hold anyway, and no more."""

    def __init__(self) -> None:
        # (ids of a chunk's datasets) -> (weak references to them, their JSON)
        self._chunks: dict[tuple[int, ...], tuple[tuple[weakref.ref, ...], bytes]] = {}
        self.serialised = 0  # chunks serialised (tests: an unchanged chunk is not serialised again)

    def chunks(self, host: Host) -> tuple[bytes, ...]:
        """`host` as JSON (datasets last), in chunks of 100 datasets: one model_dump_json() of
        10,000 datasets is one C call that holds the GIL for a quarter of a second, and the
        event loop (answering /healthz) cannot run meanwhile."""
        head = host.model_dump_json(exclude={"datasets"}).encode()
        parts = [head[:-1] + b',"datasets":[']
        last, kept = self._chunks, {}
        replaced = list(last)  # the last build's keys, in order (a dict keeps its insertion order)
        for n, start in enumerate(range(0, len(host.datasets), CHUNK)):
            group = host.datasets[start:start + CHUNK]
            key = tuple(map(id, group))
            known = last.pop(key, None)
            if known is not None and all(ref() is d for ref, d in zip(known[0], group)):
                body = known[1]
            else:
                body = (b"," if start else b"") + _DATASETS.dump_json(group)[1:-1]
                self.serialised += 1
            kept[key] = (tuple(map(weakref.ref, group)), body)
            parts.append(body)
            # The last build's chunk at this place goes now, not at the end: with the previous
            # body no longer cached, only responses still sending it hold it, so a rebuild of
            # every chunk (after each `zfs get`, which makes every dataset anew) does not hold
            # two 20 MB bodies at its end.
            if n < len(replaced):
                last.pop(replaced[n], None)
        parts.append(b"]}")
        self._chunks = kept  # one assignment: a build in another thread sees the old or the new
        return tuple(parts)
