#!/usr/bin/env bash
# Install zfs-advisor from this checkout and start it on its embedded defaults
# (127.0.0.1:21134, read-only API). Run as root on Debian/Ubuntu:
#
#   sudo deploy/install.sh
#
# Under systemd it installs and starts the zfs-advisor.service unit; on a
# machine without systemd (a container) it starts `zfs-advisor serve` in the
# background and says where its log is.
set -euo pipefail
cd "$(dirname "$0")/.."
PREFIX=${ZFS_ADVISOR_PREFIX:-/opt/zfs-advisor}

if [ "$(id -u)" != 0 ]; then
    echo "install.sh: run as root (it writes $PREFIX and the systemd unit)" >&2
    exit 2
fi
if ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-venv
fi
python3 -m venv "$PREFIX/venv"
"$PREFIX/venv/bin/python" -m pip install -q --disable-pip-version-check .
install -d -m 0755 /etc/zfs-advisor /var/lib/zfs-advisor
# The port the service will really listen on: its settings as the unit sees them (no ZFS_ADVISOR_* from this shell).
PORT=$(env -i "$PREFIX/venv/bin/python" -c "from advisor.settings import load_settings; print(load_settings().port)")

if [ -d /run/systemd/system ]; then
    install -m 0644 deploy/systemd/zfs-advisor.service /etc/systemd/system/zfs-advisor.service
    systemctl daemon-reload
    systemctl enable --now zfs-advisor.service
    systemctl restart zfs-advisor.service
    echo "zfs-advisor: running under systemd (systemctl status zfs-advisor)"
else
    pkill -f "$PREFIX/venv/bin/zfs-advisor serve" 2>/dev/null || true
    nohup "$PREFIX/venv/bin/zfs-advisor" serve --port "$PORT" >>/var/log/zfs-advisor.log 2>&1 &
    echo "zfs-advisor: no systemd here; started in the background (log: /var/log/zfs-advisor.log, pid $!)"
fi
for _ in $(seq 50); do
    if "$PREFIX/venv/bin/python" -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$PORT/healthz', timeout=2)" 2>/dev/null; then
        echo "zfs-advisor: answering on http://127.0.0.1:$PORT/ (try /healthz, /metrics, /recommend?workload=postgres)"
        exit 0
    fi
    sleep 0.2
done
echo "zfs-advisor: installed but not answering on port $PORT yet; see the log" >&2
exit 1
