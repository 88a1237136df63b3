"""`zfs-advisor probe`: plan and run a probe of one pool for one workload, show the results.

    zfs-advisor probe --pool tank --workload postgres --budget 5m
    zfs-advisor probe --pool tank --workload postgres --param recordsize=8K,16K,32K,128K --plan-only
    zfs-advisor probe --pool tank --workload postgres --budget-probes 2
    zfs-advisor probe --list | --show ID | --recover

Exit codes: 0 completed, 1 aborted/failed/refused, 2 bad usage.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from advisor.config.settings import CACHE_METHODS, load_settings
from advisor.engine.loader import load_rulebook
from advisor.engine.units import format_size, parse_size
from advisor.evidence.bound import run_bound
from advisor.evidence.parameters import ParameterEvidence, summarize
from advisor.hostmodel.names import InvalidName
from advisor.probe.candidates import CandidateError, parse_candidate_spec
from advisor.probe.plan_runner import ProbeAborted, ProbeFailed, Progress
from advisor.probe.probe_plan import Budget, Plan
from advisor.probe.probe_service import (
    EFFICIENCY_TESTS,
    PlanError,
    ProbeConfig,
    ProbeService,
    efficiency_seconds,
    parse_budget,
)
from advisor.probe.safety import LockBusy, UnsafeToProbe
from advisor.probe.scratch import ScratchError
from advisor.probe.temporary_modparams import ModuleParamError
from advisor.store.db import StoreError
from advisor.store.probes import ProbeStore, RunRow, read_existing


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser("probe", help="benchmark candidate settings with fio in a scratch dataset",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", metavar="FILE", help="TOML settings file (state_dir is read from it)")
    p.add_argument("--state-dir", type=Path, help="where the probe database lives (default: settings' state_dir)")
    p.add_argument("--pool")
    p.add_argument("--workload")
    p.add_argument("--role", help="which of the workload's datasets (default: its first role)")
    p.add_argument("--budget", default="5m", help="wall time of the whole probe, e.g. 90s, 5m (default 5m)")
    p.add_argument("--param", action="append", default=[], metavar="NAME=V1,V2",
                   help="candidates, e.g. recordsize=8K,16K,128K (default: a recordsize grid around the I/O size)")
    p.add_argument("--budget-probes", type=int, metavar="N",
                   help="probe only the N candidates of the grid (the default baseline included) the regression model "
                        "expects most from (expected improvement, docs/model.md); without the model: the first N. From 2, "
                        "the recordsize of the workload's dataset on the pool that [workloads] names is the baseline")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="workload parameter, e.g. page_size=16K")
    p.add_argument("--repeats", type=int, default=2, help="fio runs per candidate (>= 2)")
    p.add_argument("--ramp", type=int, default=5, help="seconds of warm-up discarded per run")
    p.add_argument("--file-size", default="256M", help="largest file per fio job (default 256M)")
    p.add_argument("--space", default="4G", help="quota of each candidate's scratch dataset, >= 4 x its files (default 4G)")
    p.add_argument("--scratch-name", default=None, help="scratch dataset under the pool (default zfs-advisor-probe)")
    p.add_argument("--layout-rate", default="50M", help="assumed bytes/s of laying out files, for the estimate")
    p.add_argument("--layout-per", choices=("repeat", "candidate"), default="repeat",
                   help="lay files out afresh in a new scratch dataset for each repeat (default), or once per "
                        "candidate for all its repeats (how the lab prior was measured)")
    p.add_argument("--cache", choices=CACHE_METHODS, default="uncached",
                   help="how reads are kept from coming out of memory: uncached (default) sets primarycache="
                        "metadata on the scratch dataset only; arc-cap lowers zfs_arc_max (and zfs_arc_min) for "
                        "the whole host while the probe runs, which evicts other pools' cached data; cached does "
                        "neither (results may come from memory)")
    p.add_argument("--plan-only", action="store_true", help="print the plan and stop")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--list", action="store_true", help="list stored probe runs")
    p.add_argument("--show", type=int, metavar="ID", help="show one stored run and its results")
    p.add_argument("--efficiency", nargs="?", const="all", choices=EFFICIENCY_TESTS, metavar="{all,sequential,random}",
                   help="raw-disk read baselines (read-only) and the pool's large sequential throughput and small "
                        "random IOPS vs what the layout should give; a value runs only that part (default all)")
    p.add_argument("--recover", action="store_true", help="remove leftover scratch datasets, restore module parameters")
    p.set_defaults(func=run)
    return p


def _service(args: argparse.Namespace) -> ProbeService:
    state_dir = args.state_dir or load_settings(args.config).state_dir
    config = ProbeConfig(state_dir=state_dir, repeats=args.repeats, ramp_seconds=args.ramp,
                         max_file_bytes=parse_size(args.file_size), cache=args.cache,
                         layout_bytes_per_second=float(parse_size(args.layout_rate)),
                         layout_per_repeat=args.layout_per == "repeat",
                         **({"scratch_name": args.scratch_name} if args.scratch_name else {}))
    return ProbeService(config, load_rulebook(load_settings(args.config).rules_dir))


def _cache_text(plan: Plan) -> str:
    if plan.arc_max_bytes:
        floor = f" (floor lowered to {format_size(plan.arc_min_bytes)})" if plan.arc_min_bytes else ""
        return f"ARC cap {format_size(plan.arc_max_bytes)}{floor} for the whole host"
    if plan.layout_primarycache:
        return (f"the ARC left alone, scratch primarycache={plan.layout_primarycache} while laying out, "
                f"{plan.measure_primarycache} while measuring")
    return "the ARC left alone"


def run(args: argparse.Namespace) -> int:
    try:
        if args.repeats < 2:
            raise PlanError("--repeats must be at least 2 (one run has no dispersion)")
        if args.list or args.show is not None:  # reading never creates the state database
            state_dir = args.state_dir or load_settings(args.config).state_dir
            return read_existing(state_dir, lambda store: _stored(store, args))
        service = _service(args)
        if args.recover:
            print(json.dumps(asyncio.run(service.recover([args.pool] if args.pool else None)), indent=2))
            return 0
        if args.efficiency:
            if not args.pool:
                raise PlanError("--efficiency needs --pool")
            try:
                seconds = efficiency_seconds(parse_budget(args.budget), args.efficiency)
                report = asyncio.run(service.efficiency(args.pool, seconds, parse_size(args.file_size), args.efficiency))
            except (ProbeFailed, ProbeAborted, ScratchError, ModuleParamError) as exc:
                print(f"zfs-advisor probe: efficiency not measured: {exc}", file=sys.stderr)
                return 1
            print(json.dumps(report, indent=2) if args.json else _efficiency_text(report))
            return 0
        if not args.pool or not args.workload:
            raise PlanError("--pool and --workload are required (or --list, --show, --recover)")
        candidates = [c for spec in args.param for c in parse_candidate_spec(spec)] or None
        params = dict(s.split("=", 1) for s in args.set if "=" in s)
        if args.budget_probes is not None:
            candidates = _chosen_by_model(service, args, candidates, params)
        budget = Budget(seconds=parse_budget(args.budget), space_bytes=parse_size(args.space))
        plan = service.plan(args.pool, args.workload, budget, args.role, candidates, params)
        if args.plan_only:
            print(plan.model_dump_json(indent=2) if args.json else _plan_text(plan))
            return 0
        print(_plan_text(plan), file=sys.stderr)
        result = asyncio.run(service.run(plan, None if args.json else _progress(plan)))
        return _show(service.store, result.id, args.json)
    except (PlanError, CandidateError, InvalidName, ValueError) as exc:
        print(f"zfs-advisor probe: {exc}", file=sys.stderr)
        return 2
    except (UnsafeToProbe, LockBusy, StoreError) as exc:
        print(f"zfs-advisor probe: refused: {exc}", file=sys.stderr)
        return 1


def _chosen_by_model(service: ProbeService, args: argparse.Namespace, given: list | None,
                     params: dict[str, str]) -> list:
    from advisor.model.regression_model import build_model
    from advisor.probe.pooldesc import PoolUnavailable, read_pool_descriptor
    from advisor.probe.profiler import dataset_reference

    if given:
        raise PlanError("--budget-probes chooses the candidates itself: give it or --param, not both")
    if args.budget_probes < 1:
        raise PlanError("--budget-probes must be at least 1")
    if args.workload not in service.rulebook.workloads:
        raise PlanError(f"unknown workload {args.workload!r}; valid: {sorted(service.rulebook.workloads)}")
    try:
        _, descriptor = asyncio.run(read_pool_descriptor(args.pool, service.runner, service.files))
    except PoolUnavailable as exc:
        raise UnsafeToProbe(str(exc)) from None
    config = load_settings(args.config)
    # as the profiler chooses: from the recordsize of the workload's dataset that [workloads] names
    reference = asyncio.run(dataset_reference(service.runner, config.workloads, args.pool, args.workload))
    model = build_model(service.config.state_dir, service.rulebook, enabled=config.model).fit()
    chosen = model.next_probe_candidates(args.pool, args.workload, args.budget_probes, params, descriptor=descriptor,
                                         reference=reference)
    status = model.status()
    how = (f"by expected improvement (model {status.version})" if status and status.available
           else f"in grid order ({status.reason if status else 'the model is turned off'})")
    print(f"candidates chosen {how}: " + ", ".join(f"{c.parameter}={c.value}" for c in chosen), file=sys.stderr)
    return chosen


def _plan_text(plan: Plan) -> str:
    values = ", ".join(f"{c.parameter}={c.value}{' (baseline)' if c.baseline else ''}" for c in plan.candidates)
    lines = [f"probe {plan.pool} for {plan.workload}: {values}",
             f"  {plan.repeats} repeats x ({plan.ramp_seconds} s warm-up + {plan.runtime_seconds} s measured) each, "
             f"{'each on a fresh layout' if plan.layout_per_repeat else 'on one layout a candidate'}; "
             f"working set {format_size(plan.working_set_bytes)}, quota {format_size(plan.quota_bytes)}, "
             f"{_cache_text(plan)}; "
             f"about {plan.estimated_seconds:.0f} s of {plan.budget.seconds:g} s"]
    lines += [f"  note: {n}" for n in plan.notes]
    if plan.dropped:
        lines.append("  no room in the budget for: " + ", ".join(f"{c.parameter}={c.value}" for c in plan.dropped))
    return "\n".join(lines)


def _progress(plan: Plan):
    def show(p: Progress) -> None:
        done = min(1.0, p.elapsed_seconds / plan.estimated_seconds) if plan.estimated_seconds else 0
        bar = "#" * int(done * 20) + "." * (20 - int(done * 20))
        what = f"{p.candidate.parameter}={p.candidate.value}"
        if p.event == "result" and p.metrics:
            m = p.metrics
            p99 = m.write.latency.p99_seconds
            detail = f"repeat {p.repeat}: {m.iops:,.0f} IOPS, write p99 {p99 * 1000:.1f} ms" if p99 else \
                f"repeat {p.repeat}: {m.iops:,.0f} IOPS"
            if p.bound == "cpu":
                detail += " (CPU-bound: set aside as evidence)"
        else:
            detail = {"candidate": "creating scratch dataset", "layout": "laying out files"}.get(p.event, p.event)
        print(f"[{bar}] {p.elapsed_seconds:5.0f} s  {p.index}/{p.total} {what}: {detail}", file=sys.stderr, flush=True)
    return show


def _efficiency_text(report: dict) -> str:
    mb = lambda v: f"{v / 1e6:,.0f} MB/s"  # noqa: E731 - a unit formatter for the lines below
    pool = report["pool"]
    lines = [f"pool {pool['pool']}: {pool['layout']}, ashift {pool['ashift']}, {pool['media']}"]
    if report["raw_read_bytes_per_second"]:
        lines.append("raw disks (read-only sequential 1M, all at once): " + ", ".join(
            f"{d} {mb(v)}" for d, v in report["raw_read_bytes_per_second"].items()))
    for r in report["results"]:
        at_disks = (f" (the disks {mb(r['pool_bytes_per_second'])})"
                    if r["direction"] == "read" and "pool_bytes_per_second" in r else "")
        lines.append(f"{r['direction']:5s}: measured {mb(r['measured_bytes_per_second'])}{at_disks}, layout should "
                     f"give {mb(r['expected_bytes_per_second'])} ({r['expectation']}): {r['ratio']:.0%}")
        counters = [f"CPU busy {r['cpu_busy_ratio']:.0%}" if r.get("cpu_busy_ratio") is not None else "",
                    f"disks moved {r['disk_bytes_per_byte']:.2f} bytes per byte" if r.get("disk_bytes_per_byte") else "",
                    f"{r['txgs']['count']} txgs of {r['txgs']['dirty_bytes_mean'] / 2**20:.0f} MiB" if r.get("txgs") else "",
                    f"{r['sync_ratio']:.0%} while they synced" if r.get("sync_ratio") is not None else ""]
        if any(counters):
            lines.append("       " + ", ".join(c for c in counters if c))
        lines += [f"       - {d}" for d in r["diagnosis"]]
    lines += _random_text(report)
    if report.get("arc_max_bytes"):
        lines.append(f"ARC capped at {report['arc_max_bytes'] / 2**20:.0f} MiB while reading")
    lines.append(f"note: {report['note']}")
    return "\n".join(lines)


def _random_text(report: dict) -> list[str]:
    lines = [f"raw disks (read-only random {block}, queue of 32, all at once): "
             + ", ".join(f"{d} {v:,.0f} IOPS" for d, v in per_disk.items())
             for block, per_disk in (report.get("raw_random_iops") or {}).items()]
    for r in report.get("random_results") or []:
        lines.append(f"{r['test']}: {r['measured']:,.0f} IOPS at {r['jobs']} jobs, layout should give "
                     f"{r['expected']:,.0f} ({r['expectation']}): {r['ratio']:.0%}")
        lines.append("       by jobs: " + ", ".join(f"{lv['jobs']}: {lv['iops']:,.0f}" for lv in r["levels"]))
        lines += [f"       - {d}" for d in r["diagnosis"]]
    return lines


def _print_runs(runs: list[RunRow], as_json: bool) -> int:
    if as_json:
        print(json.dumps([r.model_dump() for r in runs], indent=2))
        return 0
    for r in runs:
        took = f"{r.ended_at - r.started_at:.0f} s" if r.ended_at else "-"
        print(f"{r.id:5d}  {r.pool:12s} {r.workload:12s} {r.status:9s} {took:>7s}  {r.reason or ''}")
    return 0


def _table(ev: ParameterEvidence) -> str:
    lines = [f"{ev.parameter} (baseline {ev.baseline}), run {ev.run_id}, pool {ev.pool.get('layout')} "
             f"ashift {ev.pool.get('ashift')} {ev.pool.get('media')}:",
             f"  {'rank':>4} {'value':>8} {'IOPS':>10} {'spread':>7} {'a run, 90 %':>17} {'vs base (90 %)':>20} "
             f"{'write p99':>10} {'read p99':>9} {'compress':>8} {'ARC hit':>7}"]
    for c in ev.candidates:
        ms = lambda s: f"{s * 1000:.1f} ms" if s is not None else "-"  # noqa: E731 - a unit formatter for the lines below
        ratio = f"{c.effect_ratio:.2f}x" if c.effect_ratio is not None else "-"
        if c.effect_interval is not None and not c.baseline:
            ratio += f" ({c.effect_interval[0]:.2f}..{c.effect_interval[1]:.2f})"
        run = f"{c.run_interval[0]:,.0f}..{c.run_interval[1]:,.0f}" if c.run_interval else "-"
        lines.append(f"  {c.rank:>4} {c.value:>8} {c.iops:>10,.0f} {c.iops_dispersion:>7.1%} {run:>17} {ratio:>20} "
                     f"{ms(c.write_p99_seconds):>10} {ms(c.read_p99_seconds):>9} "
                     f"{(f'{c.compress_ratio:.2f}x' if c.compress_ratio else '-'):>8} "
                     f"{(f'{c.arc_hit_ratio:.0%}' if c.arc_hit_ratio is not None else '-'):>7}")
    return "\n".join(lines)


def _stored(store: ProbeStore | None, args: argparse.Namespace) -> int:
    """--list or --show from the database as it is (None: no probe ever ran here)."""
    if args.list:
        return _print_runs(store.runs(args.pool, args.workload) if store else [], args.json)
    return _show(store, args.show, args.json)


def _show(store: ProbeStore | None, run_id: int, as_json: bool) -> int:
    run_row = store.run(run_id) if store else None
    if store is None or run_row is None:
        print(f"zfs-advisor probe: no run {run_id}", file=sys.stderr)
        return 1
    results = store.results(run_id)
    by_param: dict[str, list] = {}
    for r in results:
        by_param.setdefault(r.parameter, []).append(r)
    evidence = [summarize(p, rows) for p, rows in by_param.items()]
    bound = run_bound(results)
    if as_json:
        print(json.dumps({"run": run_row.model_dump(), "evidence": [e.model_dump() for e in evidence],
                          "results": [r.model_dump() for r in results], "bound": bound.model_dump()}, indent=2))
    else:
        print(f"run {run_row.id}: {run_row.status}" + (f" ({run_row.reason})" if run_row.reason else ""))
        for aside in bound.set_aside:
            print(f"set aside as evidence about the storage ({aside.parameter}, {aside.repeats} repeats CPU-bound): "
                  f"{aside.reason}")
        for ev in evidence:
            print(_table(ev))
    return 0 if run_row.status == "completed" else 1
