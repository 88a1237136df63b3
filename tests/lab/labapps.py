"""The applications of the application lab (docs/apps.md), as guest shell: how each lays out its
data once per layout, copies it onto a dataset of the recordsize under test, starts, runs the
measured command and reports its own metric.  The packages come with the application image
(tests/lab/recipe/apps/apps.sh, line 2.3-apps): nothing is installed during a run.

Every application's data starts in a source dataset (`tank/appsrc`, recordsize 128K) and is copied
onto `tank/apps/<app>-<recordsize>` with `cp -a` before every run (`fresh_copy`): the copy writes
every record anew at the dataset's recordsize, so each recordsize holds the same data, and no run
inherits the bloat or the fragmentation of the runs before it.
"""
from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass

PG_BIN = "/usr/lib/postgresql/15/bin"
PG_WAL = ("same", "separate")  # Settings.pg_wal's choices
WAL_RECORDSIZE = "128K"  # the default: only the data's recordsize is under test
PG_SOCKET = "/tmp"
SOURCE = "/tank/appsrc"


@dataclass(frozen=True)
class Settings:
    seconds: int = 45  # one measured run of a timed benchmark
    clients: int = 8  # pgbench's as in the first try (docs/apps.md)
    pg_scale: int = 10  # pgbench -s: 10 x 100,000 accounts, about 150 MiB of tables and indexes
    pg_shared_buffers_mib: int = 32  # PostgreSQL's own cache, well below the data
    sb_tables: int = 4  # sysbench's tables, of sb_table_size rows each: about 70 MiB of InnoDB data per
    sb_table_size: int = 150_000  # million rows (docs/apps.md), against 64 MiB of ARC and 32 MiB of buffer pool
    innodb_buffer_pool_mib: int = 32  # MariaDB's own cache, well below the data
    synchronous_commit: str = "on"  # as Debian ships it; "off" is a common admin's choice (docs/apps.md)
    pg_wal: str = "same"  # PG_WAL: the WAL in the data directory, or on a dataset of its own at 128K
    tree_mib: int = 256  # the copy's tree: small files from /usr plus large random ones
    media_mib: int = 192  # media-read's files, MEDIA_FILES of them: 3 times the ARC's cap
    compression: str = "off"  # the data set must not fit the ARC compressed
    fresh_copy: bool = True  # every run on a new copy of the data (no bloat inherited from earlier runs)


@dataclass(frozen=True)
class App:
    name: str
    metric: str  # the application's own unit
    higher_is_better: bool
    source: str  # the folder under SOURCE that setup makes and each dataset gets a copy of
    setup: Callable[[Settings], str]  # once per layout: SOURCE/<source>
    start: Callable[[str, Settings], str]  # before the measured run, outside the window (e.g. a server)
    run: Callable[[str, Settings], str]  # the measured command, given the copy's folder
    stop: Callable[[str, Settings], str]
    parse: Callable[[str], float]  # the run's output -> the metric
    data_on_dataset: bool = True  # its data copied onto each recordsize (the copy writes there itself)


# --- PostgreSQL and pgbench -------------------------------------------------------------------

def _as_postgres(cmd: str) -> str:
    return f"cd / && runuser -u postgres -- env PATH={PG_BIN}:/usr/bin:/bin {cmd}"  # from / (root's home is closed)


def _pg_conf(s: Settings) -> str:
    """Settings a run needs that are not the defaults: the cache below the data set, a local socket
    only; the rest as Debian installs it (fsync, full_page_writes, synchronous_commit on)."""
    return "\n".join([f"shared_buffers = {s.pg_shared_buffers_mib}MB", "listen_addresses = ''",
                      f"unix_socket_directories = '{PG_SOCKET}'", "max_connections = 20"])


def _pg_start(folder: str, s: Settings) -> str:
    opts = f"-o '-c synchronous_commit={s.synchronous_commit}' " if s.synchronous_commit != "on" else ""
    return _as_postgres(f"pg_ctl -D {folder}/data -l {folder}/server.log {opts}-w -t 600 start >/dev/null")


def _pg_stop(folder: str, s: Settings) -> str:
    return _as_postgres(f"pg_ctl -D {folder}/data -m fast -w -t 600 stop >/dev/null")


def _pg_setup(s: Settings) -> str:
    folder = f"{SOURCE}/pg"
    return "\n".join([
        f"install -d -o postgres -g postgres {folder}",
        _as_postgres(f"initdb -D {folder}/data -U postgres -A trust --no-sync >/dev/null"),
        f"cat >> {folder}/data/postgresql.conf <<'EOF'\n{_pg_conf(s)}\nEOF",
        _pg_start(folder, s),
        # server-side generation (G): the emulated client would take longer than the server
        _as_postgres(f"pgbench -h {PG_SOCKET} -U postgres -i -I dtGvp -s {s.pg_scale} -q postgres >/dev/null"),
        _pg_stop(folder, s),
    ])


def _pgbench(select_only: bool) -> Callable[[str, Settings], str]:
    def run(folder: str, s: Settings) -> str:
        # pgbench's own vacuum before a TPC-B run (the history table emptied), outside its -T window
        # but inside ours; done by hand first so that the window holds the benchmark alone.
        mode = "-S" if select_only else ""
        return _as_postgres(f"pgbench -h {PG_SOCKET} -U postgres -n {mode} -M prepared -c {s.clients} -j 2 "
                            f"-T {s.seconds} postgres")
    return run


def _pg_prepare_run(folder: str, s: Settings) -> str:
    # one -c each: psql runs a -c of several statements as one transaction, and VACUUM refuses that
    sql = ("VACUUM pgbench_branches", "VACUUM pgbench_tellers", "TRUNCATE pgbench_history")
    return _pg_start(folder, s) + "\n" + _as_postgres(
        f"psql -h {PG_SOCKET} -U postgres -q {' '.join('-c ' + shlex.quote(q) for q in sql)} postgres")


def _number_of(line: str, output: str, missing: str) -> float:
    """The number a line of the output matching `line` (a regex with one group) gives; ValueError(missing)."""
    m = re.search(line, output, re.M)
    if not m:
        raise ValueError(f"{missing}: {output[-300:]!r}")
    return float(m.group(1))


def parse_pgbench(output: str) -> float:
    """pgbench's report -> transactions a second (without the initial connection time)."""
    return _number_of(r"^tps = ([0-9.]+) \(without initial connection time\)", output, "no tps line in pgbench's output")


# --- MariaDB (InnoDB) and sysbench ---------------------------------------------------------------

MY_SOCKET = "/tmp/mariadb.sock"
_SYSBENCH = "sysbench --db-driver=mysql --mysql-socket={sock} --mysql-user=root --mysql-db=sbtest"


def _my_conf(folder: str, s: Settings) -> str:
    """A server of its own on the copy: the buffer pool below the data, a local socket only; the
    rest as Debian's MariaDB 10.11 ships it (innodb_flush_log_at_trx_commit = 1, the doublewrite
    buffer on)."""
    return "\n".join(["[mariadbd]", f"datadir = {folder}/data", f"socket = {MY_SOCKET}", "skip-networking",
                      "user = mysql", f"pid-file = {folder}/mariadbd.pid", f"log-error = {folder}/server.log",
                      f"innodb_buffer_pool_size = {s.innodb_buffer_pool_mib}M", "max_connections = 40"])


def _my_start(folder: str, s: Settings) -> str:
    # --defaults-file: Debian's /etc/mysql config (its datadir and socket) is not read
    return (f"cat > {folder}/my.cnf <<'EOF'\n{_my_conf(folder, s)}\nEOF\n"
            f"(setsid mariadbd --defaults-file={folder}/my.cnf </dev/null >/dev/null 2>&1 &)\n"
            f"mariadb-admin --socket={MY_SOCKET} --wait=600 --connect-timeout=60 ping >/dev/null")


def _my_stop(folder: str, s: Settings) -> str:
    return (f"mariadb-admin --socket={MY_SOCKET} shutdown && "
            f"while [ -e {folder}/mariadbd.pid ]; do sleep 0.5; done")


def _my_setup(s: Settings) -> str:
    folder = f"{SOURCE}/my"
    sysbench = _SYSBENCH.format(sock=MY_SOCKET)
    return "\n".join([
        f"install -d -o mysql -g mysql {folder}",
        f"mariadb-install-db --user=mysql --datadir={folder}/data >/dev/null",
        _my_start(folder, s),
        f"mariadb --socket={MY_SOCKET} -e 'CREATE DATABASE sbtest'",
        f"{sysbench} --tables={s.sb_tables} --table-size={s.sb_table_size} oltp_read_write prepare >/dev/null",
        _my_stop(folder, s),
    ])


def _sysbench_run(folder: str, s: Settings) -> str:
    return (f"{_SYSBENCH.format(sock=MY_SOCKET)} --tables={s.sb_tables} --table-size={s.sb_table_size} "
            f"--threads={s.clients} --time={s.seconds} --report-interval=0 oltp_read_write run")


def parse_sysbench(output: str) -> float:
    """sysbench's report -> transactions a second ("transactions: N (X per sec.)")."""
    return _number_of(r"^\s*transactions:\s+\d+\s+\(([0-9.]+) per sec\.\)", output,
                      "no transactions line in sysbench's output")


# --- the probe's own fio job, as an application of the same cell -----------------------------------

FIO_FILE_BYTES = 40 << 20  # per fio job's file: postgres' 4 data jobs make 160 MiB, about pgbench -s 10


@functools.cache
def _workloads() -> dict:
    """The profiles, read once: a grid runs for an hour, and the checkout may change under it."""
    from advisor.engine.loader import load_rulebook
    return load_rulebook().workloads


def _fio_job(workload: str, folder: str, s: Settings, layout_only: bool = False) -> str:
    """The profile's probe job (advisor/probe/fio_job.py, as a probe renders it) on `folder`."""
    from advisor.probe.fio_job import Hygiene, build_job
    job = build_job(_workloads()[workload], folder,
                    Hygiene(runtime_seconds=s.seconds, ramp_seconds=2, max_file_bytes=FIO_FILE_BYTES))
    return job.layout_text if layout_only else job.text


def _fio_setup(workload: str) -> Callable[[Settings], str]:
    def setup(s: Settings) -> str:
        folder = f"{SOURCE}/fio-{workload}"
        return (f"mkdir -p {folder} && cat > /tmp/layout.fio <<'EOF'\n{_fio_job(workload, folder, s, True)}\nEOF\n"
                "fio --output=/dev/null /tmp/layout.fio")
    return setup


def _fio_run(workload: str, direct: bool = False) -> Callable[[str, Settings], str]:
    """`direct`: the job with fio's direct=1 (O_DIRECT, which OpenZFS 2.3 honours), as MariaDB since
    10.6 opens its data files (innodb_flush_method=O_DIRECT): a variant to compare, not the probe's job."""
    def run(folder: str, s: Settings) -> str:
        # the copy of the laid-out files: fio finds them at their size and does not lay them out again
        job = _fio_job(workload, folder, s)
        if direct:
            job = job.replace("[global]\n", "[global]\ndirect=1\n", 1)
        return f"cat > /tmp/run.fio <<'EOF'\n{job}\nEOF\nfio --output-format=json /tmp/run.fio"
    return run


def _fio_report(output: str) -> dict:
    import json
    start = output.find("{")
    if start < 0:
        raise ValueError(f"no JSON in fio's output: {output[-300:]!r}")
    return json.loads(output[start:])


def parse_fio(output: str) -> float:
    """fio's JSON report -> reads and writes a second, all jobs (what a probe compares for a random workload)."""
    return sum(j["read"]["iops"] + j["write"]["iops"] for j in _fio_report(output)["jobs"])


def parse_fio_bandwidth(output: str) -> float:
    """fio's JSON report -> MB/s read and written, all jobs (what a probe compares for the others)."""
    return sum(j["read"]["bw_bytes"] + j["write"]["bw_bytes"] for j in _fio_report(output)["jobs"]) / 1e6


# --- a copy of a tree of small and large files --------------------------------------------------

TREE_SMALL = ("/usr/share", "/usr/lib/python3")  # real small files: the image's documentation, locales, Python


def _tree_setup(s: Settings) -> str:
    tree = f"{SOURCE}/tree"
    large = max(1, s.tree_mib // 2 // 32)  # about half the tree in 32 MiB files of random bytes (media-like)
    return "\n".join([
        f"mkdir -p {tree}/small {tree}/large",
        *(f"cp -a {d} {tree}/small/" for d in TREE_SMALL),
        f"for i in $(seq {large}); do head -c 32M /dev/urandom > {tree}/large/media-$i.bin; done",
    ])


def _copy_start(folder: str, s: Settings) -> str:
    return f"rm -rf {folder}/copy && zpool sync tank"


def _copy_run(folder: str, s: Settings) -> str:
    # the copy written out to the disks inside the window: the pool's sync, not only the ARC's dirty data
    return (f"start=$(date +%s.%N) && cp -a {SOURCE}/tree {folder}/copy && zpool sync tank && "
            f"awk -v a=$start -v b=$(date +%s.%N) 'BEGIN {{ printf \"copy seconds %.2f\\n\", b - a }}'")


def parse_copy(output: str) -> float:
    return _number_of(r"^copy seconds ([0-9.]+)$", output, "no 'copy seconds' line")


# --- a backup: borgbackup writing a repository ------------------------------------------------------

def _borg_start(folder: str, s: Settings) -> str:
    # a new, empty repository each run, unencrypted (docs/apps.md: the cipher would set the pace)
    return f"rm -rf {folder}/repo && borg init --encryption none {folder}/repo && zpool sync tank"


def _borg_run(folder: str, s: Settings) -> str:
    return (f"start=$(date +%s.%N) && borg create --compression none {folder}/repo::run {SOURCE}/tree && "
            f"zpool sync tank && awk -v a=$start -v b=$(date +%s.%N) "
            f"'BEGIN {{ printf \"backup seconds %.2f\\n\", b - a }}'")


def parse_backup(output: str) -> float:
    return _number_of(r"^backup seconds ([0-9.]+)$", output, "no 'backup seconds' line")


# --- large media-like files read back whole -------------------------------------------------------

MEDIA_FILES = 4


def _media_setup(s: Settings) -> str:
    # random bytes: nothing for a compression to take off, as in video or photos
    each = max(1, s.media_mib // MEDIA_FILES)
    return (f"mkdir -p {SOURCE}/media && for i in $(seq {MEDIA_FILES}); do "
            f"head -c {each}M /dev/urandom > {SOURCE}/media/media-$i.bin; done")


def _media_read(folder: str, s: Settings) -> str:
    # each file whole, in 1 MiB reads; a subshell so that a failed dd fails the run and not the harness's
    # script; LC_ALL=C: dd's report in the parser's format
    return (f"( for f in {folder}/media-*.bin; do LC_ALL=C dd if=\"$f\" of=/dev/null bs=1M || exit 1; done )")


def parse_media_read(output: str) -> float:
    """dd's reports, one a file -> MB/s (10^6 bytes a second, as dd prints them) over all the files:
    their bytes over the seconds dd took for them."""
    runs = [(int(b), float(t)) for b, t in re.findall(r"^(\d+) bytes\b.* copied, ([0-9.e+-]+) s,", output, re.M)]
    seconds = sum(t for _, t in runs)
    if len(runs) != MEDIA_FILES or seconds <= 0:  # a file short: the number would still look like one
        raise ValueError(f"{len(runs)} dd 'bytes ... copied' lines, not {MEDIA_FILES} with a time: "
                         f"{output[-300:]!r}")
    return sum(b for b, _ in runs) / seconds / 1e6


def _nothing(folder: str, s: Settings) -> str:
    return "true"


APPS: dict[str, App] = {
    "pgbench-tpcb": App("pgbench-tpcb", "tps", True, "pg", _pg_setup, _pg_prepare_run, _pgbench(False), _pg_stop,
                        parse_pgbench),
    "pgbench-select": App("pgbench-select", "tps", True, "pg", _pg_setup, _pg_prepare_run, _pgbench(True), _pg_stop,
                          parse_pgbench),
    "mariadb-oltp": App("mariadb-oltp", "tps", True, "my", _my_setup, _my_start, _sysbench_run, _my_stop,
                        parse_sysbench),
    "fio-postgres": App("fio-postgres", "IOPS", True, "fio-postgres", _fio_setup("postgres"), _nothing,
                        _fio_run("postgres"), _nothing, parse_fio),
    "fio-mysql": App("fio-mysql", "IOPS", True, "fio-mysql", _fio_setup("mysql"), _nothing, _fio_run("mysql"),
                     _nothing, parse_fio),
    "fio-fileserver": App("fio-fileserver", "MB/s", True, "fio-fileserver", _fio_setup("fileserver"), _nothing,
                          _fio_run("fileserver"), _nothing, parse_fio_bandwidth),
    "fio-mysql-direct": App("fio-mysql-direct", "IOPS", True, "fio-mysql", _fio_setup("mysql"), _nothing,
                            _fio_run("mysql", direct=True), _nothing, parse_fio),
    "copy": App("copy", "seconds", False, "tree", _tree_setup, _copy_start, _copy_run, _nothing, parse_copy,
                False),
    "borg": App("borg", "seconds", False, "tree", _tree_setup, _borg_start, _borg_run, _nothing, parse_backup,
                False),
    "media-read": App("media-read", "MB/s", True, "media", _media_setup, _nothing, _media_read, _nothing,
                      parse_media_read),
}


def dataset(app: App, recordsize: str) -> str:
    """The dataset that holds the app's copy at one recordsize (the two pgbench runs share theirs)."""
    return f"tank/apps/{app.source}-{recordsize}"


def fresh_copy(app: App, recordsize: str, s: Settings) -> str:
    """The recordsize's dataset destroyed and copied anew from the source, for one run."""
    return f"zfs destroy -r {dataset(app, recordsize)} 2>/dev/null; {copy_onto(app, recordsize, s)}"


def cache_bytes(app: App, s: Settings) -> int:
    """The application's own cache (0: it has none but the ARC)."""
    return {"pg": s.pg_shared_buffers_mib, "my": s.innodb_buffer_pool_mib}.get(app.source, 0) << 20


def wal_apart(app: App, s: Settings) -> bool:
    """Whether the run's PostgreSQL WAL is on a dataset of its own (`--pg-wal separate`)."""
    return app.source == "pg" and s.pg_wal == "separate"


def run_datasets(app: App, recordsize: str, s: Settings) -> list[str]:
    """The datasets a run writes to, the data's first (the one the recognition's table reads)."""
    ds = dataset(app, recordsize)
    return [ds, f"{ds}/wal"] if wal_apart(app, s) else [ds]


def _wal_onto_own_dataset(ds: str, s: Settings) -> str:
    """The copy's pg_wal moved to a child dataset at WAL_RECORDSIZE and linked back, owned and
    moded as initdb leaves pg_wal (postgres, 0700)."""
    wal, pg_wal = f"/{ds}/wal", f"/{ds}/data/pg_wal"
    return (f" && zfs create -o recordsize={WAL_RECORDSIZE} -o compression={s.compression} {ds}/wal"
            f" && cp -a {pg_wal}/. {wal}/ && rm -rf {pg_wal} && ln -s {wal} {pg_wal}"
            f" && chown postgres:postgres {wal} && chown -h postgres:postgres {pg_wal} && chmod 0700 {wal}")


def copy_onto(app: App, recordsize: str, s: Settings) -> str:
    """Create the recordsize's dataset and copy the source there (when it is not there yet)."""
    ds = dataset(app, recordsize)
    fill = (f" && cp -a {SOURCE}/{app.source}/. /{ds}/ && chown --reference={SOURCE}/{app.source} /{ds}"
            if app.data_on_dataset else "")
    wal = _wal_onto_own_dataset(ds, s) if wal_apart(app, s) else ""
    return (f"zfs list {ds} >/dev/null 2>&1 || {{ zfs create -p -o recordsize={recordsize} "
            f"-o compression={s.compression} {ds}{fill}{wal} && zpool sync tank; }}")
