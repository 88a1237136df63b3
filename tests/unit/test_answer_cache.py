"""Answers kept while what they read is unchanged (advisor/engine/answer_cache.py), the datasets
indexed by name (Host.dataset), and the answers' collection without objset kstats
(FactsProvider.for_answers), on the lab's recordings."""
from __future__ import annotations

import asyncio

from advisor.config.settings import Settings
from advisor.engine.answer_cache import AnswerCache
from advisor.engine.loader import load_rulebook
from advisor.engine.service import TargetError, recommend
from advisor.host.facts_provider import FactsProvider
from advisor.hostmodel.facts import Dataset, KStat, dataset_reads
from support import RECORDING
from support.recorded import recorded_host, with_dataset_properties

BOOK = load_rulebook(Settings().rules_dir)


def answer_of(host, dataset="tank/pg", workload="postgres"):
    return lambda: recommend(host, BOOK, workload, dataset=dataset)


def without_times(response) -> str:
    """The answer's JSON but the times it was generated and its facts collected."""
    return response.model_copy(update={"generated_at": response.generated_at.min,
                                       "facts": {**response.facts, "collected_at": None}}).model_dump_json()


# --- the index ----------------------------------------------------------------------------------
def test_every_recorded_dataset_is_found_by_name_and_no_other():
    host = recorded_host(RECORDING)
    assert len(host.datasets) > 1
    for ds in host.datasets:
        assert host.dataset(ds.name) is ds
    assert host.dataset("tank/never-created") is None


def test_the_index_follows_a_new_list_of_datasets_and_an_appended_one():
    host = recorded_host(RECORDING)
    assert host.dataset("tank/added") is None  # the index is built here
    added = Dataset(name="tank/added", type="filesystem")
    copy = host.model_copy(update={"datasets": [*host.datasets, added]})
    assert copy.dataset("tank/added") is added and host.dataset("tank/added") is None
    host.datasets.append(added)
    assert host.dataset("tank/added") is added


def test_of_two_datasets_of_one_name_the_first_is_found_as_a_scan_finds_it():
    host = recorded_host(RECORDING)
    first = host.datasets[1]
    host.datasets.append(Dataset(name=first.name, type="volume"))
    assert host.dataset(first.name) is first


def test_the_index_is_no_fact_a_host_with_one_equals_and_dumps_as_one_without():
    host, other = recorded_host(RECORDING), recorded_host(RECORDING)
    host.dataset("tank/pg")
    assert host == other and host.model_dump_json() == other.model_dump_json()


def test_the_lookups_of_an_answer_are_recorded():
    host = recorded_host(RECORDING)
    with dataset_reads() as names:
        recommend(host, BOOK, "postgres", dataset="tank/pg")
    assert "tank/pg" in names and "tank/vm" not in names


# --- the cache ----------------------------------------------------------------------------------
def test_an_unchanged_host_is_answered_from_memory_at_its_own_time():
    cache, first, again = AnswerCache(), recorded_host(RECORDING), recorded_host(RECORDING)
    again.collected_at = first.collected_at.replace(year=first.collected_at.year + 1)
    built = cache.get("q", first, None, answer_of(first))
    kept = cache.get("q", again, None, answer_of(again))
    assert cache.builds == 1
    assert kept.facts["collected_at"] == again.collected_at.isoformat() and kept.generated_at >= built.generated_at
    assert without_times(kept) == without_times(recommend(again, BOOK, "postgres", dataset="tank/pg"))


def test_a_change_to_a_dataset_the_answer_did_not_read_keeps_it():
    cache, host = AnswerCache(), recorded_host(RECORDING)
    cache.get("q", host, None, answer_of(host))
    other = with_dataset_properties(recorded_host(RECORDING), "tank/vm", recordsize="1048576")
    other.datasets.append(Dataset(name="tank/new", type="filesystem"))
    cache.get("q", other, None, answer_of(other))
    assert cache.builds == 1


def test_a_change_to_the_dataset_it_read_builds_it_again_and_the_answer_changes():
    cache, host = AnswerCache(), recorded_host(RECORDING)
    before = cache.get("q", host, None, answer_of(host))
    changed = with_dataset_properties(recorded_host(RECORDING), "tank/pg", recordsize="1048576")
    after = cache.get("q", changed, None, answer_of(changed))
    assert cache.builds == 2
    assert without_times(after) != without_times(before)
    assert without_times(after) == without_times(recommend(changed, BOOK, "postgres", dataset="tank/pg"))


def test_a_changed_kstat_or_pool_or_model_status_builds_it_again():
    cache, host = AnswerCache(), recorded_host(RECORDING)
    cache.get("q", host, None, answer_of(host))
    arc = recorded_host(RECORDING)
    assert arc.arc is not None
    arc.arc = KStat(values={**arc.arc.values, "hits": (arc.arc.int("hits") or 0) + 1})
    cache.get("q", arc, None, answer_of(arc))
    assert cache.builds == 2
    pool = recorded_host(RECORDING)
    pool.pools[0] = pool.pools[0].model_copy(update={"capacity_ratio": 0.97})
    cache.get("q", pool, None, answer_of(pool))
    assert cache.builds == 3
    cache.get("q", pool, "another model", answer_of(pool))
    assert cache.builds == 4


def test_a_query_the_engine_refuses_is_not_kept():
    cache, host = AnswerCache(), recorded_host(RECORDING)
    for _ in range(2):
        try:
            cache.get("q", host, None, answer_of(host, dataset="tank/never-created"))
        except TargetError as exc:
            assert exc.status == 404
        else:
            raise AssertionError("an unknown dataset was answered")
    assert cache.builds == 0


def test_the_cache_keeps_at_most_its_bound_of_queries():
    cache, host = AnswerCache(max_entries=2), recorded_host(RECORDING)
    for key in ("a", "b", "c", "a"):
        cache.get(key, host, None, answer_of(host))
    assert cache.builds == 4  # "a" went when "c" came


# --- the answers' collection --------------------------------------------------------------------
def test_the_answers_collection_has_the_datasets_without_their_objsets_and_the_pools_kstats():
    async def both():
        provider = FactsProvider(str(RECORDING), max_age_seconds=0, commands_interval_seconds=3600)
        return await provider.get(), await provider.for_answers(), await provider.for_answers()

    full, answers, again = asyncio.run(both())
    assert [d.name for d in answers.host.datasets] == [d.name for d in full.host.datasets]
    assert any(d.io is not None for d in full.host.datasets) and all(d.io is None for d in answers.host.datasets)
    assert answers.host.pools == full.host.pools and answers.host.arc == full.host.arc
    assert again.host is not answers.host and again.host.datasets is answers.host.datasets
    cache = AnswerCache()
    cache.get("q", answers.host, None, answer_of(answers.host))
    cache.get("q", again.host, None, answer_of(again.host))
    assert cache.builds == 1


def test_past_its_age_the_answers_collection_is_served_while_the_next_is_collected_and_past_twice_awaited():
    async def ages():
        provider = FactsProvider(str(RECORDING), max_age_seconds=60, commands_interval_seconds=3600)
        first = await provider.for_answers()
        provider._answers_at -= 61  # older than its age, younger than twice it
        served = await provider.for_answers()  # at once: the next one is under way
        under_way = provider._collecting_answers
        await under_way
        refreshed = await provider.for_answers()
        provider._answers_at -= 121  # older than twice its age: this request waits for fresh facts
        awaited = await provider.for_answers()
        return first, served, under_way, refreshed, awaited

    first, served, under_way, refreshed, awaited = asyncio.run(ages())
    assert served is first and under_way is not None
    assert refreshed is not first and refreshed is under_way.result()
    assert awaited is not refreshed
