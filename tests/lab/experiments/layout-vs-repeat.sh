#!/bin/sh
# Run: tests/lab/vm --zfs 2.3 --layout ssd-mirror2x2 run -- 'sh /project/tests/lab/experiments/layout-vs-repeat.sh'
# (docs/probes.md: "probe vs independent fio").
# How much of the run-to-run spread of one fio job comes from its files' layout?  Plain fio of
# the probe's postgres data job (8K dataset, ARC capped as the probe caps it: floor 32 MiB,
# cap 96 MiB), ROUNDS times: a fresh dataset, the files laid out and committed, then two runs
# on that layout.  Prints each round's two IOPS; the spread within a round is what two repeats
# on one layout see, the spread between rounds what a fresh layout adds.
set -e
PY=/opt/zfs-advisor-venv/bin/python
export PYTHONPATH=/project
P=/sys/module/zfs/parameters
cd /tmp
$PY - <<'PYEOF'
from pathlib import Path
from advisor.engine.loader import load_workloads
from advisor.probe.fio_job import build_job, Hygiene
w = load_workloads(Path('/project/rules'))['postgres']
job = build_job(w, '/tank/exp', Hygiene(runtime_seconds=8, ramp_seconds=2, max_file_bytes=48 << 20), role='data')
open('/tmp/exp.fio', 'w').write(job.text)
open('/tmp/exp-layout.fio', 'w').write(job.layout_text)
PYEOF
for d in home pg media logs; do [ -d /tank/$d ] && head -c 3M /dev/urandom > /tank/$d/user-file; done
old_min=$(cat $P/zfs_arc_min); old_max=$(cat $P/zfs_arc_max)
echo $((32 << 20)) > $P/zfs_arc_min
echo $((96 << 20)) > $P/zfs_arc_max
arc() { awk '$1=="demand_data_hits"||$1=="demand_data_misses"{printf "%s ", $3}' /proc/spl/kstat/zfs/arcstats; }
# one run: "IOPS/ARC demand-data hit ratio"
iops() {
  h0=$(arc)
  n=$(fio --output-format=json /tmp/exp.fio | $PY -c 'import json,sys; t=sys.stdin.read(); j=json.loads(t[t.index("{"):])["jobs"][0]; print(round(j["read"]["iops"]+j["write"]["iops"]))')
  h1=$(arc)
  echo "$n/$(echo $h0 $h1 | awk '{h=$3-$1; m=$4-$2; printf "%.2f", h/(h+m)}')"
}
for i in $(seq 1 ${ROUNDS:-5}); do
  zfs create -o recordsize=8K -o compression=lz4 -o atime=on tank/exp
  fio --output=/dev/null /tmp/exp-layout.fio
  zpool sync tank
  a=$(iops); b=$(iops)
  echo "layout $i: IOPS/ARC hit $a $b"
  zfs destroy tank/exp
done
echo "$old_max" > $P/zfs_arc_max
echo "$old_min" > $P/zfs_arc_min
