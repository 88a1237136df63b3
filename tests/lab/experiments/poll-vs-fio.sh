#!/bin/sh
# Run: tests/lab/vm --zfs 2.3 --layout ssd-mirror2x2 run -- 'sh /project/tests/lab/experiments/poll-vs-fio.sh'
# (docs/probes.md: "A suspect, tested and ruled out").
# Does the probe's foreground poll slow fio down in the lab VM?  Plain fio of the probe's postgres
# data job (8K dataset, as test_probe_results_match_an_independent_fio_run), alone and with the
# poll running beside it, alternated.
set -e
PY=/opt/zfs-advisor-venv/bin/python
export PYTHONPATH=/project
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
for d in home pg media logs; do [ -d /tank/$d ] && head -c 3M /dev/urandom > /tank/$d/user-file; done; zfs list -H -o name | wc -l
cmin=$(awk '$1=="c_min"{print $3}' /proc/spl/kstat/zfs/arcstats)
echo $((cmin + (64 << 20))) > /sys/module/zfs/parameters/zfs_arc_max
zfs create -o recordsize=8K -o compression=lz4 -o atime=on tank/exp
fio --output=/dev/null /tmp/exp-layout.fio
zpool sync tank
iops() { fio --output-format=json /tmp/exp.fio | $PY -c 'import json,sys; t=sys.stdin.read(); j=json.loads(t[t.index("{"):])["jobs"][0]; print(round(j["read"]["iops"]+j["write"]["iops"]), round(j["usr_cpu"]+j["sys_cpu"]))'; }
for i in $(seq 1 ${ROUNDS:-4}); do
  for mode in alone poll; do
    if [ $mode = poll ]; then $PY /project/tests/lab/experiments/poller.py 11 0.2 & P=$!; sleep 0.5; fi
    r=$(iops)
    if [ $mode = poll ]; then wait $P; fi
    echo "round $i $mode: IOPS, fio CPU % = $r"
  done
done
$PY /project/tests/lab/experiments/poller.py 10 0.2
