"""Facts are collected once for many concurrent callers, and reused while young."""
import asyncio

from advisor.host.provider import FactsProvider


def _root(tmp_path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "meminfo").write_text("MemTotal:  1024 kB\n")
    return str(tmp_path)


async def test_concurrent_callers_share_one_collection(tmp_path):
    provider = FactsProvider(_root(tmp_path), max_age_seconds=0)
    results = await asyncio.gather(*(provider.get() for _ in range(20)))
    assert provider.collections == 1
    assert all(r is results[0] for r in results)


async def test_young_facts_are_reused_old_ones_refreshed(tmp_path):
    provider = FactsProvider(_root(tmp_path), max_age_seconds=60)
    first = await provider.get()
    assert await provider.get() is first and provider.collections == 1
    fresh = await provider.get(max_age_seconds=0)
    assert fresh is not first and provider.collections == 2


async def test_a_caller_giving_up_does_not_cancel_the_others(tmp_path):
    provider = FactsProvider(_root(tmp_path), max_age_seconds=0)
    impatient = asyncio.create_task(provider.get())
    patient = asyncio.create_task(provider.get())
    await asyncio.sleep(0)
    impatient.cancel()
    collection = await patient
    assert collection.host.memory_bytes == 1024 * 1024
