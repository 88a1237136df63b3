"""tests/support/waiting.py: the value once the condition holds, and a failure that names what
was waited for when it never does."""
from __future__ import annotations

import pytest

from support.waiting import apoll, await_until, poll, wait_until


def counting_to(n: int):
    """A condition that holds from its n-th look on, and the looks taken."""
    looks: list[int] = []

    def predicate() -> int | None:
        looks.append(1)
        return len(looks) if len(looks) >= n else None
    return predicate, looks


def test_waits_for_the_condition_and_returns_its_value():
    predicate, looks = counting_to(3)
    assert wait_until(predicate, 30, "the third look") == 3 and len(looks) == 3


def test_a_condition_that_never_holds_fails_naming_what_was_awaited():
    with pytest.raises(AssertionError, match="waited 0.05 s for the pool to come back: tank"):
        wait_until(lambda: False, 0.05, lambda: "the pool to come back: tank")
    assert poll(lambda: 0, 0.05) == 0  # poll alone returns the last look, for a fault tally to count


async def test_on_the_loop_an_async_condition_is_awaited():
    predicate, looks = counting_to(2)

    async def condition() -> int | None:
        return predicate()
    assert await await_until(condition, 30, "the second look") == 2 and len(looks) == 2
    assert await apoll(lambda: None, 0.05) is None
    with pytest.raises(AssertionError, match="waited 0.05 s for nothing"):
        await await_until(lambda: False, 0.05, "nothing")
