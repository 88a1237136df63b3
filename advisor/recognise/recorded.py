"""Recordings of the recognition lab run (tests/lab/record-recognition): per job, samples of every
objset kstat of the pool, `<n>.objsets`, each file's text after a line `== <file> <unix time>`.
Read with the daemon's own kstat parser; used by the unit tests and the lab's confusion table."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from advisor.host.kstat import parse_named_kstat
from advisor.recognise.traits import Counters, Traits, counters, window_traits


@dataclass(frozen=True)
class Sample:
    at: float
    datasets: dict[str, Counters]


def read_sample(path: Path) -> Sample:
    datasets: dict[str, Counters] = {}
    times = []
    for chunk in path.read_text().split("== ")[1:]:
        header, _, text = chunk.partition("\n")
        times.append(float(header.rsplit(" ", 1)[1]))
        values = parse_named_kstat(text).values
        name = values.get("dataset_name")
        if isinstance(name, str):
            datasets[name] = counters(values)
    return Sample(min(times) if times else 0.0, datasets)


def read_job(directory: Path) -> list[Sample]:
    return [read_sample(p) for p in sorted(directory.glob("*.objsets"))]


def windows(samples: list[Sample], dataset: str, seconds: float) -> list[Traits]:
    """Back-to-back windows of about `seconds` each (from one sample to the first at least that
    much later), as the daemon would see them with collections that far apart."""
    found, i = [], 0
    while i < len(samples):
        j = next((k for k in range(i + 1, len(samples)) if samples[k].at - samples[i].at >= seconds - 0.5), None)
        if j is None:
            break
        a, b = samples[i].datasets.get(dataset), samples[j].datasets.get(dataset)
        if a is not None and b is not None and (t := window_traits(a, b, samples[j].at - samples[i].at)):
            found.append(t)
        i = j
    return found
