"""FactsProvider: zpool/zfs output refreshed by interval (or in the background), kstats read fresh
for every collection, concurrent callers sharing one collection.

The host is a copy of a lab recording (OpenZFS 2.3.2, ssd-mirror2x2, idle), replayed: its
commands answer from the recording, its kstat files are real files the tests edit."""
import asyncio
import re
import shutil

import pytest

from advisor.host.facts_provider import FactsProvider
from advisor.host.runner import EXIT_TIMEOUT, CommandResult, ReplayRunner
from support import RECORDING, HangingRunner
from support.waiting import await_until

ARCSTATS = "proc/spl/kstat/zfs/arcstats"


@pytest.fixture
def host(tmp_path):
    root = tmp_path / "host"
    shutil.copytree(RECORDING, root)
    return root


def set_arc_hits(root, hits: int) -> None:
    path = root / ARCSTATS
    path.write_text(re.sub(r"^(hits\s+4\s+)\d+$", rf"\g<1>{hits}", path.read_text(), flags=re.M))


async def test_kstats_are_read_for_every_collection_commands_once_per_interval(host):
    provider = FactsProvider(str(host), max_age_seconds=0, commands_interval_seconds=3600)
    set_arc_hits(host, 111)
    first = await provider.get()
    set_arc_hits(host, 222)
    second = await provider.get()
    assert (first.host.arc.values["hits"], second.host.arc.values["hits"]) == (111, 222)
    assert provider.command_runs == 1 and provider.collections == 2
    assert [p.name for p in second.host.pools] == ["tank"]
    assert second.host.pools[0].root == first.host.pools[0].root  # the same zpool status, not re-run
    assert not first.stale and not second.stale


async def test_commands_run_again_once_older_than_the_interval(host):
    provider = FactsProvider(str(host), max_age_seconds=0, commands_interval_seconds=0.05)
    await provider.get()
    await provider.get()
    assert provider.command_runs == 1
    await asyncio.sleep(0.1)  # the behaviour under test: the output growing older than the interval
    await provider.get()
    assert provider.command_runs == 2


async def test_the_background_task_refreshes_the_commands(host):
    provider = FactsProvider(str(host), commands_interval_seconds=0.02)
    task = asyncio.create_task(provider.run())
    try:
        await await_until(lambda: provider.command_runs >= 3, 10, "three runs of the commands")
    finally:
        task.cancel()


async def test_a_refresh_replaces_the_last_collection_so_one_parse_stays_alive(host):
    """The last collection's datasets come from the output it was built from; kept until the next
    request, it held a second `zfs get` parse alive beside the new one (at 10,000 datasets, 30,000
    more Property objects)."""
    provider = FactsProvider(str(host), max_age_seconds=3600, commands_interval_seconds=0.02)
    first = await provider.get()
    task = asyncio.create_task(provider.run())

    def caught_up() -> bool:  # the last collection is built from the newest output
        return provider.last.commands_finished_at == provider._commands.finished_at

    try:  # nobody asks, and yet it is replaced
        await await_until(lambda: provider.command_runs >= 3 and caught_up(), 10,
                          "three runs of the commands, the last collection built from the newest")
    finally:
        task.cancel()
    assert provider.last is not first and provider.collections >= 3
    newest = {d.name: d.properties for d in provider._commands.datasets}
    assert all(d.properties is newest[d.name] for d in provider.last.host.datasets)


async def test_shared_bodies_do_not_keep_their_generation_alive():
    import gc
    import weakref

    from advisor.server.bodies import SharedBodies

    class Generation:
        pass

    bodies, generation = SharedBodies(), Generation()

    async def build():
        return b"body"

    assert await bodies.get(generation, "v", build) == b"body"
    gone = weakref.ref(generation)
    del generation
    gc.collect()
    assert gone() is None
    newer = Generation()
    assert await bodies.get(newer, "v", build) == b"body" and bodies.builds == 2


async def test_concurrent_callers_share_one_collection(host):
    provider = FactsProvider(str(host), max_age_seconds=0)
    results = await asyncio.gather(*(provider.get() for _ in range(20)))
    assert provider.collections == 1 and provider.command_runs == 1
    assert all(r is results[0] for r in results)


async def test_young_collections_are_reused_old_ones_refreshed(host):
    provider = FactsProvider(str(host), max_age_seconds=60)
    first = await provider.get()
    assert await provider.get() is first and provider.collections == 1
    fresh = await provider.get(max_age_seconds=0)
    assert fresh is not first and provider.collections == 2


async def test_a_caller_giving_up_does_not_cancel_the_others(host):
    provider = FactsProvider(str(host), max_age_seconds=0)
    impatient = asyncio.create_task(provider.get())
    patient = asyncio.create_task(provider.get())
    await asyncio.sleep(0)  # one turn of the loop: both callers are waiting before one gives up
    impatient.cancel()
    collection = await patient
    assert [p.name for p in collection.host.pools] == ["tank"]


async def test_a_collection_leaves_the_command_output_it_used_unchanged(host):
    provider = FactsProvider(str(host), max_age_seconds=0, commands_interval_seconds=3600)
    first = await provider.get()
    (host / "proc/spl/kstat/zfs/tank/txgs").write_text("txg birth state ndirty nread nwritten reads writes otime qtime wtime stime\n")
    second = await provider.get()
    assert first.host.pools[0].txgs and not second.host.pools[0].txgs


async def test_without_command_output_kstats_are_served_and_marked_stale(host):
    provider = FactsProvider(str(host), max_age_seconds=0, command_timeout_seconds=0.05)
    provider.runner = HangingRunner()
    collection = await provider.get(wait_seconds=0.05)
    assert collection.stale
    assert collection.host.arc is not None and collection.host.pools == []


async def test_overdue_command_output_is_served_and_marked_stale(host):
    provider = FactsProvider(str(host), max_age_seconds=0, command_timeout_seconds=0.2,
                             commands_interval_seconds=0.2)
    good = await provider.get()
    assert not good.stale
    provider.runner = HangingRunner()
    await await_until(provider.commands_overdue, 10, "the hanging run to pass interval + command timeout")
    collection = await provider.get(wait_seconds=0.05)
    assert collection.stale
    assert [p.name for p in collection.host.pools] == ["tank"]  # the last good output
    assert collection.commands_finished_at == good.commands_finished_at


def objset_of(root, dataset: str):
    for path in (root / "proc/spl/kstat/zfs/tank").glob("objset-*"):
        if re.search(rf"^dataset_name\s+7\s+{re.escape(dataset)}$", path.read_text(), re.M):
            return path
    raise AssertionError(f"no objset kstat for {dataset}")


def set_objset_field(path, field: str, value: int) -> None:
    path.write_text(re.sub(rf"^({field}\s+4\s+)\d+$", rf"\g<1>{value}", path.read_text(), flags=re.M))


async def test_objset_counters_are_fresh_and_idle_datasets_are_not_parsed_again(host):
    provider = FactsProvider(str(host), max_age_seconds=0, commands_interval_seconds=3600)
    set_objset_field(objset_of(host, "tank/pg"), "nwritten", 1000)
    first = await provider.get()
    set_objset_field(objset_of(host, "tank/pg"), "nwritten", 2000)
    second = await provider.get()
    pg = [c.host.dataset("tank/pg") for c in (first, second)]
    assert [d.io.values["nwritten"] for d in pg] == [1000, 2000]
    assert pg[1] is not pg[0]
    logs = [c.host.dataset("tank/logs") for c in (first, second)]
    assert logs[1] is logs[0] and logs[0].io is not None  # unchanged file: the same facts, not re-read into new ones


async def test_a_destroyed_dataset_is_forgotten(host):
    provider = FactsProvider(str(host), max_age_seconds=0, commands_interval_seconds=3600)
    await provider.get()
    gone = objset_of(host, "tank/media")
    gone.unlink()
    collection = await provider.get()
    assert collection.host.dataset("tank/media").io is None  # still listed by the last zfs get, no counters
    assert not [p for p in provider._cache.objsets if p.endswith(gone.name)]


class TimingOut(ReplayRunner):
    """The recording's answers, but `zfs get` (or whatever `fails` matches) misses its deadline."""

    def __init__(self, recorded: ReplayRunner, fails=("zfs", "get")):
        super().__init__([])
        self.recorded, self.fails = recorded, fails

    async def run(self, argv, timeout_seconds=None):
        if tuple(argv[: len(self.fails)]) == self.fails:
            return CommandResult(tuple(argv), EXIT_TIMEOUT, "", "")
        return await self.recorded.run(argv, timeout_seconds)


async def test_a_source_failing_in_one_run_serves_its_last_good_output(host):
    provider = FactsProvider(str(host), max_age_seconds=0, commands_interval_seconds=3600)
    good = await provider.get()
    provider.runner = TimingOut(provider.runner)
    await provider.refresh_commands()
    collection = await provider.get()
    assert [d.name for d in collection.host.datasets] == [d.name for d in good.host.datasets]
    status = collection.host.sources["zfs_get"]
    assert not status.ok and "serving the last good output" in status.reason
    assert collection.host.sources["zpool_get"].ok


async def test_without_a_good_run_before_a_failing_source_has_no_data(host):
    provider = FactsProvider(str(host), max_age_seconds=0)
    provider.runner = TimingOut(provider.runner)
    collection = await provider.get()
    assert collection.host.datasets == [] and not collection.host.sources["zfs_get"].ok
    assert "last good" not in collection.host.sources["zfs_get"].reason


async def test_newest_is_the_later_of_the_answers_and_the_last_collection(host):
    """/healthz reports `newest`: after a /recommend alone (for_answers) its sources are known too."""
    provider = FactsProvider(str(host), max_age_seconds=0, commands_interval_seconds=3600)
    assert provider.newest is None
    answers = await provider.for_answers()
    assert provider.last is None and provider.newest is answers
    scraped = await provider.get()
    assert provider.newest is scraped
    again = await provider.for_answers()
    assert again is not answers and provider.newest is again
