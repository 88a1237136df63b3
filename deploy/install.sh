#!/usr/bin/env bash
# Install zfs-advisor from this checkout and start it; or remove everything it installed.
# Run as root on Debian/Ubuntu (docs/deploy.md):
#
#   sudo deploy/install.sh              install (or upgrade) and start
#   sudo deploy/install.sh --wheels DIR install without network: the dependencies from the wheels in DIR
#   sudo deploy/install.sh --with-scikit-learn  also scikit-learn, to run `zfs-advisor evaluate`
#                                       (the service predicts with numpy from the shipped fit)
#   sudo deploy/install.sh --uninstall  stop and remove the program, units, settings, state and log
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
# The prober (root): run by its timer (background profiler) and its path unit (POST /v1/probes queued a run).
PROBE_UNITS="zfs-advisor-probe.service zfs-advisor-probe.timer zfs-advisor-probe.path"
CONFIG_DIR=/etc/zfs-advisor
PIDFILE=/run/zfs-advisor.pid  # only without systemd
LOG=/var/log/zfs-advisor.log  # only without systemd

say() { echo "zfs-advisor: $*"; }
die() { echo "zfs-advisor: $1" >&2; exit "${2:-1}"; }

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

usage() { die "usage: deploy/install.sh [--wheels DIR] [--with-scikit-learn] | --uninstall" 2; }
WHEELS=
EXTRAS=  # --with-scikit-learn: "[model]", what fits the model and evaluates it (docs/model.md)
UNINSTALL=
while [ $# -gt 0 ]; do
    case "$1" in
        --uninstall) UNINSTALL=1 ;;
        --with-scikit-learn) EXTRAS="[model]" ;;
        --wheels)
            [ $# -ge 2 ] && [ -d "$2" ] || die "--wheels needs a directory of wheels (docs/deploy.md, Offline)" 2
            WHEELS=$(realpath "$2"); shift ;;
        *) usage ;;
    esac
    shift
done
[ -z "$UNINSTALL" ] || { [ -z "$WHEELS" ] && [ -z "$EXTRAS" ]; } || usage

if [ -n "$UNINSTALL" ]; then
    if under_systemd; then
        # Every zfs-advisor unit, with the drop-ins `systemctl edit` (or --runtime) wrote for it;
        # the timers and path units first, so that none starts a service again once it is stopped.
        for unit in /etc/systemd/system/zfs-advisor*.timer /etc/systemd/system/zfs-advisor*.path \
                    /etc/systemd/system/zfs-advisor*.service; do
            [ -f "$unit" ] || continue
            name=$(basename "$unit")
            systemctl disable --now "$name" || true
            rm -rf "$unit" "/etc/systemd/system/$name.d" "/run/systemd/system/$name.d"
            systemctl reset-failed "$name" 2>/dev/null || true
        done
        rm -rf /etc/systemd/system/zfs-advisor.service.d /run/systemd/system/zfs-advisor.service.d
        systemctl daemon-reload
    fi
    stop_background
    # StateDirectory= with DynamicUser= keeps the state under /var/lib/private.
    rm -rf "$PREFIX" "$CONFIG_DIR" /var/lib/zfs-advisor /var/lib/private/zfs-advisor "$LOG"
    say "removed $PREFIX, $UNIT and the probe units, $CONFIG_DIR, its state and log"
    exit 0
fi

if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    die "needs Python >= 3.11 as python3 (found: $(python3 --version 2>&1 || echo none))" 2
fi
if ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-venv
fi
# A fresh venv each time: an upgrade of the same version must replace the code, not keep it.
rm -rf "$PREFIX/venv"
# The venv gets no pip of its own when the pip wheel that ensurepip installs from is at hand
# (Debian keeps it in /usr/share/python-wheels, CPython in ensurepip/_bundled): pip runs from that
# wheel into the venv, as ensurepip itself does. The service never runs pip, and installing pip
# into the venv (and byte-compiling it) is most of the venv's cost on a slow machine.
PIP_WHEEL=$(ls /usr/share/python-wheels/pip-*.whl \
    "$(python3 -c 'import ensurepip, os; print(os.path.dirname(ensurepip.__file__))')"/_bundled/pip-*.whl \
    2>/dev/null | head -n 1 || true)
if [ -n "$PIP_WHEEL" ]; then
    python3 -m venv --without-pip "$PREFIX/venv"
    venv_pip() { PYTHONPATH="$PIP_WHEEL" "$PREFIX/venv/bin/python" -m pip "$@"; }
else
    python3 -m venv "$PREFIX/venv"
    venv_pip() { "$PREFIX/venv/bin/python" -m pip "$@"; }
fi
PIP=(-q --no-cache-dir --disable-pip-version-check)
if [ -n "$WHEELS" ]; then
    PIP+=(--no-index --find-links "$WHEELS")  # no index at all: what is not in DIR fails
fi
if [ -n "$WHEELS" ] && compgen -G "$WHEELS/zfs_advisor-*.whl" >/dev/null; then
    TARGET="zfs-advisor$EXTRAS"  # the program's own wheel in DIR, built from this checkout (docs/deploy.md)
else
    # Built from a copy: setuptools writes build/ and *.egg-info next to the sources, which would
    # leave root-owned files in your checkout (and fails in a read-only one).
    SRC=$(mktemp -d)
    trap 'rm -rf "$SRC"' EXIT
    tar -c --exclude=__pycache__ pyproject.toml README.md LICENSE advisor exporters rules | tar -x -C "$SRC"
    TARGET="$SRC$EXTRAS"  # pip reads DIR[extra] as the project in DIR with that extra
fi
venv_pip install "${PIP[@]}" "$TARGET"

install -d -m 0755 "$CONFIG_DIR" "$PREFIX/share/prometheus" "$PREFIX/share/grafana"
if [ ! -e "$CONFIG_DIR/config.toml" ]; then
    install -m 0644 deploy/config.example.toml "$CONFIG_DIR/config.toml"
fi
install -m 0644 deploy/prometheus/alerts.yml deploy/prometheus/scrape.yml "$PREFIX/share/prometheus/"
install -m 0644 deploy/grafana/zfs-advisor.json "$PREFIX/share/grafana/"

# Where the service will listen: its settings as the service sees them (the config file, no
# ZFS_ADVISOR_* from this shell). A wildcard address answers on loopback.
# SCHEME: https when the web config file (web_config_file) has tls_server_config.
read -r ADDRESS PORT SCHEME < <(cd / && env -i "$PREFIX/venv/bin/python" -c \
    'from advisor.settings import load_settings as l; from advisor.webconfig import load_web_config as w
s = l(); print(s.listen_address, s.port, "https" if w(s.web_config_file).tls else "http")') \
    || die "$CONFIG_DIR/config.toml (or its web_config_file) is not valid; see the message above" 2
case "$ADDRESS" in 0.0.0.0 | "") ADDRESS=127.0.0.1 ;; :: | "[::]") ADDRESS=::1 ;; esac
case "$ADDRESS" in *:*) URL="$SCHEME://[$ADDRESS]:$PORT" ;; *) URL="$SCHEME://$ADDRESS:$PORT" ;; esac

if under_systemd; then
    install -m 0644 deploy/systemd/zfs-advisor.service "$UNIT"
    for unit in $PROBE_UNITS; do install -m 0644 "deploy/systemd/$unit" /etc/systemd/system/; done
    systemctl daemon-reload
    systemctl enable zfs-advisor.service
    systemctl restart zfs-advisor.service
    systemctl enable --now zfs-advisor-probe.timer zfs-advisor-probe.path
    say "running under systemd (systemctl status zfs-advisor; journalctl -u zfs-advisor)"
else
    stop_background
    nohup "$PREFIX/venv/bin/zfs-advisor" serve >>"$LOG" 2>&1 &
    echo $! >"$PIDFILE"
    say "no systemd here; started in the background (log: $LOG, pid $!)"
fi

for _ in $(seq 100); do
    # It answers: /healthz is 200, or 401 under basic auth, or TLS refuses a client without a
    # certificate (RequireAndVerifyClientCert); the server's certificate need not name $ADDRESS.
    if "$PREFIX/venv/bin/python" -c "
import ssl, urllib.error, urllib.request as u
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
try: u.urlopen('$URL/healthz', timeout=2, context=ctx)
except urllib.error.HTTPError as e: raise SystemExit(e.code != 401)
except urllib.error.URLError as e: raise SystemExit(not isinstance(e.reason, ssl.SSLError))
except ConnectionResetError: raise SystemExit('$SCHEME' != 'https')  # TLS 1.3: no client certificate
" 2>/dev/null; then
        say "answering on $URL/ (try /healthz, /metrics, /recommend?workload=postgres)"
        say "Prometheus: $PREFIX/share/prometheus/{scrape.yml,alerts.yml}; Grafana: $PREFIX/share/grafana/zfs-advisor.json (docs/deploy.md)"
        exit 0
    fi
    sleep 0.2
done
die "installed but not answering on $URL within 20 s; see $(under_systemd && echo 'journalctl -u zfs-advisor' || echo "$LOG")"
