"""Recommend for a workload on a host: resolve the target, evaluate every rule, merge.

`recommend()` is what /recommend, `zfs-advisor recommend`, `verify` and the page ask through
advisor/answering/answerer.py, which hands it the store's evidence and the model's predictions;
they differ only in how they print the `RecommendResponse`. Bad input
(unknown workload, parameter value, pool or dataset) raises `TargetError`
carrying the valid choices, which the API turns into a 400/404.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from functools import partial
from typing import Any, TypeVar

from advisor.engine.answer import decide_all, one_create
from advisor.engine.context import Context
from advisor.engine.derived_pool import pool_media
from advisor.engine.efficiency_item import efficiency_item
from advisor.engine.evaluator import evaluate
from advisor.engine.loader import RuleBook
from advisor.engine.models import GENERAL, ModelStatus, Recommendation, RecommendResponse, Summary, Target
from advisor.engine.predicted import PredictionLookup
from advisor.engine.schema import Rule, Workload
from advisor.evidence.efficiency import PoolEfficiency
from advisor.evidence.parameters import ParameterEvidence
from advisor.hostmodel.facts import Host
from advisor.hostmodel.names import InvalidName, check_dataset_name, check_pool_name

SCOPE_ORDER = {"pool-create": 0, "pool": 1, "dataset": 2, "module": 3}
MAX_PARAMS = 16


class TargetError(Exception):
    """A request the engine cannot answer; `status` 400 (malformed) or 404 (unknown)."""

    MAX_VALID = 200  # a host with thousands of datasets still answers with a bounded error

    def __init__(self, status: int, reason: str, valid: list[str] | None = None):
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.valid = None if valid is None else list(valid)[: self.MAX_VALID]


def resolve_workload(book: RuleBook, name: str | None) -> Workload | None:
    """The workload asked for; None for the general answer (no workload, or `general`)."""
    if name is None or name == GENERAL:
        return None
    if not name:
        raise TargetError(400, "parameter `workload` is empty: name one, or leave it out for the general answer",
                          [*sorted(book.workloads), GENERAL])
    workload = book.workloads.get(name)
    if workload is None:
        shown = name if len(name) <= 64 else name[:64] + "..."
        raise TargetError(404, f"unknown workload {shown!r}", [*sorted(book.workloads), GENERAL])
    return workload


def general_rules(book: RuleBook) -> list[Rule]:
    """The rules of the general answer: about pools and module parameters, true for any workload."""
    return [r for r in book.rules if r.scope != "dataset" and r.workload_independent]


def resolve_params(workload: Workload, given: dict[str, str]) -> dict[str, str]:
    declared = workload.all_parameters()
    if len(given) > MAX_PARAMS:
        raise TargetError(400, f"too many parameters (at most {MAX_PARAMS})", sorted(declared))
    params = {name: p.default for name, p in declared.items()}
    for name, value in given.items():
        if name not in declared:
            raise TargetError(400, f"workload {workload.name} has no parameter {name[:64]!r}", sorted(declared))
        if value not in declared[name].values:
            raise TargetError(400, f"{name}={value[:64]!r} is not valid for {workload.name}", declared[name].values)
        params[name] = value
    return params


def _check(kind: str, name: str, check) -> None:
    try:
        check(name)
    except InvalidName as exc:
        raise TargetError(400, f"invalid {kind} name: {exc}") from None


def recommend(
    host: Host,
    book: RuleBook,
    workload_name: str | None,
    params: dict[str, str] | None = None,
    pool: str | None = None,
    dataset: str | None = None,
    now: datetime | None = None,
    measured: Callable[[str, str], list[ParameterEvidence]] | None = None,
    predicted: PredictionLookup | None = None,
    model_status: ModelStatus | None = None,
    efficiency: Callable[[str], PoolEfficiency | None] | None = None,
) -> RecommendResponse:
    """`measured(pool, workload)`: the probe evidence of a pool (advisor/evidence/parameters.py, read from the store by advisor/store/probe_evidence.py), if any;
    `predicted`: the regression model's predictions (advisor/engine/predicted.py), if any;
    `efficiency(pool)`: the pool's latest stored efficiency report, if any (advisor/engine/efficiency_item.py).

    Without a workload (None or `general`), the general answer: the pool-level and module rules
    that hold for any workload (ashift, layout, redundancy, health, free space, ...), no dataset.
    """
    _check_not_empty(host, pool, dataset)
    workload = resolve_workload(book, workload_name)
    if workload is None:
        return _general(host, book, params or {}, pool, dataset, now, efficiency)
    resolved = resolve_params(workload, params or {})
    if pool:
        _check_pool(host, pool)
    if dataset:
        _check("dataset", dataset, check_dataset_name)
        ds = host.dataset(dataset)
        if ds is None:
            in_pool = [d.name for d in host.datasets if not pool or d.pool == pool]
            raise TargetError(404, f"no dataset {dataset!r} on this host{_no_data(host, 'zfs_get')}", in_pool)
        if pool and ds.pool != pool:
            raise TargetError(400, f"dataset {dataset!r} is not in pool {pool!r}", [d.name for d in host.datasets if d.pool == pool])
        pool = ds.pool

    rules = book.rules_for(workload)
    results: list[Recommendation] = []
    # A dataset's pool is unknown when zpool get failed while zfs get worked: dataset advice only.
    pools = [p for p in [host.pool(pool)] if p is not None] if pool else list(host.pools)
    # Module parameters are host-wide; pool measurements inform them when the
    # answer is about one pool.
    module_ctx = Context(host=host, workload=workload, params=resolved, pool=pools[0] if len(pools) == 1 else None)
    results += _run([r for r in rules if r.scope == "module"], module_ctx)
    target = Target(pool=pool, dataset=dataset)
    if dataset and not pools and pool is not None:  # pool: the dataset's own, set above
        ds_ctx = _dataset_context(host, workload, resolved, pool, dataset)
        if ds_ctx is not None:  # always, for a named dataset
            results += _run([r for r in rules if r.scope == "dataset"], ds_ctx)
    for p in pools:
        ctx = Context(host=host, workload=workload, params=resolved, pool=p)
        results += _run([r for r in rules if r.scope in ("pool-create", "pool")], ctx)
        ds_ctx = _dataset_context(host, workload, resolved, p.name, dataset)
        if ds_ctx is not None:
            results += _run([r for r in rules if r.scope == "dataset"], ds_ctx)
            if len(pools) == 1:
                target = Target(pool=p.name, dataset=ds_ctx.get("dataset.name"), new_dataset=ds_ctx.new_dataset is not None)
    merged = merge(results, rules)
    proposed = frozenset(r.dataset for r in merged if r.dataset and host.dataset(r.dataset) is None)
    by_pool = {p.name: measured(p.name, workload.name) for p in pools} if measured is not None else {}
    merged = decide_all(merged, workload, resolved, [p.name for p in pools], proposed, by_pool, predicted,
                        _on_medium(book.lab_modules, workload.name, host, pools),
                        _on_medium(book.app_findings, workload.name, host, pools))
    target, merged = one_create(target, merged, proposed)
    merged += _efficiency_items(pools, efficiency)
    return _response(host, workload.name, resolved, target, merged, pools, now, model_status)


T = TypeVar("T")


def _on_medium(table: Mapping[tuple[str, str, str], T], workload: str, host: Host,
               pools: list) -> Callable[[str], T | None]:
    """A parameter -> what the lab measured of this workload on a pool of the answer's medium: the
    module grid (`book.lab_modules`) or the application lab's findings (`book.app_findings`). One
    medium only: a host of SSD and HDD pools has no one lab pool to stand for it."""
    media = {pool_media(host, p) for p in pools}
    if len(media) != 1:
        return lambda parameter: None
    medium = media.pop()
    return lambda parameter: table.get((medium, workload, parameter))


def _check_not_empty(host: Host, pool: str | None, dataset: str | None) -> None:
    """`pool=` or `dataset=` with no value is a mistake (a variable left unset in a script), not
    a request for every pool: a 400 naming the valid ones."""
    if pool == "":
        raise TargetError(400, "parameter `pool` is empty: name one, or leave it out for every pool",
                          [p.name for p in host.pools])
    if dataset == "":
        raise TargetError(400, "parameter `dataset` is empty: name one, or leave it out for the pool's advice",
                          [d.name for d in host.datasets if not pool or d.pool == pool])


def _check_pool(host: Host, pool: str) -> None:
    _check("pool", pool, check_pool_name)
    if host.pool(pool) is None:
        raise TargetError(404, f"no pool {pool!r} on this host{_no_data(host, 'zpool_get')}",
                          [p.name for p in host.pools])


def _efficiency_items(pools: list, efficiency: Callable[[str], PoolEfficiency | None] | None) -> list[Recommendation]:
    """An `info` item per pool with a stored efficiency report (none for a pool never measured)."""
    if efficiency is None:
        return []
    found = (efficiency(p.name) for p in pools)
    return [item for f in found if f is not None and (item := efficiency_item(f)) is not None]


def _general(host: Host, book: RuleBook, params: dict[str, str], pool: str | None, dataset: str | None,
             now: datetime | None, efficiency: Callable[[str], PoolEfficiency | None] | None = None
             ) -> RecommendResponse:
    if params:
        raise TargetError(400, f"parameter {sorted(params)[0][:64]!r} belongs to a workload: give `workload` too",
                          sorted(book.workloads))
    if dataset:
        raise TargetError(400, "advice for a dataset needs a workload (without one the answer is about pools "
                          "and module parameters)", sorted(book.workloads))
    if pool:
        _check_pool(host, pool)
    pools = [p for p in [host.pool(pool)] if p is not None] if pool else list(host.pools)
    rules = general_rules(book)
    results = _run([r for r in rules if r.scope == "module"],
                   Context(host=host, pool=pools[0] if len(pools) == 1 else None))
    for p in pools:
        results += _run([r for r in rules if r.scope in ("pool-create", "pool")], Context(host=host, pool=p))
    decided = decide_all(merge(results, rules), None, {}, [p.name for p in pools], frozenset(), {}, None)
    return _response(host, GENERAL, {}, Target(pool=pool), decided + _efficiency_items(pools, efficiency), pools, now)


def _keep_current(rec: Recommendation) -> Recommendation:
    """A passed item recommends what it has: the rule's value is a threshold (ashift >= 9 passes at
    12) or one of several accepted values, and `requirement` shows it; `recommended` never does."""
    if rec.status != "passed" or rec.current is None or rec.recommended == rec.current:
        return rec
    return rec.model_copy(update={"recommended": rec.current})


def _response(host: Host, workload: str, params: dict[str, str], target: Target, merged: list[Recommendation],
              pools: list, now: datetime | None, model_status: ModelStatus | None = None) -> RecommendResponse:
    merged = [_keep_current(r) for r in merged]
    merged.sort(key=lambda r: (SCOPE_ORDER[r.scope], r.pool or "", r.dataset or ""))
    return RecommendResponse(
        workload=workload,
        parameters=params,
        target=target,
        recommendations=merged,
        summary=Summary(
            change=sum(r.status == "change" for r in merged),
            passed=sum(r.status == "passed" for r in merged),
            skipped=sum(r.status == "skipped" for r in merged),
            undecided=sum(r.status == "undecided" for r in merged),
        ),
        generated_at=now or datetime.now(UTC),
        facts=facts_summary(host, pools),
        model=model_status,
    )


def _no_data(host: Host, source: str) -> str:
    """Why a name may be missing: its source had no data on this collection."""
    status = host.sources.get(source)
    return f" (its source {source} has no data: {status.reason})" if status is not None and not status.ok else ""


def _dataset_context(host: Host, workload: Workload, params: dict[str, str], pool: str, dataset: str | None) -> Context | None:
    """The dataset to advise on: the one asked for, else a new `<pool>/<workload>[-<role>]`.

    A proposed dataset is judged by what it would inherit from the pool's root
    dataset; when a dataset of that name already exists, it is judged instead.
    """
    in_pool = partial(Context, host=host, workload=workload, params=params, pool=host.pool(pool))
    if dataset:
        return in_pool(dataset=host.dataset(dataset))
    role = params.get("role")
    name = f"{pool}/{workload.name}" + ("" if role == workload.roles[0].name else f"-{role}")
    if (existing := host.dataset(name)) is not None:
        return in_pool(dataset=existing)
    root = host.dataset(pool)
    if root is None:
        return None
    return in_pool(dataset=root, new_dataset=name)


def _run(rules: list[Rule], ctx: Context) -> list[Recommendation]:
    return [rec for rule in rules if (rec := evaluate(rule, ctx)) is not None]


def merge(results: list[Recommendation], rules: list[Rule]) -> list[Recommendation]:
    """One answer per (parameter, scope, pool, dataset).

    When several rules speak about the same setting, one that finds something
    to change wins over one that passes (rules add conditions to find problems
    the others do not look for), and either over a skipped one; then the most
    specific (selecting workloads by name or trait rather than `all`), then the more confident. A
    losing rule that would change the setting to something else is named in
    the winner's explanation.
    """
    specific = {r.id: r.workload_specific for r in rules}
    order = {"change": 0, "undecided": 1, "passed": 2, "skipped": 3}
    groups: dict[tuple, list[Recommendation]] = {}
    for rec in results:
        groups.setdefault((rec.parameter, rec.scope, rec.pool, rec.dataset, rec.kind), []).append(rec)
    merged = []
    for recs in groups.values():
        recs.sort(key=lambda r: (order[r.status], not specific.get(r.rule, False), -r.confidence))
        winner = recs[0]
        others = [
            f"rule {r.rule} would say {r.recommended}"
            for r in recs[1:]
            if r.status == "change" and r.recommended != winner.recommended
        ]
        if others:
            winner = winner.model_copy(update={"explanation": winner.explanation + " (More general advice: " + "; ".join(others) + ".)"})
        merged.append(winner)
    return merged


def facts_summary(host: Host, pools: list) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "hostname": host.hostname,
        "collected_at": host.collected_at.isoformat(),
        "zfs_present": host.zfs.present,
        "zfs_absent_reason": host.zfs.reason,
        "zfs_version": host.zfs.kmod_version,
        "memory_bytes": host.memory_bytes,
        "cpu_count": host.cpu_count,
        "pools": [],
    }
    for p in pools:
        if p is None:
            continue
        summary["pools"].append(
            {
                "name": p.name,
                "health": p.health,
                "capacity_ratio": p.capacity_ratio,
                "fragmentation_ratio": p.fragmentation_ratio,
                "vdevs": [{"name": v.name, "type": v.type, "group": v.group, "ashift": v.ashift} for v in p.top_level_vdevs(None)],
                "disks": [
                    {"name": d.name, "media": d.media, "physical_block_size": d.physical_block_size}
                    for d in host.pool_disks(p)
                ],
            }
        )
    return summary
