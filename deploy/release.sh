# zfs-advisor's releases: a new version is built beside the running one and switched to in one
# rename; one that does not answer is switched back. Sourced (bash) by deploy/install.sh and by
# the Debian package's postinst (as /usr/lib/zfs-advisor/release.sh), which set PREFIX first:
#
#   release_build NEW PIP-ARGS...   a venv in NEW with what pip installs; removes NEW if pip fails
#   release_url NEW                 the URL the new version will answer on (its settings); fails
#                                   when the config file is not valid for it
#   release_switch NEW              $PREFIX/venv -> NEW in one rename (the previous one remembered)
#   release_start                   (re)start the service: systemd, or a background process
#   release_finish NEW URL          NEW answers: older releases pruned. It does not: switched back,
#                                   the previous one restarted, and a non-zero exit
#   release_abandon                 for an EXIT trap: NEW removed unless it was switched to
#
# $PREFIX/releases/<id> holds each release; $PREFIX/venv is the symlink the units' ExecStart= go
# through. A venv's scripts name their interpreter by absolute path, so a release is built at the
# path it keeps: it cannot be moved once built.

RELEASES="$PREFIX/releases"
PIDFILE=/run/zfs-advisor.pid  # only without systemd
LOG=/var/log/zfs-advisor.log  # only without systemd
RELEASE_NEW=
RELEASE_SWITCHED=
RELEASE_PREVIOUS=
RELEASE_LEGACY=

say() { echo "zfs-advisor: $*"; }
die() { echo "zfs-advisor: $1" >&2; exit "${2:-1}"; }
under_systemd() { [ -d /run/systemd/system ]; }

release_abandon() { [ -n "$RELEASE_SWITCHED" ] || [ -z "$RELEASE_NEW" ] || rm -rf "$RELEASE_NEW"; }

# An upgrade starts from a copy of the running release's dependencies (same Python; this
# program's own package left out): pip then installs only what changed and this program, and
# byte-compiling skips what is compiled already (cp -a keeps the times the .pyc files check).
# A copy, not hard links, so nothing pip or compileall writes can reach the running release.
# On the 2-core development machine an upgrade took 7.0 s this way against 13.2 s from nothing.
_release_seed() {
    local new=$1 old site
    old=$(readlink -f "$PREFIX/venv" 2>/dev/null || true)
    site=$("$new/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
    site=${site#"$new"/}
    [ -n "$old" ] && [ -d "$old/$site" ] || return 0
    find "$old/$site" -mindepth 1 -maxdepth 1 ! -name advisor ! -name 'zfs_advisor-*' ! -name __pycache__ \
        -exec cp -a -t "$new/$site/" {} +
}

release_build() {
    local new=$1; shift
    RELEASE_NEW=$new
    install -d -m 0755 "$RELEASES"
    rm -rf "$new"
    # The venv gets no pip of its own when the pip wheel that ensurepip installs from is at hand
    # (Debian keeps it in /usr/share/python-wheels, CPython in ensurepip/_bundled): pip runs from
    # that wheel into the venv, as ensurepip itself does. The service never runs pip, and
    # installing pip into the venv (and byte-compiling it) is most of the venv's cost on a slow machine.
    local pip_wheel
    pip_wheel=$(ls /usr/share/python-wheels/pip-*.whl \
        "$(python3 -c 'import ensurepip, os; print(os.path.dirname(ensurepip.__file__))')"/_bundled/pip-*.whl \
        2>/dev/null | head -n 1 || true)
    # Byte-compiled afterwards, on every core and without the packages' own tests (numpy's are a
    # quarter of the .py files): the service cannot write __pycache__ (ProtectSystem=strict), so
    # what it imports must be compiled here. The whole install: 21.5 s against 12.9 s on the 2-core
    # development machine; the Debian package's in the emulated lab VM, 250 s against 183 s.
    local pip=(-m pip install -q --no-cache-dir --disable-pip-version-check --no-compile "$@") rc=0
    if [ -n "$pip_wheel" ]; then
        python3 -m venv --without-pip "$new" && _release_seed "$new" \
            && PYTHONPATH="$pip_wheel" "$new/bin/python" "${pip[@]}" || rc=$?
    else
        python3 -m venv "$new" && _release_seed "$new" && "$new/bin/python" "${pip[@]}" || rc=$?
    fi
    [ "$rc" != 0 ] || "$new/bin/python" -m compileall -q -j 0 -x '/tests/' "$new/lib" >/dev/null || rc=$?
    [ "$rc" = 0 ] || { rm -rf "$new"; return "$rc"; }
}

# Where the service will listen: its settings as the new version reads them (the config file, no
# ZFS_ADVISOR_* from this shell). A wildcard address answers on loopback. https when the web
# config file has tls_server_config.
release_url() {
    local address port scheme
    read -r address port scheme < <(cd / && env -i "$1/bin/python" -c \
        'from advisor.config.settings import load_settings as l; from advisor.config.webconfig import load_web_config as w
s = l(); print(s.listen_address, s.port, "https" if w(s.web_config_file).tls else "http")') || return 1
    [ -n "$port" ] || return 1
    case "$address" in 0.0.0.0 | "") address=127.0.0.1 ;; :: | "[::]") address=::1 ;; esac
    case "$address" in *:*) echo "$scheme://[$address]:$port" ;; *) echo "$scheme://$address:$port" ;; esac
}

_release_point() { ln -sfn "$1" "$PREFIX/venv.next" && mv -T "$PREFIX/venv.next" "$PREFIX/venv"; }

# An install from before releases/ has a directory at $PREFIX/venv: it is kept until the new
# release answers.
release_switch() {
    RELEASE_PREVIOUS=$(readlink "$PREFIX/venv" 2>/dev/null || true)
    if [ -d "$PREFIX/venv" ] && [ ! -L "$PREFIX/venv" ]; then
        RELEASE_LEGACY="$PREFIX/venv.legacy"
        rm -rf "$RELEASE_LEGACY"
        mv "$PREFIX/venv" "$RELEASE_LEGACY"
    fi
    _release_point "$1"
    RELEASE_SWITCHED=1
}

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

# A version that fails to start makes `systemctl restart` fail: that is for release_finish to
# judge (and roll back), not the end of the script.
# RELEASE_RESTART: how, under systemd (the Debian package's postinst says deb-systemd-invoke restart).
release_start() {
    if under_systemd; then
        ${RELEASE_RESTART:-systemctl restart} zfs-advisor.service || true
    else
        stop_background
        nohup "$PREFIX/venv/bin/zfs-advisor" serve >>"$LOG" 2>&1 &
        echo $! >"$PIDFILE"
    fi
}

# Within 30 s (one interpreter polling: under emulation each python start costs seconds): /healthz
# is 200, or 401 under basic auth, or TLS refuses a client without a certificate
# (RequireAndVerifyClientCert); the certificate need not name the address.
release_answers() {  # URL PYTHON
    "$2" - "$1" 2>/dev/null <<'PY'
import ssl, sys, time, urllib.error, urllib.request as u
url = sys.argv[1]
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
def answers():
    try: u.urlopen(url + "/healthz", timeout=2, context=ctx); return True
    except urllib.error.HTTPError as e: return e.code == 401
    except urllib.error.URLError as e: return isinstance(e.reason, ssl.SSLError)
    except ConnectionResetError: return url.startswith("https:")  # TLS 1.3: no client certificate
    except OSError: return False
deadline = time.monotonic() + 30
while not answers():
    if time.monotonic() > deadline: sys.exit(1)
    time.sleep(0.2)
PY
}

release_finish() {
    local new=$1 url=$2 where old
    where=$(under_systemd && echo 'journalctl -u zfs-advisor' || echo "$LOG")
    if release_answers "$url" "$new/bin/python"; then
        rm -rf "$RELEASE_LEGACY"
        # Keep the running release and the one before it (to go back by hand: docs/deploy.md).
        for old in "$RELEASES"/*; do
            [ "$old" = "$new" ] || [ "$old" = "$RELEASE_PREVIOUS" ] || rm -rf "$old"
        done
        return 0
    fi
    if [ -n "$RELEASE_PREVIOUS" ] || [ -n "$RELEASE_LEGACY" ]; then
        # Back to what ran before: the new release is kept for a look, the old one answers again.
        if [ -n "$RELEASE_PREVIOUS" ]; then
            _release_point "$RELEASE_PREVIOUS"
        else
            rm -f "$PREFIX/venv" && mv "$RELEASE_LEGACY" "$PREFIX/venv"
        fi
        release_start
        release_answers "$url" "$PREFIX/venv/bin/python" \
            || die "the new version did not answer within 30 s and the one before it does not either; see $where"
        die "the new version ($new) did not answer within 30 s; rolled back to the one before (${RELEASE_PREVIOUS:-$PREFIX/venv}), which answers on $url (see $where)"
    fi
    die "installed but not answering on $url within 30 s; see $where"
}
