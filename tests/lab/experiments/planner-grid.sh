#!/bin/bash
# Saturation fio on one lab layout, for the layout planner's check (docs/planner.md).
# Run by tests/lab/planner-grid (one VM per layout), or by hand:
#   tests/lab/vm --zfs 2.3 --layout hdd-raidz2x6 --out DIR run -- 'LAYOUT=hdd-raidz2x6 bash /project/tests/lab/experiments/planner-grid.sh'
# Appends CSV rows (no header) to /out/planner-grid.csv:
#   layout,zfs_version,test,recordsize,block_size,numjobs,fio_iops,fio_bytes_per_s,runtime_s,disk_read_bytes,disk_write_bytes,disk_busy_s,disk_read_bytes_each,guest_cpu_busy
# disk_read_bytes_each: each disk's bytes read, ";"-separated in the pool's disk order (a raidz's
# reads need not fall evenly); guest_cpu_busy: the VM's CPUs' busy share over the test (/proc/stat).
# TESTS (default all five): the tests to run, e.g. TESTS="rand-read" (rand-* write their files first).
# Four measurements in datasets of their own (compression off, atime off):
#   seq-write  1M writes, 4 streams, end_fsync, recordsize=1M (each stream one file)
#   seq-read   the same files read once by 4 streams after `zpool export`/`import` emptied the ARC
#   rand-read  4K random reads, 16 psync jobs (one file each, 256M in all at most), recordsize=4K, primarycache=metadata (every read at the disks)
#   rand-write 4K random overwrites of the same files, 16 psync jobs, end_fsync
#   rand-write-sync  the same under sync=always
set -u
PY=/opt/zfs-advisor-venv/bin/python
LAYOUT=${LAYOUT:?LAYOUT=name}
OUT=${OUT:-/out/planner-grid.csv}
RUNTIME=${RUNTIME:-20}
RAMP=${RAMP:-3}
JOBS=${JOBS:-16}
TESTS=${TESTS:-seq-write seq-read rand-read rand-write rand-write-sync}
wanted() { case " $TESTS " in *" $1 "*) return 0 ;; esac; return 1; }
ver=$(cat /sys/module/zfs/version | cut -d- -f1)
disks=$(zpool status -P tank | awk '/\/dev\//{print $1}' | xargs -n1 readlink -f | xargs -n1 basename | sed 's/[0-9]*$//' | awk '!seen[$0]++')
# read sectors, write sectors, io_ticks (ms), summed over the pool's disks; the CPUs' busy and total
# jiffies; then each disk's read sectors
counters() { for d in $disks; do awk -v d=$d '$3==d{print $6, $10, $13}' /proc/diskstats; done |
               awk '{r+=$1; w+=$2; t+=$3} END {printf "%d %d %d", r, w, t}'
             awk '$1=="cpu"{t=0; for (i=2; i<=NF; i++) t+=$i; printf " %d %d", t-$5-$6, t}' /proc/stat
             for d in $disks; do awk -v d=$d '$3==d{printf " %d", $6}' /proc/diskstats; done; echo; }
avail=$(zfs get -Hp -o value available tank)
per_job=$(( avail / 2 / 4 )); [ $per_job -gt $((${SEQ_MAX_MIB:-128} << 20)) ] && per_job=$((${SEQ_MAX_MIB:-128} << 20))
per_job=$(( per_job / (1 << 20) ))M
rand_total=$(( avail / 8 )); [ $rand_total -gt $((256 << 20)) ] && rand_total=$((256 << 20))
rand_job=$(( rand_total / JOBS / (1 << 20) ))M   # one file per job
echo "[planner-grid] $LAYOUT OpenZFS $ver disks: $disks; sequential 4 x $per_job, random $JOBS x $rand_job" >&2

# one measurement: TEST RECORDSIZE BS NUMJOBS FIO-ARGS...
measure() {
  local test=$1 rs=$2 bs=$3 nj=$4; shift 4
  local before after t0 t1
  before=$(counters); t0=$EPOCHREALTIME
  fio --output-format=json --output=/tmp/r.json "$@" >/dev/null
  t1=$EPOCHREALTIME; after=$(counters)
  $PY - "$LAYOUT" "$ver" "$test" "$rs" "$bs" "$nj" "$before" "$after" >> "$OUT" <<'PY'
import json, sys
layout, ver, test, rs, bs, nj, before, after = sys.argv[1:]
jobs = json.load(open('/tmp/r.json'))['jobs']
side = 'read' if 'read' in test else 'write'
iops = sum(j[side]['iops'] for j in jobs)
bw = sum(j[side]['bw_bytes'] for j in jobs)
runtime = max(j[side]['runtime'] for j in jobs) / 1000
b = list(map(int, before.split())); a = list(map(int, after.split()))
d = [a[i] - b[i] for i in range(len(a))]
each = ";".join(str(x * 512) for x in d[5:])
cpu = d[3] / d[4] if d[4] else 0.0
print(f"{layout},{ver},{test},{rs},{bs},{nj},{iops:.0f},{bw:.0f},{runtime:.1f},{d[0]*512},{d[1]*512},{d[2]/1000:.1f},{each},{cpu:.2f}")
print(f"[planner-grid] {layout} {test}: {iops:.0f} IOPS, {bw/1e6:.1f} MB/s over {runtime:.1f} s", file=sys.stderr)
PY
}

if wanted seq-write || wanted seq-read; then
  zfs create -o recordsize=1M -o compression=off -o atime=off tank/seq
  wanted seq-write && measure seq-write 1M 1M 4 --name=seq --directory=/tank/seq --rw=write --bs=1M --size=$per_job \
    --numjobs=4 --ioengine=psync --end_fsync=1 --refill_buffers=1
  zpool export tank && zpool import -d /dev/disk/by-id tank || echo "[planner-grid] $LAYOUT: export/import failed, seq-read may come from the ARC" >&2  # the ARC keeps nothing of the pool
  wanted seq-read && measure seq-read 1M 1M 4 --name=seq --directory=/tank/seq --rw=read --bs=1M --size=$per_job \
    --numjobs=4 --ioengine=psync
  zfs destroy tank/seq
fi

zfs create -o recordsize=4K -o compression=off -o atime=off -o primarycache=metadata tank/rand
fio --name=rand --directory=/tank/rand --rw=write --bs=1M --size=$rand_job --numjobs=$JOBS \
  --ioengine=psync --end_fsync=1 --refill_buffers=1 --output=/dev/null
zpool sync tank
wanted rand-read && measure rand-read 4K 4K $JOBS --name=rand --directory=/tank/rand --rw=randread --bs=4k \
  --size=$rand_job --numjobs=$JOBS --ioengine=psync --time_based=1 --runtime=$RUNTIME --ramp_time=$RAMP
wanted rand-write && measure rand-write 4K 4K $JOBS --name=rand --directory=/tank/rand --rw=randwrite --bs=4k \
  --size=$rand_job --numjobs=$JOBS --ioengine=psync \
  --time_based=1 --runtime=$RUNTIME --ramp_time=$RAMP --end_fsync=1 --refill_buffers=1
# the same with sync=always: each write reaches the disks (its ZIL record) before it returns
zfs set sync=always tank/rand
wanted rand-write-sync && measure rand-write-sync 4K 4K $JOBS --name=rand --directory=/tank/rand --rw=randwrite --bs=4k \
  --size=$rand_job --numjobs=$JOBS --ioengine=psync \
  --time_based=1 --runtime=$RUNTIME --ramp_time=$RAMP --refill_buffers=1
zfs destroy tank/rand
