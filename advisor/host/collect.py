"""Gather every source into one `Host`: the sources' table (host/sources.py) names them
and gives the per-pool commands, which run from it; the other sources' steps are here.

Reads go through one `HostFiles` and one `CommandRunner`, so the same code
serves the live host, a recording (`zfs-advisor snapshot`) and a replay
(`--root DIR`). Every source is guarded: a failure becomes a
`SourceStatus(ok=False, reason=...)` and the other sources still report.
"""
from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from advisor.host import disks as disks_source
from advisor.host import kstat as kstat_source
from advisor.host import modparams, pool_kstats, system, zdb, zfs_props, zpool_props, zpool_status
from advisor.host.files import HostFiles
from advisor.host.parsing import ParseError
from advisor.host.runner import CommandResult, CommandRunner
from advisor.host.sources import POOL, POOL_COMMANDS, POOL_FILES, Source
from advisor.host.versions import has_json_output, parse_zfs_version_command
from advisor.hostmodel.facts import (
    PARAMS_DIR,
    Dataset,
    Disk,
    Host,
    KStat,
    Pool,
    SourceStatus,
    ZfsInfo,
    fields_set,
    parse_version,
)
from advisor.hostmodel.tunables import TUNING_PROPERTIES
from advisor.process.logs import RateLimitedLog

log = logging.getLogger(__name__)
# a source failing the same way on every collection (every few seconds) logs once a minute
_unexpected = RateLimitedLog(log, interval=60.0)


@dataclass
class CollectCache:
    """Results of slow sources that only change when the pool layout does.

    `zdb -C` reads the pool's configuration from disk (seconds on a slow
    host); the ashift of a top-level vdev is fixed at creation, so the answer
    is kept per pool guid and top-level vdev names.
    """

    ashift: dict[tuple, dict] = field(default_factory=dict)
    # Objset kstats as last read, per path: most datasets are idle between
    # two scrapes, and an unchanged file need not be parsed again.
    objsets: pool_kstats.ObjsetCache = field(default_factory=dict)
    # id(dataset from the commands) -> (that dataset, its io, the copy carrying the io),
    # so an idle dataset is not copied again for every collection.
    with_io: dict[int, tuple[Dataset, KStat, Dataset]] = field(default_factory=dict)


@dataclass(repr=False)  # a Host's repr is megabytes at 10,000 datasets (asyncio.run formats it)
class Collection:
    """What one collection pass produced, and how long each source took."""

    host: Host
    durations: dict[str, float] = field(default_factory=dict)
    # Monotonic time the zpool/zfs/zdb output in `host` was taken (CommandFacts.finished_at).
    commands_finished_at: float | None = None
    stale: bool = False  # that output is older than it should be (FactsProvider.commands_overdue)


@dataclass(repr=False)
class CommandFacts:
    """What the zpool/zfs/zdb commands said: the slow half of a collection.

    Forking zpool and zfs costs tens of milliseconds on a real host and
    seconds under emulation or with thousands of datasets, so the service runs
    them in the background (FactsProvider) and every request combines their
    latest output with kstats and sysfs read fresh (`assemble`). The pools
    and datasets here are never modified afterwards: `assemble` copies what
    it changes, so one CommandFacts can serve concurrent requests.
    """

    pools: list[Pool] = field(default_factory=list)
    datasets: list[Dataset] = field(default_factory=list)
    # Slow-changing files read with the commands rather than per scrape:
    # /sys/module/zfs/parameters (hundreds of files) and the sysfs attributes
    # of the block devices (their /proc/diskstats counters are read per scrape).
    module_params: dict[str, str] = field(default_factory=dict)
    disks: list[Disk] = field(default_factory=list)
    userland_version: str | None = None
    kmod_version: str | None = None  # as `zfs version` reports it, for hosts without /sys/module/zfs/version
    sources: dict[str, SourceStatus] = field(default_factory=dict)
    durations: dict[str, float] = field(default_factory=dict)
    finished_at: float = field(default_factory=time.monotonic)


class _Recorder:
    """Runs each source behind one guard: whatever goes wrong in a source (unreadable
    file, output its parser did not understand, a bug) becomes that source's
    `SourceStatus(ok=False, reason=...)`, and the other sources still report."""

    def __init__(self) -> None:
        self.sources: dict[str, SourceStatus] = {}
        self.durations: dict[str, float] = {}

    def ok(self, name: str, started: float) -> None:
        self.sources[name] = SourceStatus(ok=True)
        self.durations[name] = time.monotonic() - started

    def fail(self, name: str, reason: str, duration: float) -> None:
        self.sources[name] = SourceStatus(ok=False, reason=reason)
        self.durations[name] = duration
        log.debug("source %s: no data: %s", name, reason)

    def read(self, name: str, reader, what: str):
        """Run a file-reading source; record its status. None when it failed."""
        started = time.monotonic()
        try:
            result = reader()
        except OSError as exc:
            self.fail(name, f"cannot read {what}: {exc.strerror or exc}", time.monotonic() - started)
            return None
        except Exception as exc:  # noqa: BLE001 - one source's failure must not take the others
            self.fail(name, _failure(what, exc, name), time.monotonic() - started)
            return None
        self.ok(name, started)
        return result

    def read_checked(self, name: str, reader, what: str):
        """`read` for a source that keeps what it understood: `reader(errors)` adds a reason per
        value it left out, and any reason makes the source failed (what was understood is served)."""
        errors: list[str] = []
        return self._failed_on(name, errors, self.read(name, lambda: reader(errors), what))

    def parse_checked(self, name: str, out: CommandResult, parser):
        """`parse` for output of which `parser(stdout, errors)` keeps what it understood, as `read_checked`."""
        errors: list[str] = []
        return self._failed_on(name, errors, self.parse(name, out, lambda stdout: parser(stdout, errors)))

    def _failed_on(self, name: str, errors: list[str], result):
        if errors and self.sources[name].ok:
            self.fail(name, _summary(errors), self.durations[name])
        return result

    def parse(self, name: str, out: CommandResult, parser):
        """Parse a command's output; record the source's status either way.

        Returns the parser's result, or None when the command failed or its
        output could not be parsed (the reason is kept for `Host.sources`).
        """
        if not out.ok:
            self.fail(name, out.error(), out.duration_seconds)
            return None
        try:
            result = parser(out.stdout)
        except Exception as exc:  # noqa: BLE001 - see read()
            self.fail(name, _failure(f"output of {' '.join(out.argv)}", exc, name), out.duration_seconds)
            return None
        self.sources[name] = SourceStatus(ok=True)
        self.durations[name] = out.duration_seconds
        return result

    def step(self, name: str, action) -> None:
        """Run what combines a source's output with the rest, behind the same guard."""
        try:
            action()
        except Exception as exc:  # noqa: BLE001 - see read()
            self.fail(name, _failure("combining it", exc, name), self.durations.get(name, 0.0))


def _summary(errors: list[str]) -> str:
    """The first reasons of many, in one line."""
    return "; ".join(errors[:3]) + (f" (and {len(errors) - 3} more)" if len(errors) > 3 else "")


def _failure(what: str, exc: Exception, source: str) -> str:
    """One line for a source that failed: the parser's reason, or the unexpected error."""
    if isinstance(exc, ParseError):
        return f"{what} not understood: {exc}"
    # Not a documented parser error: a bug in a source, logged so that it gets fixed.
    _unexpected.log(logging.WARNING, f"{source}:{type(exc).__name__}", "source %s failed unexpectedly: %s: %s",
                    source, type(exc).__name__, exc)
    return f"{what}: internal error: {type(exc).__name__}: {exc}"


async def collect(
    files: HostFiles, runner: CommandRunner, now: datetime | None = None, cache: CollectCache | None = None
) -> Collection:
    """Everything at once: the commands, then the files (the CLI, snapshots)."""
    commands = await run_commands(files, runner, cache)
    return assemble(files, commands, now, cache)


async def run_commands(
    files: HostFiles, runner: CommandRunner, cache: CollectCache | None = None, previous: CommandFacts | None = None
) -> CommandFacts:
    """Run zpool/zfs/zdb (concurrently) and parse their output into pools and datasets;
    read the slow-changing files (module parameters, block device attributes).

    When a source fails this time (a zfs get past its deadline on a loaded host)
    and `previous` had it, its part is taken from `previous`: the last good
    value is served, and the source's status says it failed and was reused.
    """
    rec = _Recorder()
    facts = CommandFacts()
    facts.disks = rec.read_checked("disks", lambda errors: disks_source.read_disks(files, errors),
                                   disks_source.SYS_BLOCK) or []
    zfs = _zfs_presence(files)
    if not zfs.present:
        facts.sources, facts.durations = rec.sources, rec.durations
        return facts
    facts.module_params = rec.read_checked(
        "module_params", lambda errors: modparams.read_module_params(files, errors), PARAMS_DIR) or {}
    version = parse_version(zfs.kmod_version)
    status_argv = zpool_status.STATUS_JSON_ARGV if has_json_output(version) else zpool_status.STATUS_TEXT_ARGV
    # All at once: a run takes as long as its slowest command (at most command_timeout_seconds).
    zfs_version, pool_props, status, datasets_out, *pool_outputs = await asyncio.gather(
        runner.run(["zfs", "version"]),
        runner.run(list(zpool_props.ZPOOL_GET_ARGV)),
        runner.run(list(status_argv)),
        runner.run(list(zfs_props.zfs_get_argv())),
        *(runner.run(list(source.commands[0])) for source in POOL_COMMANDS),
    )
    if zfs_version.ok:
        facts.userland_version, facts.kmod_version = parse_zfs_version_command(zfs_version.stdout)

    pools = _pools(pool_props, status, rec)
    if "-j" in status.argv:
        rec.step("zpool_status", lambda: _resolve_leaf_names(files, pools))
    # thousands of datasets take a while to parse: not on the event loop
    last = previous.datasets if previous is not None else ()
    facts.datasets = await asyncio.to_thread(
        rec.parse_checked, "zfs_get", datasets_out,
        lambda out, errors: zfs_props.parse_zfs_get(out, last, TUNING_PROPERTIES, errors)) or []
    _check_covers(rec, "zfs_get", datasets_out, pools, {d.name for d in facts.datasets}, "the root dataset of")
    for source, out in zip(POOL_COMMANDS, pool_outputs, strict=True):
        _attach_pool_command(source, out, pools, rec)
    await _attach_ashift(pools, runner, rec, cache)
    rec.step("disks", lambda: _map_leaves_to_disks(pools, facts.disks))
    facts.pools, facts.sources, facts.durations = pools, rec.sources, rec.durations
    if previous is not None:
        _reuse_failed_parts(facts, previous)
    facts.finished_at = time.monotonic()
    return facts


# A failed source -> the part of CommandFacts it provides (pools need both zpool get and status).
_PARTS = {"disks": "disks", "module_params": "module_params", "zfs_get": "datasets",
          "zpool_get": "pools", "zpool_status": "pools"}


def _reuse_failed_parts(facts: CommandFacts, previous: CommandFacts) -> None:
    for source, part in _PARTS.items():
        status = facts.sources.get(source)
        if status is None or status.ok or not getattr(previous, part):
            continue
        setattr(facts, part, getattr(previous, part))
        facts.sources[source] = SourceStatus(ok=False, reason=f"{status.reason}; serving the last good output")


def assemble(
    files: HostFiles, commands: CommandFacts | None, now: datetime | None = None, cache: CollectCache | None = None,
    objsets: bool = True,
) -> Collection:
    """A Host from `commands` plus what the files say now: kstats, /proc/diskstats, host identity.

    Cheap enough for every scrape: no process is started, and the slow-changing
    files (module parameters, block device attributes) come with `commands`.
    Blocking file I/O: the service runs it in a thread.

    Without `objsets`, the datasets' objset kstats are not read: the datasets are those of
    `commands` as they are (their `io` unset), and the cost does not grow with their number.
    """
    rec = _Recorder()
    zfs = _zfs_presence(files)
    name_errors: list[str] = []
    host = Host(
        collected_at=now or datetime.now(UTC), zfs=zfs, **system.read_names(files, name_errors),
        memory_bytes=rec.read("meminfo", lambda: system.read_memory_bytes(files), system.MEMINFO),
        cpu_count=rec.read("cpus_online", lambda: system.read_cpu_count(files), system.CPUS_ONLINE),
    )
    if name_errors:  # reported only when it fails, so that a host's sources stay those of the table
        rec.fail("hostname", _summary(name_errors), 0.0)

    if commands is None:  # the first run has not finished: read the block devices whole
        disks = rec.read_checked("disks", lambda errors: disks_source.read_disks(files, errors),
                                 disks_source.SYS_BLOCK) or []
    else:
        disks = commands.disks
    stats = rec.read("diskstats", lambda: disks_source.read_diskstats(files), disks_source.DISKSTATS) or {}
    if rec.sources["diskstats"].ok and (unlisted := [d.name for d in disks if d.name not in stats]):
        # every block device has a line there: a file without them was cut short or is not diskstats
        rec.fail("diskstats", f"{disks_source.DISKSTATS} has no line for {', '.join(unlisted[:5])}",
                 rec.durations["diskstats"])
    host.disks = disks_source.with_stats(disks, stats)

    if not zfs.present:
        rec.sources["zfs"] = SourceStatus(ok=False, reason=zfs.reason)
        if commands is None:
            host.sources = rec.sources
            return Collection(host, rec.durations)
        host.sources = {**commands.sources, **rec.sources}
        return Collection(host, {**commands.durations, **rec.durations}, commands.finished_at)

    _read_global_kstats(files, host, rec)
    if commands is None:
        host.sources = rec.sources
        return Collection(host, rec.durations)

    host.module_params = commands.module_params
    _set_versions(host.zfs, commands)
    host.pools, host.datasets = _attach_pool_kstats(files, commands.pools, commands.datasets, rec, cache, objsets)
    host.sources = {**commands.sources, **rec.sources}
    return Collection(host, {**rec.durations, **commands.durations}, commands.finished_at)


def command_host(files: HostFiles, commands: CommandFacts) -> Host:
    """A Host holding only `commands` (no kstats, no diskstats): what the exporter's
    command-built families need, to render them before the next scrape asks."""
    zfs = _zfs_presence(files)
    _set_versions(zfs, commands)
    return Host(collected_at=datetime.now(UTC), zfs=zfs, pools=commands.pools, datasets=commands.datasets,
                disks=commands.disks, module_params=commands.module_params)


def _set_versions(zfs: ZfsInfo, commands: CommandFacts) -> None:
    zfs.userland_version = commands.userland_version
    zfs.kmod_version = zfs.kmod_version or commands.kmod_version


def _zfs_presence(files: HostFiles) -> ZfsInfo:
    kmod = modparams.read_kmod_version(files)
    if kmod is None and not files.exists(kstat_source.KSTAT_DIR):
        return ZfsInfo(present=False, reason="ZFS kernel module not loaded (no /sys/module/zfs, no /proc/spl/kstat/zfs)")
    return ZfsInfo(present=True, kmod_version=kmod)


def _read_global_kstats(files: HostFiles, host: Host, rec: _Recorder) -> None:
    for name in ("arcstats", *kstat_source.GLOBAL_KSTATS):
        path = f"{kstat_source.KSTAT_DIR}/{name}"
        kstat = rec.read(f"kstat:{name}", lambda path=path: kstat_source.read_named_kstat(files, path), path)
        if kstat is None:
            continue
        if name == "arcstats":
            host.arc = kstat
        else:
            host.kstats[name] = kstat


def _pools(props_out: CommandResult, status_out: CommandResult, rec: _Recorder) -> list[Pool]:
    pools = rec.parse_checked("zpool_get", props_out, _pools_from_properties)
    if pools is None:
        return []
    parser = zpool_status.parse_status_json if "-j" in status_out.argv else zpool_status.parse_status_text
    statuses = rec.parse("zpool_status", status_out, parser)
    if statuses is None:
        return pools
    by_name = {s.name: s for s in statuses}
    _check_covers(rec, "zpool_status", status_out, pools, by_name)
    if unlisted := sorted(set(by_name) - {p.name for p in pools}):
        rec.fail("zpool_get", f"{' '.join(props_out.argv)} did not list pool(s) {', '.join(unlisted)} "
                 "that zpool status describes", props_out.duration_seconds)
    for pool in pools:
        if st := by_name.get(pool.name):
            pool.root, pool.scan, pool.errors, pool.status = st.root, st.scan, st.errors, st.status
    return pools


def _check_covers(rec: _Recorder, name: str, out: CommandResult, pools: list[Pool], found, what: str = "") -> None:
    """A command that answered but said nothing about a pool zpool get listed has not told
    the whole story (cut short, or garbage that parsed as nothing): its source says so."""
    if not rec.sources.get(name, SourceStatus(ok=False)).ok:
        return
    if missing := [p.name for p in pools if p.name not in found]:
        rec.fail(name, f"{' '.join(out.argv)} said nothing about {what + ' ' if what else ''}pool(s) "
                 f"{', '.join(missing)}", out.duration_seconds)


def _pools_from_properties(stdout: str, errors: list[str] | None = None) -> list[Pool]:
    return [zpool_props.pool_from_properties(name, p, errors) for name, p in zpool_props.parse_zpool_get(stdout).items()]


def _resolve_leaf_names(files: HostFiles, pools: list[Pool]) -> None:
    """Name leaves by their resolved device (/dev/sda1), as `zpool status -L` does.

    The JSON status of OpenZFS 2.3 cannot use -L (it then drops leaf states),
    so it names leaves by the path they were added with; resolving it here
    gives both formats the same tree and lets zpool iostat rows attach.
    """
    for pool in pools:
        for leaf in pool.leaves():
            if leaf.type == "disk" and leaf.path and leaf.path.startswith("/dev/"):
                leaf.path = leaf.name = files.realpath(leaf.path)


def _attach_pool_command(source: Source, out: CommandResult, pools: list[Pool], rec: _Recorder) -> None:
    """A per-pool command of the sources' table: its output parsed, each pool's part put on the pool."""
    assert source.parse is not None and source.attach is not None  # POOL_COMMANDS have both
    parse, attach = source.parse, source.attach
    by_pool = rec.parse(source.name, out, parse) or {}
    _check_covers(rec, source.name, out, pools, by_pool)
    for pool in pools:
        rec.step(source.name, lambda pool=pool: attach(pool, by_pool.get(pool.name)))


def _attach_pool_file(source: Source, files: HostFiles, pool: Pool, rec: _Recorder) -> None:
    """A per-pool file of the sources' table: read for `pool` and put on it (a copy: see _attach_pool_kstats)."""
    assert source.read is not None and source.attach is not None  # POOL_FILES have both
    read, attach, name = source.read, source.attach, source.name.replace(POOL, pool.name)

    def part():
        try:
            return read(files, pool.name)
        except FileNotFoundError:
            if source.absent is None:
                raise
            return None  # a file that may be missing (Source.absent says why): no part, no failure

    found = rec.read(name, part, source.paths[0].replace(POOL, pool.name))
    rec.step(name, lambda: attach(pool, found))


async def _attach_ashift(pools: list[Pool], runner: CommandRunner, rec: _Recorder, cache: CollectCache | None) -> None:
    cache = cache if cache is not None else CollectCache()  # a throwaway one: one code path

    def key(pool: Pool) -> tuple:
        return (pool.name, pool.guid, tuple(v.name for v in pool.top_level_vdevs(group=None)))

    todo = [p for p in pools if key(p) not in cache.ashift]
    # zdb -C reads the configuration from disk: slow on a busy or emulated host
    # (8-10 s seen in the lab) but asked once per pool layout, so it gets a
    # longer deadline than the listing commands.
    timeout = max(runner.timeout_seconds, zdb.MIN_TIMEOUT_SECONDS)
    results = await asyncio.gather(*(runner.run(list(zdb.zdb_config_argv(p.name)), timeout) for p in todo))
    for pool, out in zip(todo, results, strict=True):
        if parsed := rec.parse(f"zdb:{pool.name}", out, zdb.parse_zdb_ashift):
            cache.ashift[key(pool)] = parsed
    for pool in pools:
        if (ashifts := cache.ashift.get(key(pool))) is not None:
            rec.sources.setdefault(f"zdb:{pool.name}", SourceStatus(ok=True))
            rec.step(f"zdb:{pool.name}", lambda pool=pool, ashifts=ashifts: zdb.attach_ashift(pool, ashifts))


def _attach_pool_kstats(
    files: HostFiles, pools: list[Pool], datasets: list[Dataset], rec: _Recorder, cache: CollectCache | None,
    with_objsets: bool = True,
) -> tuple[list[Pool], list[Dataset]]:
    """Copies of `pools` and `datasets` with their kstats read now (the originals stay as they are);
    without `with_objsets`, `datasets` itself (no objset kstat read, no cache touched)."""
    fresh_pools: list[Pool] = []
    io_by_dataset: dict[str, KStat] = {}
    if not with_objsets:
        cache = None
    objsets = cache.objsets if cache is not None else None
    if objsets is not None:  # forget the objsets of pools that are gone
        live = tuple(f"{kstat_source.KSTAT_DIR}/{p.name}/" for p in pools)
        for path in [p for p in objsets if not p.startswith(live)]:
            del objsets[path]
    for pool in pools:
        kstats = rec.read(f"pool_kstats:{pool.name}",
                          lambda pool=pool: pool_kstats.read_pool_kstats(files, pool.name, objsets, with_objsets),
                          f"{kstat_source.KSTAT_DIR}/{pool.name}") or pool_kstats.PoolKStats()
        if kstats.errors:  # the files understood are served, the source says which were not
            name = f"pool_kstats:{pool.name}"
            rec.fail(name, _summary(kstats.errors), rec.durations.get(name, 0.0))
        fresh = pool.model_copy(update={"kstat_state": kstats.state})
        for source in POOL_FILES:
            _attach_pool_file(source, files, fresh, rec)
        fresh_pools.append(fresh)
        io_by_dataset.update(kstats.objsets)
    if not with_objsets:
        return fresh_pools, datasets
    previous = cache.with_io if cache is not None else {}
    copies: dict[int, tuple[Dataset, KStat, Dataset]] = {}
    fresh_datasets = []
    for ds in datasets:
        io = io_by_dataset.get(ds.name)
        if io is None:
            fresh_datasets.append(ds)
            continue
        known = previous.get(id(ds))
        copy = known[2] if known is not None and known[0] is ds and known[1] is io else _with_io(ds, io)
        copies[id(ds)] = (ds, io, copy)
        fresh_datasets.append(copy)
    if cache is not None:
        cache.with_io = copies
    return fresh_pools, fresh_datasets


_DATASET_WITH_IO = fields_set("name", "type", "properties", "io")


def _with_io(ds: Dataset, io: KStat) -> Dataset:
    """`ds.model_copy(update={"io": io})` (the same sharing of `properties`), without a set
    and a dict copied per dataset."""
    return Dataset.model_construct(_DATASET_WITH_IO, name=ds.name, type=ds.type, properties=ds.properties, io=io)


def _map_leaves_to_disks(pools: list[Pool], disks: list[Disk]) -> None:
    for pool in pools:
        for leaf in pool.leaves():
            if leaf.path and leaf.type == "disk":
                leaf.disk = disks_source.disk_of_device(leaf.path, disks)
