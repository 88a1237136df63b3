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
# Dependency versions come from deploy/constraints.txt: every host gets the same. The release
# steps (build, switch, check, roll back) are deploy/release.sh, which the Debian package uses too.
#
# Installs: the program in $PREFIX/releases/<id>, $PREFIX/venv pointing to it (default
# /opt/zfs-advisor), fio (the prober's benchmark) when it is missing, the manual zfs-advisor(1) in
# /usr/local/share/man/man1, the unit in
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
MANPAGE=/usr/local/share/man/man1/zfs-advisor.1  # the units' Documentation=man:zfs-advisor(1)
. deploy/release.sh  # say, die, under_systemd, stop_background, release_*; PIDFILE and LOG

if [ "$(id -u)" != 0 ]; then
    die "run as root (it writes $PREFIX, $CONFIG_DIR and the systemd unit)" 2
fi

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
    rm -rf "$PREFIX" "$MANPAGE"
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

# A new release beside the running one (deploy/release.sh).
NEW="$RELEASES/$(date -u +%Y%m%dT%H%M%S)-$$"
SRC=
trap 'release_abandon; rm -rf "$SRC"' EXIT
PIP=(--constraint deploy/constraints.txt)
if [ -n "$WHEELS" ]; then
    PIP+=(--no-index --find-links "$WHEELS")  # no index at all: what is not in DIR fails
fi
if [ -n "$WHEELS" ] && compgen -G "$WHEELS/zfs_advisor-*.whl" >/dev/null; then
    TARGET="zfs-advisor$EXTRAS"  # the program's own wheel in DIR, built from this checkout (docs/deploy.md)
else
    # Built from a copy: setuptools writes build/ and *.egg-info next to the sources, which would
    # leave root-owned files in your checkout (and fails in a read-only one).
    SRC=$(mktemp -d)
    tar -c --exclude=__pycache__ pyproject.toml README.md LICENSE advisor exporters rules | tar -x -C "$SRC"
    TARGET="$SRC$EXTRAS"  # pip reads DIR[extra] as the project in DIR with that extra
fi
if ! release_build "$NEW" "${PIP[@]}" "$TARGET"; then
    die "pip could not install the new version (see above); nothing changed: the installed version, if any, is still in place and running"
fi

install -d -m 0755 "$CONFIG_DIR" "$PREFIX/share/prometheus" "$PREFIX/share/grafana"
if [ ! -e "$CONFIG_DIR/config.toml" ]; then
    install -m 0644 deploy/config.example.toml "$CONFIG_DIR/config.toml"
fi

# A config file the new version refuses stops the upgrade before anything changes.
URL=$(release_url "$NEW") \
    || die "$CONFIG_DIR/config.toml (or its web_config_file) is not valid for the new version; see the message above; nothing changed" 2
release_switch "$NEW"
install -d -m 0755 "$(dirname "$MANPAGE")"
"$PREFIX/venv/bin/python" -m advisor.cli.manpage >"$MANPAGE"
install -m 0644 deploy/prometheus/alerts.yml deploy/prometheus/scrape.yml "$PREFIX/share/prometheus/"
install -m 0644 deploy/grafana/zfs-advisor.json "$PREFIX/share/grafana/"

if under_systemd; then
    install -m 0644 deploy/systemd/zfs-advisor.service "$UNIT"
    for unit in $PROBE_UNITS; do install -m 0644 "deploy/systemd/$unit" /etc/systemd/system/; done
    systemctl daemon-reload
    systemctl enable zfs-advisor.service
fi
release_start
if under_systemd; then
    systemctl enable --now zfs-advisor-probe.timer zfs-advisor-probe.path
    say "running under systemd (systemctl status zfs-advisor; journalctl -u zfs-advisor)"
else
    say "no systemd here; started in the background (log: $LOG, pid $(cat "$PIDFILE"))"
fi

release_finish "$NEW" "$URL"  # rolls back (and fails) if the new version does not answer
say "answering on $URL/ (try /healthz, /metrics, /recommend?workload=postgres)"
say "Prometheus: $PREFIX/share/prometheus/{scrape.yml,alerts.yml}; Grafana: $PREFIX/share/grafana/zfs-advisor.json (docs/deploy.md)"
