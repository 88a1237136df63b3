"""`zfs-advisor profile`: one pass of the background profiler (what zfs-advisor-probe.service runs).

    zfs-advisor profile                   # queued runs, then [profiler] pools x workloads
    zfs-advisor profile --skips           # why recent passes skipped (last 24 h)

Needs root (zfs create/destroy, module parameters): the API only queues. Prints one JSON line
per queued run or pool x workload it handled. Exit codes: 0 a pass was made (whatever it
found), 1 the store cannot be used, 2 bad settings.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from dataclasses import asdict
from pathlib import Path

from advisor.cli.common import add_subcommand, settings
from advisor.config.settings import Settings, SettingsError
from advisor.engine.loader import load_rulebook
from advisor.engine.measured import same_value
from advisor.evidence.parameters import ParameterEvidence
from advisor.probe.candidates import Candidate
from advisor.probe.probe_plan import Plan
from advisor.probe.probe_service import ProbeConfig, ProbeService
from advisor.probe.profiler import (
    CandidateChooser,
    Outcome,
    Profiler,
    choose_candidates,
    dataset_reference,
    profiler_config,
)
from advisor.process.logs import setup_logging
from advisor.store.db import StoreError


def register(sub: argparse._SubParsersAction) -> None:
    p = add_subcommand(sub, "profile", "one pass of the background profiler: queued probe runs, then configured pools")
    p.description = __doc__
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument("--state-dir", type=Path, help="where the probe database lives (default: settings' state_dir)")
    p.add_argument("--skips", action="store_true", help="print the skips of the last 24 h and stop")
    p.set_defaults(func=run)


async def _pass(profiler: Profiler) -> list[Outcome] | signal.Signals:
    """One pass, or the signal that stopped it: SIGTERM (systemctl stop) or SIGINT cancels it, and
    the probe under way restores its module parameters and destroys its scratch datasets before
    the process exits (Python's default SIGTERM would end it at once, leaving that to the next
    pass's recovery)."""
    task = asyncio.current_task()
    assert task is not None  # for the type checker: a coroutine asyncio runs is always in a task
    loop = asyncio.get_running_loop()
    stopped_by: list[signal.Signals] = []

    def stop(sig: signal.Signals) -> None:
        stopped_by.append(sig)
        task.cancel()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop, sig)
    try:
        return await profiler.run_once()
    except asyncio.CancelledError:
        if not stopped_by:
            raise
        return stopped_by[0]


def run(args: argparse.Namespace) -> int:
    try:
        config = settings(args)
    except SettingsError as exc:
        print(f"zfs-advisor profile: {exc}", file=sys.stderr)
        return 2
    setup_logging(config.log_level, config.log_format)
    book = load_rulebook(config.rules_dir)
    unknown = [w for w in config.profiler.workloads if w not in book.workloads]
    if unknown:
        print(f"zfs-advisor profile: [profiler] workloads {unknown} are not workloads; valid: "
              f"{', '.join(sorted(book.workloads))}", file=sys.stderr)
        return 2
    try:
        service = ProbeService(profiler_config(config.profiler, ProbeConfig(state_dir=args.state_dir or config.state_dir)),
                               book)
        if args.skips:
            for skip in reversed(service.store.skips(since=time.time() - 86400)):
                print(skip.model_dump_json())
            return 0
        outcomes = asyncio.run(_pass(Profiler(service, config.profiler, model_chooser(service, config))))
    except StoreError as exc:
        print(f"zfs-advisor profile: {exc}", file=sys.stderr)
        return 1
    if isinstance(outcomes, signal.Signals):
        print(f"zfs-advisor profile: stopped by {outcomes.name}; the probe under way restored what it changed",
              file=sys.stderr)
        # The shell's 128 + signal: the prober's unit counts 143 (SIGTERM, `systemctl stop`) as a
        # clean stop (SuccessExitStatus=), not a failure.
        return 128 + outcomes.value
    for outcome in outcomes:
        print(json.dumps(asdict(outcome)))
    return 0


def model_chooser(service: ProbeService, config: Settings) -> CandidateChooser:
    """With `[profiler] budget_probes` N > 0 (and `model = true`), a background run measures the
    baseline and the N - 1 candidates the regression model's expected improvement asks for
    (advisor/model/select.py), not every candidate of the plan; what this pool has measured
    already is not measured again. Without numpy the model answers in grid order."""
    if config.profiler.budget_probes < 1 or not config.model:
        return choose_candidates
    from advisor.model.regression_model import build_model
    from advisor.probe.pooldesc import PoolUnavailable, read_pool_descriptor

    model = build_model(service.config.state_dir, service.rulebook).fit()

    async def choose(plan: Plan, history: list[ParameterEvidence]) -> list[Candidate]:
        if not choose_candidates(plan, history):
            return []  # every candidate of the plan measured
        try:
            _, descriptor = await read_pool_descriptor(plan.pool, service.runner, service.files)
        except PoolUnavailable:
            return []  # the run's own checks say why when it is tried
        reference = await dataset_reference(service.runner, config.workloads, plan.pool, plan.workload)
        picked = await asyncio.to_thread(model.next_probe_candidates, plan.pool, plan.workload,
                                         config.profiler.budget_probes, plan.params, None, descriptor, reference)
        # measured already: in a run against this run's baseline (the default, or a dataset's value)
        base = next((c for c in picked if c.baseline), None)
        measured = {(e.parameter, c.value) for e in history for c in e.candidates
                    if base is None or any(same_value(x.value, base.value) for x in e.candidates)}
        new = [c for c in picked if not c.baseline and (c.parameter, c.value) not in measured]
        return [c for c in picked if c.baseline and c.parameter in {n.parameter for n in new}] + new

    return choose
