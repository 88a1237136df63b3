#!/bin/bash
# Run: tests/lab/vm --zfs 2.3 --layout ssd-mirror2x2 run -- 'bash /project/tests/lab/experiments/stop-cancelled-by-start.sh'
# What `systemctl stop` says when a start (as zfs-advisor-probe.timer's) comes while a oneshot unit
# stops (docs/deploy.md). 2026-11-26: "Job for t1.service canceled.", stop rc=1, the stopped run
# "Deactivated successfully" (exit 143 is success), then the unit activating again.
cat > /run/systemd/system/t1.service <<'U'
[Service]
Type=oneshot
ExecStart=/bin/bash -c 'trap "sleep 3; exit 143" TERM; sleep 100 & wait'
SuccessExitStatus=143
U
systemctl daemon-reload
systemctl start --no-block t1; sleep 2
( sleep 1; systemctl start --no-block t1 ) &
systemctl stop t1; echo "stop rc=$?"
wait; sleep 4; systemctl show t1 -p ActiveState -p Result -p ExecMainStatus -p NRestarts
journalctl -q -o cat --no-pager -u t1 | tail -5
systemctl kill t1; sleep 1
