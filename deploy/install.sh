#!/usr/bin/env bash
# Install zfs-advisor from this checkout and start it; or remove everything it installed.
# Run as root on Debian/Ubuntu (docs/deploy.md):
#
#   sudo deploy/install.sh              install (or upgrade) and start
#   sudo deploy/install.sh --uninstall  stop and remove the program, unit, settings, state and log
#
# Installs: the program in $PREFIX/venv (default /opt/zfs-advisor), the unit in
# /etc/systemd/system, /etc/zfs-advisor/config.toml from deploy/config.example.toml (kept when it
# exists), and the Prometheus alerts, scrape config and Grafana dashboard in $PREFIX/share for
# you to wire into your Prometheus and Grafana. Under systemd it starts zfs-advisor.service; on a
# machine without systemd (a container) it starts `zfs-advisor serve` in the background.
set -euo pipefail
cd "$(dirname "$0")/.."
PREFIX=${ZFS_ADVISOR_PREFIX:-/opt/zfs-advisor}
UNIT=/etc/systemd/system/zfs-advisor.service
CONFIG_DIR=/etc/zfs-advisor
PIDFILE=/run/zfs-advisor.pid  # only without systemd
LOG=/var/log/zfs-advisor.log  # only without systemd

say() { echo "zfs-advisor: $*"; }
die() { echo "zfs-advisor: $*" >&2; exit "${2:-1}"; }

if [ "$(id -u)" != 0 ]; then
    die "run as root (it writes $PREFIX, $CONFIG_DIR and the systemd unit)" 2
fi
under_systemd() { [ -d /run/systemd/system ]; }

# The background process started without systemd: by its pid file, and only if that pid is ours.
stop_background() {
    [ -f "$PIDFILE" ] || return 0
    local pid; pid=$(cat "$PIDFILE")
    if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "^$PREFIX/venv/bin/python.*zfs-advisor serve"; then
        kill "$pid"
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
    rm -f "$PIDFILE"
}

if [ "${1:-}" = "--uninstall" ]; then
    if under_systemd && [ -f "$UNIT" ]; then
        systemctl disable --now zfs-advisor.service || true
        rm -f "$UNIT"
        systemctl daemon-reload
        systemctl reset-failed zfs-advisor.service 2>/dev/null || true
    fi
    stop_background
    # StateDirectory= with DynamicUser= keeps the state under /var/lib/private.
    rm -rf "$PREFIX" "$CONFIG_DIR" /var/lib/zfs-advisor /var/lib/private/zfs-advisor "$LOG"
    say "removed $PREFIX, $UNIT, $CONFIG_DIR, its state and log"
    exit 0
elif [ -n "${1:-}" ]; then
    die "usage: deploy/install.sh [--uninstall]" 2
fi

if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    die "needs Python >= 3.11 as python3 (found: $(python3 --version 2>&1 || echo none))" 2
fi
if ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-venv
fi
python3 -m venv "$PREFIX/venv"
"$PREFIX/venv/bin/python" -m pip install -q --no-cache-dir --disable-pip-version-check .

install -d -m 0755 "$CONFIG_DIR" "$PREFIX/share/prometheus" "$PREFIX/share/grafana"
if [ ! -e "$CONFIG_DIR/config.toml" ]; then
    install -m 0644 deploy/config.example.toml "$CONFIG_DIR/config.toml"
fi
install -m 0644 deploy/prometheus/alerts.yml deploy/prometheus/scrape.yml "$PREFIX/share/prometheus/"
install -m 0644 deploy/grafana/zfs-advisor.json "$PREFIX/share/grafana/"

# Where the service will listen: its settings as the service sees them (the config file, no
# ZFS_ADVISOR_* from this shell). A wildcard address answers on loopback.
read -r ADDRESS PORT < <(cd / && env -i "$PREFIX/venv/bin/python" -c \
    'from advisor.settings import load_settings as l; s = l(); print(s.listen_address, s.port)') \
    || die "$CONFIG_DIR/config.toml is not valid; see the message above" 2
case "$ADDRESS" in 0.0.0.0 | "") ADDRESS=127.0.0.1 ;; :: | "[::]") ADDRESS=::1 ;; esac
case "$ADDRESS" in *:*) URL="http://[$ADDRESS]:$PORT" ;; *) URL="http://$ADDRESS:$PORT" ;; esac

if under_systemd; then
    install -m 0644 deploy/systemd/zfs-advisor.service "$UNIT"
    systemctl daemon-reload
    systemctl enable zfs-advisor.service
    systemctl restart zfs-advisor.service
    say "running under systemd (systemctl status zfs-advisor; journalctl -u zfs-advisor)"
else
    stop_background
    nohup "$PREFIX/venv/bin/zfs-advisor" serve >>"$LOG" 2>&1 &
    echo $! >"$PIDFILE"
    say "no systemd here; started in the background (log: $LOG, pid $!)"
fi

for _ in $(seq 100); do
    if "$PREFIX/venv/bin/python" -c "import urllib.request as u; u.urlopen('$URL/healthz', timeout=2)" 2>/dev/null; then
        say "answering on $URL/ (try /healthz, /metrics, /recommend?workload=postgres)"
        say "Prometheus: $PREFIX/share/prometheus/{scrape.yml,alerts.yml}; Grafana: $PREFIX/share/grafana/zfs-advisor.json (docs/deploy.md)"
        exit 0
    fi
    sleep 0.2
done
die "installed but not answering on $URL within 20 s; see $(under_systemd && echo 'journalctl -u zfs-advisor' || echo "$LOG")"
