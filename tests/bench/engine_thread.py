#!/usr/bin/env python3
"""Where the engine should run: the event loop or a worker thread (docs/architecture.md).

    tests/bench/engine_thread.py SNAPSHOT [--datasets 100]

Prints the median time of one /recommend answer per workload on SNAPSHOT, the
cost of an asyncio.to_thread hop, and, for the exporter's advice over
--datasets datasets of the form <pool>/scale/dsNNNNN (make them with
scale_snapshot.py), how long the event loop stalls when the advice is
computed on the loop and in a thread.
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from functools import partial

from advisor.answering.answerer import Answerer
from advisor.answering.exported_advice import advise
from advisor.engine.loader import load_rulebook
from advisor.engine.service import recommend
from advisor.host.snapshot import collect_from_root


def median_ms(fn, runs: int = 20) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


async def hop_us() -> float:
    times = []
    for _ in range(200):
        start = time.perf_counter()
        await asyncio.to_thread(lambda: None)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


async def worst_stall_ms(compute, in_thread: bool) -> tuple[float, float]:
    """(time to compute, the longest the event loop could not run a 1 ms timer meanwhile)."""
    lags: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        while not done.is_set():
            start = time.perf_counter()
            await asyncio.sleep(0.001)
            lags.append(time.perf_counter() - start - 0.001)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.02)
    start = time.perf_counter()
    if in_thread:
        await asyncio.to_thread(compute)
    else:
        compute()
    elapsed = time.perf_counter() - start
    done.set()
    await task
    return elapsed * 1000, max(lags) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("snapshot")
    parser.add_argument("--datasets", type=int, default=100)
    args = parser.parse_args()
    book = load_rulebook()
    host = asyncio.run(collect_from_root(args.snapshot, 30)).host
    print(f"{args.snapshot}: {len(host.datasets)} datasets")
    for name in sorted(book.workloads):
        print(f"  /recommend {name:10s} median {median_ms(partial(recommend, host, book, name)):.2f} ms")
    print(f"  to_thread hop median {asyncio.run(hop_us()):.0f} us")
    pool = host.pools[0].name if host.pools else "tank"
    workloads = {f"{pool}/scale/ds{i:05d}": "postgres" for i in range(args.datasets)}
    found = sum(host.dataset(d) is not None for d in workloads)
    answerer = Answerer(book)  # the rules alone: no probe store, no model
    for in_thread in (False, True, False, True):
        took, stall = asyncio.run(worst_stall_ms(lambda: advise(host, answerer, workloads), in_thread))
        print(f"  advice for {found} datasets {'in a thread ' if in_thread else 'on the loop '} "
              f"{took:.0f} ms, worst event-loop stall {stall:.1f} ms")


if __name__ == "__main__":
    main()
