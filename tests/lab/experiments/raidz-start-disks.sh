#!/bin/bash
# Which disks serve small random reads on a raidz (docs/planner.md, "Which disks a raidz read
# reaches"): planner-grid.sh's rand-read (4K records, every read at the disks, each disk's bytes
# read recorded) on the new pool, then again after a 1 GiB file was written first, so that the
# test's data lies in other metaslabs.  Appends two CSV rows to $OUT (planner-grid.sh's columns),
# the layout named LAYOUT, then LAYOUT+1G-first.  In a lab VM:
#   tests/lab/vm --zfs 2.3 --layout hdd-raidz2x6 --out DIR run -- \
#     'LAYOUT=hdd-raidz2x6 OUT=/out/raidz-start-disks.csv bash /project/tests/lab/experiments/raidz-start-disks.sh'
set -eu
LAYOUT=${LAYOUT:?LAYOUT=name}
OUT=${OUT:-/out/raidz-start-disks.csv}
grid=$(dirname "$0")/planner-grid.sh
LAYOUT=$LAYOUT TESTS=rand-read OUT=$OUT bash "$grid"
zfs create -o recordsize=1M -o compression=off tank/fill
dd if=/dev/urandom of=/tank/fill/f bs=1M count=1024 status=none
zpool sync tank
LAYOUT=$LAYOUT+1G-first TESTS=rand-read OUT=$OUT bash "$grid"
zfs destroy tank/fill
