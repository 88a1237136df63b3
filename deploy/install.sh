#!/usr/bin/env bash
# Install zfs-advisor from this checkout and start it; or remove everything it installed.
# Run as root on Debian/Ubuntu (docs/deploy.md):
#
#   sudo deploy/install.sh              install (or upgrade) and start
#   sudo deploy/install.sh --wheels DIR install without network: the dependencies from the wheels in DIR
#   sudo deploy/install.sh --with-scikit-learn  also scikit-learn, to run `zfs-advisor evaluate`
#                                       (the service predicts with numpy from the shipped fit)
#   sudo deploy/install.sh --uninstall  stop and remove the program and units; keep the settings
#                                       (/etc/zfs-advisor) and the probe results (/var/lib/zfs-advisor)
#   sudo deploy/install.sh --purge      --uninstall, and remove the settings, probe results and log too
#
# An upgrade installs the new version beside the running one ($PREFIX/releases/<id>) and switches
# $PREFIX/venv (a symlink) to it in one rename only once it is complete; a failed pip leaves the
# old version in place and running, and a new version that does not answer is rolled back.
# Dependency versions come from deploy/constraints.txt: every host gets the same.
#
# Installs: the program in $PREFIX/releases/<id>, $PREFIX/venv pointing to it (default
# /opt/zfs-advisor), fio (the prober's benchmark) when it is missing, the unit in
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
    if [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -Eq "^$PREFIX/(venv|releases/[^/]+)/bin/python.*zfs-advisor serve"; then
        kill "$pid"
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
    rm -f "$PIDFILE"
}

usage() { die "usage: deploy/install.sh [--wheels DIR] [--with-scikit-learn] | --uninstall | --purge" 2; }
WHEELS=
EXTRAS=  # --with-scikit-learn: "[model]", what fits the model and evaluates it (docs/model.md)
UNINSTALL=
PURGE=
while [ $# -gt 0 ]; do
    case "$1" in
        --uninstall) UNINSTALL=1 ;;
        --purge) UNINSTALL=1; PURGE=1 ;;
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
    rm -rf "$PREFIX"
    if [ -n "$PURGE" ]; then
        # StateDirectory= with DynamicUser= keeps the state under /var/lib/private.
        rm -rf "$CONFIG_DIR" /var/lib/zfs-advisor /var/lib/private/zfs-advisor "$LOG"
        say "removed $PREFIX, $UNIT and the probe units, $CONFIG_DIR, its state and log"
    else
        say "removed $PREFIX, $UNIT and the probe units; kept $CONFIG_DIR and the probe results" \
            "(/var/lib/zfs-advisor): deploy/install.sh --purge removes them"
    fi
    exit 0
fi

if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    die "needs Python >= 3.11 as python3 (found: $(python3 --version 2>&1 || echo none))" 2
fi
if ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-venv
fi
if ! command -v fio >/dev/null; then  # the prober's benchmark (docs/probes.md); the service runs without it
    if command -v apt-get >/dev/null; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends fio \
            || say "warning: fio could not be installed: probes will not run until it is (apt-get install fio)"
    else
        say "warning: fio is not installed: probes will not run until it is"
    fi
fi

# A new release beside the running one, at the path it keeps: a venv's scripts name their
# interpreter by absolute path, so a venv cannot be moved once built.
RELEASES="$PREFIX/releases"
NEW="$RELEASES/$(date -u +%Y%m%dT%H%M%S)-$$"
install -d -m 0755 "$RELEASES"
cleanup_new() { rm -rf "$NEW"; }
trap cleanup_new EXIT
# The venv gets no pip of its own when the pip wheel that ensurepip installs from is at hand
# (Debian keeps it in /usr/share/python-wheels, CPython in ensurepip/_bundled): pip runs from that
# wheel into the venv, as ensurepip itself does. The service never runs pip, and installing pip
# into the venv (and byte-compiling it) is most of the venv's cost on a slow machine.
PIP_WHEEL=$(ls /usr/share/python-wheels/pip-*.whl \
    "$(python3 -c 'import ensurepip, os; print(os.path.dirname(ensurepip.__file__))')"/_bundled/pip-*.whl \
    2>/dev/null | head -n 1 || true)
if [ -n "$PIP_WHEEL" ]; then
    python3 -m venv --without-pip "$NEW"
    venv_pip() { PYTHONPATH="$PIP_WHEEL" "$NEW/bin/python" -m pip "$@"; }
else
    python3 -m venv "$NEW"
    venv_pip() { "$NEW/bin/python" -m pip "$@"; }
fi
PIP=(-q --no-cache-dir --disable-pip-version-check --constraint deploy/constraints.txt)
if [ -n "$WHEELS" ]; then
    PIP+=(--no-index --find-links "$WHEELS")  # no index at all: what is not in DIR fails
fi
SRC=
if [ -n "$WHEELS" ] && compgen -G "$WHEELS/zfs_advisor-*.whl" >/dev/null; then
    TARGET="zfs-advisor$EXTRAS"  # the program's own wheel in DIR, built from this checkout (docs/deploy.md)
else
    # Built from a copy: setuptools writes build/ and *.egg-info next to the sources, which would
    # leave root-owned files in your checkout (and fails in a read-only one).
    SRC=$(mktemp -d)
    trap 'cleanup_new; rm -rf "$SRC"' EXIT
    tar -c --exclude=__pycache__ pyproject.toml README.md LICENSE advisor exporters rules | tar -x -C "$SRC"
    TARGET="$SRC$EXTRAS"  # pip reads DIR[extra] as the project in DIR with that extra
fi
if ! venv_pip install "${PIP[@]}" "$TARGET"; then
    die "pip could not install the new version (see above); nothing changed: the installed version, if any, is still in place and running"
fi

install -d -m 0755 "$CONFIG_DIR" "$PREFIX/share/prometheus" "$PREFIX/share/grafana"
if [ ! -e "$CONFIG_DIR/config.toml" ]; then
    install -m 0644 deploy/config.example.toml "$CONFIG_DIR/config.toml"
fi

# Where the service will listen: its settings as the new version reads them (the config file, no
# ZFS_ADVISOR_* from this shell); a file it refuses stops the upgrade before anything changes.
# A wildcard address answers on loopback. SCHEME: https when the web config file has tls_server_config.
read -r ADDRESS PORT SCHEME < <(cd / && env -i "$NEW/bin/python" -c \
    'from advisor.settings import load_settings as l; from advisor.webconfig import load_web_config as w
s = l(); print(s.listen_address, s.port, "https" if w(s.web_config_file).tls else "http")') \
    || die "$CONFIG_DIR/config.toml (or its web_config_file) is not valid for the new version; see the message above; nothing changed" 2
case "$ADDRESS" in 0.0.0.0 | "") ADDRESS=127.0.0.1 ;; :: | "[::]") ADDRESS=::1 ;; esac
case "$ADDRESS" in *:*) URL="$SCHEME://[$ADDRESS]:$PORT" ;; *) URL="$SCHEME://$ADDRESS:$PORT" ;; esac

# The switch: $PREFIX/venv becomes a symlink to the new release in one rename. An install from
# before releases/ has a directory there: it is kept until the new release answers.
PREVIOUS=$(readlink "$PREFIX/venv" 2>/dev/null || true)
LEGACY=
if [ -d "$PREFIX/venv" ] && [ ! -L "$PREFIX/venv" ]; then
    LEGACY="$PREFIX/venv.legacy"
    rm -rf "$LEGACY"
    mv "$PREFIX/venv" "$LEGACY"
fi
switch_to() { ln -sfn "$1" "$PREFIX/venv.next" && mv -T "$PREFIX/venv.next" "$PREFIX/venv"; }
switch_to "$NEW"
trap 'rm -rf "$SRC"' EXIT  # the new release stays: it is the installed one now
install -m 0644 deploy/prometheus/alerts.yml deploy/prometheus/scrape.yml "$PREFIX/share/prometheus/"
install -m 0644 deploy/grafana/zfs-advisor.json "$PREFIX/share/grafana/"

start_service() {
    if under_systemd; then
        systemctl restart zfs-advisor.service
    else
        stop_background
        nohup "$PREFIX/venv/bin/zfs-advisor" serve >>"$LOG" 2>&1 &
        echo $! >"$PIDFILE"
    fi
}
if under_systemd; then
    install -m 0644 deploy/systemd/zfs-advisor.service "$UNIT"
    for unit in $PROBE_UNITS; do install -m 0644 "deploy/systemd/$unit" /etc/systemd/system/; done
    systemctl daemon-reload
    systemctl enable zfs-advisor.service
fi
start_service
if under_systemd; then
    systemctl enable --now zfs-advisor-probe.timer zfs-advisor-probe.path
    say "running under systemd (systemctl status zfs-advisor; journalctl -u zfs-advisor)"
else
    say "no systemd here; started in the background (log: $LOG, pid $(cat "$PIDFILE"))"
fi

answers() {  # within 20 s: /healthz is 200, or 401 under basic auth, or TLS refuses a client
    # without a certificate (RequireAndVerifyClientCert); the certificate need not name $ADDRESS.
    for _ in $(seq 100); do
        "$NEW/bin/python" -c "
import ssl, urllib.error, urllib.request as u
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
try: u.urlopen('$URL/healthz', timeout=2, context=ctx)
except urllib.error.HTTPError as e: raise SystemExit(e.code != 401)
except urllib.error.URLError as e: raise SystemExit(not isinstance(e.reason, ssl.SSLError))
except ConnectionResetError: raise SystemExit('$SCHEME' != 'https')  # TLS 1.3: no client certificate
" 2>/dev/null && return 0
        sleep 0.2
    done
    return 1
}
WHERE=$(under_systemd && echo 'journalctl -u zfs-advisor' || echo "$LOG")
if answers; then
    rm -rf "$LEGACY"
    # Keep the running release and the one before it (to go back by hand: docs/deploy.md).
    for old in "$RELEASES"/*; do
        [ "$old" = "$NEW" ] || [ "$old" = "$PREVIOUS" ] || rm -rf "$old"
    done
    say "answering on $URL/ (try /healthz, /metrics, /recommend?workload=postgres)"
    say "Prometheus: $PREFIX/share/prometheus/{scrape.yml,alerts.yml}; Grafana: $PREFIX/share/grafana/zfs-advisor.json (docs/deploy.md)"
    exit 0
fi
if [ -n "$PREVIOUS" ] || [ -n "$LEGACY" ]; then
    # Back to what ran before: the new release is kept for a look, the old one answers again.
    if [ -n "$PREVIOUS" ]; then switch_to "$PREVIOUS"; else rm -f "$PREFIX/venv" && mv "$LEGACY" "$PREFIX/venv"; fi
    start_service
    answers || die "the new version did not answer within 20 s and the one before it does not either; see $WHERE"
    die "the new version ($NEW) did not answer within 20 s; rolled back to the one before, which answers on $URL (see $WHERE)"
fi
die "installed but not answering on $URL within 20 s; see $WHERE"
