"""`/recommend` with `workload=auto`, or with a dataset and no workload: the workload is the one the
dataset's I/O was recognised as; when it was not recognised with enough confidence, the answer is
the pool-level advice that holds for any workload, and says why."""
from __future__ import annotations

from dataclasses import replace

from advisor.answering.answerer import Answerer, Query
from advisor.engine.models import GENERAL, RecognisedWorkload, Recommendation, RecommendResponse, Summary
from advisor.engine.service import TargetError
from advisor.hostmodel.facts import Host
from advisor.hostmodel.names import InvalidName, check_dataset_name
from advisor.recognise.classify import UNKNOWN, Recognition

AUTO = "auto"
MAX_DATASETS = 20  # recognised datasets whose own advice one answer without a dataset carries


def wants_auto(workload: str | None, dataset: str | None) -> bool:
    return workload == AUTO or (workload is None and bool(dataset))


def with_auto(valid: list[str] | None) -> list[str] | None:
    """The engine lists the workloads and `general`; for /recommend and the CLI `auto` is one more choice."""
    return [*valid, AUTO] if valid and GENERAL in valid else valid


def recognised_item(dataset: str, found: Recognition, used: bool) -> RecognisedWorkload:
    return RecognisedWorkload(dataset=dataset, used=used, **found.shown())


def recommend_auto(answerer: Answerer, host: Host, recognised: dict[str, Recognition], query: Query
                   ) -> RecommendResponse:
    """The answer to `query` (workload `auto`, or none with a dataset): each answer it is made of
    asked of `answerer` with the recognised workload."""
    book, pool, dataset = answerer.book, query.pool, query.dataset
    if query.params:
        raise TargetError(400, f"parameter {sorted(query.params)[0][:64]!r} belongs to a workload: name the "
                          "workload, it cannot go with workload=auto", [*sorted(book.workloads), GENERAL])
    if not dataset:
        return _every_dataset(answerer, host, recognised, query)
    try:
        check_dataset_name(dataset)
    except InvalidName as exc:
        raise TargetError(400, f"invalid dataset name: {exc}") from None
    ds = host.dataset(dataset)
    if ds is None:
        raise TargetError(404, f"no dataset {dataset!r} on this host", [d.name for d in host.datasets
                                                                         if not pool or d.pool == pool])
    if pool and ds.pool != pool:
        raise TargetError(400, f"dataset {dataset!r} is not in pool {pool!r}",
                          [d.name for d in host.datasets if d.pool == pool])
    found = recognised.get(dataset) or Recognition(UNKNOWN, None, 0.0, None, reason="no window of I/O observed yet")
    if found.known and found.workload in book.workloads:
        answer = answerer.answer(host, replace(query, workload=found.workload, params=_role(found)))
        return answer.model_copy(update={"recognised": [recognised_item(dataset, found, True)]})
    answer = answerer.answer(host, replace(query, workload=None, pool=ds.pool, dataset=None))
    return answer.model_copy(update={"recognised": [recognised_item(dataset, found, False)]})


def _role(found: Recognition) -> dict[str, str]:
    """The workload parameters of a recognised dataset: its role, when one was recognised."""
    return {"role": found.role} if found.role else {}


def _every_dataset(answerer: Answerer, host: Host, recognised: dict[str, Recognition], query: Query
                   ) -> RecommendResponse:
    """The pools' general answer, plus each recognised dataset's own advice (its dataset-scope
    items, for the workload it was recognised as; the busiest MAX_DATASETS), and every active
    dataset's recognition."""
    book, pool = answerer.book, query.pool
    answer = answerer.answer(host, replace(query, workload=None))
    chosen = {pool} if pool else {p.name for p in host.pools}
    active = sorted(((name, found) for name, found in recognised.items()
                     if found.traits is not None and found.traits.operations and name.split("/", 1)[0] in chosen),
                    key=lambda p: -(p[1].traits.operations if p[1].traits else 0))
    used = [(name, found) for name, found in active if found.known and found.workload in book.workloads
            and host.dataset(name) is not None][:MAX_DATASETS]
    items: list[Recommendation] = list(answer.recommendations)
    for name, found in used:
        own = answerer.answer(host, replace(query, workload=found.workload, params=_role(found), pool=None,
                                            dataset=name))
        items += [r for r in own.recommendations if r.scope == "dataset" and r.dataset == name]
    named = {name for name, _ in used}
    shown = [recognised_item(name, found, name in named) for name, found in sorted(active)]
    return answer.model_copy(update={"recognised": shown, "recommendations": items, "summary": _summary(items)})


def _summary(items: list[Recommendation]) -> Summary:
    return Summary(change=sum(r.status == "change" for r in items), passed=sum(r.status == "passed" for r in items),
                   skipped=sum(r.status == "skipped" for r in items),
                   undecided=sum(r.status == "undecided" for r in items))
