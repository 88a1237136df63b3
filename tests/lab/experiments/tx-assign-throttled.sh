#!/bin/bash
# The per-pool dmu_tx_assign kstat with the write throttle engaged (advisor/host/tx_assign.py,
# docs/metrics.md), recorded for tests/fixtures/tx_assign/. Run by hand in a lab VM:
#   flock /tmp/lab-vm.lock tests/lab/vm --zfs 2.3 --layout ssd-mirror2x2 --out DIR run -- \
#     'bash /project/tests/lab/experiments/tx-assign-throttled.sh'
# Writes to /out: dmu_tx_assign.imported (the kstat right after the pool was created), a host
# snapshot `throttled` taken by the project's own CLI while two writers run into a 64 MiB
# zfs_dirty_data_max, then dmu_tx_assign.after and dmu_tx.after once they finished.
set -eu
ADVISOR="env PYTHONPATH=/project /opt/zfs-advisor-venv/bin/python -m advisor"
ls -la /proc/spl/kstat/zfs/tank/ > /out/kstat-dir.txt
cat /proc/spl/kstat/zfs/tank/dmu_tx_assign > /out/dmu_tx_assign.imported
zfs create -o compression=off -o recordsize=1M tank/w
# a small dirty-data limit, so that two writers outrun the emulated disks and the throttle delays them
echo $((64 << 20)) > /sys/module/zfs/parameters/zfs_dirty_data_max
fio --name=w --directory=/tank/w --rw=write --bs=1M --size=384M --numjobs=2 --ioengine=psync \
  --refill_buffers=1 --end_fsync=1 --output=/out/fio.txt &
sleep 10
$ADVISOR snapshot --note "zfs-advisor lab: ssd-mirror2x2, OpenZFS 2.3 VM; two 1M writers into tank/w with zfs_dirty_data_max=64M (tests/lab/experiments/tx-assign-throttled.sh)" /out/throttled
wait
cat /proc/spl/kstat/zfs/tank/dmu_tx_assign > /out/dmu_tx_assign.after
cat /proc/spl/kstat/zfs/dmu_tx > /out/dmu_tx.after
cat /sys/module/zfs/version > /out/zfs_version
