"""Facts for the service: command output refreshed in the background, kstats read fresh.

A collection has two halves (advisor.host.collect):

* the zpool/zfs/zdb commands (`CommandFacts`): forks, tens of milliseconds
  on a real host, seconds under emulation or with thousands of datasets.
  `run()` refreshes them every `commands_interval_seconds` in the
  background; without it (the CLI, tests) `get()` refreshes them on demand
  once they are older than that;
  The slow-changing files (module parameters, block device attributes) are
  read with them;
* kstats and /proc/diskstats: no process, read again for every collection
  (in a thread, the event loop stays free), so counters are as fresh as the
  request.

However many scrapes or requests arrive at once, at most one command run
and one file read are under way; callers arriving meanwhile share the
result, and a collection younger than `max_age_seconds` is served as is.

Answers (/recommend) read no dataset's objset kstat: `for_answers()` is a collection of its own
without them, whose cost does not grow with the number of datasets (at 10,000 datasets, reading
their objsets is about a second of CPU). Once it is older than `max_age_seconds`, the next request
starts the next one and is answered from it while it is younger than twice that age (stale while
revalidate, RFC 5861's idea): the requests of a busy service do not all wait, every few seconds,
for a refresh that a scrape's rendering slows down (at 10,000 datasets, 50 clients: p99 0.3-0.9 s).
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from advisor.host.collect import CollectCache, Collection, CommandFacts, assemble, command_host, run_commands
from advisor.host.snapshot import host_view
from advisor.hostmodel.facts import Host, ZfsInfo
from advisor.process.logs import RateLimitedLog
from advisor.process.memory import release_freed_memory

log = logging.getLogger(__name__)
# said again on every request while it lasts: once a minute, with a count (advisor/process/logs.py)
_repeated = RateLimitedLog(log, interval=60.0)
# for_answers(): the last collection answers while the next is collected, up to this many times
# `max_age_seconds` old (0 keeps 0: every request waits for fresh facts)
STALE_ANSWERS_FACTOR = 2.0


def _said_if_failed(task: asyncio.Task) -> None:
    """A refresh nobody waited for is logged when it failed (the next request starts another)."""
    if not task.cancelled() and task.exception() is not None:
        _repeated.log(logging.ERROR, "answers collection failed", "facts collection for answers failed",
                      exc_info=task.exception())


class FactsProvider:
    def __init__(
        self,
        root: str = "/",
        command_timeout_seconds: float = 30.0,  # Settings.command_timeout_seconds
        max_age_seconds: float = 5.0,
        commands_interval_seconds: float = 15.0,
    ):
        self.root = root
        self.command_timeout_seconds = command_timeout_seconds
        self.max_age_seconds = max_age_seconds
        self.commands_interval_seconds = commands_interval_seconds
        self.files, self.runner, self._replayed_at = host_view(root, command_timeout_seconds)
        self.collections = 0  # collections served: kstats read + latest command output (self-metric)
        self.command_runs = 0  # sets of zpool/zfs processes run (self-metric)
        self._cache = CollectCache()
        self._commands: CommandFacts | None = None
        self._commands_task: asyncio.Task[CommandFacts] | None = None
        self._last: Collection | None = None
        self._last_at = 0.0
        self._collecting: asyncio.Task[Collection] | None = None
        self._answers: Collection | None = None  # for_answers(): the last, its time, the one under way
        self._answers_at = 0.0
        self._collecting_answers: asyncio.Task[Collection] | None = None

    @property
    def last(self) -> Collection | None:
        return self._last

    @property
    def newest(self) -> Collection | None:
        """The newer of the last collection and the answers' (for_answers: no objset kstats), or
        None before either: what /healthz reports, whichever request came first."""
        if self._answers is None or (self._last is not None and self._last_at >= self._answers_at):
            return self._last
        return self._answers

    def age_seconds(self) -> float | None:
        """Age of the command output in the last collection; None before the first."""
        if self._last is None or self._last.commands_finished_at is None:
            return None
        return time.monotonic() - self._last.commands_finished_at

    def commands_overdue(self) -> bool:
        """True when no command output is younger than one interval plus a command's deadline:
        the refresh is failing or hanging, and what is served is stale."""
        if self._commands is None:
            return True
        age = time.monotonic() - self._commands.finished_at
        return age > self.commands_interval_seconds + self.command_timeout_seconds

    def _commands_run(self) -> asyncio.Task[CommandFacts]:
        """The run under way, or a new one (synchronous: no other caller can slip in between)."""
        if self._commands_task is None:
            self._commands_task = asyncio.create_task(self._run_commands())
        return self._commands_task

    async def refresh_commands(self) -> CommandFacts:
        """Run the commands now (or join the run under way)."""
        # shield: a caller giving up must not cancel the run the others wait for
        return await asyncio.shield(self._commands_run())

    async def _run_commands(self) -> CommandFacts:
        try:
            commands = await run_commands(self.files, self.runner, self._cache, previous=self._commands)
            self.command_runs += 1
            self._commands = commands
            return commands
        finally:
            self._commands_task = None

    async def run(self, after_refresh: Callable[[CommandFacts], Awaitable[None]] | None = None) -> None:
        """Refresh the command output forever (the service's background task); `after_refresh`
        gets each new output (the exporter renders its command-built text ahead of the scrape)."""
        while True:
            try:
                commands = await self.refresh_commands()
                if after_refresh is not None:
                    await after_refresh(commands)
                if self._last is not None and self._last.commands_finished_at != commands.finished_at:
                    # The last collection holds the previous output's datasets: replaced now, the
                    # two parses are not both kept until the next request (docs/reliability.md).
                    await self.get(max_age_seconds=0)
            except Exception:  # keep serving the last good output; the log says why
                log.exception("zpool/zfs command refresh failed")
            await asyncio.sleep(self.commands_interval_seconds)

    async def get(self, max_age_seconds: float | None = None, wait_seconds: float | None = None) -> Collection:
        """A collection no older than `max_age_seconds`.

        If the command output is missing or older than the interval, wait for
        a refresh at most `wait_seconds` (None: as long as it takes), then go
        on with what there is; `Collection.stale` says when that is old.
        """
        max_age = self.max_age_seconds if max_age_seconds is None else max_age_seconds
        if self._last is not None and time.monotonic() - self._last_at <= max_age:
            return self._last
        if self._collecting is None:
            self._collecting = asyncio.create_task(self._collect(wait_seconds))
        return await asyncio.shield(self._collecting)

    async def for_answers(self, wait_seconds: float | None = None) -> Collection:
        """A collection no older than `max_age_seconds` for the answers: as `get()`, without the
        datasets' objset kstats (no rule reads them; the datasets are those of the command output)."""
        age = time.monotonic() - self._answers_at
        if self._answers is not None and age <= self.max_age_seconds:
            return self._answers
        if self._collecting_answers is None:
            self._collecting_answers = asyncio.create_task(self._collect_answers(wait_seconds))
            self._collecting_answers.add_done_callback(_said_if_failed)
        if self._answers is not None and age <= STALE_ANSWERS_FACTOR * self.max_age_seconds:
            return self._answers  # the next one is under way
        return await asyncio.shield(self._collecting_answers)

    async def _collect_answers(self, wait_seconds: float | None) -> Collection:
        try:
            commands = await self._latest_commands(wait_seconds)
            collection = await asyncio.to_thread(assemble, self.files, commands, self._replayed_at, None, False)
            collection.stale = self.commands_overdue()
            if self._answers is not None:  # the same datasets: their index is not built again
                collection.host.adopt_dataset_index(self._answers.host)
            self._answers, self._answers_at = collection, time.monotonic()
            return collection
        finally:
            self._collecting_answers = None

    async def for_scrape(self, deadline_seconds: float) -> tuple[Collection, bool]:
        """(a collection, whether it is stale) for a scrape that must answer within
        `deadline_seconds`: the command wait gets 3/4 of it (the rest is for reading kstats and
        rendering); past it, or when the collection crashed, the last good one, stale; before the
        first has finished, a host that says so."""
        try:
            collection = await asyncio.wait_for(self.get(wait_seconds=0.75 * deadline_seconds), deadline_seconds)
            return collection, collection.stale
        except TimeoutError:
            last = self._last
        except Exception:  # a collection that crashed: serve the last good one
            _repeated.log(logging.ERROR, "collection failed", "facts collection failed", exc_info=True)
            last = self._last
        if last is None:
            last = Collection(Host(collected_at=datetime.now(UTC),
                                   zfs=ZfsInfo(present=False, reason="the first facts collection has not finished yet")))
        return last, True

    def command_host(self, commands: CommandFacts) -> Host:
        """The host as `commands` describe it, without reading a kstat (what the exporter warms)."""
        return command_host(self.files, commands)

    def _assemble(self, commands: CommandFacts | None) -> Collection:
        collection = assemble(self.files, commands, self._replayed_at, self._cache)
        release_freed_memory()
        return collection

    async def _latest_commands(self, wait_seconds: float | None) -> CommandFacts | None:
        """The command output, after waiting at most `wait_seconds` for a run when there is none
        or it is older than the interval."""
        commands = self._commands
        age = time.monotonic() - commands.finished_at if commands else None
        if age is None or age > self.commands_interval_seconds:
            try:
                commands = await asyncio.wait_for(asyncio.shield(self._commands_run()), wait_seconds)
            except TimeoutError:
                commands = self._commands  # the run goes on for the next caller
            except Exception:  # a bug in a source: serve the last good output, the log says why
                log.exception("zpool/zfs command run failed")
                commands = self._commands
        return commands

    async def _collect(self, wait_seconds: float | None) -> Collection:
        try:
            commands = await self._latest_commands(wait_seconds)
            collection = await asyncio.to_thread(self._assemble, commands)
            collection.stale = self.commands_overdue()
            self.collections += 1
            self._last, self._last_at = collection, time.monotonic()
            return collection
        finally:
            self._collecting = None
