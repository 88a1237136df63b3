"""Prometheus exporter: one collector module per source family, fresh metric families per scrape.

    arc.py         ARC and L2ARC (arcstats)
    kstats.py      ZIL, dmu_tx (write throttle), zfetch, ABD, dbuf, mirror kstats
    pools.py       pool capacity, health, scrub/resilver, per-pool iostats kstat
    vdevs.py       pool and vdev I/O (zpool iostat -vlq), vdev tree, state, errors
    histograms.py  latency and request-size histograms (zpool iostat -w / -r)
    txgs.py        transaction groups (<pool>/txgs)
    tx_assign.py   how long writes waited for a txg (<pool>/dmu_tx_assign)
    datasets.py    dataset/zvol properties, space, objset I/O
    disks.py       block devices behind the pools (diskstats, sysfs)
    params.py      module version and tuning parameters
    efficiency.py  each pool's latest `probe --efficiency` ratios (the probe store)
    collector.py   runs them all per scrape, with self-metrics; exposition.py writes the text format
    base.py, named.py (typed kstat families), ioclass.py (zpool iostat column labels): shared parts

docs/metrics.md lists every family.
"""
