"""The service's change tracker: fed one collection after each command refresh, it keeps the I/O
samples, notices a tracked setting that changed, records it with the window before it, and once a
window as long has passed after it, compares the two and stores the verdict.

Plain, synchronous code: the app runs `observe` in a worker thread after each refresh (one at a
time) and reads `records()` / `exported()` from the event loop (each a whole tuple, replaced).
"""
from __future__ import annotations

import logging
import sqlite3
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from advisor.answering.exported_advice import Advice
from advisor.changes import stats
from advisor.changes.detect import MAX_PER_COLLECTION, Change, Tracked, Values, detect, values
from advisor.changes.followed import followed, open_recommendations
from advisor.changes.measure import METRICS, window_values
from advisor.changes.samples import Samples
from advisor.engine.models import Recommendation
from advisor.hostmodel.facts import Host
from advisor.store.changes import MAX_LISTED, ChangeStore
from advisor.store.db import DB_FILE, StoreError, connect, connect_to_read

log = logging.getLogger(__name__)
LATENCY_OF_POOL = frozenset(m.name for m in METRICS if "latency" in m.name)


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat()


class ChangeTracker:
    def __init__(self, what: Tracked, state_dir: str | Path | None, window_seconds: float) -> None:
        self.what = what
        self.state_dir = state_dir  # None: in memory only (tests, a replayed host)
        self.window_seconds = window_seconds
        # One window and room for late collections: a change's before window is kept with its record
        # as soon as it is seen, and its after window is the last one when it is compared.
        self.samples = Samples(horizon_seconds=window_seconds + 120)
        self._values: Values | None = None
        self._open: list[tuple[str, Recommendation]] = []
        self._workloads: dict[str, str] = {}  # dataset -> its workload (the `workloads` setting)
        self._last_at: float | None = None
        self._first_at: float | None = None
        self._records: tuple[dict[str, Any], ...] = ()  # newest first, at most MAX_LISTED
        self._lock = threading.Lock()  # one observe at a time
        self.generation = 0  # bumped whenever a record changes: part of the /metrics body's key
        self._store_warned = False

    # --- reading (event loop) -------------------------------------------------------------
    def records(self, pool: str | None = None, dataset: str | None = None) -> list[dict[str, Any]]:
        """Newest first, without the private fields; a module parameter's change is every pool's."""
        return [public(r) for r in self._records
                if (pool is None or r["pool"] == pool or r["scope"] == "module")
                and (dataset is None or r["dataset"] == dataset)]

    def exported(self) -> list[dict[str, Any]]:
        """The latest change of each (pool, dataset, parameter): what /metrics shows."""
        seen, out = set(), []
        for r in self._records:
            key = (r["pool"], r["dataset"], r["parameter"])
            if key not in seen:
                seen.add(key)
                out.append(r)
        return out

    # --- start-up -------------------------------------------------------------------------
    def load(self) -> None:
        """The stored records (never creates the database); those still measuring go on measuring
        with the samples from now on: the after window starts again (its samples were in memory)."""
        if self.state_dir is None or not (Path(self.state_dir) / DB_FILE).exists():
            return
        try:
            conn = connect_to_read(self.state_dir)
            try:
                records = ChangeStore(conn).records(limit=MAX_LISTED)
            finally:
                conn.close()
        except (StoreError, sqlite3.Error) as exc:
            log.warning("recorded setting changes cannot be read from %s: %s", self.state_dir, exc)
            return
        for r in records:
            if r["status"] == "measuring":
                r["_resume"] = True
        self._records = tuple(records)

    # --- one collection (worker thread) ---------------------------------------------------
    def observe(self, host: Host, advice: Advice | None = None, generation: float | None = None) -> None:
        """`generation`: the command output's (Collection.commands_finished_at), under which the
        exporter's advice is cached; the collection's time when not given."""
        with self._lock:
            at = host.collected_at.timestamp()
            if self._last_at is not None and at <= self._last_at:
                return
            self.samples.add(host, at)
            self._first_at = self._first_at or at
            now_values = values(host, self.what)
            if self._values is not None and self._last_at is not None:
                found = detect(self._values, now_values)
                if any(c.scope == "module" for c in found) and self._probe_active_since(self._last_at):
                    found = [c for c in found if c.scope != "module"]  # a probe's own settings and their restore
                if len(found) > MAX_PER_COLLECTION:
                    log.warning("%d tracked settings changed at once; recording the first %d", len(found),
                                MAX_PER_COLLECTION)
                found = found[:MAX_PER_COLLECTION]
                for change in found:
                    together = sorted({c.parameter for c in found if c is not change and _same_subject_of(c, change)})
                    self._start(change, self._last_at, at, together)
            self._finish_due(at)
            if advice is not None:  # what the next change may have followed
                self._open = open_recommendations(host, advice, at if generation is None else generation)
                self._workloads = dict(advice.workloads)
            self._values, self._last_at = now_values, at

    def _start(self, change: Change, before_end: float, after_start: float, together: list[str]) -> None:
        for r in self._records:  # a later change of the same thing ends the earlier one's after window
            if r["status"] == "measuring" and _same_subject(r, change) and r["_after_from"] < after_start:
                self._finish(r, end=before_end, note=f"after window cut short by the change of {change.parameter} "
                             f"at {iso(after_start)}")
        times = self.samples.span(before_end - self.window_seconds, before_end)
        subjects = [(change.pool, change.dataset)] if change.scope == "dataset" else \
            [(p, None) for p in sorted(self.samples.pools)]
        before = {f"{p}|{d or ''}": window_values(self.samples, p, d, times) for p, d in subjects if p}
        record: dict[str, Any] = {
            "id": None, "detected_at": iso(after_start), "detected_at_epoch": after_start,
            "changed_between": [iso(before_end), iso(after_start)],
            "scope": change.scope, "pool": change.pool, "dataset": change.dataset, "parameter": change.parameter,
            "old": change.old, "new": change.new, "source": change.source,
            "followed_recommendation": followed(change, self._open),
            # the dataset's workload as the `workloads` setting names it: the model learns from the
            # change's measured effect for that workload (advisor/model/change_samples.py)
            "workload": self._workloads.get(change.dataset) if change.dataset else None,
            "window_seconds": self.window_seconds,
            "before_window": [iso(times[0]), iso(times[-1])] if times else None,
            "after_window": None, "status": "measuring", "verdict": "measuring",
            "reason": f"measuring: the verdict comes {self.window_seconds:g} s after the change",
            "notes": [], "effects": [],
            "_before": before, "_after_from": after_start,
        }
        if self._first_at is not None and before_end - self._first_at < self.window_seconds:
            record["notes"].append(f"the before window is {before_end - self._first_at:.0f} s, not "
                                   f"{self.window_seconds:g} s: the service started at {iso(self._first_at)} "
                                   "(a restart loses the samples before it)")
        if together:
            record["notes"].append(f"changed within the same collection interval as {', '.join(together)}: the "
                                   "effect measured is theirs together")
        self._save(record)
        log.info("setting changed: %s %s %s -> %s", change.dataset or "module", change.parameter, change.old,
                 change.new, extra={"parameter": change.parameter, "dataset": change.dataset})

    def _finish_due(self, now: float) -> None:
        for r in self._records:
            if r["status"] != "measuring":
                continue
            if r.get("_resume"):
                resumed = {k: v for k, v in r.items() if k != "_resume"}
                resumed.update(_after_from=now, notes=[*r["notes"], "the service restarted while measuring: the "
                                                       f"after window starts at {iso(now)}"])
                self._save(resumed, replaces=r)
            elif now >= r["_after_from"] + self.window_seconds:
                self._finish(r, end=r["_after_from"] + self.window_seconds)

    def _finish(self, r: dict[str, Any], end: float, note: str | None = None) -> None:
        times = self.samples.span(r["_after_from"], end)
        effects, headline = [], []
        for key, before in r["_before"].items():
            pool, dataset = key.split("|", 1)
            after = window_values(self.samples, pool, dataset or None, times)
            for metric in METRICS:
                result = stats.compare(before.get(metric.name, []), after.get(metric.name, []),
                                       metric.higher_is_better, metric.min_level)
                effects.append({"pool": pool, "dataset": dataset or None, "metric": metric.name,
                                "of": "pool" if metric.name in LATENCY_OF_POOL or not dataset else "dataset",
                                "better_when": "higher" if metric.higher_is_better else "lower", **result.as_dict()})
                if metric.headline:
                    headline.append(result.verdict)
        verdict, reason = stats.overall(headline)
        done = {**r, "status": "done", "verdict": verdict, "reason": reason, "effects": effects,
                "after_window": [iso(times[0]), iso(times[-1])] if times else None,
                "notes": [*r["notes"], note] if note else r["notes"]}
        self._save(done, replaces=r)

    # --- persistence ----------------------------------------------------------------------
    def _save(self, r: dict[str, Any], replaces: dict[str, Any] | None = None) -> None:
        """Store `r` (a new record, or the new version of `replaces`), then publish it: a published
        record is never changed in place, the event loop may be reading it."""
        new = replaces is None
        if self.state_dir is not None:
            try:
                conn = connect(self.state_dir)
                try:
                    store = ChangeStore(conn)
                    if new or r.get("_unstored"):  # a record the store refused before gets its row now
                        r.pop("_unstored", None)
                        store.add(r)
                    else:
                        store.update(r)
                finally:
                    conn.close()
            except (StoreError, sqlite3.Error) as exc:  # served from memory all the same; said once
                r["_unstored"] = new or r.get("_unstored", False)
                if not self._store_warned:
                    self._store_warned = True
                    log.warning("setting changes cannot be stored under %s (kept in memory until a restart): %s",
                                self.state_dir, exc)
        if r["id"] is None:
            r["id"] = max((x["id"] or 0 for x in self._records), default=0) + 1
        if new:
            self._records = (r, *self._records)[:MAX_LISTED]
        else:
            self._records = tuple(r if x is replaces else x for x in self._records)
        self.generation += 1

    def _probe_active_since(self, since: float) -> bool:
        if self.state_dir is None or not (Path(self.state_dir) / DB_FILE).exists():
            return False
        try:
            conn = connect(self.state_dir)
            try:
                return ChangeStore(conn).probe_active_since(since)
            finally:
                conn.close()
        except (StoreError, sqlite3.Error):
            return False


def _same_subject_of(a: Change, b: Change) -> bool:
    return a.scope == b.scope and a.dataset == b.dataset


def _same_subject(r: dict[str, Any], change: Change) -> bool:
    if change.scope == "module":
        return r["scope"] == "module"
    return r["scope"] == "dataset" and r["dataset"] == change.dataset


def public(r: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in r.items() if not k.startswith("_")}

