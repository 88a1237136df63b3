#!/bin/bash
# Run: tests/lab/vm --zfs 2.3 --layout hdd-raidz1x4 --out DIR run -- 'RUNTIME=30 bash /project/tests/lab/experiments/raidz-reads-by-disk.sh'
# (docs/model.md, "Which disk serves a raidz read"). Output of 2026-11-26: data/raidz1x4-reads-by-disk-2026-11-26.txt
# Per-disk reads and writes of the PostgreSQL data job (randrw 70/30, 8K, 4 jobs, psync) on the
# raidz1 of four HDDs, by recordsize. ARC capped at 64 MiB as in the prior.
# LAYOUT=job lays the files out as the probe does (the job itself with create_only=1: 4 jobs
# writing 8K blocks) instead of 1 MiB sequential writes; RUNTIME sets each measurement's seconds.
set -u
P=/sys/module/zfs/parameters
echo $((32<<20)) > $P/zfs_arc_min; echo $((64<<20)) > $P/zfs_arc_max
disks=$(zpool status -P tank | awk '/\/dev\//{print $1}' | xargs -n1 readlink -f | xargs -n1 basename | sed 's/[0-9]*$//' | sort -u)
echo "disks: $disks"
zpool status tank | sed -n 1,20p
snap() { for d in $disks; do awk -v d=$d '$3==d{print d, $4, $6, $8, $10, $13}' /proc/diskstats; done; }
for rs in ${RS:-4K 8K 16K 128K}; do
  zfs create -o recordsize=$rs -o compression=lz4 -o atime=off tank/x$rs
  cat > /tmp/job.fio <<JOB
[global]
ioengine=psync
direct=0
directory=/tank/x$rs
size=128M
bs=8k
numjobs=4
refill_buffers=1
buffer_compress_percentage=50
[data]
rw=randrw
rwmixread=70
time_based=1
runtime=${RUNTIME:-30}
JOB
  if [ "${LAYOUT:-1M}" = job ]; then
    sed 's/^\[global\]$/[global]\ncreate_only=1/' /tmp/job.fio > /tmp/layout.fio
    fio /tmp/layout.fio >/dev/null
  else
    fio --name=lay --directory=/tank/x$rs --size=128M --bs=1M --rw=write --numjobs=4 --refill_buffers=1 \
        --buffer_compress_percentage=50 --filename_format='data.$jobnum.0' >/dev/null
  fi
  zpool sync tank
  echo "rs=$rs: $(zfs get -Hp -o value used,logicalused,compressratio tank/x$rs | tr '\n' ' ')"
  echo 3 > /proc/sys/vm/drop_caches
  before=$(snap); t0=$EPOCHREALTIME
  fio --output-format=json /tmp/job.fio > /tmp/r.json
  t1=$EPOCHREALTIME; after=$(snap)
  python3 - "$rs" "$before" "$after" "$t0" "$t1" <<'PY'
import json, sys
rs, b, a, t0, t1 = sys.argv[1:]
r = json.load(open('/tmp/r.json'))['jobs']
riops = sum(j['read']['iops'] for j in r); wiops = sum(j['write']['iops'] for j in r)
print(f"rs={rs} fio read {riops:.0f} write {wiops:.0f} IOPS over {float(t1)-float(t0):.1f} s")
B = {l.split()[0]: list(map(int, l.split()[1:])) for l in b.splitlines()}
A = {l.split()[0]: list(map(int, l.split()[1:])) for l in a.splitlines()}
for d in B:
    x = [A[d][i] - B[d][i] for i in range(5)]
    print(f"  {d}: reads {x[0]} ({x[1]*512/2**20:.1f} MiB, {x[1]*512/max(x[0],1)/1024:.1f} KiB avg), writes {x[2]} ({x[3]*512/2**20:.1f} MiB), busy {x[4]/1000:.1f} s")
PY
done
