"""Waiting for a condition instead of sleeping a fixed time.

A fixed sleep is a guess at how long something takes: too short on a loaded machine (the test
fails for nothing), too long everywhere else (the tier gets slower). These poll the condition
itself and, when it never holds, say what was waited for. A sleep that *is* the behaviour under
test (a slow client's pace, time passing an interval) stays a sleep, with a comment saying so.
"""
from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")
INTERVAL = 0.02  # between two looks: short beside any timeout here, long beside a look's cost


def poll(predicate: Callable[[], T], timeout: float, interval: float = INTERVAL) -> T:
    """The first true value of `predicate()` within `timeout` seconds, else its last (false) one;
    `interval` longer where a look is costly (a query to another program)."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()) and time.monotonic() < deadline:
        time.sleep(interval)
    return value


def wait_until(predicate: Callable[[], T], timeout: float, what: str | Callable[[], str],
               interval: float = INTERVAL) -> T:
    """`poll`, failing the test with `what` (a text, or a function for one read late, such as a
    log's tail) when the condition did not hold within `timeout` seconds."""
    value = poll(predicate, timeout, interval)
    assert value, f"waited {timeout:g} s for {what if isinstance(what, str) else what()}"
    return value


async def apoll(predicate: Callable[[], T | Awaitable[T]], timeout: float) -> T:
    """`poll` for a test on the event loop: the loop runs between looks; `predicate` may be async."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if inspect.isawaitable(value):
            value = await value
        if value or time.monotonic() >= deadline:
            return value  # type: ignore[return-value]  # awaited above: a T, not an Awaitable[T]
        await asyncio.sleep(INTERVAL)


async def await_until(predicate: Callable[[], T | Awaitable[T]], timeout: float,
                      what: str | Callable[[], str]) -> T:
    """`wait_until` on the event loop."""
    value = await apoll(predicate, timeout)
    assert value, f"waited {timeout:g} s for {what if isinstance(what, str) else what()}"
    return value
