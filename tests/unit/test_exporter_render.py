"""MetricsRenderer.render, the service's /metrics writer: the same text as a prometheus_client
registry of the same collectors (tests/support/reference.py), with the text of collectors built from zpool/zfs output alone reused while that
output is the same (Scrape.commands_generation), and everything read from kstats written anew."""
import asyncio

import pytest
from prometheus_client.parser import text_string_to_metric_families

from advisor.exporters.base import ExportOptions, Scrape
from advisor.exporters.collector import MetricsRenderer
from advisor.host.snapshot import collect_from_root
from advisor.hostmodel.facts import KStat, Property
from support import HOSTS
from support.reference import reference_text

RECORDINGS = [HOSTS / "2.1.11" / "hdd-raidz1x4" / "load", HOSTS / "2.3.2" / "ssd-mirror2x2" / "idle"]


def recorded_host(path):
    return asyncio.run(collect_from_root(path)).host


def without_durations(text: bytes) -> list[str]:
    return [l for l in text.decode().splitlines() if not l.startswith("zfs_advisor_scrape_collector_duration_seconds{")]


def samples(text: bytes, name: str) -> dict:
    return {tuple(sorted(s.labels.items())): s.value
            for f in text_string_to_metric_families(text.decode()) for s in f.samples if s.name == name}


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: "/".join(p.parts[-3:]))
@pytest.mark.parametrize("options", [ExportOptions(), ExportOptions(per_vdev=True, per_dataset=True)], ids=["default", "detail"])
def test_render_writes_what_the_registry_writes(path, options):
    scrape = Scrape(host=recorded_host(path), options=options, commands_generation=1.0)
    exporter = MetricsRenderer()
    reference = without_durations(reference_text(scrape))
    assert without_durations(exporter.render(scrape)) == reference
    assert without_durations(exporter.render(scrape)) == reference  # again, from the reused text


def test_command_output_text_is_reused_until_the_output_changes():
    host = recorded_host(RECORDINGS[1])
    exporter = MetricsRenderer()
    first = exporter.render(Scrape(host=host, commands_generation=1.0))
    # What a second run of zfs get would say, and a new arcstats read.
    changed = host.model_copy(update={
        "datasets": [d.model_copy(update={"properties": {**d.properties, "recordsize": Property(value="4096", source="local")}})
                     for d in host.datasets if d.type == "filesystem"],
        "arc": KStat(values={**host.arc.values, "hits": 424242}),
    })
    block = "zfs_dataset_block_size_bytes"
    same_run = exporter.render(Scrape(host=changed, commands_generation=1.0))
    assert samples(same_run, block) == samples(first, block)  # zfs get has not run again: its text is reused
    assert samples(same_run, "zfs_arc_hits_total") == {(): 424242.0}  # kstats are always written anew
    new_run = exporter.render(Scrape(host=changed, commands_generation=2.0))
    assert set(samples(new_run, block).values()) == {4096.0}
    unknown = MetricsRenderer()
    for generation in (None, None):  # no generation: nothing is reused
        assert set(samples(unknown.render(Scrape(host=changed, commands_generation=generation)), block).values()) == {4096.0}


def test_options_are_part_of_what_is_reused():
    host = recorded_host(RECORDINGS[1])
    exporter = MetricsRenderer()
    everything = exporter.render(Scrape(host=host, commands_generation=1.0))
    only_root = exporter.render(Scrape(host=host, options=ExportOptions(dataset_include="tank"), commands_generation=1.0))
    names = lambda text: {dict(k)["name"] for k in samples(text, "zfs_dataset_properties_info")}  # noqa: E731 - a one-line helper, read where it is used
    assert names(only_root) == {"tank"} and len(names(everything)) > 1


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: "/".join(p.parts[-3:]))
def test_text_rendered_ahead_from_the_command_output_alone_is_what_a_scrape_writes(path):
    from advisor.host.collect import CollectCache, assemble, command_host, run_commands
    from advisor.host.snapshot import host_view

    files, runner, now = host_view(str(path))
    commands = asyncio.run(run_commands(files, runner, CollectCache()))
    collection = assemble(files, commands, now)
    options = ExportOptions(per_vdev=True, per_dataset=True)
    warmed = MetricsRenderer()
    warmed.warm(Scrape(host=command_host(files, commands), options=options, commands_generation=commands.finished_at))
    assert set(warmed._text_cache) == {"vdevs", "histograms", "datasets", "module"}
    scrape = Scrape(host=collection.host, options=options, commands_generation=collection.commands_finished_at)
    assert without_durations(warmed.render(scrape)) == without_durations(MetricsRenderer().render(scrape))
