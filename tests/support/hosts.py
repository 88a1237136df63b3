"""Hand-built hosts for the tests that isolate one behaviour at a time.

`synthetic_host` is a one-pool host of a named lab layout for the engine and
the API; `make_host` is a host whose pool facts come from the real parsers
reading zpool/kstat text, for the exporter's collectors.
"""
from __future__ import annotations

from datetime import UTC, datetime

from advisor.host import kstat, txgs, zpool_iostat
from advisor.hostmodel.facts import (
    Dataset,
    Disk,
    DiskStats,
    Host,
    KStat,
    Pool,
    Property,
    Txg,
    Vdev,
    VdevIostat,
    ZfsInfo,
)

MIB = 1 << 20
PARAMS = {
    "zfs_txg_timeout": "5",
    "zfs_dirty_data_max": str(400 * MIB),
    "zfs_delay_scale": "500000",
    "zfs_vdev_async_write_min_active": "2",
    "zfs_vdev_async_write_max_active": "10",
    "zfs_vdev_max_auto_ashift": "14",
    "zfs_vdev_mirror_rotating_seek_inc": "5",
    "zfs_vdev_mirror_non_rotating_seek_inc": "1",
    "metaslab_lba_weighting_enabled": "1",
}


def disk(name: str, rotational: bool, physical: int = 4096) -> Disk:
    return Disk(name=name, rotational=rotational, physical_block_size=physical, logical_block_size=512)


def leaf(name: str) -> Vdev:
    return Vdev(name=f"/dev/{name}1", type="disk", path=f"/dev/{name}1", disk=name)


def props(**overrides: object) -> dict[str, Property]:
    base: dict[str, object] = dict(
        type="filesystem", recordsize=131072, volblocksize="-", compression="off", compressratio="1.00x",
        primarycache="all", logbias="latency", sync="standard", atime="on", relatime="off", xattr="on",
        redundant_metadata="all", special_small_blocks=0, checksum="on", dedup="off",
    )
    base.update(overrides)
    return {k: Property(value=str(v), source="local") for k, v in base.items()}


def synthetic_host(
    layout: str = "4kn-ashift9",
    version: str = "2.1.11-1",
    capacity: float = 0.3,
    busy_txgs: int = 10,
    extra_datasets: list[Dataset] | None = None,
    log: bool = False,
    dirty_delays: int | None = None,
) -> Host:
    """A one-pool host ('tank') of a named layout, with tank/pg, tank/vm and a txg history;
    `dirty_delays`: the write throttle's count of delayed transactions (dmu_tx kstat), None for no kstat."""
    if layout == "4kn-ashift9":
        disks = [disk("sda", True), disk("sdb", True)]
        tops = [Vdev(name="mirror-0", type="mirror", ashift=9, children=[leaf("sda"), leaf("sdb")])]
    elif layout == "hdd-raidz1x4":
        disks = [disk(f"sd{c}", True) for c in "abcd"]
        tops = [Vdev(name="raidz1-0", type="raidz1", nparity=1, ashift=12, children=[leaf(d.name) for d in disks])]
    elif layout == "ssd-mirror2x2":
        disks = [disk(f"sd{c}", False, 512) for c in "abcd"]
        tops = [
            Vdev(name="mirror-0", type="mirror", ashift=12, children=[leaf("sda"), leaf("sdb")]),
            Vdev(name="mirror-1", type="mirror", ashift=12, children=[leaf("sdc"), leaf("sdd")]),
        ]
    elif layout == "mixed-mirror-ssd-hdd":
        disks = [disk("sda", False, 512), disk("sdb", True)]
        tops = [Vdev(name="mirror-0", type="mirror", ashift=12, children=[leaf("sda"), leaf("sdb")])]
    elif layout == "hdd-stripe5":
        disks = [disk(f"sd{c}", True) for c in "abcde"]
        tops = [Vdev(name=f"/dev/{d.name}1", type="disk", path=f"/dev/{d.name}1", disk=d.name, ashift=12) for d in disks]
    else:
        raise ValueError(layout)
    if log:
        disks.append(disk("nvme0n1", False, 512))
        tops.append(Vdev(name="/dev/nvme0n1", type="disk", group="log", path="/dev/nvme0n1", disk="nvme0n1"))
    iostat = VdevIostat(latency_seconds={"disk_wait_read": 0.03, "disk_wait_write": 0.01, "asyncq_wait_write": 0.02})
    root = Vdev(name="tank", type="root", children=tops, iostat=iostat)
    txgs = [
        Txg(txg=i, birth_seconds=i * 5.0, state="committed", dirty_bytes=200 * MIB, read_bytes=0,
            written_bytes=100 * MIB, reads=0, writes=2000, open_seconds=5, quiesce_seconds=0,
            wait_seconds=0, sync_seconds=5)
        for i in range(busy_txgs)
    ]
    pool = Pool(name="tank", health="ONLINE", capacity_ratio=capacity, fragmentation_ratio=0.1,
                free_bytes=100 * MIB, root=root, txgs=txgs)
    datasets = [
        Dataset(name="tank", type="filesystem", properties=props()),
        Dataset(name="tank/pg", type="filesystem",
                properties=props(recordsize=8192, logbias="throughput", primarycache="metadata", atime="off")),
        Dataset(name="tank/vm", type="volume",
                properties=props(type="volume", recordsize="-", volblocksize=16384, compression="lz4")),
        *(extra_datasets or []),
    ]
    return Host(
        collected_at=datetime(2026, 1, 1, tzinfo=UTC), hostname="synthetic", memory_bytes=4 << 30,
        cpu_count=4, zfs=ZfsInfo(present=True, kmod_version=version), pools=[pool], datasets=datasets,
        disks=disks, module_params=dict(PARAMS),
        kstats={} if dirty_delays is None else {"dmu_tx": KStat(values={"dmu_tx_dirty_delay": dirty_delays})},
    )


# zpool iostat -vw -Hp for one pool: 38 rows (1 ns .. 137 s), 11 columns.
LATENCY_ROWS = [[0] * 11 for _ in range(38)]
for column in range(11):
    LATENCY_ROWS[12][column] = 10 + column  # 4.096-8.191 us
    LATENCY_ROWS[20][column] = 5  # 1.048-2.097 ms
LATENCY_ROWS[3][0] = 2  # 8-15 ns: below the first emitted bucket, folded into it
LATENCY_TEXT = "tank\n" + "".join(
    f"{(1 << (j + 1)) - 1}\t" + "\t".join(map(str, row)) + "\n" for j, row in enumerate(LATENCY_ROWS)
)
SIZE_TEXT = "tank\n" + "".join(
    f"{1 << j}\t" + "\t".join(str(3 if j == 12 else 0) for _ in range(14)) + "\n" for j in range(9, 25)
)
# zpool iostat -vlq -Hp (OpenZFS 2.1 layout: 10 latency and 12 queue columns).
IOSTAT_TEXT = (
    "tank\t1000\t9000\t10\t20\t4096\t8192\t" + "\t".join(["1000000"] * 10) + "\t" + "\t".join(["2"] * 12) + "\n"
    "mirror-0\t1000\t9000\t10\t20\t4096\t8192\t" + "\t".join(["-"] * 10) + "\t" + "\t".join(["0"] * 12) + "\n"
    "/dev/sda1\t0\t0\t5\t10\t2048\t4096\t" + "\t".join(["-"] * 10) + "\t" + "\t".join(["0"] * 12) + "\n"
)
TXGS_TEXT = (
    "txg      birth            state ndirty       nread        nwritten     reads    writes   otime        qtime"
    "        wtime        stime\n"
    "100      1000000000000    C     1048576      0            2097152      0        20       5000000000   10000"
    "        20000        300000000\n"
    "101      1005000000000    C     3145728      0            4194304      0        40       5000000000   30000"
    "        10000        500000000\n"
    "102      1010000000000    O     65536        0            0            0        0        0            0"
    "            0            0\n"
)


def make_host(datasets: int = 2) -> Host:
    root = Vdev(
        name="tank",
        type="root",
        state="ONLINE",
        children=[
            Vdev(
                name="mirror-0",
                type="mirror",
                state="ONLINE",
                children=[
                    Vdev(name="/dev/sda1", type="disk", state="ONLINE", disk="sda", read_errors=2),
                    Vdev(name="/dev/sdb1", type="disk", state="ONLINE", disk="sdb"),
                ],
            )
        ],
    )
    pool = Pool(
        name="tank",
        health="DEGRADED",
        size_bytes=10_000,
        allocated_bytes=1_000,
        free_bytes=9_000,
        capacity_ratio=0.1,
        root=root,
        latency_histograms=zpool_iostat.parse_latency_histograms(LATENCY_TEXT)["tank"],
        size_histograms=zpool_iostat.parse_size_histograms(SIZE_TEXT)["tank"],
        txgs=txgs.parse_txgs(TXGS_TEXT),
        errors="No known data errors",
    )
    zpool_iostat.attach_vdev_iostat(pool, zpool_iostat.parse_vdev_iostat(IOSTAT_TEXT)["tank"])
    other = Pool(name="scratch", health="ONLINE", size_bytes=1)
    objset = "25 1 0x01 8 2160 1 2\nname type data\ndataset_name 7 {}\nwrites 4 3\nnwritten 4 12288\nreads 4 1\nnread 4 4096\n" \
             "nunlinks 4 0\nnunlinked 4 0\nzil_commit_count 4 9\n"
    sets = [
        Dataset(
            name=name,
            type="filesystem",
            properties={
                "recordsize": Property(value="131072", source="default"),
                "compressratio": Property(value="1.50", source="-"),
                **{p: Property(value="1000", source="-") for p in ("used", "available", "referenced", "logicalused")},
                **{p: Property(value="0", source="default") for p in ("quota", "refquota", "reservation",
                                                                     "refreservation")},
            },
            io=kstat.parse_named_kstat(objset.format(name)),
        )
        for name in ["tank"] + [f"tank/ds{i}" for i in range(datasets - 1)] + ["scratch"]
    ]
    stats = DiskStats(
        reads_completed=1, reads_merged=0, sectors_read=8, read_seconds=0.5, writes_completed=2, writes_merged=0,
        sectors_written=16, write_seconds=0.25, ios_in_progress=0, io_seconds=1.0, weighted_io_seconds=1.5,
    )
    return Host(
        collected_at=datetime(2026, 11, 22, tzinfo=UTC),
        zfs=ZfsInfo(present=True, kmod_version="2.1.11-1"),
        pools=[pool, other],
        datasets=sets,
        disks=[Disk(name=n, rotational=True, stats=stats) for n in ("sda", "sdb", "vda")],
        arc=kstat.parse_named_kstat("9 1 0x01 4 0 1 2\nname type data\nhits 4 10\nmisses 4 2\nsize 4 4096\nc 4 8192\n"),
        kstats={"dmu_tx": KStat(values={"dmu_tx_assigned": 5, "dmu_tx_dirty_delay": 1})},
        module_params={"zfs_txg_timeout": "5", "zfs_dirty_data_max_percent": "10", "zfs_vdev_scheduler": "noop"},
    )
